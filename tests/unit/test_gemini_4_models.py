"""The Gemini 4 models generally available now (issue 44, item 3): gemini-4-carbon, gemini-4-hydrogen and
gemini-4-neon are priced (with their sources), `%gemini models` marks them priced and "implicit caching
only", and a request to one carries its documented thinking level and never an explicit cache. The real SDK
over real HTTP against the stand-in, which refuses what the real models do (a thinking budget, a level the
model does not take, a cachedContents create)."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest
from helpers.footer import footer_line
from helpers.wire import api_requests

from genai_magics import messages
from genai_magics.gemini.models import DEFAULT_MODEL, traits
from genai_magics.gemini.pricing import PRICES, price_for

CARBON, HYDROGEN, NEON = "gemini-4-carbon", "gemini-4-hydrogen", "gemini-4-neon"
# each model's documented default level (Google's developer guides), as the SDK's JSON and the Interactions API name it
LEVEL = {CARBON: "MEDIUM", HYDROGEN: "HIGH", NEON: "HIGH"}
LAST_NOV, TODAY = dt.date(2026, 11, 30), dt.date(2026, 12, 6)
BIG = "".join(f"# {i}: a line of a long enough document, which defines nothing\n" for i in range(800))


def test_each_gemini_4_model_takes_its_documented_level_and_no_explicit_cache():
    for model, level in LEVEL.items():
        assert traits(model).thinking_level == level.lower() and not traits(model).explicit_cache, model
        assert traits(f"models/{model}") == traits(model)
    assert traits(DEFAULT_MODEL).explicit_cache  # the default Flash model keeps its explicit caches


def test_the_price_table_holds_them_with_their_dated_prices_and_sources():
    rates = {
        m: [(p.input, p.cached_input, p.output) for p in (price_for(m, day=d) for d in (LAST_NOV, TODAY))]
        for m in LEVEL
    }
    assert rates == {
        CARBON: [(2.0, 0.1, 10.0), (4.0, 0.2, 20.0)],  # Carbon's price doubles on 2026-12-01, as Argon's
        HYDROGEN: [(1.5, 0.075, 7.5)] * 2,
        NEON: [(3.0, 0.15, 15.0)] * 2,
    }
    for model in LEVEL:
        for period in PRICES[model]:
            price = period.price
            assert price.storage_hour == 0 and price.cache_minimum == 4096  # implicit caching only
            assert price.cached_input == pytest.approx(price.input / 20)  # Gemini 4: a 95% discount
            # Google's page first, then the others, each with the day it was read
            google = min(price.source.find("docs.cloud.google.com"), price.source.find("documentation.s3ns.fr"))
            others = [price.source.find(site) for site in ("laozhang", "litellm", "sim.ai", "TokenMeter", "cedr")]
            assert 0 <= google < min(i for i in others if i >= 0), model
            assert "read 2026-12-06" in price.source
    assert "assumed" in PRICES[NEON][0].price.source  # its cache minimum is nowhere: said, not guessed silently
    # a generally available Gemini 3 model priced since, its unknowns said as well
    lite = price_for("gemini-3.5-flash-lite", day=TODAY)
    assert (lite.input, lite.cached_input, lite.output) == (0.30, 0.03, 2.50)
    assert lite.source.startswith("ai.google.dev/gemini-api/docs/latest-model") and "assumed" in lite.source


def test_the_stand_in_refuses_what_the_gemini_4_models_refuse_so_the_tests_here_can_fail(stub):
    from google import genai
    from google.genai import errors, types

    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=stub.url))

    def refused(model: str, config: types.GenerateContentConfig) -> int:
        with pytest.raises(errors.ClientError) as caught:
            client.models.generate_content(model=model, contents="hi", config=config)
        return caught.value.code

    budget = types.GenerateContentConfig(thinking_config=types.ThinkingConfig(thinking_budget=128))
    xhigh = types.GenerateContentConfig(thinking_config=types.ThinkingConfig(thinking_level="XHIGH"))
    assert refused(HYDROGEN, budget) == refused(CARBON, xhigh) == 400  # Carbon takes low/medium/high only
    assert client.models.generate_content(model=NEON, contents="hi", config=xhigh).text  # Neon takes xhigh
    with pytest.raises(errors.ClientError) as cache:
        client.caches.create(model=HYDROGEN, config=types.CreateCachedContentConfig(contents=[BIG] * 4))
    assert cache.value.code == 400


@pytest.mark.parametrize("model", list(LEVEL))
def test_a_session_on_a_gemini_4_model_sends_its_level_and_no_explicit_cache(magic_shell, stub, model):
    """Where the default Flash model makes a cache of the stable head, a Gemini 4 model makes none: its
    discount comes from implicit caching of the same prefix."""
    magic_shell.run(BIG, cell_id="g4-big")
    for turn, prompt in enumerate(("what is line 3?", "and line 4?"), 1):
        shown = magic_shell.run(f"%%gemini_ask -c g4 --cell g4-big --model {model}\n{prompt}", cell_id=f"g4-m{turn}")
        assert f"Stub answer to: {prompt}" in shown.plain, shown.stderr
    assert [r for r in stub.requests if r["kind"].startswith("cache.")] == []
    sent = [r["json"] for r in api_requests(stub)]
    assert [body["generationConfig"]["thinkingConfig"] for body in sent] == [{"thinking_level": LEVEL[model]}] * 2
    assert all("cachedContent" not in body and "budget" not in json.dumps(body).lower() for body in sent)
    magic_shell.run("%gemini reset --all")
    # the in-process shell keeps its session for the tests after this one: the long cell shrinks back
    magic_shell.run("pass", cell_id="g4-big")


def test_an_interactions_session_on_hydrogen_sends_its_level(magic_shell, stub):
    shown = magic_shell.run(f"%%gemini_ask --model {HYDROGEN} --state interactions\nwhy int?", cell_id="m1")
    assert "Stub answer to: why int?" in shown.plain, shown.stderr
    (request,) = api_requests(stub)
    assert request["json"]["generation_config"] == {"thinking_level": "high"}


def test_a_cost_cap_admits_hydrogen_and_its_footer_has_a_price(magic_shell, stub):
    magic_shell.magics.max_turn_cost = 1.0  # on this load only: an unpriced model would be refused
    shown = magic_shell.run(f"%%gemini_ask -c h --model {HYDROGEN}\nwhy int?", cell_id="m1")
    assert len(api_requests(stub)) == 1, shown.stderr
    footer = footer_line(shown.plain, turn=1)
    assert messages.FOOTER_TURN.within(footer, model=HYDROGEN) and "~$" in footer


def test_gemini_prices_lists_them_with_their_source_note(magic_shell, stub):
    magic_shell.magics.session.today = lambda: TODAY
    lines = magic_shell.run("%gemini prices").stdout.splitlines()
    rows = {m: [line for line in lines if line[2:].startswith(f"{m} ")] for m in LEVEL}
    assert [row[0] for row in rows[HYDROGEN]] == ["*"]  # one period, in force
    assert rows[HYDROGEN][0].split()[1:6] == [HYDROGEN, "always", "1.5", "0.075", "7.5"]
    assert rows[NEON][0].split()[1:6] == [NEON, "always", "3", "0.15", "15"]
    assert [r.startswith("*") for r in rows[CARBON]] == [False, True] and "since 2026-12-01" in rows[CARBON][1]
    # every row names its note: for these, the one for prices not on Google's pricing page
    for row in (r for model_rows in rows.values() for r in model_rows):
        mark = re.search(r"  (\d+)$", row).group(1)
        note = next(line for line in lines if line.startswith(f"  [{mark}] "))
        assert note.startswith("  [1] not on Google's pricing page")
    one = magic_shell.run(f"%gemini prices {HYDROGEN}")
    assert one.stderr == "" and HYDROGEN in one.stdout and "7.5" in one.stdout


def test_gemini_models_marks_them_priced_and_implicit_caching_only(magic_shell, stub):
    listed = magic_shell.run("%gemini models").stdout.splitlines()
    rows = {line[3:].split()[0]: line for line in listed if line[3:].startswith("gemini")}
    for model in LEVEL:
        assert rows[model][:2] == " $", rows[model]
        assert messages.MODELS_IMPLICIT_ONLY.render() in rows[model]
        assert messages.MODELS_INPUT_LIMIT.render(tokens=1_048_576) in rows[model]
    assert messages.MODELS_IMPLICIT_ONLY.render() not in rows[DEFAULT_MODEL]
