"""What goes over the wire, turn by turn: the real SDK in a real kernel against the stand-in."""

from __future__ import annotations

import html
import json

import pytest
from helpers.wire import api_requests, current_payload, transcript

from genai_magics import messages
from genai_magics.engine.hashing import sha256_text

CELL_A = "def parse(s):\n    return int(s)\n"
OTHER = "import math\nRADIUS = 2\n"
MODES = ["contents", "interactions"]


def setup_cells(kernel):
    kernel.run(OTHER, cell_id="other")
    kernel.run(CELL_A, cell_id="cell-a")


@pytest.mark.parametrize("mode", MODES)
def test_turn_one_carries_document_and_context_then_an_ask_carries_neither(kernel, stub, mode):
    setup_cells(kernel)
    first = kernel.run(f"%%gemini_ask --state {mode}\nWhat does this do?", cell_id="m1")
    assert "Stub answer to: What does this do?" in first.plain
    second = kernel.run("%%gemini_ask\nAnd why int()?", cell_id="m2")
    assert "Stub answer to: And why int()?" in second.plain
    r1, r2 = api_requests(stub)
    p1, p2 = current_payload(r1), current_payload(r2)
    assert p1["currentSource"] == CELL_A
    assert "RADIUS = 2" in p1["secondaryContext"]
    assert "currentSource" not in p2 and "secondaryContext" not in p2
    assert p2["sourceSynchronized"] is True
    if mode == "interactions":
        assert "previous_interaction_id" not in r1["json"]
        first_id = r1["interaction_id"]  # what the stand-in created for the first turn
        assert r2["json"]["previous_interaction_id"] == first_id
        assert r2["json"]["system_instruction"] == r1["json"]["system_instruction"]
    else:
        roles = [role for role, _ in transcript(r2)]
        assert roles == ["user", "model", "user"]
    assert messages.DOCUMENT_SYNCHRONIZED.within(second.plain)


@pytest.mark.parametrize("mode", MODES)
def test_edit_apply_then_ask_is_synchronized(kernel, stub, mode):
    setup_cells(kernel)
    edit = kernel.run(f"%%gemini_edit --state {mode}\nAdd input validation.", cell_id="m1")
    assert kernel.buttons("Apply"), edit.plain
    kernel.click("Apply")
    kernel.run("%%gemini_ask\nWhy this pattern?", cell_id="m2")
    edit_req, ask_req = api_requests(stub)
    assert current_payload(edit_req)["currentSource"] == CELL_A
    ask = current_payload(ask_req)
    assert ask.get("sourceSynchronized") is True and "currentSource" not in ask
    if mode == "contents":
        # the proposal is the one full copy the model reads
        model_turn = transcript(ask_req)[1][1]
        assert model_turn["kind"] == "code_proposal" and "# stub edit" in model_turn["proposedSource"]
        assert "currentSource" not in transcript(ask_req)[0][1]


@pytest.mark.parametrize("mode", MODES)
def test_edit_discard_then_ask_keeps_base(kernel, stub, mode):
    setup_cells(kernel)
    kernel.run(f"%%gemini_edit --state {mode}\nAdd input validation.", cell_id="m1")
    kernel.click("Discard")
    kernel.run("%%gemini_ask\nOK, why not?", cell_id="m2")
    ask_req = api_requests(stub)[-1]
    ask = current_payload(ask_req)
    assert ask.get("sourceSynchronized") is True and "currentSource" not in ask
    if mode == "contents":
        (_, user1), (_, model1), _ = transcript(ask_req)
        assert user1["currentSource"] == CELL_A
        assert "proposedSource" not in model1 and model1["outcome"] == "discarded"
    else:
        assert list(ask["proposalOutcomes"].values()) == ["discarded"]


@pytest.mark.parametrize("mode", MODES)
def test_rerun_hand_edited_cell_is_resent_and_other_cell_change_resends_only_context(kernel, stub, mode):
    setup_cells(kernel)
    kernel.run(f"%%gemini_ask --state {mode}\nfirst", cell_id="m1")
    edited = CELL_A.replace("int(s)", "int(s.strip())")
    kernel.run(edited, cell_id="cell-a")
    kernel.run("%%gemini_ask\nsecond", cell_id="m2")
    p2 = current_payload(api_requests(stub)[-1])
    assert p2["currentSource"] == edited and "secondaryContext" not in p2
    kernel.run(OTHER + "EXTRA = 1\n", cell_id="other")
    kernel.run("%%gemini_ask --cell cell-a\nthird", cell_id="m3")
    p3 = current_payload(api_requests(stub)[-1])
    assert "currentSource" not in p3 and p3["sourceSynchronized"] is True
    assert "EXTRA = 1" in p3["secondaryContext"]


def test_ten_turn_edit_session_holds_the_code_once(kernel, stub):
    kernel.run(CELL_A, cell_id="cell-a")
    for i in range(10):
        kernel.run(f"%%gemini_edit --cell cell-a\nchange {i}", cell_id=f"m{i}")
        kernel.click("Apply")
    last = api_requests(stub)[-1]
    turns = transcript(last)
    full = [p.get("currentSource") or p.get("proposedSource") for _, p in turns]
    full = [f for f in full if f]
    assert len(full) == 1, "the active code must appear exactly once"
    superseded = [p.get("supersededSourceSha256") or p.get("supersededProposalSha256") for _, p in turns]
    superseded = [s for s in superseded if s]
    # turn 1's base plus proposals 1..8 are superseded; proposal 9 is the full copy
    assert superseded[0] == sha256_text(CELL_A)
    assert len(superseded) == 9
    assert len(set(superseded)) == 9
    assert current_payload(last)["sourceSynchronized"] is True


@pytest.mark.kernel
def test_dry_run_sends_nothing_changes_nothing_and_needs_no_key(stub, tmp_path):
    from helpers.kernel import Kernel

    k = Kernel(env={"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": "", "GOOGLE_API_KEY": ""}, cwd=str(tmp_path))
    try:
        stub.reset()
        k.run("%load_ext genai_magics", cell_id="setup")
        k.run(CELL_A, cell_id="cell-a")
        dry = k.run("%%gemini_edit --dry-run\nAdd validation", cell_id="m1")
        document, title, body = dry.plain.split("\n", 2)
        assert document == "document: In[2] · parse()"  # named at the top of the dry run too
        assert title.startswith(messages.DRY_RUN.render(state="contents"))
        request = json.loads(body)
        assert json.loads(request["contents"][-1]["parts"][0]["text"])["currentSource"] == CELL_A
        assert api_requests(stub) == []
        status = k.run("%gemini status", cell_id="s").stdout
        assert status.splitlines()[1] == messages.NO_CONVERSATION_YET.render()
        missing = k.run("%%gemini_ask\nhello", cell_id="m2")
        assert messages.NO_API_KEY.shown() in missing.stderr and "Traceback" not in missing.plain
        assert missing.errors == []
    finally:
        k.close()


def test_a_second_click_does_nothing_and_says_why(kernel, stub):
    kernel.run(CELL_A, cell_id="cell-a")
    kernel.run("%%gemini_edit\nAdd input validation.", cell_id="m1")
    kernel.click("Apply")
    status = kernel.run("%gemini status", cell_id="s1").stdout
    kernel.click("Apply")
    refused = messages.REFUSED.render(action="Apply", reason=messages.ALREADY_APPLIED.render())
    assert any(refused in v for v in kernel.html_values())
    assert kernel.run("%gemini status", cell_id="s2").stdout == status
    apply_id = kernel.buttons("Apply")[-1]
    discard_id = kernel.buttons("Discard")[-1]
    assert kernel.state(apply_id)["disabled"] is True and kernel.state(discard_id)["disabled"] is True
    undo_id = kernel.buttons("Undo")[-1]
    assert kernel.state(undo_id)["disabled"] is False


def test_without_a_live_frontend_apply_says_to_paste_and_copy_shows_the_text(kernel, stub):
    kernel.run(CELL_A, cell_id="cell-a")
    kernel.run("%%gemini_edit\nAdd input validation.", cell_id="m1")
    assert any(messages.KERNEL_STATE_APPLY.within(html.unescape(v)) for v in kernel.html_values())
    kernel.click("Copy")
    areas = [s["value"] for s in kernel.models.values() if s.get("_model_name") == "TextareaModel"]
    assert len(areas) == 1 and areas[0].startswith("# stub edit: Add input validation.") and areas[0].endswith(CELL_A)
    kernel.click("Apply")
    assert any("paste the proposal into In[" in v for v in kernel.html_values())


@pytest.mark.parametrize("mode", MODES)
def test_generation_config_and_system_instruction_go_with_every_turn(kernel, stub, mode):
    kernel.run("%config GeminiMagics.temperature = 0.25", cell_id="cfg")
    kernel.run(CELL_A, cell_id="cell-a")
    kernel.run(f"%%gemini_ask --state {mode}\nfirst {{braces}} stay", cell_id="m1")
    kernel.run("%%gemini_edit\nsecond", cell_id="m2")
    first, second = api_requests(stub)
    assert current_payload(first)["prompt"].strip() == "first {braces} stay"  # not interpolated
    for record in (first, second):
        body = record["json"]
        if mode == "interactions":
            assert body["generation_config"] == {"temperature": 0.25} and body["system_instruction"]
        else:
            assert body["generationConfig"]["temperature"] == 0.25 and body["systemInstruction"]
    edit_body = second["json"]
    schema = (
        edit_body["response_format"]["schema"]
        if mode == "interactions"
        else edit_body["generationConfig"]["responseSchema"]
    )
    assert set(schema["properties"]) == {"explanation", "edits", "proposedSource"}


@pytest.mark.parametrize("mode", MODES)
def test_after_a_kernel_restart_the_first_turn_sends_everything(kernel, stub, mode):
    setup_cells(kernel)
    kernel.run(f"%%gemini_ask --state {mode}\nfirst", cell_id="m1")
    kernel.km.restart_kernel(now=True)
    kernel.kc.wait_for_ready(timeout=60)
    kernel.run("%load_ext genai_magics", cell_id="setup")
    setup_cells(kernel)
    kernel.run(f"%%gemini_ask --state {mode}\nafter the restart", cell_id="m2")
    sent = api_requests(stub)[-1]
    payload = current_payload(sent)
    assert payload["currentSource"] == CELL_A and "RADIUS = 2" in payload["secondaryContext"]
    if mode == "interactions":
        assert "previous_interaction_id" not in sent["json"]
    else:
        assert len(sent["json"]["contents"]) == 1


def test_two_conversations_on_one_cell_each_resend_what_they_do_not_hold(kernel, stub):
    setup_cells(kernel)
    kernel.run("%%gemini_ask -c x --cell cell-a\nfirst in x", cell_id="m1")
    kernel.run("%%gemini_ask -c y --cell cell-a\nfirst in y", cell_id="m2")
    kernel.run("%%gemini_edit -c x --cell cell-a\nchange it", cell_id="m3")
    kernel.click("Apply")  # the cell now holds x's proposal
    kernel.run("%%gemini_ask -c x --cell cell-a\nx again", cell_id="m4")
    kernel.run("%%gemini_ask -c y --cell cell-a\ny again", cell_id="m5")
    x_again, y_again = (current_payload(r) for r in api_requests(stub)[-2:])
    assert x_again.get("sourceSynchronized") is True and "currentSource" not in x_again
    assert y_again["currentSource"].startswith("# stub edit: change it")


def test_markup_in_an_answer_is_shown_as_text(kernel, stub):
    kernel.run(CELL_A, cell_id="cell-a")
    run = kernel.run("%%gemini_ask\nwhat is <img src=x onerror=alert(1)> in `a<b`?", cell_id="m1")
    shown = [
        m["content"]["data"]["text/markdown"]
        for m in run.messages
        if m["msg_type"] in ("display_data", "update_display_data") and "text/markdown" in m["content"]["data"]
    ]
    final = shown[-1]
    assert "&lt;img src=x onerror=alert(1)>" in final and "<img" not in final
    assert "`a<b`" in final  # code stays code


def test_the_footer_reports_the_bytes_that_went_over_the_wire(kernel, stub):
    kernel.run(CELL_A, cell_id="cell-a")
    ask = kernel.run("%%gemini_ask\nhow big?", cell_id="m1")
    edit = kernel.run("%%gemini_edit --state interactions -c i\nand now?", cell_id="m2")
    sizes = [r["body_bytes"] for r in api_requests(stub)]
    assert f"request {sizes[0]:,} B" in ask.plain and f"request {sizes[1]:,} B" in edit.plain


def test_a_cell_that_cannot_be_sent_is_left_out_of_the_context(kernel, stub):
    kernel.run("s = 'ab\x00cd'  # a literal NUL: the cell fails, but it was run", cell_id="nul")
    kernel.run(OTHER, cell_id="other")
    kernel.run(CELL_A, cell_id="cell-a")
    kernel.run("%%gemini_ask\nwhat is here?", cell_id="m1")
    context = current_payload(api_requests(stub)[-1])["secondaryContext"]
    assert "RADIUS = 2" in context and "id=nul" not in context
