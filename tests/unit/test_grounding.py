"""Answers grounded in Google Search (issue 44): --search offers Gemini's google_search and url_context beside
the functions, in both state modes; the request's shape is checked against the SDK's own pydantic types; the
sources show as escaped links; the footer counts the searches and the bill prices them per query; the budget
admits a request that may search only when the searches fit the cap too. The in-process shell against the
stand-in (the real SDK over real HTTP), which answers such a request with grounding metadata in Gemini's shape."""

from __future__ import annotations

import pytest
from helpers.wire import api_requests

from genai_magics import messages
from genai_magics.engine.grounding import Grounding, Source, Support, sources_markdown
from genai_magics.gemini.budget import FIRST_SEARCHES
from genai_magics.gemini.models import DEFAULT_MODEL
from genai_magics.gemini.pricing import billing_day, price_for, turn_cost
from genai_magics.gemini.transport import TRANSPORTS

CODE = "def parse(s):\n    return int(s)\n"
MODES = ["contents", "interactions"]
HOSTILE = "What is <img src=x onerror=alert(1)>](javascript:alert(1)) new?"


@pytest.fixture
def shell(magic_shell):
    magic_shell.run("%gemini reset --all")
    magic_shell.run(CODE, cell_id="code")
    return magic_shell


def sources_bundle(shown) -> str:
    (found,) = [
        b["text/markdown"]
        for b in shown.bundles
        if b.get("text/markdown", "").startswith(messages.GROUNDING_SOURCES.render(searches=1))
    ]
    return found


@pytest.mark.parametrize("mode", MODES)
def test_search_offers_the_built_in_tools_beside_the_functions(shell, stub, mode):
    shell.run(f"%%gemini_ask --search --state {mode} -c {mode}\nWhat is new in Python?", cell_id="m1")
    shell.run(f"%%gemini_ask -c {mode}\nAnd without?", cell_id="m2")
    searched, plain = api_requests(stub)
    tools = searched["json"]["tools"]
    if mode == "contents":  # REST camelCase, as the SDK sent it
        assert {"googleSearch": {}} in tools and {"urlContext": {}} in tools
        assert any("functionDeclarations" in t for t in tools)
        assert searched["json"]["toolConfig"] == {"includeServerSideToolInvocations": True}
        assert "googleSearch" not in str(plain["json"].get("tools"))
    else:
        assert {"type": "google_search"} in tools and {"type": "url_context"} in tools
        assert any(t.get("type") == "function" for t in tools)
        assert "google_search" not in str(plain["json"].get("tools"))
    assert searched["searches"] == ["What is new in Python?"] and plain["searches"] == []


def test_the_request_is_valid_against_the_sdks_types():
    from google.genai import types
    from google.genai._gaos.types.interactions.tool import GoogleSearch, Tool, URLContext
    from pydantic import TypeAdapter

    contents = TRANSPORTS["contents"](None, DEFAULT_MODEL, None, ("read_cell",), True, False).settings("ask")
    config = types.GenerateContentConfig.model_validate(contents)  # extra fields forbidden: a typo fails
    assert config.tools is not None and config.tools[1].google_search is not None and config.tools[2].url_context
    assert config.tool_config is not None and config.tool_config.include_server_side_tool_invocations
    interactions = TRANSPORTS["interactions"](None, DEFAULT_MODEL, None, ("read_cell",), True, False).settings("ask")
    kinds = [type(TypeAdapter(Tool).validate_python(t)) for t in interactions["tools"]]
    assert GoogleSearch in kinds and URLContext in kinds  # not the SDK's UnknownTool


@pytest.mark.parametrize("mode", MODES)
def test_the_sources_show_as_escaped_links_and_the_search_is_counted_and_priced(shell, stub, mode):
    shown = shell.run(f"%%gemini_ask --search --state {mode} -c escaped-{mode}\n{HOSTILE}", cell_id="m1")
    assert shown.stderr == ""
    listed = sources_bundle(shown)
    assert "<img" not in listed and "](javascript:" not in listed and "onerror=alert\\(1\\)&gt;" in listed
    assert "(https://example.com/search?q=What%20is%20%3Cimg" in listed  # the link, its specials encoded
    assert "[The Python Standard Library](https://docs.python.org/3/library/)" in listed
    assert messages.FOOTER_SEARCHES.render(count=1) in shown.plain
    usage = shell.magics.session.conversations[f"escaped-{mode}"].history[-1].usage
    price = price_for(DEFAULT_MODEL, None, billing_day())
    assert price is not None and price.search_query == 0.014
    tokens = turn_cost(price, usage.input_tokens or 0, usage.cached_tokens or 0, usage.output_tokens or 0)
    assert usage.searches == 1 and usage.cost_usd == pytest.approx(tokens + price.search_query)
    (row,) = [line for line in shell.run("%gemini cost").stdout.splitlines() if f"'escaped-{mode}'" in line]
    assert messages.COST_ROW.within(row) and messages.COST_SEARCHES.render(count=1) in row


def test_a_request_that_may_search_is_admitted_only_when_the_searches_fit_the_cap(shell, stub):
    price = price_for(DEFAULT_MODEL, None, billing_day())
    assert price is not None and price.search_query is not None
    # room for the tokens of a short ask, not for the searches a first search turn is allowed
    shell.magics.max_turn_cost = FIRST_SEARCHES * price.search_query / 2
    refused = shell.run("%%gemini_ask --search -c s\nWhat is new?", cell_id="m1")
    assert messages.BUDGET_REFUSED.parse(refused.stderr.strip()) is not None, refused.stderr
    assert api_requests(stub) == []
    shell.run("%%gemini_ask -c s\nWhat is new?", cell_id="m2")  # the same ask without searching fits
    assert len(api_requests(stub)) == 1
    shell.magics.max_turn_cost = 1.0
    unknown = shell.run("%%gemini_ask --search --model gemini-4-argon -c g4\nWhat is new?", cell_id="m3")
    assert unknown.stderr.strip() == messages.BUDGET_NO_SEARCH_PRICE.shown(name="max_turn_cost", model="gemini-4-argon")
    assert len(api_requests(stub)) == 1


def test_a_dry_run_shows_the_search_tools_and_sends_nothing(shell, stub):
    dry = shell.run("%%gemini_ask --search --dry-run\nWhat is new?", cell_id="m1")
    assert '"google_search": {}' in dry.plain and '"url_context": {}' in dry.plain
    assert stub.requests == []


def test_sources_markdown_never_links_what_is_not_http():
    shown = sources_markdown(
        Grounding(("q",), (Source("x](javascript:alert(1))", "javascript:alert(1)"),), (Support("a <b>", (0,)),))
    )
    assert "](javascript" not in shown and "<b>" not in shown and "(javascript:alert\\(1\\))" in shown


def test_a_model_that_takes_search_or_functions_searches_without_functions(shell, stub):
    shown = shell.run("%%gemini_ask --search --model gemini-2.5-flash -c old\nWhat is new?", cell_id="m1")
    assert messages.SEARCH_WITHOUT_FUNCTIONS.render(model="gemini-2.5-flash") in shown.plain
    (request,) = api_requests(stub)
    tools = request["json"]["tools"]
    assert {"googleSearch": {}} in tools and not any("functionDeclarations" in t for t in tools)
    assert "toolConfig" not in request["json"]
    agent = shell.run("%%gemini_agent --search --model gemini-2.5-flash -c old2\nFix it.", cell_id="m2")
    assert agent.stderr.strip() == messages.SEARCH_NO_AGENT.shown(model="gemini-2.5-flash")
    assert len(api_requests(stub)) == 1
