"""benchmarks/long_session.py's reference lines (issue 43): the least a function-fetching assistant pays where only
explicit caches serve (``least_explicit``, a dynamic program over when to make a cache) is the cheapest of every
schedule of caches, found here by trying them all on a short session, and lies between the line that caches for
free and the one with no cache at all."""

from __future__ import annotations

import itertools
import sys
from dataclasses import replace

import pytest
from helpers.benchmark import BENCHMARKS

sys.path.insert(0, str(BENCHMARKS))

from long_session import Session, fetching_reads, least, least_explicit  # noqa: E402
from token_economy import TurnStat  # noqa: E402

from genai_magics.gemini.pricing import Price  # noqa: E402

PRICE = Price(input=0.75, cached_input=0.075, output=3.75, storage_hour=1.0, cache_minimum=1_000, source="test")


def session(turns: int, prompt_words: int, answer: int) -> Session:
    prompts = [" ".join(f"word{i}x{j}" for j in range(prompt_words)) for i in range(turns)]
    results = [[{"name": "read_cell", "response": {"sha256": f"s{i}", "text": "x = 1\n" * 40}}] for i in range(turns)]
    stats = [TurnStat(output=30 + answer) for _ in range(turns)]
    return Session(stats, 0, 0.0, prompts, results, [answer] * turns)


def every_schedule(reference: Session, price: Price) -> float:
    """The same rules as ``least_explicit``, each request's choice tried: a new cache of what it reads, the cache
    it has (if any), or none."""
    reads, others = fetching_reads(reference, price)
    best = float("inf")
    for choices in itertools.product(("new", "keep", "none"), repeat=len(reads)):
        cost, cache = 0.0, None  # cache: (tokens held, turn made, last turn read)
        lives = []
        for (turn, tokens), choice in zip(reads, choices, strict=True):
            if choice == "keep" and cache is None:
                break
            if choice == "new":
                if cache is not None:
                    lives.append(cache)
                cache = (tokens, turn, turn)
                cost += max(tokens, price.cache_minimum) * price.input
            elif choice == "none":
                if cache is not None:
                    lives.append(cache)
                cache = None
                cost += tokens * price.input
                continue
            held_, made, _ = cache
            cache = (held_, made, turn)
            cost += max(held_, price.cache_minimum) * price.cached_input + (tokens - held_) * price.input
        else:
            if cache is not None:
                lives.append(cache)
            for held_, made, until in lives:
                cost += max(held_, price.cache_minimum) * price.storage_hour * (until - made + 1) / 60
            best = min(best, 1e-6 * cost + others)
    return best


@pytest.mark.parametrize(("turns", "prompt_words", "answer"), [(3, 20, 60), (4, 60, 200), (4, 5, 10)])
def test_the_explicit_cache_line_is_the_cheapest_schedule_of_caches(turns, prompt_words, answer):
    reference = session(turns, prompt_words, answer)
    found = least_explicit(reference, PRICE)
    assert found == pytest.approx(every_schedule(reference, PRICE), rel=1e-12)
    free = least(reference, PRICE, functions=True, cache=True)
    none = least(reference, PRICE, functions=True, cache=False)
    assert free <= found <= none


def test_under_the_cache_minimum_nothing_is_cached_and_a_long_session_pays_far_less_than_with_no_cache():
    flash = replace(PRICE, cache_minimum=4_096)  # a 4,096-token cache costs more than two reads of ~800 tokens
    short, long_ = session(1, 20, 60), session(60, 20, 60)
    assert least_explicit(short, flash) == pytest.approx(least(short, flash, functions=True, cache=False))
    assert least_explicit(long_, flash) < 0.6 * least(long_, flash, functions=True, cache=False)
