"""Apply, Discard and Undo through the live bridge, with a fake JupyterLab frontend.

The fake frontend pushes snapshots before each execute and answers the
bridge's cell edits the way the labextension does (tests/helpers/fake_frontend.py).
"""

from __future__ import annotations

import html
import re

import pytest
from helpers.fake_frontend import FakeFrontend
from helpers.kernel import FAKE_KEY
from helpers.wire import api_requests, current_payload

from genai_magics import messages

pytestmark = pytest.mark.kernel  # every test here starts a kernel (directly or through nbclient)

CELL_A = "def parse(s):\n    return int(s)"
CELL_B = "def double(x):\n    return 2 * x"


@pytest.fixture
def lab(stub, tmp_path):
    stub.reset()
    cells = [
        ("setup", "%load_ext genai_magics"),
        ("a", CELL_A),
        ("b", CELL_B),
        ("m", "%%gemini_edit\nAdd input validation."),
        ("q", "%%gemini_ask\nWhy?"),
    ]
    with FakeFrontend(
        cells=cells, env={"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY}, cwd=str(tmp_path)
    ) as ff:
        ff.execute("setup")
        yield ff


def status_texts(ff) -> list[str]:
    return [s.get("value", "") for s in ff.widget_models.values() if s.get("_model_name") == "HTMLModel"]


def test_default_target_is_the_cell_above_not_the_last_run(lab, stub):
    lab.execute("b")
    lab.execute("a")  # the most recently run code cell is a, but the magic sits below b
    lab.execute("m")
    sent = current_payload(api_requests(stub)[-1])
    assert sent["currentSource"] == CELL_B
    assert "def parse" in sent["secondaryContext"]


def test_apply_then_undo_edit_the_cell_in_the_frontend(lab, stub):
    lab.execute("b")
    lab.execute("m")
    assert any(messages.LIVE_APPLY.render() in v for v in status_texts(lab))
    lab.click_until("Apply", "Applied")
    proposal = lab.source("b")
    assert proposal.startswith("# stub edit: Add input validation.") and proposal.endswith(CELL_B)
    assert [r["op"] for r in lab.requests_received] == ["set_source"]
    assert lab.requests_received[0]["cell_id"] == "b"
    lab.execute("q")  # the model holds the applied proposal: not re-sent
    ask = current_payload(api_requests(stub)[-1])
    assert ask.get("sourceSynchronized") is True and "currentSource" not in ask
    lab.click_until("Undo", "Undone")
    assert lab.source("b") == CELL_B
    assert [r["op"] for r in lab.requests_received] == ["set_source", "set_source"]


def test_what_happened_to_a_proposal_goes_into_its_saved_text(lab, stub):
    """Each click sends the proposal's saved text anew (saved_view), for the extension to set in its output:
    the saved file then says what happened, which a reopened notebook shows where the widget's model is gone."""
    lab.execute("b")
    lab.execute("m")
    assert lab.saved_views == []  # as shown: the display's own text
    box = next(i for i, s in lab.widget_models.items() if "genai-magics-proposal" in s.get("_dom_classes", ()))
    for label, verb in (("Apply", "Applied"), ("Undo", "Undone")):
        lab.click_until(label, verb)
        assert lab.pump_until(lambda v=verb: any(v in s["data"]["text/plain"] for s in lab.saved_views))
        saved = lab.saved_views[-1]
        assert saved["model_id"] == box
        plain, line = saved["data"]["text/plain"].rsplit("\n", 1)
        assert line == messages.SAVED_VIEW.render()
        assert messages.LIVE_DONE.matches(plain.rsplit("\n", 1)[1], verb=verb)
        assert f"{verb}: " in saved["data"]["text/html"] and "+# stub edit: Add input validation" in plain


def test_a_later_proposal_opens_only_its_own_five_widgets_with_their_state_and_still_applies(lab, stub):
    lab.execute("b")
    lab.execute("m")
    lab.click_until("Discard", "Discarded")
    before = len(lab.comm_messages)
    lab.execute("m")
    sent = [m for m in lab.comm_messages[before:] if m["content"].get("comm_id") in lab.widget_models]
    opened = [m["content"]["data"]["state"] for m in sent if m["msg_type"] == "comm_open"]
    # the layout and the styles are the first proposal's (shared); no update follows the opening
    assert sorted(s["_model_name"] for s in opened) == ["BoxModel"] + ["ButtonModel"] * 3 + ["HTMLModel"]
    assert [m for m in sent if m["msg_type"] == "comm_msg"] == []
    box = next(s for s in opened if s["_model_name"] == "BoxModel")
    assert box["_dom_classes"] == ["genai-magics-proposal"]  # what the labextension marks stale
    html = next(s for s in opened if s["_model_name"] == "HTMLModel")
    assert messages.LIVE_APPLY.within(html["value"])
    assert all(s["layout"].removeprefix("IPY_MODEL_") in lab.widget_models for s in opened)
    lab.click_until("Apply", "Applied")
    assert lab.source("b").startswith("# stub edit: Add input validation.")


def test_an_unrun_hand_edit_is_seen_and_resent(lab, stub):
    lab.execute("b")
    lab.execute("q")
    lab.edit("b", CELL_B + "  # tweaked by hand")  # typed, never run
    lab.execute("q")
    again = current_payload(api_requests(stub)[-1])
    assert again["currentSource"] == CELL_B + "  # tweaked by hand"


def test_apply_refuses_to_overwrite_a_cell_changed_since_the_proposal(lab, stub):
    lab.execute("b")
    lab.execute("m")
    lab.edit("b", "changed meanwhile = 1")
    lab.push_snapshot()
    lab.click_until("Apply", "the cell changed since this proposal was made")
    assert lab.source("b") == "changed meanwhile = 1"
    assert lab.requests_received == []
    lab.click_until("Apply anyway", "Applied")
    assert lab.source("b").endswith(CELL_B)


def test_a_failed_write_changes_nothing(lab, stub):
    lab.execute("b")
    lab.execute("m")
    lab.refuse_requests = "notebook closed"
    lab.click_until("Apply", "Apply failed: notebook closed")
    lab.refuse_requests = None
    lab.execute("q")  # still the base in the cell; the model holds the proposal: resend
    ask = current_payload(api_requests(stub)[-1])
    assert ask["currentSource"] == CELL_B


def test_notebook_edit_applies_and_undoes_cell_edits(stub, tmp_path):
    stub.reset()
    cells = [
        ("setup", "%load_ext genai_magics"),
        ("a", CELL_A),
        ("md", "# Notes", "markdown"),
        ("m", "%%gemini_edit --notebook\nAdd a title comment."),
    ]
    with FakeFrontend(
        cells=cells, env={"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY}, cwd=str(tmp_path)
    ) as ff:
        ff.execute("setup")
        ff.execute("a")
        ff.execute("m")
        doc = current_payload(api_requests(stub)[-1])["currentSource"]
        assert doc.startswith("# %% id=setup") is False and "# %% id=a\n" + CELL_A in doc
        assert "# %% [markdown] id=md\n# Notes" in doc
        ff.click_until("Apply", "Applied")
        assert ff.source("a").startswith("# stub edit: Add a title comment.")
        assert ff.source("md") == "# Notes"
        ff.click_until("Undo", "Undone")
        assert ff.source("a") == CELL_A
        assert [c.id for c in ff.cells] == ["setup", "a", "md", "m"]


def test_a_deleted_target_cell_is_said_and_nothing_changes(lab, stub):
    lab.execute("b")
    lab.execute("m")
    lab.remove_cell("b")
    lab.push_snapshot()
    lab.click_until("Apply", "no longer in the notebook")
    assert lab.requests_received == []
    assert "b" not in [c.id for c in lab.cells]


def test_status_reports_the_live_bridge(lab, stub):
    lab.add_cell("s", "%gemini status")
    out = lab.execute("s").stdout
    assert "notebook view: live notebook (bridge)" in out
    assert "live bridge: 6 cells of fake.ipynb" in out


@pytest.mark.parametrize(("magic", "target"), [("%%gemini_edit", "b"), ("%%gemini_edit --notebook", "a")])
def test_an_old_apply_after_reload_ext_writes_the_cell_through_the_reopened_comm(lab, stub, magic, target):
    """%reload_ext closes the bridge's comm and opens a new one on the same bridge: the
    proposal shown before it still reads the live notebook and writes it (browser test:
    tests/browser/test_lab_restart.py)."""
    lab.execute("b")
    lab.edit("b", CELL_B + "  # by hand")  # never run: Apply must compare against the live cell
    lab.add_cell("m2", f"{magic}\nAdd input validation.")
    lab.execute("m2")
    before = lab.source(target)
    first_comm = lab.bridge_comm_id
    lab.add_cell("reload", "%reload_ext genai_magics")
    lab.execute("reload")
    assert lab.bridge_comm_id not in (None, first_comm)
    lab.click_until("Apply", "Applied")
    assert lab.source(target) == "# stub edit: Add input validation.\n" + before
    lab.click_until("Undo", "Undone")
    assert lab.source(target) == before
    assert [r["cell_id"] for r in lab.requests_received] == [target, target]


def shown_by(ff, run) -> str:
    """What a cell run shows now: its printed text and the text of the widgets it displayed, as they are
    after every comm message since (a widget's later state included)."""
    texts = [run.stdout]
    for model_id in run.widget_model_ids:
        state = ff.widget_models.get(model_id, {})
        texts.append(html.unescape(re.sub(r"<[^>]+>", "", state.get("value", ""))))
    return "\n".join(texts)


def test_a_line_command_shows_its_own_outcome_once_the_live_write_is_done(lab, stub):
    """%gemini undo after a button Apply: the write is answered by the frontend after the cell finished,
    so the line must end as the Undo's outcome, never the status of the click before (issue 28)."""
    lab.execute("b")
    lab.execute("m")
    lab.click_until("Apply", "Applied")
    assert any(messages.LIVE_DONE.within(v) for v in status_texts(lab))  # and says to run the cell
    lab.add_cell("apply", "%gemini apply")
    lab.add_cell("undo", "%gemini undo")
    again = lab.execute("apply")
    assert again.stdout.strip() == messages.REFUSED.render(action="Apply", reason=messages.ALREADY_APPLIED.render())
    run = lab.execute("undo")
    assert lab.pump_until(lambda: lab.source("b") == CELL_B, timeout=15)
    assert lab.pump_until(lambda: "Undone" in shown_by(lab, run), timeout=15), shown_by(lab, run)
    shown = shown_by(lab, run)
    assert "already applied" not in shown
    assert messages.LIVE_DONE.within(shown) and "the code from before the proposal is now in" in shown


def test_run_it_is_said_only_while_the_kernel_has_other_code_than_the_cell(lab, stub):
    """Apply writes code the kernel never ran: 'Run it'. Undo back to the code the kernel ran last: not."""
    lab.execute("b")
    lab.execute("m")
    lab.click_until("Apply", "Applied")
    assert any(messages.LIVE_DONE.within(v, run=messages.RUN_IT.render()) for v in status_texts(lab))
    lab.click_until("Undo", "Undone")
    assert lab.source("b") == CELL_B  # the code In[2] ran
    shown = [v for v in status_texts(lab) if messages.LIVE_DONE.within(v)]
    assert shown and all(messages.LIVE_DONE.within(v, run=messages.RAN_ALREADY.render()) for v in shown), shown
    assert not any(messages.RUN_IT.render().strip() in v for v in status_texts(lab))


def test_restart_and_run_all_waits_for_the_bridge_and_gemini_apply_writes_the_cell(stub, tmp_path):
    """Restart & Run All (issue 41): the extension's first snapshot arrives behind the queued cells.
    ``%gemini apply`` in the run waits for it, as the buttons do, and writes the cell once it is there;
    ``%gemini status`` says the bridge is on its way, not that no notebook answered."""
    stub.reset()
    cells = [
        ("setup", "%load_ext genai_magics"),
        ("b", CELL_B),
        ("m", "%%gemini_edit\nAdd input validation."),
        ("apply", "%gemini apply"),
        ("status", "%gemini status"),
    ]
    env = {"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY}
    with FakeFrontend(cells=cells, env=env, cwd=str(tmp_path)) as ff:
        runs = {run.cell_id: run for run in ff.run_all()}
        assert [run.status for run in runs.values()] == ["ok"] * 5
        said = "".join(run.stdout + run.stderr for run in runs.values())
        assert messages.BRIDGE_NOT_CONNECTED.render() not in said + "".join(ff.statuses())
        assert messages.BRIDGE_COMING.render() in runs["status"].stdout.splitlines()
        assert messages.BRIDGE_UNANSWERED.render() not in said
        (line,) = runs["apply"].widget_model_ids  # the command's own line: what is being done, then the outcome
        applied = "Applied: the proposal is now in In[2]"
        assert ff.pump_until(lambda: applied in ff.widget_models[line]["value"], timeout=15), ff.widget_models[line]
        assert ff.source("b").startswith("# stub edit: Add input validation.")
        assert [r["op"] for r in ff.requests_received] == ["set_source"]


def test_a_write_that_waited_for_the_bridge_too_long_fails_and_is_never_sent_later(stub, tmp_path):
    """Restart & Run All with a slow cell after ``%gemini apply``: the first snapshot comes after the bridge's
    timeout, so the Apply fails with one line, and the write is not made when the snapshot comes at last
    (whoever asked, an agent turn too, has been told it failed)."""
    stub.reset()
    cells = [
        ("setup", "%load_ext genai_magics"),
        ("short", "from genai_magics.kernel.shell_state import state_of\nstate_of(get_ipython()).bridge.timeout = 1.0"),
        ("b", CELL_B),
        ("m", "%%gemini_edit\nAdd input validation."),
        ("apply", "%gemini apply"),
        ("slow", "import time\ntime.sleep(3)"),
    ]
    env = {"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY}
    with FakeFrontend(cells=cells, env=env, cwd=str(tmp_path)) as ff:
        runs = {run.cell_id: run for run in ff.run_all()}
        assert [run.status for run in runs.values()] == ["ok"] * 6
        (line,) = runs["apply"].widget_model_ids
        failed = messages.FRONTEND_NO_REPLY.render(timeout=1.0, op="set_source")
        assert ff.pump_until(lambda: failed in html.unescape(ff.widget_models[line]["value"]), timeout=15), (
            ff.widget_models[line]
        )
        assert ff.pump_until(lambda: ff.snapshots_sent != [], timeout=5)
        ff.pump(1.0)  # the snapshot handled: nothing was waiting any more
        assert ff.requests_received == [] and ff.source("b") == CELL_B
