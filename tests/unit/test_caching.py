"""The pure parts of caching and pricing: the decision, the price table, the stable head."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from genai_magics import messages
from genai_magics.engine.cells import Document
from genai_magics.engine.contents import build_contents, cacheable, shared_prefix
from genai_magics.engine.context import ContextPiece
from genai_magics.engine.conversation import Conversation, Turn, Usage
from genai_magics.engine.edits import Edit
from genai_magics.engine.errors import UserError
from genai_magics.engine.text import estimate_tokens
from genai_magics.gemini.caching import (
    chain_rent,
    decide,
    filler_kept,
    filler_served,
    folding_pays,
    implicit_padding_pays,
    implicit_share,
    later_share,
    measured_hit,
    new_chain_pays,
    padding_pays,
    pays_off,
    seed_shared,
    tail_served,
    worth_keeping,
)
from genai_magics.gemini.filler import PAD_MARGIN, padding
from genai_magics.gemini.pricing import PRICES, PRICES_AS_OF, Price, price_for, storage_cost, turn_cost

FLASH = PRICES["gemini-3.8-flash"][0].price  # the introductory price, through 2026-12-31
BEFORE = dt.date(2026, 12, 31)
KW = dict(
    mode="auto",
    price=FLASH,
    model="gemini-3.8-flash",
    head_tokens=10_000,
    head_sha="h1",
    existing_sha=None,
    existing_expires=None,
    now=1000.0,
    ttl_s=600.0,
)


def test_the_table_has_the_default_model_its_successor_a_date_and_sources():
    assert PRICES_AS_OF == "2026-12-06"
    for name in ("gemini-3.7-flash", "gemini-3.8-flash"):
        p = price_for(name, day=BEFORE)
        assert (p.input, p.cached_input, p.output, p.cache_minimum) == (0.75, 0.075, 3.75, 4096)
    prices = [period.price for periods in PRICES.values() for period in periods]
    assert all(p.source and p.cached_input < p.input < p.output for p in prices)


def test_overrides_complete_a_known_model_and_an_unknown_one_needs_every_price():
    assert price_for("no-such-model") is None  # no guessed price
    assert price_for("models/gemini-3.8-flash", day=BEFORE) == FLASH
    cheaper = price_for("gemini-3.8-flash", {"gemini-3.8-flash": {"input": 0.5}}, BEFORE)
    assert cheaper.input == 0.5 and cheaper.output == FLASH.output and "overridden" in cheaper.source
    mine = price_for("mine", {"mine": {"input": 1, "cached_input": 0.1, "output": 2, "storage_hour": 1}})
    assert mine == Price(1, 0.1, 2, 1, 4096, "GeminiMagics.prices")
    with pytest.raises(UserError) as missing:
        price_for("mine", {"mine": {"input": 1}})
    assert missing.value.message is messages.PRICE_FIELDS_MISSING
    assert missing.value.fields == {"model": "mine", "missing": ["cached_input", "output", "storage_hour"]}
    with pytest.raises(UserError) as unknown:
        price_for("gemini-3.8-flash", {"gemini-3.8-flash": {"inptu": 1}})
    assert unknown.value.message is messages.PRICE_FIELDS_UNKNOWN and unknown.value.fields["unknown"] == ["inptu"]


def test_turn_cost_bills_cached_fresh_output_and_cache_writes():
    assert turn_cost(FLASH, 10_000, 8_000, 500) == pytest.approx((2_000 * 0.75 + 8_000 * 0.075 + 500 * 3.75) / 1e6)
    assert turn_cost(FLASH, 100, 0, 0, written_tokens=1000) == pytest.approx(1100 * 0.75 / 1e6)
    assert storage_cost(FLASH, 2.0) == pytest.approx(2e-6)


def test_the_tail_is_folded_into_a_new_cache_when_its_reads_outweigh_reading_the_head_again_twice():
    # FLASH: input 0.75, cached 0.075 (0.675 saved a token read), storage 1.00 a token-hour; a fold of an
    # 8,000-token head and a 1,000-token tail for 600 s costs 5,400 + 167, and folding waits for two of them
    assert not folding_pays(FLASH, 600, head_tokens=8_000, tail_tokens=1_000, reads=2)  # 1,350 < 2 x 5,567
    assert folding_pays(FLASH, 600, head_tokens=8_000, tail_tokens=12_000, reads=2)  # 16,200 > 2 x (5,400 + 2,000)
    assert not folding_pays(FLASH, 600, head_tokens=8_000, tail_tokens=9_000, reads=2)  # 12,150 < 2 x 6,900: one
    assert not folding_pays(FLASH, 36_000, head_tokens=8_000, tail_tokens=12_000, reads=2)  # ten hours' storage
    assert folding_pays(FLASH, 600, head_tokens=8_000, tail_tokens=1_000, reads=18)  # 12,150 > 11,133
    # a tail implicit caching serves saves nothing folded: 18 x 1,000 x 0.2 x 0.675 = 2,430 < 11,133
    assert not folding_pays(FLASH, 600, head_tokens=8_000, tail_tokens=1_000, reads=18, hit=0.8)


def test_a_tail_that_cost_two_folds_since_the_cache_was_made_is_folded():
    # sixteen turns of a tail grown to 1,000: 2 x 1,000 x 17/2 x 0.675 = 11,475 paid > 2 x (5,400 + 167)
    assert folding_pays(FLASH, 600, head_tokens=8_000, tail_tokens=1_000, reads=2, turns=16)
    assert not folding_pays(FLASH, 600, head_tokens=8_000, tail_tokens=1_000, reads=2, turns=15)  # 10,800


def test_the_share_implicit_caching_served_is_read_from_the_usage():
    assert implicit_share(Usage(input_tokens=8_000, cached_tokens=2_000)) == 0.25
    assert implicit_share(Usage()) == 0.0
    # a cache of 4,000 read twice, a tail of 3,000 over 10 turns: each request read 350 at full price, less
    # than a turn's addition (300) and 50: all but 50 of the 2,700 earlier tail tokens were served
    served = Usage(input_tokens=2 * (4_000 + 3_000 + 300), cached_tokens=2 * (4_000 + 2_950), requests=2)
    assert tail_served(served, 4_000, tail_tokens=3_000, turns=10) == 1 - 50 / 2_700
    # nothing cached past the explicit cache: the tail was read at full price
    missed = Usage(input_tokens=2 * (4_000 + 3_000), cached_tokens=2 * 4_000, requests=2)
    assert tail_served(missed, 4_000, tail_tokens=3_000, turns=10) == 0.0
    assert tail_served(served, 4_000, tail_tokens=300, turns=1) == 0.0  # no earlier turn in the tail
    # a turn whose first request began a prefix (4,500 unserved), its second served all but what was new: measured
    # against a request's mean (4,700), not the whole input (0.48)
    assert later_share(Usage(input_tokens=4_500 + 4_900, cached_tokens=4_500, requests=2)) == 4_500 / 4_700
    assert later_share(Usage(input_tokens=8_000, cached_tokens=7_000, requests=2)) == 1.0  # at most 1
    assert later_share(Usage(input_tokens=4_000, cached_tokens=1_000, requests=1)) == 0.25


def test_a_turns_chain_rent_is_its_excess_over_the_seed_read_at_what_implicit_caching_leaves():
    assert chain_rent(FLASH, excess_tokens=3_000, reads=2, hit=0.0) == pytest.approx(2 * 3_000 * 0.75)
    assert chain_rent(FLASH, excess_tokens=3_000, reads=2, hit=1.0) == pytest.approx(2 * 3_000 * 0.075)
    assert chain_rent(FLASH, excess_tokens=0, reads=2, hit=0.0) == 0  # the seed is as large


def test_a_new_chain_pays_once_the_rent_paid_is_more_than_the_hits_it_loses():
    # never hits: a restart loses nothing, so any rent paid and a smaller seed start one
    assert new_chain_pays(FLASH, paid=150, chain_tokens=8_000, seed_tokens=7_900, reads=2, hit=0.0, growth=300)
    assert not new_chain_pays(FLASH, paid=150, chain_tokens=8_000, seed_tokens=8_000, reads=2, hit=0.0, growth=300)
    # always hits (e = cached): a seed over the minimum loses its first read, 5,000 x 0.675 = 3,375
    assert new_chain_pays(FLASH, paid=3_400, chain_tokens=9_000, seed_tokens=5_000, reads=2, hit=1.0, growth=300)
    assert not new_chain_pays(FLASH, paid=3_300, chain_tokens=9_000, seed_tokens=5_000, reads=2, hit=1.0, growth=300)
    # half the input hitting: e = 0.4125; 5,000 x 0.3375 = 1,687.5
    assert new_chain_pays(FLASH, paid=1_700, chain_tokens=8_000, seed_tokens=5_000, reads=2, hit=0.5, growth=300)
    assert not new_chain_pays(FLASH, paid=1_600, chain_tokens=8_000, seed_tokens=5_000, reads=2, hit=0.5, growth=300)
    # a seed 1,000 under the 4,096 minimum at 300 a turn: 4 turns of 2 reads nothing serves, 8 x 3,096 x 0.675
    lost = 8 * 3_096 * 0.675
    assert new_chain_pays(FLASH, lost + 1, chain_tokens=9_000, seed_tokens=3_096, reads=2, hit=1.0, growth=300)
    assert not new_chain_pays(FLASH, lost - 1, chain_tokens=9_000, seed_tokens=3_096, reads=2, hit=1.0, growth=300)


def test_what_a_new_seed_shares_with_the_chains_own_beginning_is_no_loss():
    """A seed that begins as the chain's own did (the earlier turns before the turn's own keys) reads that prefix
    at the cached price as the chain does: only the rest is the hits a restart loses."""
    # always hits, a seed of 5,000 sharing 4,500: 500 x 0.675 = 337.5
    kw = dict(chain_tokens=9_000, seed_tokens=5_000, reads=2, hit=1.0, growth=300)
    assert new_chain_pays(FLASH, paid=340, shared=4_500, **kw)
    assert not new_chain_pays(FLASH, paid=335, shared=4_500, **kw)
    assert not new_chain_pays(FLASH, paid=340, shared=0, **kw)  # as before: the whole seed, 3,375
    # a seed wholly shared loses nothing: any rent starts one, while the chain reads more
    assert new_chain_pays(FLASH, paid=1, shared=5_000, **kw)
    assert not new_chain_pays(FLASH, paid=1, shared=5_000, **{**kw, "chain_tokens": 5_000})
    # never hits: nothing to lose either way
    assert new_chain_pays(FLASH, paid=1, shared=4_500, **{**kw, "hit": 0.0})


def test_a_seed_shares_the_chains_tokens_up_to_where_their_texts_differ_at_the_minimum_and_without_filler():
    context = '{"secondaryContext":"' + "x" * 16_000 + '","earlierTurns":[["q1","a1"]'
    start = context + '],"mode":"ask","prompt":"q2"}'
    seed = context + ',["q2","a2"]],"mode":"ask","prompt":"q3"}'
    past = seed[seed.index(',["q2"') :]  # where the two differ: what is new to the seed
    assert seed_shared(5_000, seed, start, False, 4_096) == 5_000 - estimate_tokens(past)
    assert seed_shared(5_000, seed, start, True, 4_096) == 0  # the chain's requests begin with a filler
    assert seed_shared(5_000, seed, "", False, 4_096) == 0  # not known: read back from a record
    assert seed_shared(5_000, seed, start, False, 6_000) == 0  # under the minimum: implicit caching serves none
    assert seed_shared(5_000, seed, '{"mode":"ask"' + start, False, 4_096) == 0  # the old order: only '{"' in common


def test_the_rent_is_what_the_chain_paid_not_its_excess_as_if_grown_over_many_turns():
    """benchmarks/long_session.py, implicit caching always hitting, turn 10: a chain of 9 turns, 1,483 tokens over
    the seed, after a turn whose results were ~80 tokens. The guess this replaced took the excess as grown over
    1,483 / 80 = 18 turns (2 x 1,483 x 19/2 x e = 2,490 > the seed's 3,311 x (input - e) = 2,190) and started a
    new chain under the cache minimum that nothing served for three turns; what the chain paid is ~1,100."""
    e = FLASH.input - 0.98 * (FLASH.input - FLASH.cached_input)
    assert 2 * 1_483 * 19 / 2 * e > 3_311 * (FLASH.input - e)  # the old guess: restart
    assert not new_chain_pays(FLASH, paid=1_111, chain_tokens=4_794, seed_tokens=3_311, reads=2, hit=0.98, growth=224)


def test_a_cache_pays_off_when_the_reads_it_saves_outweigh_its_read_and_storage():
    assert pays_off(FLASH, 600, 1)  # 0.675 saved > 0.075 + 0.167
    assert not pays_off(FLASH, 3600, 1)  # an hour of storage (1.00) + 0.075 > 0.675
    assert pays_off(FLASH, 3600, 2)
    assert not pays_off(Price(1, 0.5, 1, 10, 1), 600, 1)
    # what implicit caching serves an explicit cache does not save: 0.675 x (1 - hit) against 0.242
    assert pays_off(FLASH, 600, 1, hit=0.6) and not pays_off(FLASH, 600, 1, hit=0.7)  # 0.270 / 0.2025


def test_at_exit_a_cache_is_kept_while_its_storage_until_expiry_costs_less_than_creating_it_again():
    # Flash: $0.75 per 1M input, $1.00 per 1M token-hours: the break-even is 2,700 s of remaining life
    assert worth_keeping(FLASH, 600)  # the default TTL: 0.167 of storage against 0.75 to create it again
    assert worth_keeping(FLASH, 2700) and not worth_keeping(FLASH, 2701)  # %config cache_ttl = 3600, just used
    assert not worth_keeping(FLASH, 0) and not worth_keeping(FLASH, -5)  # expired: nothing to keep
    assert not worth_keeping(None, 600)  # no price known: deleted


FLASH_MINIMUM = dict(model="gemini-3.8-flash", minimum=4096)


@pytest.mark.parametrize(
    "change, action, reason",
    [
        ({}, "create", messages.CACHE_HEAD.render(tokens=10_000)),
        ({"existing_sha": "h0", "existing_expires": 1500.0}, "create", messages.CACHE_REPLACE.render(tokens=10_000)),
        ({"existing_sha": "h1", "existing_expires": 1500.0}, "use", messages.CACHE_UNCHANGED.render(tokens=10_000)),
        ({"mode": "off"}, "none", messages.CACHE_OFF.render()),
        ({"mode": "off", "existing_sha": "h1"}, "drop", messages.CACHE_OFF.render()),
        ({"price": None}, "none", messages.CACHE_NO_PRICE.render(model="gemini-3.8-flash")),
        # a head under the minimum: cached filled up to it where that pays over a turn's requests, else not
        ({"head_tokens": 2800}, "none", messages.CACHE_UNDER_MINIMUM.render(tokens=2800, **FLASH_MINIMUM)),
        (
            {"head_tokens": 2800, "existing_sha": "h0"},
            "drop",
            messages.CACHE_UNDER_MINIMUM.render(tokens=2800, **FLASH_MINIMUM),
        ),
        ({"head_tokens": 2900}, "none", messages.CACHE_UNDER_MINIMUM.render(tokens=2900, **FLASH_MINIMUM)),
        ({"head_tokens": 3000}, "create", messages.CACHE_HEAD_PADDED.render(tokens=3000, pad=1096)),
        (
            {"head_tokens": 2000, "turn_reads": 2},
            "none",
            messages.CACHE_UNDER_MINIMUM.render(tokens=2000, **FLASH_MINIMUM),
        ),
        ({"head_tokens": 2100, "turn_reads": 2}, "create", messages.CACHE_HEAD_PADDED.render(tokens=2100, pad=1996)),
        (
            {"head_tokens": 2100, "turn_reads": 2, "existing_sha": "h1"},
            "use",
            messages.CACHE_UNCHANGED.render(tokens=2100),
        ),
        (
            {"head_tokens": 2100, "turn_reads": 2, "existing_sha": "h0"},
            "create",
            messages.CACHE_HEAD_PADDED.render(tokens=2100, pad=1996),
        ),
        (
            {"ttl_s": 3600.0},
            "none",
            messages.CACHE_NOT_WORTH.render(tokens=10_000, model="gemini-3.8-flash", ttl_s=3600),
        ),
        # a model with implicit caching only is never sent a cache (the stand-in refuses one, as the API does)
        ({"model": "gemini-4-argon"}, "none", messages.CACHE_IMPLICIT_ONLY.render(model="gemini-4-argon")),
        # implicit caching served the last turn: no cache is made, and one in use goes; a cache it does not
        # serve enough stays, and a cache that does not pay for its TTL stays as before when nothing was served
        ({"hit": 0.9}, "none", messages.CACHE_IMPLICIT_SERVES.render(share=0.9, tokens=10_000)),
        ({"hit": 0.9, "existing_sha": "h1"}, "drop", messages.CACHE_IMPLICIT_SERVES.render(share=0.9, tokens=10_000)),
        ({"hit": 0.5, "existing_sha": "h1"}, "use", messages.CACHE_UNCHANGED.render(tokens=10_000)),
        ({"ttl_s": 3600.0, "existing_sha": "h1"}, "use", messages.CACHE_UNCHANGED.render(tokens=10_000)),
    ],
)
def test_decide(change, action, reason):
    d = decide(**{**KW, **change})
    assert (d.action, d.reason) == (action, reason)


def test_a_head_under_the_minimum_is_filled_up_to_it_and_the_filler_says_what_it_is():
    d = decide(**{**KW, "head_tokens": 3000})
    assert (d.action, d.pad) == ("create", 1096)
    filler = padding(d.pad)
    assert estimate_tokens(filler) >= d.pad * PAD_MARGIN  # a tokenizer counting 10% fewer still reaches it
    assert "not part of the notebook" in filler and padding(0) == ""
    # the rule at its edge (Flash: 0.675 saved a read per head token against 0.75 a filler token, 10% more filler
    # than the shortfall, and 0.242 a cached token): one read pays from 2,932 tokens, two from 2,032
    assert not padding_pays(FLASH, 600, 2931, 1) and padding_pays(FLASH, 600, 2932, 1)
    assert not padding_pays(FLASH, 600, 2031, 2) and padding_pays(FLASH, 600, 2032, 2)
    assert not padding_pays(FLASH, 600, 3000, 2, hit=0.7)  # what implicit caching serves, filling saves nothing of
    # beside a filled cache, implicit caching serves the tail only because the filler brings the requests over the
    # minimum: without it, a head of 2,500 and 900 read past the cache are under it, and nothing is served; from
    # the minimum and the filler's margin on (4,096 x 1.1), the share measured
    assert filler_served(FLASH, 0.9, 2_500, 900) == 0.0 and filler_served(FLASH, 0.9, 2_500, 2_005) == 0.0
    assert filler_served(FLASH, 0.9, 2_500, 2_006) == 0.9


def test_a_chain_carries_filler_while_implicit_caching_serves_it_and_keeps_it_until_dropping_it_costs_less():
    # under the minimum, over a turn of two requests: e x chain x (2 - new) against the filler (10% over the
    # shortfall) at (0.75 - e) a read, a new one read in full by the first request; e = hit x 0.675
    assert implicit_padding_pays(FLASH, 2_500, 1_596, 1.0, 2, new=True)  # 1,687 against 1,449
    assert not implicit_padding_pays(FLASH, 2_300, 1_796, 1.0, 2, new=True)  # 1,552 against 1,630
    assert not implicit_padding_pays(FLASH, 3_500, 596, 1.0, 1, new=True)  # one request: it saves nothing
    assert implicit_padding_pays(FLASH, 2_300, 1_796, 1.0, 2, new=False)  # carried: 3,105 against 296
    assert not implicit_padding_pays(FLASH, 2_300, 1_796, 0.0, 2, new=False)  # nothing served
    # past it, kept until reading the filler on the requests since has cost a re-read of the chain (0.675 x
    # 5,000 = 3,375 against 2,000 x 0.075 = 150 a request: 22 requests keep it, the 23rd drops it)
    assert filler_kept(FLASH, 5_000, 2_000, 22, 1.0) and not filler_kept(FLASH, 5_000, 2_000, 23, 1.0)
    assert not filler_kept(FLASH, 5_000, 2_000, 0, 0.0)  # nothing served: it goes at once


def test_the_hit_a_chain_shows_is_measured_on_what_its_later_requests_read():
    def turn(i, tokens, cached, requests=2):
        usage = Usage(input_tokens=tokens, output_tokens=10, cached_tokens=cached, requests=requests)
        return Turn(index=i, mode="ask", prompt="q", state_mode="interactions", usage=usage)

    # a new chain's first request finds nothing: 4,200 + 4,300 read, 4,200 served is all a turn could be
    assert measured_hit([turn(1, 8_500, 4_200)], 4_096) == pytest.approx(4_200 / 4_250)
    assert measured_hit([turn(1, 8_500, 4_200), turn(2, 6_000, 6_000)], 4_096) == pytest.approx(4_200 / 4_250)
    assert measured_hit([turn(1, 3_000, 0)], 4_096) is None  # under the minimum: it cannot show
    assert measured_hit([turn(1, 9_000, 0, requests=1)], 4_096) == 0.0


def test_a_used_cache_is_refreshed_when_half_its_ttl_is_gone():
    assert not decide(**{**KW, "existing_sha": "h1", "existing_expires": 1400.0}).refresh
    assert decide(**{**KW, "existing_sha": "h1", "existing_expires": 1299.0}).refresh


DOC = Document(key="cell-a", label="In[1]", source="def f():\n    return 1\n")
EDITS = (Edit(find="return 1", replace="return 2"),)  # a small change, answered as edits


def test_the_stable_head_ends_with_the_content_holding_the_document_and_leaves_the_prompt_out():
    conv = Conversation("c")
    ctx = ContextPiece("secondaryContext", "x = 1\n")
    plan = conv.plan_turn("ask", "q1", DOC, [ctx])
    contents, head = cacheable(conv.history, plan)
    assert head == 1 and len(contents) == 2
    held, prompt = (json.loads(c["parts"][0]["text"]) for c in contents)
    assert held == {"currentSource": DOC.source, "secondaryContext": "x = 1\n", "document": "In[1]"}
    assert prompt == {"mode": "ask", "prompt": "q1"}
    conv.commit(plan, "a1")
    plan2 = conv.plan_turn("ask", "q2", DOC, [ctx])
    contents2, head2 = cacheable(conv.history, plan2)
    assert contents2[:2] == contents  # the material and the first prompt are as before: a cache of them serves
    # the finished turn no longer changes, so the head may take it (whether a cache does: folding_pays)
    assert head2 == 3 and json.loads(contents2[head2]["parts"][0]["text"])["prompt"] == "q2"
    assert shared_prefix(build_contents(conv.history, plan2), contents2) == 0  # unsplit: one content per turn


def test_a_proposal_waiting_for_apply_ends_the_head_before_it_until_the_user_acts():
    """Its outcome is still to come (and changes its content): a cache holding it would serve one turn."""
    conv = Conversation("c")
    conv.commit(conv.plan_turn("ask", "q1", DOC), "a1")
    turn = conv.commit(
        conv.plan_turn("edit", "e1", DOC), "why", proposal_edits=EDITS, proposal_source="def f():\n    return 2\n"
    )
    contents, head = cacheable(conv.history, conv.plan_turn("ask", "q2", None))  # an ask about no cell
    assert head == 2 and json.loads(contents[head]["parts"][0]["text"])["prompt"] == "e1"  # through q1's answer
    conv.apply(turn)
    contents, head = cacheable(conv.history, conv.plan_turn("ask", "q2", None))
    assert head == 4 and json.loads(contents[head - 1]["parts"][0]["text"])["outcome"] == "applied"


def test_an_applied_proposal_moves_the_head_to_the_model_turn_holding_it():
    conv = Conversation("c")
    plan = conv.plan_turn("edit", "e1", DOC)
    turn = conv.commit(plan, "why", proposal_source="def f():\n    return 2\n")
    conv.apply(turn)
    new = Document(key="cell-a", label="In[1]", source=turn.proposal_source)
    contents, head = cacheable(conv.history, conv.plan_turn("ask", "q", new))
    assert head == 2  # the first user turn, compacted to a marker (one content again), then the model's proposal
    assert "proposedSource" in json.loads(contents[head - 1]["parts"][0]["text"])
    assert json.loads(contents[-1]["parts"][0]["text"]) == {"mode": "ask", "prompt": "q", "sourceSynchronized": True}
