"""Long sessions (issue 33): what the model fetched fades to markers, and no conversation is stuck at the
model's input limit.

The extension in an in-process IPython shell, the real SDK over real HTTP to the stand-in, which plays a
model calling the functions it is scripted to call and, given an input limit (``StubServer.limit_input``),
answers a request past it with Gemini's 400 and lists it as the models endpoint's ``input_token_limit``.
"""

from __future__ import annotations

import json

import pytest
from helpers.wire import api_requests
from hypothesis import example, given
from hypothesis import strategies as st

from genai_magics import messages
from genai_magics.gemini.transport import body_bytes, body_bytes_at_most

STATES = ["contents", "interactions"]
LIMIT = 12_500  # tokens: 50 kB at the stand-in's four bytes a token
TURNS = 24


def call(function: str, **args: str) -> dict:
    return {"name": function, "args": args}


def prompt(i: int) -> str:
    """A question with 2.5 kB pasted into it (no two alike): the transcript grows past the limit in ~20 turns."""
    lines = "".join(f"line {i}.{j}: value {i * j:08d}\n" for j in range(120))
    return f"question {i}: what does this log say?\n{lines}"


@pytest.fixture
def notebook(magic_shell):
    magic_shell.run("%gemini reset --all", cell_id="reset")
    for name in ("tools", "max_tool_calls", "model", "cache"):
        setattr(magic_shell.magics, name, magic_shell.magics.trait_defaults(name))
    for i in range(4):
        magic_shell.run(f"x{i} = {i}\n" + "".join(f"# note {i}.{j}\n" for j in range(60)), cell_id=f"c{i}")
    yield magic_shell
    magic_shell.magics.session.limits.learned.clear()  # the session outlives the test: the stand-in's limit must not


def ask(shell, state: str, text: str, cell_id: str, flags: str = ""):
    return shell.run(f"%%gemini_ask --state {state} {flags}\n{text}", cell_id=cell_id)


def history(shell) -> list:
    return shell.magics.session.conversations["default"].history


@pytest.mark.parametrize("state", STATES)
def test_a_conversation_past_a_small_limit_answers_every_turn_and_says_what_was_compacted(notebook, stub, state):
    stub.limit_input(LIMIT)
    notes = []
    for i in range(1, TURNS + 1):
        stub.script_tools([[call("read_cell", ref=f"c{i % 4}")]])
        shown = ask(notebook, state, prompt(i), cell_id=f"m{i}")
        assert shown.stderr == "", f"turn {i}: {shown.stderr}"
        assert "Function results read: read_cell" in shown.plain  # answered, after its function call
        notes.append(shown.plain)
    said = messages.CHAIN_OVER_LIMIT if state == "interactions" else messages.COMPACTED
    assert any(said.within(n) for n in notes), "no turn said what it compacted"
    refused = [r for r in api_requests(stub) if r["status"] == 400]
    # the table's limit is Gemini's: the first refusal teaches the stand-in's, every later request fits it
    assert len(refused) == 1
    assert all(r["input_tokens"] <= LIMIT for r in api_requests(stub) if r["status"] == 200)
    assert [t.prompt for t in history(notebook)] == [prompt(i).strip() for i in range(1, TURNS + 1)]  # all kept


@pytest.mark.parametrize("state", STATES)
def test_the_models_endpoint_gives_the_limit_so_no_request_passes_it(notebook, stub, state):
    stub.limit_input(LIMIT)
    listed = notebook.run("%gemini models", cell_id="models")
    assert listed.stderr == ""
    for i in range(1, TURNS + 1):
        stub.script_tools([[call("read_cell", ref=f"c{i % 4}")]])
        assert ask(notebook, state, prompt(i), cell_id=f"m{i}").stderr == ""
    assert all(r["status"] == 200 for r in api_requests(stub))


@pytest.mark.parametrize("state", STATES)
def test_a_turn_that_cannot_fit_says_the_limit_and_the_way_on_and_changes_nothing(notebook, stub, state):
    ask(notebook, state, "first", cell_id="m1")
    stub.limit_input(2_000)
    shown = ask(notebook, state, prompt(2) * 4, cell_id="m2")  # 10 kB in the prompt alone: nothing to leave out
    assert messages.INPUT_LIMIT.matches(shown.stderr.strip(), limit=2000)
    assert "--new" in shown.stderr and "%gemini reset" in shown.stderr
    assert [t.prompt for t in history(notebook)] == ["first"]
    stub.limit_input(None)
    assert ask(notebook, state, "thanks", cell_id="m3").stderr == ""  # the conversation goes on


def test_results_fade_to_the_calls_that_fetch_them_and_a_faded_result_is_fetched_whole_again(notebook, stub):
    notebook.magics.cache = "off"  # the earlier turn in the request, not in a cache the head may fill up to
    stub.script_tools([[call("read_cell", ref="c1")]])
    ask(notebook, "contents", "read c1", cell_id="m1")
    (_, answered) = api_requests(stub)
    (whole,) = answered["tool_results"]
    assert "text" in whole["response"]  # whole in its own turn: the answer rests on it
    stub.clear()
    stub.script_tools([[call("read_cell", ref="c1")]])
    ask(notebook, "contents", "read c1 again", cell_id="m2")
    first, second = api_requests(stub)
    parts = [p for c in first["json"]["contents"] for p in c["parts"]]
    # the earlier turn's call and its answer left out whole; its user content names the call
    assert not [p for p in parts if "functionCall" in p or "functionResponse" in p]
    earlier = json.loads(first["json"]["contents"][0]["parts"][0]["text"])
    assert earlier["prompt"] == "read c1" and earlier["fetched"] == ["read_cell(c1)"]
    (again,) = second["tool_results"]
    assert "text" in again["response"]  # the model no longer holds it: whole, not "unchanged"
    # the record keeps the result whole
    assert "text" in history(notebook)[0].tool_rounds[0].results[0].response


def test_results_do_not_fade_in_interactions_mode(notebook, stub):
    stub.script_tools([[call("read_cell", ref="c1")]])
    ask(notebook, "interactions", "read c1", cell_id="m1")
    for i in range(2, 6):
        ask(notebook, "interactions", f"turn {i}", cell_id=f"m{i}")
    stub.clear()
    stub.script_tools([[call("read_cell", ref="c1")]])
    ask(notebook, "interactions", "read c1 again", cell_id="m6")
    (again,) = [r for req in api_requests(stub) for r in req["tool_results"]]
    assert again["response"]["unchanged"] is True  # the server chain holds it whole


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
        max_leaves=30,
    )
)
@example({"k\x01": ["\U0001f600\u202e\x1f", -1.5e-300, 10**40]})
def test_the_bytes_upper_bound_that_settles_a_turn_far_under_the_limit_is_never_below_the_count(value):
    """``fit`` serialises a request only when the bound says it may not fit: the bound must never be lower."""
    body = {"contents": value}
    assert body_bytes_at_most(body) >= body_bytes(body)


def test_a_big_paste_after_short_turns_is_weighed_with_them_before_it_goes(notebook, stub):
    """A turn far under the limit goes without its request built to be checked (``TurnSend._far_under``). What
    the turn adds counts: a paste that takes the transcript past the room is compacted before it goes."""
    stub.limit_input(100_000)
    notebook.magics.max_prompt_bytes = 1_000_000
    try:
        assert notebook.run("%gemini models", cell_id="models").stderr == ""  # the kernel knows the limit
        assert ask(notebook, "contents", "first", cell_id="m1").stderr == ""  # the document's turn: never left out
        assert ask(notebook, "contents", prompt(1) * 12, cell_id="m2").stderr == ""  # under a third of the room
        shown = ask(notebook, "contents", prompt(9) * 78, cell_id="big")  # fits without m2, not with it
    finally:
        notebook.magics.max_prompt_bytes = notebook.magics.trait_defaults("max_prompt_bytes")
    assert shown.stderr == "" and messages.COMPACTED.within(shown.plain, limit=100_000, first=2, last=2)
    assert all(r["status"] == 200 for r in api_requests(stub))


def test_once_a_turn_was_compacted_every_later_turn_is_checked_whole(notebook, stub):
    """A turn that left a big turn out read a short transcript: the next turn's own count says far under, but
    the big turn is still in the history. Once this kernel compacted, each turn builds its request to check it,
    so the next one is compacted too, never refused."""
    stub.limit_input(100_000)
    notebook.magics.max_prompt_bytes = 1_000_000
    try:
        assert notebook.run("%gemini models", cell_id="models").stderr == ""
        assert ask(notebook, "contents", "first", cell_id="m1").stderr == ""  # the document's turn: never left out
        assert ask(notebook, "contents", prompt(9) * 80, cell_id="m2").stderr == ""  # with its answer: past the room
        for i in (3, 4):
            shown = ask(notebook, "contents", f"short question {i}", cell_id=f"m{i}")
            assert shown.stderr == "" and messages.COMPACTED.within(shown.plain, limit=100_000, first=2, last=2)
    finally:
        notebook.magics.max_prompt_bytes = notebook.magics.trait_defaults("max_prompt_bytes")
    assert all(r["status"] == 200 for r in api_requests(stub))
