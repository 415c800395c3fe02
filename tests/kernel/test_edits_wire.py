"""Edit answers as ``edits`` over the wire: a real kernel, the real SDK over HTTP, the stand-in's model.

The stand-in answers a big document's edit with ``edits`` (as the system
instruction asks) and applies every model turn's edits to what it holds, so its
``held_document_sha256`` shows whether the model and the kernel agree.
"""

from __future__ import annotations

import json

import pytest
from helpers.fake_frontend import FakeFrontend
from helpers.kernel import FAKE_KEY
from helpers.wire import api_requests, current_payload, transcript

from genai_magics import messages
from genai_magics.engine.hashing import sha256_text
from genai_magics.stub.edits import EDITS_MIN_LINES
from genai_magics.stub.model import edit_source

pytestmark = pytest.mark.kernel
MODES = ["contents", "interactions"]
BIG = "".join(f"row_{i} = load({i})  # part {i % 7}\n" for i in range(2 * EDITS_MIN_LINES))


@pytest.fixture
def lab(stub, tmp_path):
    stub.reset()
    cells = [("setup", "%load_ext genai_magics"), ("big", BIG), ("m", ""), ("q", "%%gemini_ask\nWhy?")]
    with FakeFrontend(
        cells=cells, env={"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY}, cwd=str(tmp_path)
    ) as ff:
        ff.execute("setup")
        ff.execute("big")
        yield ff


def edit(ff, prompt: str, mode: str):
    ff.edit("m", f"%%gemini_edit --state {mode} --cell big\n{prompt}")
    return ff.execute("m")


def schema(record: dict) -> dict:
    body = record["json"]
    if record["kind"] == "interaction.create":
        return body["response_format"]["schema"]
    config = body["generationConfig"]
    return config.get("responseJsonSchema") or config["responseSchema"]


def answer(record: dict) -> dict:
    return json.loads(record["response_text"])


@pytest.mark.parametrize("mode", MODES)
def test_an_edit_answered_as_edits_applies_exactly_and_a_second_builds_on_the_first(lab, stub, mode):
    edit(lab, "Add logging.", mode)
    first = api_requests(stub)[-1]
    assert "edits" in {k.lower() for k in schema(first)["properties"]}  # offered beside proposedSource
    sent = answer(first)
    assert "edits" in sent and "proposedSource" not in sent  # a small change to a big cell: only the change
    lab.click_until("Apply", "Applied")
    one = edit_source("Add logging.", BIG)
    assert lab.source("big") == one
    lab.execute("q")
    ask = api_requests(stub)[-1]
    assert current_payload(ask).get("sourceSynchronized") is True and "currentSource" not in current_payload(ask)
    assert ask["held_document_sha256"] == sha256_text(one)  # the model applied its own edits: it holds Apply's text
    if mode == "contents":
        model_turn = transcript(ask)[1][1]
        assert model_turn["edits"] == sent["edits"] and "proposedSource" not in model_turn
    edit(lab, "Add types.", mode)
    second = api_requests(stub)[-1]
    assert current_payload(second).get("sourceSynchronized") is True
    assert second["held_document_sha256"] == sha256_text(one)
    assert "edits" in answer(second)
    lab.click_until("Apply", "Applied")
    two = edit_source("Add types.", one)
    assert lab.source("big") == two
    lab.click_until("Undo", "Undone")
    assert lab.source("big") == one
    lab.execute("q")
    after = api_requests(stub)[-1]
    assert current_payload(after).get("sourceSynchronized") is True
    assert after["held_document_sha256"] == sha256_text(one)  # the undone edits are not held


@pytest.mark.parametrize("mode", MODES)
def test_edits_that_do_not_apply_are_asked_again_once_as_the_whole_text(lab, stub, mode):
    stub.inject("bad_edits", match="edit")
    run = edit(lab, "Add logging.", mode)
    bad, retry = api_requests(stub)[-2:]
    assert "edits" in answer(bad)
    assert "edits" not in schema(retry)["properties"] and "proposedSource" in schema(retry)["required"]
    asked = current_payload(retry)
    assert asked["mode"] == "edit" and "did not apply" in asked["prompt"]
    if mode == "contents":  # the same conversation: the refused answer, then the ask
        assert retry["json"]["contents"][-2] == {"role": "model", "parts": [{"text": bad["response_text"]}]}
        assert [c["role"] for c in retry["json"]["contents"]] == ["user", "model", "user"]
    else:
        assert retry["json"]["previous_interaction_id"] == bad["interaction_id"]
    assert messages.EDITS_ASKED_AGAIN.render(why="edit 1 of 1: its find text was not found") in run.plain
    assert lab.requests_received == []  # nothing written before Apply
    whole = answer(retry)["proposedSource"]
    lab.click_until("Apply", "Applied")
    assert lab.source("big") == whole
    lab.execute("q")
    ask = api_requests(stub)[-1]
    assert current_payload(ask).get("sourceSynchronized") is True
    assert ask["held_document_sha256"] == sha256_text(whole)


@pytest.mark.parametrize("mode", MODES)
def test_a_second_answer_that_does_not_apply_either_fails_in_one_line_and_records_nothing(lab, stub, mode):
    stub.inject("bad_edits", match="edit", times=2)
    run = edit(lab, "Add logging.", mode)
    assert len(api_requests(stub)) == 2  # asked once more, not again
    assert "Apply" not in lab.buttons()
    out = run.plain + run.stderr
    assert messages.EDITS_AGAIN.within(out), out
    assert "Traceback" not in out
    assert lab.source("big") == BIG and lab.requests_received == []
    lab.execute("q")  # nothing was recorded: the model is sent the cell again
    assert current_payload(api_requests(stub)[-1])["currentSource"] == BIG


@pytest.mark.parametrize("mode", MODES)
def test_a_notebook_edit_answered_as_edits_changes_only_the_cell_it_names(stub, tmp_path, mode):
    stub.reset()
    cells = [("setup", "%load_ext genai_magics"), ("first", "import math\n"), ("big", BIG), ("m", "")]
    with FakeFrontend(
        cells=cells, env={"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY}, cwd=str(tmp_path)
    ) as ff:
        ff.execute("setup")
        ff.edit("m", f"%%gemini_edit --notebook --state {mode}\nAdd a title comment.")
        ff.execute("m")
        request = api_requests(stub)[-1]
        held = current_payload(request)["currentSource"]  # the percent text, ids and all
        sent = answer(request)
        assert "edits" in sent and "proposedSource" not in sent
        assert "# %% id=first" in sent["edits"][0]["find"]  # the stand-in edits inside the first cell
        ff.click_until("Apply", "Applied", timeout=15)
        assert ff.source("first") == "# stub edit: Add a title comment.\nimport math\n"
        assert ff.source("big") == BIG  # the cell no edit named is left alone
        ff.edit("m", "%%gemini_ask --notebook\nAnd now?")
        ff.execute("m")
        ask = api_requests(stub)[-1]
        assert current_payload(ask).get("sourceSynchronized") is True
        assert ask["held_document_sha256"] == sha256_text(edit_source("Add a title comment.", held))
