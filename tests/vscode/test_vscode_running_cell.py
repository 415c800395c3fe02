"""The README's VS Code rows, in a real VS Code (code-server + the Jupyter extension), without the companion.

Each test is judged by the saved .ipynb (Ctrl+S, then the file) and by what
the output webview shows, against the stand-in Gemini server.
"""

from __future__ import annotations

import time

import pytest
from notebook_page import open_notebook as _open
from notebook_page import stub_turns, wait_replayed

pytestmark = pytest.mark.usefixtures("code_server")

CODE = "def f(x):\n    return x + 1"
STUB_LINE = "# stub edit: Add a docstring"


@pytest.mark.parametrize(
    "magic", ["%%gemini_edit\nAdd a docstring", "%gemini_edit Add a docstring"], ids=["cell", "line"]
)
def test_apply_replaces_the_running_magic_cell_and_undo_leaves_the_code_cell(
    page, code_server, workspace, artifacts, stub, magic
):
    nb = _open(page, code_server, workspace, artifacts, ["%load_ext genai_magics", CODE, magic])
    nb.run(0)
    nb.run(1)
    nb.run(2, wait=False)
    text = nb.wait_output("This cell waits up to")
    assert "Apply replaces this magic cell with the proposal" in text
    assert nb.running(2)  # the magic cell waits for the click
    nb.click("Apply")
    nb.wait_finished(2, "", 30)
    nb.shot("applied")
    cells = nb.sources()
    assert cells[1] == CODE  # the code cell is not touched: only the running cell can be written
    assert cells[2] == f"# gemini_edit: Add a docstring\n{STUB_LINE}\n{CODE}"

    nb.click("Undo")
    text = nb.wait_output("Undone for the conversation")
    assert "still holds the code from before" in text
    cells = nb.sources()
    assert cells[1] == CODE and cells[2].endswith(f"{STUB_LINE}\n{CODE}")  # Undo could write nothing


def test_discard_releases_the_cell_and_writes_nothing(page, code_server, workspace, artifacts, stub):
    magic = "%%gemini_edit\nAdd a docstring"
    nb = _open(page, code_server, workspace, artifacts, ["%load_ext genai_magics", CODE, magic])
    nb.run(0)
    nb.run(1)
    nb.run(2, wait=False)
    nb.wait_output("This cell waits up to")
    nb.click("Discard")
    nb.wait_finished(2, "", 30)
    nb.wait_output("Discarded")
    assert nb.sources()[1:] == [CODE, magic]


def test_follow_up_does_not_send_the_code_again_and_error_sends_the_exception(
    page, code_server, workspace, artifacts, stub
):
    nb = _open(
        page,
        code_server,
        workspace,
        artifacts,
        [
            "%load_ext genai_magics",
            CODE,
            "%%gemini_ask\nWhat does f do?",
            "%%gemini_ask\nAnd for negative x?",
            "f('a')",
            "%%gemini_ask --error\nWhy?",
        ],
    )
    for i in range(4):
        nb.run(i)
    nb.wait_output("Stub answer to: And for negative x")
    first, follow_up = stub_turns(stub)
    assert first["currentSource"] == CODE and first["document"].startswith("In[")
    assert follow_up["sourceSynchronized"] is True and "currentSource" not in follow_up
    nb.run(4)  # raises TypeError
    nb.run(5)
    nb.wait_output("Stub answer to: Why")
    error_turn = stub_turns(stub)[-1]
    assert "TypeError" in error_turn["lastError"] and "f('a')" in error_turn["lastError"]


def test_notebook_edit_is_copy_only_and_its_diff_names_cells_by_label(page, code_server, workspace, artifacts, stub):
    sources = ["%load_ext genai_magics", CODE, "y = f(1)", "%%gemini_edit --notebook\nAdd a docstring"]
    nb = _open(page, code_server, workspace, artifacts, sources)
    for i in range(3):
        nb.run(i)
    nb.save()  # the kernel reads the notebook from its file (VS Code names it)
    nb.run(3, wait=False)
    text = nb.wait_output("nothing is written into any cell")
    assert "vscode-notebook-cell:" not in text  # the diff headers show labels, not cell URIs
    nb.click("Apply")
    nb.wait_output("paste")
    nb.wait_finished(3, "", 30)
    assert nb.sources() == sources  # never the percent text into the magic cell


def test_variable_viewer_open_while_asking_never_becomes_the_document(page, code_server, workspace, artifacts, stub):
    nb = _open(
        page, code_server, workspace, artifacts, ["%load_ext genai_magics", CODE, "n = 3", "%%gemini_ask\nExplain"]
    )
    nb.command("Open Jupyter Variables View")
    nb.run(0)
    nb.run(1)
    nb.run(2)
    time.sleep(2)  # the variable viewer asks the kernel after each run
    nb.run(3)
    nb.wait_output("Stub answer to: Explain")
    turn = stub_turns(stub)[-1]
    assert turn["currentSource"] == "n = 3"  # the most recently run code cell, not the viewer's helper code
    assert "_VSCODE" not in turn.get("secondaryContext", "")


def test_restart_and_run_all_replays_the_recorded_turn_without_a_request(page, code_server, workspace, artifacts, stub):
    nb = _open(page, code_server, workspace, artifacts, ["%load_ext genai_magics", CODE, "%%gemini_ask\nWhat is f?"])
    for i in range(3):
        nb.run(i)
    nb.wait_output("Stub answer to: What is f")
    nb.save()
    sent = len(stub_turns(stub))
    nb.restart_and_run_all()
    wait_replayed(nb, stub, sent, "replayed turn 1")
    nb.wait_finished(2, None, 60)
    assert len(stub_turns(stub)) == sent  # no new request
