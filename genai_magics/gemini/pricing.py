"""What a turn costs: a small per-model price table with the periods each price holds, and the arithmetic.

Prices are US dollars per million tokens (storage: per million tokens per hour),
Gemini Developer API, standard tier, prompts up to 200k tokens. They change on
known days: each model has one or more ``Period``s (first and last day included), and
a turn is priced on its own day. ``%config GeminiMagics.prices = {"model": {...}}``
overrides or adds a model, for every day or for periods of its own (``"from"``/``"until"``).
An unknown model gets no guessed price: its turns show tokens only.
"""

from __future__ import annotations

import datetime as dt
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from .. import messages
from ..engine.errors import UserError

PRICES_AS_OF = "2026-12-02"


@dataclass(frozen=True)
class Price:
    input: float  # $ / 1M input tokens not served from a cache (and tokens written into a cache)
    cached_input: float  # $ / 1M input tokens served from a cache
    output: float  # $ / 1M output tokens, thinking included
    storage_hour: float  # $ / 1M cached tokens per hour of an explicit cache's life
    cache_minimum: int  # the fewest tokens an explicit cache may hold
    source: str = ""


@dataclass(frozen=True)
class Period:
    """A price valid from ``start`` through ``end``, both days included (None: open on that side)."""

    price: Price
    start: dt.date | None = None
    end: dt.date | None = None

    def covers(self, day: dt.date) -> bool:
        return (self.start is None or self.start <= day) and (self.end is None or day <= self.end)

    def describe(self) -> str:
        if self.start is None:
            return "always" if self.end is None else f"through {self.end}"
        return f"since {self.start}" if self.end is None else f"{self.start} to {self.end}"


_FLASH_38 = (
    "LiteLLM model-cost announcement for gemini-3.8-flash (github.com/BerriAI/litellm/discussions/39357: "
    "$0.75 in, $3.75 out, cache reads $0.075, caching from 4,096 tokens; promotional until 2026-12-31, "
    "then $1.50 / $7.50) and docs.apiyi.com/models/gemini-3-8-flash; storage: the Flash rate of the "
    "Gemini pricing page ($1.00 / 1M tokens / hour), no 3.8-specific figure found"
)
_FLASH_38_AFTER = _FLASH_38 + "; cache reads after 2026-12-31: a tenth of input, as before (assumed, no figure found)"
_FLASH_38_PERIODS = (
    Period(Price(0.75, 0.075, 3.75, 1.00, 4096, _FLASH_38), end=dt.date(2026, 12, 31)),
    Period(Price(1.50, 0.15, 7.50, 1.00, 4096, _FLASH_38_AFTER), start=dt.date(2027, 1, 1)),
)
_ARGON = (
    "ai.google.dev/gemini-api/docs/generate-content/latest-model ($2 / $10 introductory through "
    "2026-11-30, $4 / $20 thereafter); cached input from github.com/BerriAI/litellm/discussions/46238 and "
    "github.com/iyulab/TokenMeter/releases/tag/v0.13.1 ($0.10, then $0.20: a twentieth of input, not a "
    "tenth); implicit caching only, no explicit caches, so no storage rate (TokenMeter v0.13.1, "
    "dev.to/aihubmix/moving-gemini-3x-code-to-gemini-4-argon-failure-modes-and-fixes-4h1p)"
)


def _always(price: Price) -> tuple[Period, ...]:
    return (Period(price),)


PRICES: dict[str, tuple[Period, ...]] = {
    "gemini-3.8-flash": _FLASH_38_PERIODS,
    # deprecated, routed to gemini-3.8-flash (ai.google.dev/gemini-api/docs/models/gemini-3.7-flash, Aug 2026)
    "gemini-3.7-flash": tuple(
        replace(p, price=replace(p.price, source="routed to gemini-3.8-flash; " + p.price.source))
        for p in _FLASH_38_PERIODS
    ),
    "gemini-4-argon": (
        Period(Price(2.00, 0.10, 10.00, 0.0, 4096, _ARGON), end=dt.date(2026, 11, 30)),
        Period(Price(4.00, 0.20, 20.00, 0.0, 4096, _ARGON), start=dt.date(2026, 12, 1)),
    ),
    "gemini-3.5-flash": _always(
        Price(
            1.50,
            0.15,
            9.00,
            1.00,
            4096,
            "byteiota.com/gemini-flash-pricing-cache-cost-fix ($1.50 / $9.00; cached reads 10% of "
            "input); storage and minimum assumed as for 3.8 Flash",
        )
    ),
    "gemini-3.1-pro": _always(
        Price(
            2.00,
            0.20,
            12.00,
            4.50,
            2048,
            "morphllm.com/gemini-api-pricing, techjacksolutions.com context-caching guide "
            "(2026-06-09: $2.00 in, $0.20 cached); minimum 2,048 from chandanbhagat.com.np; "
            "storage: the Pro rate ($4.50)",
        )
    ),
    "gemini-2.5-pro": _always(
        Price(
            1.25,
            0.125,
            10.00,
            4.50,
            2048,
            "ai.google.dev/gemini-api/docs/pricing as cited by deploybase.ai (2026-03); storage as "
            "cited on discuss.ai.google.dev; minimum from ai.google.dev/gemini-api/docs/caching",
        )
    ),
    "gemini-2.5-flash": _always(
        Price(
            0.30,
            0.03,
            2.50,
            1.00,
            1024,
            "ai.google.dev/gemini-api/docs/pricing as cited by morphllm.com; "
            "minimum from ai.google.dev/gemini-api/docs/caching",
        )
    ),
    "gemini-2.5-flash-lite": _always(
        Price(
            0.10,
            0.01,
            0.40,
            1.00,
            1024,
            "morphllm.com/gemini-api-pricing; cached reads 10% and the Flash storage rate assumed",
        )
    ),
}

_PER_TOKEN = 1e-6
_PRICES = ("input", "cached_input", "output", "storage_hour")
_DATES = ("from", "until")
Overrides = Mapping[str, Any]  # GeminiMagics.prices: model -> {fields} or [{fields}, ...], each with optional dates


def overlap(periods: Sequence[Period]) -> tuple[Period, Period] | None:
    """Two of ``periods`` that share a day, or None (open ends reach as far as time does)."""
    low = dt.date.min
    ordered = sorted(periods, key=lambda p: p.start or low)
    for a, b in zip(ordered, ordered[1:], strict=False):
        if a.end is None or (b.start or low) <= a.end:
            return a, b
    return None


def _day(model: str, key: str, value: Any) -> dt.date:
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            pass
    raise UserError(messages.PRICE_DATE_BAD, model=model, key=key, value=value)


def _amount(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < float("inf")


def _own_periods(model: str, given: Any) -> list[tuple[Period, dict[str, Any]]]:
    """The user's periods for ``model``, each with the fields it sets (checked: fields, dates, no overlap)."""
    entries = given if isinstance(given, list) else [given]
    known = {f.name for f in fields(Price)} - {"source"}
    out = []
    for entry in entries:
        if not isinstance(entry, Mapping):
            raise UserError(messages.PRICE_ENTRY_BAD, model=model, kind=type(entry).__name__)
        unknown = set(entry) - known - set(_DATES)
        if unknown:
            raise UserError(
                messages.PRICE_FIELDS_UNKNOWN, model=model, unknown=sorted(unknown), known=sorted(known) + list(_DATES)
            )
        bad = sorted(k for k in known & set(entry) if not _amount(entry[k]))
        if bad:
            raise UserError(messages.PRICE_VALUE_BAD, model=model, fields=bad)
        start = _day(model, "from", entry["from"]) if "from" in entry else None
        end = _day(model, "until", entry["until"]) if "until" in entry else None
        if start and end and end < start:
            raise UserError(messages.PRICE_PERIOD_EMPTY, model=model, start=start, end=end)
        values = {k: v for k, v in entry.items() if k in known}
        out.append((Period(Price(0, 0, 0, 0, 0), start, end), values))
    clash = overlap([p for p, _ in out])
    if clash:
        raise UserError(
            messages.PRICE_PERIODS_OVERLAP, model=model, first=clash[0].describe(), second=clash[1].describe()
        )
    return out


def check_overrides(overrides: Overrides) -> None:
    """A UserError with its one line when ``GeminiMagics.prices`` cannot price every day it names."""
    for model in overrides:
        if not isinstance(model, str):
            raise UserError(messages.PRICE_MODEL_BAD, key=model)
        periods(model, overrides)


def periods(model: str, overrides: Overrides | None = None) -> list[Period]:
    """Every period of the model's price, the table's and the user's together, by day; [] when none is known.

    A user's period covers the table's on its days and takes the fields it does not set from them; a
    day the table has no price for needs every price in the user's period (the cache minimum defaults
    to 4,096 tokens).
    """
    name = model.removeprefix("models/")
    table = list(PRICES.get(name, ()))
    given = (overrides or {}).get(name)
    if not given:
        return table
    mine = _own_periods(name, given)
    cut = _cuts(table, [p for p, _ in mine])
    out: list[Period] = []
    for start, end in cut:
        probe = start or end or dt.date.min
        base = next((p for p in table if p.covers(probe)), None)
        own = next((values for p, values in mine if p.covers(probe)), None)
        if own is None:
            if base is not None:
                out.append(Period(base.price, start, end))
            continue
        if base is None:
            missing = set(_PRICES) - set(own)
            if missing:
                raise UserError(messages.PRICE_FIELDS_MISSING, model=name, missing=sorted(missing))
            price = Price(**{"cache_minimum": 4096, **own, "source": "GeminiMagics.prices"})
        else:
            price = replace(base.price, **own, source=f"{base.price.source}; overridden by GeminiMagics.prices")
        out.append(Period(price, start, end))
    return out


def _cuts(*groups: Iterable[Period]) -> list[tuple[dt.date | None, dt.date | None]]:
    """Time split at every first day and the day after every last day of the periods given: within
    each piece, every period covers all of it or none of it."""
    bounds = sorted(
        {p.start for g in groups for p in g if p.start}
        | {p.end + dt.timedelta(days=1) for g in groups for p in g if p.end and p.end < dt.date.max}
    )
    edges: list[dt.date | None] = [None, *bounds, None]
    return [(a, (b - dt.timedelta(days=1)) if b else None) for a, b in zip(edges, edges[1:], strict=False)]


def price_for(model: str, overrides: Overrides | None = None, day: dt.date | None = None) -> Price | None:
    """The model's price on ``day`` (today when None), with ``overrides`` applied; None when nobody knows it."""
    when = day or dt.date.today()
    return next((p.price for p in periods(model, overrides) if p.covers(when)), None)


NOTE_WIDTH = 96  # %gemini prices wraps its source notes here, between words (an output wraps long lines anywhere)


def table_text(table: Sequence[tuple[str, Sequence[Period]]], today: dt.date) -> str:
    """What ``%gemini prices`` prints: each model's periods, the one in force today marked, each row's
    sources as footnote numbers; then the notes, each clause of a source once, wrapped between words."""
    if not table:
        return messages.NO_PRICES.render()
    width = max(len(name) for name, _ in table)
    span = max(len(p.describe()) for _, held in table for p in held)
    head = f"{'period':<{span}}  {'in':>5}  {'cached':>6}  {'out':>5}  {'storage/h':>9}  {'cache min':>9}  sources"
    rows = [f"  {'model':<{width}}  {head}"]
    notes: dict[str, int] = {}  # a source's clause -> its number
    for name, held in table:
        for p in held:
            x = p.price
            marks = [notes.setdefault(clause, len(notes) + 1) for clause in _clauses(x.source)]
            rows.append(
                f"{'*' if p.covers(today) else ' '} {name:<{width}}  {p.describe():<{span}}  {x.input:>5g}  "
                f"{x.cached_input:>6g}  {x.output:>5g}  {x.storage_hour:>9g}  {x.cache_minimum:>9,}  "
                + " ".join(map(str, marks))
            )
    rows.append(messages.PRICES_LEGEND.render(today=today))
    rows.append(messages.PRICES_SOURCES.render())
    for clause, number in notes.items():
        head = f"  [{number}] "
        rows += textwrap.wrap(
            clause,
            NOTE_WIDTH,
            initial_indent=head,
            subsequent_indent=" " * len(head),
            break_long_words=False,  # an address stays whole on its line
            break_on_hyphens=False,
        )
    return "\n".join(rows)


def _clauses(source: str) -> list[str]:
    """A source's clauses: split at each '; ' outside parentheses (several prices share most of them)."""
    clauses, depth, start = [], 0, 0
    for i, char in enumerate(source):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and source.startswith("; ", i):
            clauses.append(source[start:i])
            start = i + 2
    clauses.append(source[start:])
    return [c.strip() for c in clauses if c.strip()]


def turn_cost(
    price: Price, input_tokens: int, cached_tokens: int, output_tokens: int, written_tokens: int = 0
) -> float:
    """Dollars for one request: uncached input, cached input, output (thinking included), cache writes."""
    fresh = max(0, input_tokens - cached_tokens)
    return _PER_TOKEN * (
        fresh * price.input
        + cached_tokens * price.cached_input
        + output_tokens * price.output
        + written_tokens * price.input
    )


def storage_cost(price: Price, token_hours: float) -> float:
    return _PER_TOKEN * token_hours * price.storage_hour
