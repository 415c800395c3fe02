"""What a turn costs: a small per-model price table and the arithmetic on it.

Prices are US dollars per million tokens (storage: per million tokens per hour),
Gemini Developer API, standard tier, prompts up to 200k tokens. They change:
``%config GeminiMagics.prices = {"model": {...}}`` overrides or adds a model.
An unknown model gets no guessed price: its turns show tokens only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from .. import messages

PRICES_AS_OF = "2026-11-30"


@dataclass(frozen=True)
class Price:
    input: float  # $ / 1M input tokens not served from a cache (and tokens written into a cache)
    cached_input: float  # $ / 1M input tokens served from a cache
    output: float  # $ / 1M output tokens, thinking included
    storage_hour: float  # $ / 1M cached tokens per hour of an explicit cache's life
    cache_minimum: int  # the fewest tokens an explicit cache may hold
    source: str = ""


_FLASH_38 = (
    "LiteLLM model-cost announcement for gemini-3.8-flash (github.com/BerriAI/litellm/discussions/39357: "
    "$0.75 in, $3.75 out, cache reads $0.075, caching from 4,096 tokens; promotional until 2026-12-31, "
    "then $1.50 / $7.50) and docs.apiyi.com/models/gemini-3-8-flash; storage: the Flash rate of the "
    "Gemini pricing page ($1.00 / 1M tokens / hour), no 3.8-specific figure found"
)
PRICES: dict[str, Price] = {
    "gemini-3.8-flash": Price(0.75, 0.075, 3.75, 1.00, 4096, _FLASH_38),
    # deprecated, routed to gemini-3.8-flash (ai.google.dev/gemini-api/docs/models/gemini-3.7-flash, Aug 2026)
    "gemini-3.7-flash": Price(0.75, 0.075, 3.75, 1.00, 4096, "routed to gemini-3.8-flash; " + _FLASH_38),
    "gemini-3.5-flash": Price(
        1.50,
        0.15,
        9.00,
        1.00,
        4096,
        "byteiota.com/gemini-flash-pricing-cache-cost-fix ($1.50 / $9.00; cached reads 10% of "
        "input); storage and minimum assumed as for 3.8 Flash",
    ),
    "gemini-3.1-pro": Price(
        2.00,
        0.20,
        12.00,
        4.50,
        2048,
        "morphllm.com/gemini-api-pricing, techjacksolutions.com context-caching guide "
        "(2026-06-09: $2.00 in, $0.20 cached); minimum 2,048 from chandanbhagat.com.np; "
        "storage: the Pro rate ($4.50)",
    ),
    "gemini-2.5-pro": Price(
        1.25,
        0.125,
        10.00,
        4.50,
        2048,
        "ai.google.dev/gemini-api/docs/pricing as cited by deploybase.ai (2026-03); storage as "
        "cited on discuss.ai.google.dev; minimum from ai.google.dev/gemini-api/docs/caching",
    ),
    "gemini-2.5-flash": Price(
        0.30,
        0.03,
        2.50,
        1.00,
        1024,
        "ai.google.dev/gemini-api/docs/pricing as cited by morphllm.com; "
        "minimum from ai.google.dev/gemini-api/docs/caching",
    ),
    "gemini-2.5-flash-lite": Price(
        0.10,
        0.01,
        0.40,
        1.00,
        1024,
        "morphllm.com/gemini-api-pricing; cached reads 10% and the Flash storage rate assumed",
    ),
}

_PER_TOKEN = 1e-6


def price_for(model: str, overrides: Mapping[str, Mapping[str, Any]] | None = None) -> Price | None:
    """The model's price: the table's, with ``overrides`` applied; None when nobody knows it.

    An override of a known model may give only some fields; a model the table does
    not know needs all four prices (and gets the 4,096-token cache minimum unless given).
    """
    name = model.removeprefix("models/")
    base = PRICES.get(name)
    given = dict((overrides or {}).get(name) or {})
    if not given:
        return base
    known = {f.name for f in fields(Price)}
    unknown = set(given) - known
    if unknown:
        raise ValueError(
            messages.PRICE_FIELDS_UNKNOWN.render(model=name, unknown=sorted(unknown), known=sorted(known - {"source"}))
        )
    if base is None:
        missing = {"input", "cached_input", "output", "storage_hour"} - set(given)
        if missing:
            raise ValueError(messages.PRICE_FIELDS_MISSING.render(model=name, missing=sorted(missing)))
        given.setdefault("cache_minimum", 4096)
        given.setdefault("source", "GeminiMagics.prices")
        return Price(**given)
    return replace(base, **given, source=f"{base.source}; overridden by GeminiMagics.prices")


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
