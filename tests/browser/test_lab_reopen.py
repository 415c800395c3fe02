"""Yesterday's notebook, reopened in a real JupyterLab and Notebook 7: a widget whose model is gone.

Its kernel stopped, the notebook opened again with a new kernel: the widgets' models died with the
old one, and ipywidgets alone shows "Error displaying widget: model not found" where the diff was.
With the extension each such view shows the output's saved text instead (the diff, what happened to it,
one line that the buttons come back when the cell runs), and the cell run again has live buttons.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from pathlib import Path

import pytest
from helpers.agent_scenario import AFTER, AGENT, NEW
from test_lab_agent import CELLS, button, run_turn
from test_lab_bridge import APPS, NotebookPage, write_notebook
from test_lab_notebook_edit import save
from test_lab_restart import restart_kernel

from genai_magics import messages

pytestmark = pytest.mark.stand_in  # the server's kernels talk to the stand-in (browser/conftest.py: server_env)

GONE = "Error displaying widget"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def end_sessions(server) -> None:
    """Every session of the server ended, its kernel shut down (as when the server stopped overnight)."""

    def call(method: str, path: str):
        request = urllib.request.Request(
            f"{server.url}/api/{path}", method=method, headers={"Authorization": f"token {server.token}"}
        )
        with urllib.request.urlopen(request, timeout=20) as response:
            return json.load(response) if method == "GET" else None

    sessions = call("GET", "sessions")
    assert sessions
    for session in sessions:
        call("DELETE", f"sessions/{session['id']}")


def saved_text(page, nb: NotebookPage, path: Path) -> str:
    """Saved with Ctrl+S: the text/plain of the proposal's output in the file."""
    cells = save(page, nb, path)
    (proposal,) = [o for o in cells[2].outputs if WIDGET_VIEW in o.get("data", {})]
    return proposal["data"]["text/plain"]


@pytest.mark.parametrize("jupyter_server", APPS, indirect=True)
@pytest.mark.parametrize("how", ["shutdown", "restart"])
def test_a_reopened_notebook_shows_the_saved_diff_where_the_widget_was(jupyter_server, page, artifacts, how):
    """Its kernel shut down and the notebook opened again; or Kernel > Restart Kernel… and the page reloaded."""
    from playwright.sync_api import expect

    name = "yesterday.ipynb"
    write_notebook(
        jupyter_server.root / name,
        # a last cell: Shift+Enter in the magic cell adds none
        [
            ("setup", "%load_ext genai_magics"),
            ("code", "t = 1"),
            ("magic", "%%gemini_edit\nAdd a comment"),
            ("end", ""),
        ],
    )
    nb = NotebookPage(page, artifacts)
    nb.open(jupyter_server.notebook_url(name), 4)
    for i in range(3):
        nb.run(i)
    apply = nb.cell(2).locator(".jp-OutputArea button", has_text=re.compile(r"^\s*Apply\s*$"))
    expect(apply).to_be_enabled(timeout=30_000)
    saved_line = nb.cell(2).get_by_text(messages.SAVED_VIEW.render()).filter(visible=True)
    expect(saved_line).to_have_count(0)  # the live widget: its buttons, not the saved text
    apply.click()  # what happened goes into the saved text too (the bridge's saved_view)
    expect(nb.editor(1).locator(".cm-line")).to_have_text(["# stub edit: Add a comment", "t = 1"], timeout=10_000)
    expect(nb.cell(2).locator(".jp-OutputArea button", has_text=re.compile(r"^\s*Undo\s*$"))).to_be_enabled()
    expect(nb.cell(2).locator(".jp-OutputArea button")).to_have_count(4)  # the live view stays one view
    # saved: the file holds what happened (the bridge's saved_view follows the click's widget updates)
    applied = messages.LIVE_DONE.pattern(prefixed=False, verb="Applied")
    deadline = time.monotonic() + 15
    while not applied.search(saved_text(page, nb, jupyter_server.root / name)):
        assert time.monotonic() < deadline, "the saved text never said what happened"
    nb.shot("live")

    if how == "shutdown":
        end_sessions(jupyter_server)
    else:
        restart_kernel(nb)
    nb.open(jupyter_server.notebook_url(name), 4)  # a kernel which never had the widgets
    output = nb.cell(2).locator(".jp-OutputArea")
    expect(saved_line).to_have_count(1, timeout=30_000)
    expect(output).to_contain_text("+# stub edit: Add a comment")  # the diff
    # what happened to it: applied, not what Apply would do
    assert applied.search(output.inner_text()), output.inner_text()
    expect(output).to_contain_text("(applied)")
    expect(output).not_to_contain_text(messages.LIVE_APPLY.render())
    expect(page.get_by_text(GONE)).to_have_count(0)
    expect(output.locator("button")).to_have_count(0)
    # the saved HTML is shown as an untrusted output is: sanitized, nothing of it runs
    expect(output.locator("script, style")).to_have_count(0)
    nb.shot("reopened")

    # the cell run again: live buttons, the saved text gone
    nb.run(0)
    nb.run(2)
    expect(nb.cell(2).locator(".jp-OutputArea button", has_text=re.compile(r"^\s*Discard\s*$"))).to_be_visible(
        timeout=30_000
    )
    expect(saved_line).to_have_count(0)
    nb.shot("run-again")


def agent_saved(page, nb: NotebookPage, path: Path, at: int, *said: messages.Message) -> list[str]:
    """Saved with Ctrl+S, again till the agent cell's widgets' saved texts hold every message ``said`` (the
    bridge's saved_view follows the widget updates on screen): those texts."""
    deadline = time.monotonic() + 15
    while True:
        cell = save(page, nb, path)[at]
        texts = [o["data"]["text/plain"] for o in cell.outputs if WIDGET_VIEW in o.get("data", {})]
        if all(any(m.within(t) for t in texts) for m in said):
            return texts
        assert time.monotonic() < deadline, texts


@pytest.mark.parametrize("jupyter_server", APPS, indirect=True)
def test_a_reopened_agent_turn_shows_its_question_and_undo_as_saved(jupyter_server, page, artifacts, stub_url):
    """An agent turn's Run question and its Undo, their kernel shut down, the notebook opened again: what
    happened to each (Run clicked, the turn undone), not what they first said."""
    from playwright.sync_api import expect

    path = jupyter_server.root / "agent.ipynb"
    nb, agent, _before = run_turn(jupyter_server, page, artifacts, stub_url)
    # Run was clicked: its question says approved, and only the Undo's buttons come back with the cell
    texts = agent_saved(page, nb, path, AFTER.index(AGENT), messages.APPROVED_ONCE)
    assert sum(messages.SAVED_VIEW.render() in t for t in texts) == 1, texts
    assert not any(messages.APPROVAL_ASKS.within(t) for t in texts), texts
    button(agent, "Undo").click()
    expect(agent.locator(".jp-OutputArea")).to_contain_text("Undone", timeout=30_000)
    at = [cell_id for cell_id, _ in CELLS].index("m")  # the turn undone: the cells as before it
    texts = agent_saved(page, nb, path, at, messages.APPROVED_ONCE, messages.TURN_UNDONE)
    lines = [line for t in texts for line in t.splitlines()]
    said = [next(line for line in lines if m.within(line)) for m in (messages.APPROVED_ONCE, messages.TURN_UNDONE)]
    end_sessions(jupyter_server)
    nb.open(jupyter_server.notebook_url("agent.ipynb"), len(CELLS))
    output = nb.cell(at).locator(".jp-OutputArea")
    # what would have run, that Run was clicked and that the turn was undone; no line, no button, no error
    expect(output).to_contain_text(NEW.strip(), timeout=30_000)
    for line in said:  # approved: the new cell; Undone: the agent's turn (…)
        expect(output).to_contain_text(line)
    expect(output.get_by_text(messages.SAVED_VIEW.render())).to_have_count(0)
    expect(output).not_to_contain_text(messages.APPROVAL_ASKS.render(label="").split(":")[0])
    expect(page.get_by_text(GONE)).to_have_count(0)
    expect(output.locator("button")).to_have_count(0)
    nb.shot("reopened")
