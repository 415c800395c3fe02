"""``%%gemini_agent`` in a real JupyterLab 4 and Notebook 7 (headless Chromium), through the live bridge.

The stand-in plays the agent (``/_stub/script_tools``; the last call names the inserted cell by
``{{id}}``): it inserts a cell below ``In[2]``, edits ``In[2]``, deletes ``In[3]`` and asks to run the
new cell; the writes show at once, the run waits for the Run click in the agent cell; the kernel runs
the cell's code and its output and execution count show under the new cell, never in the agent cell;
the turn's one Undo puts every cell back (the deleted one with its output) and says what ran stays.
What the page holds is read back from the file JupyterLab saves.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request

import pytest
from helpers.agent_scenario import (
    AFTER,
    AGENT,
    END,
    NEW,
    NEW_RAN,
    PARSE,
    PARSE_EDITED,
    ROUNDS,
    SCRATCH,
    SETUP,
    printed_by,
)
from helpers.pages import shown_as
from test_lab_bridge import APPS, NotebookPage, write_notebook
from test_lab_notebook_edit import save
from test_lab_replay import api_requests
from test_lab_restart import STALE, restart_kernel

from genai_magics import messages

pytestmark = pytest.mark.stand_in  # the server's kernels talk to the stand-in (browser/conftest.py: server_env)


def script_agent(stub_url: str, rounds: list) -> None:
    request = urllib.request.Request(
        f"{stub_url}/_stub/script_tools", method="POST", data=json.dumps({"rounds": rounds}).encode()
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert json.load(response)["ok"] is True


def button(cell, label: str):
    return cell.locator("button", has_text=re.compile(rf"^\s*{label}\s*$"))


def kept(cells: list) -> list[dict]:
    """What the agent's turn may change and Undo must put back: every cell but the agent's, as saved."""
    return [dict(c) for c in cells if not c["source"].startswith("%%gemini_agent")]


CELLS = [("setup", SETUP), ("a", PARSE), ("scratch", SCRATCH), ("m", AGENT), ("end", END)]


def run_turn(jupyter_server, page, artifacts, stub_url, cells=CELLS):
    """The cells above the agent's (``m``) run, then the agent's turn (insert, edit, delete, run after the click)
    to its end; the page, the agent cell and every cell but the agent's as saved before the turn."""
    from playwright.sync_api import expect

    path = jupyter_server.root / "agent.ipynb"
    at = [cell_id for cell_id, _ in cells].index("m")  # where the agent cell is, before and after the turn
    write_notebook(path, cells)
    script_agent(stub_url, ROUNDS)
    nb = NotebookPage(page, artifacts)
    nb.open(jupyter_server.notebook_url("agent.ipynb"), len(cells))
    for i in range(at):
        nb.run(i)
    before = kept(save(page, nb, path))
    nb.editor(at).click()
    page.keyboard.press("Shift+Enter")  # the agent cell runs, and waits for the click

    expect(nb.editor(2)).to_have_text(NEW.strip(), timeout=30_000)  # the new cell, below In[2], before the run
    expect(nb.editor(1)).to_have_text(PARSE_EDITED)
    expect(page.locator(".jp-Notebook .jp-Cell .jp-InputArea", has_text="scratch = 1")).to_have_count(0)
    agent = nb.cell(at)
    run = button(agent, "Run")
    expect(run).to_be_visible(timeout=30_000)
    expect(agent.locator(".jp-OutputArea")).to_contain_text("print(parse('5') + 1)")  # what would run
    nb.shot("waiting-for-run")
    run.click()

    new = nb.cell(2)
    expect(new.locator(".jp-OutputArea")).to_have_text("6", timeout=30_000)
    expect(new.locator(".jp-InputPrompt")).to_have_text(re.compile(r"\[\d+\]:"))
    expect(agent.locator(".jp-InputPrompt")).to_have_text(re.compile(r"\[\d+\]:"), timeout=60_000)  # finished
    expect(button(agent, "Undo")).to_be_visible()  # the turn's one Undo, at its end
    nb.shot("ran")
    return nb, agent, before


@pytest.mark.parametrize("jupyter_server", APPS, indirect=True)
def test_the_agent_inserts_edits_deletes_runs_after_the_click_and_one_undo_takes_it_all_back(
    jupyter_server, page, artifacts, stub_url
):
    from playwright.sync_api import expect

    path = jupyter_server.root / "agent.ipynb"
    nb, agent, before = run_turn(jupyter_server, page, artifacts, stub_url)
    saved = save(page, nb, path)
    assert [c["source"] for c in saved] == AFTER
    assert [dict(o) for o in saved[2]["outputs"]] == NEW_RAN
    assert (saved[3]["execution_count"], saved[2]["execution_count"]) == (4, 5)  # the agent cell's own, the run's
    expect(agent.locator(".jp-InputPrompt")).to_have_text("[4]:")
    assert not printed_by(saved[3], "6")  # nothing of the run in the agent cell

    button(agent, "Undo").click()
    wait_said(agent, messages.TURN_UNDO_RAN)  # "what ran cannot be un-run"
    nb.shot("undone")
    # text, type, order, ids, metadata; the scratch cell back with its output and count
    assert kept(save(page, nb, path)) == before


@pytest.mark.parametrize("jupyter_server", APPS, indirect=True)
def test_one_z_in_command_mode_takes_the_whole_agent_turn_back(jupyter_server, page, artifacts, stub_url):
    """The turn's insert, edit and delete are one step of the notebook's undo, as a user undoes: the key z in
    command mode, once."""
    from playwright.sync_api import expect

    path = jupyter_server.root / "agent.ipynb"
    nb, agent, before = run_turn(jupyter_server, page, artifacts, stub_url)
    nb.cell(0).locator(".jp-InputPrompt").click()
    page.keyboard.press("Escape")
    page.keyboard.press("z")
    expect(page.locator(".jp-Notebook .jp-Cell .jp-InputArea", has_text="scratch = 1")).to_have_count(1, timeout=10_000)
    nb.shot("z")
    # text, type, order, ids, metadata; the scratch cell back with its output and count
    assert kept(save(page, nb, path)) == before
    # the turn's Undo says so without a click (the bridge's snapshot after the edit), its button disabled
    wait_said(agent, messages.TURN_UNDONE_BY_NOTEBOOK)
    expect(button(agent, "Undo")).to_be_disabled()
    expect(agent).not_to_contain_text("changed by hand")
    assert kept(save(page, nb, path)) == before


@pytest.mark.parametrize("jupyter_server", APPS, indirect=True)
def test_restart_and_run_all_replays_the_turn_with_no_request_and_inserts_deletes_runs_nothing(
    jupyter_server, page, artifacts, stub_url
):
    """After the turn, Restart Kernel and Run All: the agent cell shows its steps and answer from the record,
    the stand-in gets no request, and the notebook's cells are as the turn left them, each run once by Run
    All (counts 1 to 6: the agent ran nothing again). Its document, the cell above it, is one the turn left
    as it was."""
    from playwright.sync_api import expect

    path = jupyter_server.root / "agent.ipynb"
    cells = [*CELLS[:3], ("keep", "kept = 2"), *CELLS[3:]]
    nb, agent, _before = run_turn(jupyter_server, page, artifacts, stub_url, cells)
    answer = agent.locator(".jp-OutputArea").inner_text().split("turn 1")[0].strip().splitlines()[-1]
    after = save(page, nb, path)
    sent = len(api_requests(stub_url))

    page.locator('[data-command="notebook:restart-run-all"]').first.click()
    page.locator(".jp-Dialog-button.jp-mod-accept").click()
    expect(nb.cell(5).locator(".jp-InputPrompt")).to_have_text(re.compile(r"\[6\]:"), timeout=60_000)
    expect(agent).to_contain_text(shown_as(messages.REPLAYED_FOOTER, turn=1), timeout=30_000)
    for step in (
        shown_as(messages.AGENT_INSERTED, after="In[2]", lines="1 line"),
        shown_as(messages.AGENT_EDITED, count="1 edit"),
        shown_as(messages.AGENT_DELETED),
        shown_as(messages.AGENT_RAN),
    ):
        expect(agent).to_contain_text(step)
    expect(agent).to_contain_text(answer)
    nb.shot("replayed")
    assert len(api_requests(stub_url)) == sent, "Run All after the restart sent a request"
    replayed = save(page, nb, path)
    assert [(c["id"], c["source"]) for c in replayed] == [(c["id"], c["source"]) for c in after]
    assert [c["execution_count"] for c in replayed] == [1, 2, 3, 4, 5, 6]
    assert [dict(o) for o in replayed[2]["outputs"]] == NEW_RAN  # shown once, by Run All's own run


def stale(box):
    """The stale line the labextension shows in a widget's box."""
    return box.get_by_text(STALE).filter(visible=True)


@pytest.mark.parametrize("jupyter_server", APPS, indirect=True)
def test_after_a_restart_the_turns_undo_and_approval_say_they_are_stale_and_click_nothing(
    jupyter_server, page, artifacts, stub_url
):
    """A turn's Undo and its (answered) approval from before Kernel > Restart Kernel…: one line in each says the
    buttons no longer work, and the Undo button is disabled."""
    from playwright.sync_api import expect

    nb, agent, _before = run_turn(jupyter_server, page, artifacts, stub_url)
    undo, approval = agent.locator(".genai-magics-turn-undo"), agent.locator(".genai-magics-approval")
    expect(button(undo, "Undo")).to_be_enabled()
    expect(stale(undo)).to_have_count(0)
    restart_kernel(nb)
    for box in (undo, approval):
        expect(stale(box)).to_have_count(1, timeout=10_000)
    expect(button(undo, "Undo")).to_be_disabled()
    nb.shot("stale")


@pytest.mark.parametrize("jupyter_server", APPS, indirect=True)
def test_a_run_waiting_for_its_click_at_a_restart_says_it_is_stale_and_its_buttons_are_disabled(
    jupyter_server, page, artifacts, stub_url
):
    from playwright.sync_api import expect

    nb = start_agent(jupyter_server, page, artifacts, stub_url, AGENT)
    approval = nb.cell(3).locator(".genai-magics-approval")
    expect(button(approval, "Run")).to_be_enabled(timeout=30_000)
    restart_kernel(nb)
    expect(stale(approval)).to_have_count(1, timeout=10_000)
    for label in ("Run", "Run all", "Stop"):
        expect(button(approval, label)).to_be_disabled()
    nb.shot("stale")


def wait_said(cell, message, timeout: float = 15) -> str:
    """Until ``message`` is in the cell's outputs; their text."""
    said = cell.locator(".jp-OutputArea")
    deadline = time.monotonic() + timeout
    while not message.within(said.inner_text()):
        assert time.monotonic() < deadline, said.inner_text()
        time.sleep(0.2)
    return said.inner_text()


def start_agent(jupyter_server, page, artifacts, stub_url: str, agent: str, below: str = END) -> NotebookPage:
    """SETUP and PARSE run, then ``agent`` started (it does not finish: it asks for a click), with ``below``
    under it; the stand-in inserts a cell below In[2] and asks to run it."""
    write_notebook(jupyter_server.root / "agent.ipynb", [("setup", SETUP), ("a", PARSE), ("m", agent), ("u", below)])
    script_agent(stub_url, [ROUNDS[0], ROUNDS[-1]])
    nb = NotebookPage(page, artifacts)
    nb.open(jupyter_server.notebook_url("agent.ipynb"), 4)
    nb.run(0)
    nb.run(1)
    nb.editor(2).click()
    page.keyboard.press("Shift+Enter")
    return nb


@pytest.mark.parametrize("jupyter_server", APPS, indirect=True)
def test_stop_ends_the_turn_at_once_what_was_written_stays_and_undo_takes_it_back(
    jupyter_server, page, artifacts, stub_url
):
    from playwright.sync_api import expect

    nb = start_agent(jupyter_server, page, artifacts, stub_url, AGENT, below="%gemini undo")
    expect(nb.editor(2)).to_have_text(NEW.strip(), timeout=30_000)
    agent = nb.cell(3)
    stop = button(agent, "Stop")
    expect(stop).to_be_visible(timeout=30_000)
    stop.click()
    expect(agent.locator(".jp-InputPrompt")).to_have_text(re.compile(r"\[\d+\]:"), timeout=30_000)
    wait_said(agent, messages.AGENT_STOPPED)
    nb.shot("stopped")
    new = nb.cell(2)
    expect(new.locator(".jp-InputPrompt")).to_have_text("[ ]:")  # never ran
    expect(new.locator(".jp-OutputArea-output")).to_have_count(0)

    nb.editor(4).click()
    page.keyboard.press("Shift+Enter")  # %gemini undo: the inserted cell goes (nb.run would watch the cell below)
    expect(page.locator(".jp-Notebook .jp-Cell")).to_have_count(5, timeout=15_000)  # and a new empty one
    nb.shot("undone")
    saved = save(page, nb, jupyter_server.root / "agent.ipynb")
    assert [c["source"] for c in saved] == [SETUP, PARSE, AGENT, "%gemini undo", ""]


@pytest.mark.parametrize("jupyter_server", APPS, indirect=True)
def test_with_approve_all_a_write_waits_for_its_click_before_the_notebook_changes(
    jupyter_server, page, artifacts, stub_url
):
    from playwright.sync_api import expect

    agent = AGENT.replace("%%gemini_agent", "%%gemini_agent --approve all")
    nb = start_agent(jupyter_server, page, artifacts, stub_url, agent)
    write = button(nb.cell(2), "Write")
    expect(write).to_be_visible(timeout=30_000)
    expect(page.locator(".jp-Notebook .jp-Cell")).to_have_count(4)  # nothing written before the click
    # the approval shows the text it writes, as a run's shows the code (issue 40.3)
    expect(nb.cell(2).locator(".genai-magics-approval pre")).to_have_text(NEW.strip())
    nb.shot("waiting-for-write")
    write.click()
    expect(nb.editor(2)).to_have_text(NEW.strip(), timeout=15_000)
    button(nb.cell(3), "Run").click()
    expect(nb.cell(2).locator(".jp-OutputArea")).to_have_text("6", timeout=30_000)
    expect(nb.cell(3).locator(".jp-InputPrompt")).to_have_text(re.compile(r"\[\d+\]:"), timeout=60_000)
