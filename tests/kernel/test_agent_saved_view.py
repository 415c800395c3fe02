"""What happened to an agent turn's approval and Undo goes into their saved text (issue 41, item 2): after each
change of their state the kernel sends the widget's saved text anew (``saved_view``, set in its output by the
extension), so a reopened notebook says the run was approved, or that the turn ended, or that the turn was undone,
and keeps the line that the buttons come back only while they would. Real kernel, the fake JupyterLab (it records
the ``saved_view`` messages), the real SDK over HTTP to the stand-in, which plays the agent.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers.fake_frontend import FakeFrontend
from test_agent import TEST, call
from test_agent import lab as notebook  # noqa: F401 (the fixture: a notebook with its first cells run)
from test_agent_run import approval_boxes, click_when_asked, finish, insert_then_run, lab, start
from test_agent_turn_end import interrupted_at_its_approval
from test_agent_undo_cells import nb, said, turn, undo_buttons  # noqa: F401 (nb: the fixture)

from genai_magics import messages

pytestmark = pytest.mark.kernel

PROMPT = "%%gemini_agent\nShow parse('5')."
SAVED = messages.SAVED_VIEW.render()


def saved_text(ff: FakeFrontend, box: str, words: str) -> str:
    """The newest saved text the kernel sent for the widget ``box``, once one holds ``words``."""
    assert ff.pump_until(
        lambda: any(words in s["data"]["text/plain"] for s in ff.saved_views if s["model_id"] == box), timeout=20
    ), [s for s in ff.saved_views if s["model_id"] == box]
    return [s["data"]["text/plain"] for s in ff.saved_views if s["model_id"] == box][-1]


def boxes(ff: FakeFrontend, dom_class: str) -> list[str]:
    return [
        mid
        for mid, s in ff.widget_models.items()
        if s.get("_model_name") == "BoxModel" and dom_class in s.get("_dom_classes", ())
    ]


def shown_text(run: Any, box: str) -> str:
    """The text/plain the agent cell's display of the widget ``box`` was saved with (what the notebook file holds)."""
    (text,) = [
        m["content"]["data"]["text/plain"]
        for m in run.outputs
        if m["msg_type"] == "display_data"
        and m["content"]["data"].get("application/vnd.jupyter.widget-view+json", {}).get("model_id") == box
    ]
    return text


def test_a_run_approved_and_its_turn_undone_say_so_in_their_saved_text(stub, tmp_path):
    with lab(stub, tmp_path, ("a", "def parse(s):\n    return int(s)\n"), ("m", PROMPT)) as ff:
        ff.execute("a")
        insert_then_run(stub, "print(parse('5') + 1)\n")
        msg_id = start(ff, PROMPT, "m")
        click_when_asked(ff, "Run")
        run = finish(ff, msg_id)
        assert run.status == "ok", run.error
        (asked,) = approval_boxes(ff)
        label = "cell #3"
        # shown waiting, with the line that the buttons come back; saved once approved, without it
        assert shown_text(run, asked).endswith(messages.APPROVAL_ASKS.render(label=label) + "\n" + SAVED)
        approved = saved_text(ff, asked, messages.APPROVED_ONCE.render(label=label))
        assert approved.endswith(messages.APPROVED_ONCE.render(label=label)) and SAVED not in approved
        assert "print(parse('5') + 1)" in approved  # what was approved stays in it
        (undo,) = boxes(ff, "genai-magics-turn-undo")
        assert shown_text(run, undo).endswith(SAVED)
        ff.click(ff.buttons()["Undo"])
        undone = saved_text(ff, undo, "Undone")
        assert messages.TURN_UNDONE.within(undone) and messages.TURN_UNDO_RAN.within(undone)
        assert SAVED not in undone


def test_an_approval_the_turn_left_waiting_says_the_turn_ended_in_its_saved_text(stub, tmp_path):
    with lab(stub, tmp_path, ("a", "def parse(s):\n    return int(s)\n"), ("m", PROMPT)) as ff:
        msg_id = interrupted_at_its_approval(ff, stub)
        finish(ff, msg_id)
        ended = messages.APPROVAL_ENDED.render(label="cell #3", done="run")
        text = saved_text(ff, approval_boxes(ff)[0], ended)
        assert text.endswith(ended) and SAVED not in text


def test_an_undo_that_must_wait_for_a_later_turn_keeps_its_saved_line_till_it_is_undone(nb, stub):  # noqa: F811
    turn(nb, stub, "m1", [[call("edit_cell", ref="b", edits=[{"find": "scratch = 1", "replace": "scratch = 2"}])]])
    turn(nb, stub, "m2", [[call("edit_cell", ref="b", edits=[{"find": "scratch = 2", "replace": "scratch = 3"}])]])
    first, second = boxes(nb, "genai-magics-turn-undo")
    nb.click(undo_buttons(nb)[0])
    waits = saved_text(nb, first, "Not undone yet")
    assert waits.endswith(SAVED)  # still ready: its button comes back with the cell
    nb.click(undo_buttons(nb)[1])
    assert SAVED not in saved_text(nb, second, "Undone")
    nb.click(undo_buttons(nb)[0])
    assert SAVED not in saved_text(nb, first, "Undone")


def test_a_turn_taken_back_by_the_notebooks_own_undo_says_so_in_its_undos_saved_text(notebook, stub):  # noqa: F811
    stub.script_tools([[call("insert_cell", after="a", source=TEST)]])
    assert notebook.execute("m").error is None
    (new,) = [c.id for c in notebook.cells if c.id not in ("setup", "a", "b", "q", "m")]
    (undo,) = boxes(notebook, "genai-magics-turn-undo")
    notebook.remove_cell(new)  # z: the next snapshot shows the inserted cell gone
    notebook.push_snapshot(full=True)
    taken_back = saved_text(notebook, undo, messages.TURN_UNDONE_BY_NOTEBOOK.render())
    assert SAVED not in taken_back
