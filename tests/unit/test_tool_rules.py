"""The pure side of the functions the model calls (engine/tools.py): declarations, checks, the sent-once
rule, the transcript's rounds and their compaction, and the record's round trip."""

from __future__ import annotations

import json
import time

import pytest
from helpers.wire import payload_of

from genai_magics.engine.contents import build_contents
from genai_magics.engine.context import ContextPiece
from genai_magics.engine.conversation import Conversation, StateMode
from genai_magics.engine.payloads import to_text
from genai_magics.engine.record import NotebookRecord, dumps
from genai_magics.engine.replay import RecordedConversation
from genai_magics.engine.tools import (
    TOOL_NAMES,
    UNCHANGED_CHARS,
    ToolCall,
    ToolRound,
    bad_call,
    declarations,
    holdings,
    sent_turns,
)
from genai_magics.persistence.schema import loads


def test_declarations_keep_their_fixed_order_whatever_the_order_asked():
    assert [d["name"] for d in declarations(reversed(TOOL_NAMES))] == list(TOOL_NAMES)
    assert [d["name"] for d in declarations(["search_cells", "read_cell"])] == ["read_cell", "search_cells"]
    for d in declarations(TOOL_NAMES):
        assert d["parameters"]["type"] == "object" and d["description"]


@pytest.mark.parametrize(
    ("call", "why"),
    [
        (ToolCall("run_code", {}), "no function 'run_code'"),
        (ToolCall("inspect_variable", "df"), "must be a JSON object"),
        (ToolCall("inspect_variable", {}), "'name' is required"),
        (ToolCall("inspect_variable", {"name": 3}), "'name' is required and must be a string"),
        (ToolCall("list_variables", {"x": 1}), "unexpected argument(s) x"),
    ],
)
def test_a_bad_call_says_why_and_a_good_one_passes(call, why):
    assert why in (bad_call(call, TOOL_NAMES) or "")
    assert bad_call(ToolCall("inspect_variable", {"name": "df"}), TOOL_NAMES) is None


def test_a_piece_the_model_holds_is_unchanged_and_short_a_new_version_is_whole():
    held = holdings(3, {"variables:df": "old"}, {"variables:df": 1}, [ContextPiece("lastError", "E")])
    df = ContextPiece("variables", "x" * 5_000, "df")
    whole = held.answer(ToolCall("inspect_variable", {"name": "df"}), [df])
    assert whole.status == "whole" and whole.pieces == (df,)
    again = held.answer(ToolCall("inspect_variable", {"name": "df"}), [df])
    assert again.status == "unchanged" and again.pieces == () and again.identity == whole.identity
    assert again.response["sent"] == "earlier in this turn" and again.chars < UNCHANGED_CHARS
    error = held.answer(ToolCall("last_error", {}), [ContextPiece("lastError", "E")])
    assert error.status == "unchanged" and error.response["sent"] == "earlier in this turn"
    older = holdings(3, {"variables:df": df.sha256}, {"variables:df": 1}, [])
    assert older.answer(ToolCall("inspect_variable", {"name": "df"}), [df]).response["sent"] == "in turn 1"


def _tool_turn(conv: Conversation, prompt: str, piece: ContextPiece, state: StateMode = "contents") -> None:
    plan = conv.plan_turn("ask", prompt, None, state_mode=state)
    held = holdings(len(conv.history) + 1, conv.sync.context_hashes, sent_turns(conv.history), plan.pieces)
    call = ToolCall("inspect_variable", {"name": "df"}, id=f"c{prompt}")
    result = held.answer(call, [piece])
    model = {"role": "model", "parts": [{"functionCall": {"id": call.id, "name": call.name, "args": call.args}}]}
    conv.commit(plan, f"answer {prompt}", tool_rounds=(ToolRound((result,), model),))


def test_a_result_received_counts_as_held_and_an_older_one_becomes_the_call_that_fetches_it_again():
    conv = Conversation("c")
    v1, v2 = ContextPiece("variables", "df v1", "df"), ContextPiece("variables", "df v1 again", "df")
    _tool_turn(conv, "1", v1, "interactions")  # the server chain holds what it received
    assert conv.sync.context_hashes["variables:df"] == v1.sha256
    contents_turn = Conversation("d")
    _tool_turn(contents_turn, "1", v1)  # contents: the result fades after its turn, so it is no longer held
    assert "variables:df" not in contents_turn.sync.context_hashes
    _tool_turn(conv, "2", v2)
    contents = build_contents(conv.history, conv.plan_turn("ask", "3", None))
    # both turns' results faded: each turn's user content names the call that fetches it again, and the
    # call and its answer are left out together (never one without the other)
    kinds = [next(iter(c["parts"][0])) for c in contents]
    assert kinds == ["text", "text"] * 2 + ["text"]
    users = [payload_of("user", c["parts"][0]["text"]) for c in contents[:-1] if c["role"] == "user"]
    assert [u.get("fetched") for u in users] == [["inspect_variable(df)"]] * 2


def test_a_faded_short_question_and_every_answer_go_as_text_a_long_question_as_the_json_it_was_sent_as():
    conv = Conversation("c")
    long_prompt = "what does this log say?\n" + "line 7: value 00000049 ok\n" * 12  # over SHORT_PROMPT tokens
    for prompt in ("1", long_prompt):
        _tool_turn(conv, prompt, ContextPiece("variables", f"df {len(prompt)}", "df"))
    sent = to_text(conv.plan_turn("ask", long_prompt, None).payload)  # as a question is sent: JSON
    contents = build_contents(conv.history, conv.plan_turn("ask", "3", None))
    texts = [c["parts"][0]["text"] for c in contents]
    # the keys left out: the prompt, then the calls that fetch its results again; the answer as the model wrote it
    assert texts[:2] == ["1\nfetched: inspect_variable(df)", "answer 1"]
    # a long prompt keeps the JSON it went as, so the next request's prefix still holds it (implicit caching)
    assert json.loads(texts[2]) == {"mode": "ask", "prompt": long_prompt, "fetched": ["inspect_variable(df)"]}
    assert sent.endswith('"}') and texts[2].startswith(sent[:-1])
    assert texts[3] == f"answer {long_prompt}"


def test_an_agent_turns_calls_stay_in_the_transcript_each_result_a_marker_a_run_read_again():
    conv = Conversation("c")
    plan = conv.plan_turn("ask", "run it", None)
    held = holdings(1, {}, {}, plan.pieces)
    ran = held.answer(ToolCall("run_cell", {"ref": "7"}, id="r1"), [ContextPiece("outputs", "Out: 3", "7")])
    model = {"role": "model", "parts": [{"functionCall": {"id": "r1", "name": "run_cell", "args": {"ref": "7"}}}]}
    conv.commit(plan, "ran it", tool_rounds=(ToolRound((ran,), model),))
    _tool_turn(conv, "2", ContextPiece("variables", "df v1", "df"))  # a read-only turn after it
    contents = build_contents(conv.history, conv.plan_turn("ask", "3", None))
    # the run changed the notebook: its call and a marker stay (read again, never run again) ...
    kinds = [next(iter(c["parts"][0])) for c in contents]
    assert kinds == ["text", "functionCall", "functionResponse", "text", "text", "text", "text"]
    assert contents[2]["parts"][0]["functionResponse"]["response"]["fetch again"] == "cell_outputs(7)"
    # ... the read-only turn keeps only the call's name
    assert payload_of("user", contents[4]["parts"][0]["text"])["fetched"] == ["inspect_variable(df)"]


def test_a_turn_with_calls_reads_back_from_the_record_whole():
    conv = Conversation("c")
    _tool_turn(conv, "1", ContextPiece("variables", "df v1", "df"))
    rec = RecordedConversation(conv, created=time.time())
    text = dumps(NotebookRecord("/nb.ipynb", 1.0, conversations={"c": rec}))
    back = loads(text).conversations["c"].conversation
    (round_,) = back.history[0].tool_rounds
    (result,) = round_.results
    assert result.call == ToolCall("inspect_variable", {"name": "df"}, "c1") and result.status == "whole"
    assert result.pieces[0].text == "df v1" and round_.model_content == conv.history[0].tool_rounds[0].model_content
    plan = conv.plan_turn("ask", "2", None)
    assert json.dumps(build_contents(back.history, plan)) == json.dumps(build_contents(conv.history, plan))
