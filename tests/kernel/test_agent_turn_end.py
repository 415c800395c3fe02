"""A finished agent turn's widgets are finished (issue 40, item 7): when the turn ends (Stop, the kernel's
interrupt) an approval still waiting says it was not run and its buttons are disabled, and no later click makes it
claim an approval; the stop line says what the turn wrote stays and its Undo is there. (After ``z`` the Undo line
says so without a click: test_agent_undone_told.py.) Real kernel, the fake JupyterLab, the real SDK over HTTP to
the stand-in, which plays the agent.
"""

from __future__ import annotations

import html

import pytest
from test_agent_run import approval_boxes, click_when_asked, finish, insert_then_run, lab, start

from genai_magics import messages

pytestmark = pytest.mark.kernel

PROMPT = "%%gemini_agent\nShow parse('5')."


def interrupted_at_its_approval(ff, stub) -> str:
    """An agent turn that inserted a cell and waits for the click to run it, stopped by the kernel's interrupt
    (the kernel's stop button): the turn's message id, for its end."""
    ff.execute("a")
    insert_then_run(stub, "print(parse('5') + 1)\n")
    msg_id = start(ff, PROMPT, "m")
    assert ff.pump_until(lambda: len(approval_boxes(ff)) == 1, timeout=30), ff.statuses()
    ff.km.interrupt_kernel()
    return msg_id


def test_the_kernels_interrupt_ends_a_waiting_approval_and_no_later_click_approves_it(stub, tmp_path):
    with lab(stub, tmp_path, ("a", "def parse(s):\n    return int(s)\n"), ("m", PROMPT)) as ff:
        msg_id = interrupted_at_its_approval(ff, stub)
        run = finish(ff, msg_id)
        # the stop line tells the truth: the inserted cell stays, and its Undo is there
        assert messages.AGENT_STOPPED.within(run.stderr), run.stderr
        assert not messages.STOPPED.within(run.stderr)
        (new,) = [c for c in ff.cells if c.id not in ("setup", "a", "m")]
        assert "Undo" in ff.buttons()
        # the approval says the turn ended; its buttons are disabled
        box = ff.widget_models[approval_boxes(ff)[0]]
        children = [ff.widget_models[child.removeprefix("IPY_MODEL_")] for child in box["children"]]
        buttons = [c for c in children if c.get("_model_name") == "ButtonModel"]
        assert buttons and all(b["disabled"] for b in buttons)
        status = html.unescape(next(c["value"] for c in children if c.get("_model_name") == "HTMLModel"))
        assert messages.APPROVAL_ENDED.render(label="cell #3", done="run") in status, status
        # a later click (a stale view's) approves nothing
        click_when_asked(ff, "Run")
        ff.pump(1.0)
        assert new.outputs == [] and new.execution_count is None
        assert not any("approved" in html.unescape(v) for v in ff.statuses())


def test_stop_says_what_the_turn_wrote_stays_with_its_undo(stub, tmp_path):
    with lab(stub, tmp_path, ("a", "x = 1\n"), ("m", PROMPT)) as ff:
        insert_then_run(stub, "print('never')\n")
        msg_id = start(ff, PROMPT, "m")
        click_when_asked(ff, "Stop")
        run = finish(ff, msg_id)
        assert messages.AGENT_STOPPED.within(run.stderr) and not messages.STOPPED.within(run.stderr), run.stderr
        ff.click(ff.buttons()["Undo"])
        assert ff.pump_until(lambda: [c.id for c in ff.cells] == ["setup", "a", "m"], timeout=20)
