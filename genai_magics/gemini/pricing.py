"""What a turn costs: a small per-model price table with the periods each price holds, and the arithmetic.

Prices are US dollars per million tokens (storage: per million tokens per hour),
Gemini Developer API, standard tier. A tiered model charges its ``long_*`` rates for a request
whose prompt is over 200k tokens (``LONG_PROMPT``): each request by its own size, never a
turn's sum. Prices change on known days: each model has one or more ``Period``s (first and
last day included), and a turn is priced on its own day, the provider's billing day
(``billing_day``: US and Canadian Pacific time, whatever the machine's zone).
``%config GeminiMagics.prices = {"model": {...}}`` overrides or adds a model, for every day
or for periods of its own (``"from"``/``"until"``). An unknown model gets no guessed price:
its turns show tokens only.
"""

from __future__ import annotations

import datetime as dt
import functools
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from .. import messages
from ..engine.errors import UserError

PRICES_AS_OF = "2026-12-06"

# The day a request is billed on, and so priced on: Google Cloud's billing day (sources below). One
# zone on every machine: a kernel in Tokyo and one in Los Angeles price the same request alike, and a
# price change takes effect when Google's day turns.
BILLING_ZONE = "America/Los_Angeles"
BILLING_DAY_SOURCE = (
    "Google Cloud's billing day, midnight to midnight US and Canadian Pacific time, daylight saving "
    'included (Cloud Billing Budget API reference, the CustomPeriod type: "All date times begin at 12 AM US '
    'and Canadian Pacific Time"; Cloud Channel API, cloud.google.com/channel/docs/reference/rest/v1/DateRange: "each '
    'group uses midnight to midnight (Pacific time)")'
)
LONG_PROMPT = 200_000  # tokens: a request whose prompt is longer pays a tiered model's long_* rates


def billing_day(now: dt.datetime | None = None) -> dt.date:
    """The provider's billing day at ``now`` (an aware time; the present when None)."""
    return (now or dt.datetime.now(dt.UTC)).astimezone(_billing_zone()).date()


@functools.cache
def _billing_zone() -> dt.tzinfo:
    from zoneinfo import ZoneInfo  # on the first turn, not at %load_ext: zoneinfo and its data cost ~15 ms

    return ZoneInfo(BILLING_ZONE)


@dataclass(frozen=True)
class Price:
    input: float  # $ / 1M input tokens not served from a cache (and tokens written into a cache)
    cached_input: float  # $ / 1M input tokens served from a cache
    output: float  # $ / 1M output tokens, thinking included
    storage_hour: float  # $ / 1M cached tokens per hour of an explicit cache's life
    cache_minimum: int  # the fewest tokens an explicit cache may hold
    source: str = ""
    # a request whose prompt (cached tokens included) is over LONG_PROMPT tokens; None: the rate above
    long_input: float | None = None
    long_cached_input: float | None = None
    long_output: float | None = None
    search_query: float | None = None  # $ per Google Search query a grounded answer ran (None: not known)

    def at(self, prompt_tokens: int) -> Price:
        """The rates one request of ``prompt_tokens`` pays (a tiered model's long ones over 200k tokens)."""
        if prompt_tokens <= LONG_PROMPT or not self.tiered:
            return self
        return replace(
            self,
            input=_or(self.long_input, self.input),
            cached_input=_or(self.long_cached_input, self.cached_input),
            output=_or(self.long_output, self.output),
        )

    @property
    def tiered(self) -> bool:
        return any(x is not None for x in (self.long_input, self.long_cached_input, self.long_output))


def _or(value: float | None, otherwise: float) -> float:
    return otherwise if value is None else value


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
# Grounding with Google Search on the Gemini 3 models, per query the model ran (each one of
# groundingMetadata.webSearchQueries); the monthly free allowance is not counted: a turn is priced as if paid
_SEARCH_3 = (
    "Google Search: $14 / 1,000 search queries on Gemini 3 models after 5,000 free prompts a month, the free "
    "ones not counted here (ai.google.dev/gemini-api/docs/pricing as quoted in discuss.ai.google.dev/t/134866; "
    "billed per query run, the length of webSearchQueries: docs.apiyi.com/en/api-capabilities/gemini/web-search)"
)
SEARCH_3 = 0.014
_FLASH_38_AFTER = _FLASH_38 + "; cache reads after 2026-12-31: a tenth of input, as before (assumed, no figure found)"
_FLASH_38_PERIODS = (
    Period(
        Price(0.75, 0.075, 3.75, 1.00, 4096, f"{_FLASH_38}; {_SEARCH_3}", search_query=SEARCH_3),
        end=dt.date(2026, 12, 31),
    ),
    Period(
        Price(1.50, 0.15, 7.50, 1.00, 4096, f"{_FLASH_38_AFTER}; {_SEARCH_3}", search_query=SEARCH_3),
        start=dt.date(2027, 1, 1),
    ),
)
_ARGON = (
    "ai.google.dev/gemini-api/docs/generate-content/latest-model ($2 / $10 introductory through "
    "2026-11-30, $4 / $20 thereafter); cached input from github.com/BerriAI/litellm/discussions/46238 and "
    "github.com/iyulab/TokenMeter/releases/tag/v0.13.1 ($0.10, then $0.20: a twentieth of input, not a "
    "tenth); implicit caching only, no explicit caches, so no storage rate (TokenMeter v0.13.1, "
    "dev.to/aihubmix/moving-gemini-3x-code-to-gemini-4-argon-failure-modes-and-fixes-4h1p)"
)

# The Gemini 4 models' cache: implicit only (models.py's traits), so no storage rate; cached input a twentieth of
# input, as each model's own figures below also say
_GEMINI_4_CACHE = (
    "cached input a twentieth of input (Google's context-caching overview as served at documentation.s3ns.fr/"
    'gemini-enterprise-agent-platform/models/context-cache/context-cache-overview, read 2026-12-06: "Gemini 4 or '
    'later models: 95% discount"); implicit caching only, no explicit caches and so no storage rate'
)
_GOOGLE_GUIDE = "docs.cloud.google.com/gemini-enterprise-agent-platform/models/guides/gemini-4-"
_CARBON = (
    f"Google's developer guide ({_GOOGLE_GUIDE}carbon, read 2026-12-06: implicit caching from 4,096 tokens, "
    "explicit context caching not supported); $2 / $10 through 2026-11-30, then $4 / $20: "
    "github.com/BerriAI/litellm/discussions/50970, docs.laozhang.ai/en/announcements/gemini-4-carbon-2026-11 "
    "(generally available 2026-11-10, Google's price, cache reads $0.10; checked 2026-11-11), "
    "github.com/Sheernox/cedr/releases/tag/v0.16.1 ($4 / $20, $0.20 cached from 2026-12-01); no Google Search "
    "price per query found for it; " + _GEMINI_4_CACHE
)
# Grounding with Google Search on Hydrogen and Neon, per query (the free allowance not counted, as for Gemini 3)
_SEARCH_4 = "Google Search: $14 / 1,000 search queries (github.com/iyulab/TokenMeter/releases/tag/v0.17.0)"
_HYDROGEN = (
    f"Google's developer guide ({_GOOGLE_GUIDE}hydrogen, read 2026-12-06: a short generally available release, "
    "implicit caching from 4,096 tokens, explicit context caching not supported); $1.50 in, $7.50 out, $0.075 "
    "cached, one rate over the whole 1M window: docs.sim.ai/models/google/gemini-4-hydrogen (its catalog of "
    "2026-11-20), github.com/BerriAI/litellm/discussions/51436, docs.laozhang.ai/announcements/"
    f"gemini-4-hydrogen-2026-11 (Google's list price, checked 2026-11-14); {_SEARCH_4}; " + _GEMINI_4_CACHE
)
_NEON = (
    "generally available since 2026-11-18 (Google's Gemini Enterprise release notes, docs.cloud.google.com/gemini/"
    "enterprise/docs/release-notes); Google's developer guide as served at documentation.s3ns.fr/"
    "gemini-enterprise-agent-platform/models/guides/gemini-4-neon (read 2026-12-06) gives no price; $3 in, $15 out, "
    "one rate over the whole window, no price change announced: docs.laozhang.ai/en/announcements/"
    "gemini-4-neon-2026-11 (Google's list price, checked 2026-11-22), docs.sim.ai/models/google (read 2026-12-06); "
    "$0.15 cached and implicit caching only: github.com/iyulab/TokenMeter/releases/tag/v0.17.0; its implicit "
    f"caching minimum found nowhere: 4,096 as for the other Gemini 4 models (assumed); {_SEARCH_4}; " + _GEMINI_4_CACHE
)
SEARCH_4 = 0.014


def _always(price: Price) -> tuple[Period, ...]:
    return (Period(price),)


# Tiered by prompt size: gemini-3.1-pro and gemini-2.5-pro (their long_* rates). The Flash models are
# one rate at every size (morphllm.com/gemini-api-pricing lists 3.5 Flash, 2.5 Flash and 2.5
# Flash-Lite as "flat"); for 3.8 / 3.7 Flash, 3.5 Flash-Lite and the Gemini 4 models the sources above
# publish one rate only (Hydrogen's and Neon's: the same over the whole window).
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
    "gemini-4-carbon": (
        Period(Price(2.00, 0.10, 10.00, 0.0, 4096, _CARBON), end=dt.date(2026, 11, 30)),
        Period(Price(4.00, 0.20, 20.00, 0.0, 4096, _CARBON), start=dt.date(2026, 12, 1)),
    ),
    "gemini-4-hydrogen": _always(Price(1.50, 0.075, 7.50, 0.0, 4096, _HYDROGEN, search_query=SEARCH_4)),
    "gemini-4-neon": _always(Price(3.00, 0.15, 15.00, 0.0, 4096, _NEON, search_query=SEARCH_4)),
    "gemini-3.5-flash-lite": _always(
        Price(
            0.30,
            0.03,
            2.50,
            1.00,
            4096,
            "ai.google.dev/gemini-api/docs/latest-model (read 2026-12-06: generally available, $0.30 / $2.50); "
            "cached $0.03: docs.sim.ai/models/google/gemini-3-5-flash-lite (its catalog of 2026-07-21); its caching "
            "minimum is not on Google's caching page: 4,096 as for the other 3.x models there (assumed); storage: "
            f"the Flash rate (assumed, no figure found); {_SEARCH_3}",
            search_query=SEARCH_3,
        )
    ),
    "gemini-3.5-flash": _always(
        Price(
            1.50,
            0.15,
            9.00,
            1.00,
            4096,
            "byteiota.com/gemini-flash-pricing-cache-cost-fix ($1.50 / $9.00; cached reads 10% of "
            f"input); storage and minimum assumed as for 3.8 Flash; {_SEARCH_3}",
            search_query=SEARCH_3,
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
            "storage: the Pro rate ($4.50); over 200k tokens $4.00 in, $18.00 out "
            "(morphllm.com/gemini-api-pricing: $2.00 up to 200k, $4.00 above; "
            "glbgpt.com/hub/gemini-3-1-pro-api-pricing-performance-the-complete-guide-for-developers: "
            "$4.00 / $18.00), cached $0.40 (a tenth of input, as below 200k: assumed, no figure found); " + _SEARCH_3,
            long_input=4.00,
            long_cached_input=0.40,
            long_output=18.00,
            search_query=SEARCH_3,
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
            "cited on discuss.ai.google.dev; minimum from ai.google.dev/gemini-api/docs/caching; over 200k "
            "tokens $2.50 in, $15.00 out (deploybase.ai/articles/gemini-api-pricing), cached $0.25 (a tenth "
            "of input, as below 200k: assumed; discuss.ai.google.dev/t/92919 quotes the older pair "
            "$0.31 / $0.625, twice as much above 200k)",
            long_input=2.50,
            long_cached_input=0.25,
            long_output=15.00,
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
    """The model's price on ``day`` (the billing day today when None), with ``overrides`` applied; None
    when nobody knows it."""
    when = day or billing_day()
    return next((p.price for p in periods(model, overrides) if p.covers(when)), None)


NOTE_WIDTH = 96  # %gemini prices wraps its notes here, between words (an output wraps long lines anywhere)
PRICING_PAGE = "https://ai.google.dev/gemini-api/docs/pricing"
# The models whose prices above are those of Google's pricing page (as of PRICES_AS_OF): %gemini prices
# cites the page for them, and one note for all the others (each Price.source says where it is from).
ON_PRICING_PAGE = frozenset({"gemini-2.5-pro", "gemini-2.5-flash"})


def price_notes(name: str, period: Period) -> list[str]:
    """The notes a row of ``%gemini prices`` points at: Google's pricing page or the note for the other
    models, and the user's own prices where ``GeminiMagics.prices`` set some of this period's."""
    notes = []
    if name in PRICES:
        notes.append(
            messages.PRICES_NOTE_GOOGLE.render(page=PRICING_PAGE)
            if name in ON_PRICING_PAGE
            else messages.PRICES_NOTE_ELSEWHERE.render(day=PRICES_AS_OF)
        )
    if period.price not in {p.price for p in PRICES.get(name, ())}:
        notes.append(messages.PRICES_NOTE_YOURS.render())
    return notes


def table_text(table: Sequence[tuple[str, Sequence[Period]]], today: dt.date) -> str:
    """What ``%gemini prices`` prints: each model's periods, the one in force today marked, each row's
    notes by number (``price_notes``); then the notes, each once, wrapped between words."""
    if not table:
        return messages.NO_PRICES.render()
    width = max(len(name) for name, _ in table)
    span = max(len(p.describe()) for _, held in table for p in held)
    head = f"{'period':<{span}}  {'in':>5}  {'cached':>6}  {'out':>5}  {'storage/h':>9}  {'cache min':>9}  sources"
    rows = [f"  {'model':<{width}}  {head}"]
    notes: dict[str, int] = {}  # a note -> its number
    for name, held in table:
        for p in held:
            x = p.price
            marks = [notes.setdefault(note, len(notes) + 1) for note in price_notes(name, p)]
            rows.append(
                f"{'*' if p.covers(today) else ' '} {name:<{width}}  {p.describe():<{span}}  {x.input:>5g}  "
                f"{x.cached_input:>6g}  {x.output:>5g}  {x.storage_hour:>9g}  {x.cache_minimum:>9,}  "
                + " ".join(map(str, marks))
            )
            if x.tiered:  # the same period's rates for a request whose prompt is over 200k tokens
                y = x.at(LONG_PROMPT + 1)
                over = messages.PRICES_LONG_PROMPT.render(tokens=f"{LONG_PROMPT // 1000}k")
                rows.append(f"  {'':<{width}}  {over:<{span}}  {y.input:>5g}  {y.cached_input:>6g}  {y.output:>5g}")
    rows.append(messages.PRICES_LEGEND.render(today=today))
    rows.append(messages.PRICES_SOURCES.render())
    notes[messages.PRICES_DAY_SOURCE.render(source=BILLING_DAY_SOURCE)] = len(notes) + 1
    for note, number in notes.items():
        head = f"  [{number}] "
        rows += textwrap.wrap(
            note,
            NOTE_WIDTH,
            initial_indent=head,
            subsequent_indent=" " * len(head),
            break_long_words=False,  # an address stays whole on its line
            break_on_hyphens=False,
        )
    return "\n".join(rows)


def turn_cost(
    price: Price, input_tokens: int, cached_tokens: int, output_tokens: int, written_tokens: int = 0
) -> float:
    """Dollars for ONE request: uncached input, cached input, output (thinking included), cache writes;
    at the rates of the request's own prompt size (``input_tokens``, cached ones included, as Gemini
    counts a prompt); a cache's creation at those of its own size. Never a turn's summed usage: two
    requests of 150k tokens are two short prompts, not one long one."""
    rates = price.at(input_tokens)
    fresh = max(0, input_tokens - cached_tokens)
    return _PER_TOKEN * (
        fresh * rates.input
        + cached_tokens * rates.cached_input
        + output_tokens * rates.output
        + written_tokens * price.at(written_tokens).input
    )


def storage_cost(price: Price, token_hours: float) -> float:
    return _PER_TOKEN * token_hours * price.storage_hour
