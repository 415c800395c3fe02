"""After Restart Kernel and Run All Cells in a real VS Code with the companion: the replayed proposal's
Undo and Apply write the code cell, and a notebook renamed in the explorer replays its record (issue 32,
items 9 and 10). Judged by the saved .ipynb, the widget's text and the stand-in's requests."""

from __future__ import annotations

import re

from helpers.pages import shown_as
from notebook_page import open_notebook as _open
from notebook_page import stub_turns, wait_replayed

from genai_magics import messages

COMPANION = True  # conftest installs the companion's VSIX for this module

CODE = "def f(x):\n    return x + 1"
APPLIED = f"# stub edit: Add a docstring\n{CODE}"
MAGIC = "%%gemini_edit\nAdd a docstring"
CELLS = ["%load_ext genai_magics", CODE, MAGIC]


def written(verb: str) -> str:
    """The line a live Apply or Undo shows, as a pattern of the page's text."""
    return shown_as(messages.LIVE_DONE, verb=verb).pattern


def ask_and_apply(nb, stub) -> int:
    for i in range(len(CELLS)):
        nb.run(i)
    nb.click("Apply")
    nb.wait_output(written("Applied"))
    assert nb.sources()[1] == APPLIED  # saved: a restart reads the file as it is
    sent = len(stub_turns(stub))
    assert sent == 1
    return sent


def replayed_then_undo_and_apply(nb, stub, sent: int) -> None:
    """After Run All in a new kernel the magic replays (no request); its Undo and Apply write the cell."""
    wait_replayed(nb, stub, sent, shown_as(messages.REPLAYED_FOOTER, turn=1).pattern)
    nb.wait_finished(2, None, 60)
    assert len(stub_turns(stub)) == sent, "Run All after the restart sent a request"
    nb.shot("replayed")
    nb.click("Undo")
    nb.wait_output(written("Undone"))
    assert nb.sources()[1] == CODE
    nb.click("Apply")
    nb.wait_output(written("Applied"))
    assert nb.sources()[1] == APPLIED
    nb.shot("undone-and-applied")
    assert len(stub_turns(stub)) == sent


def test_after_restart_and_run_all_the_replayed_proposal_s_undo_and_apply_write_the_code_cell(
    page, code_server, workspace, artifacts, stub
):
    nb = _open(page, code_server, workspace, artifacts, CELLS)
    sent = ask_and_apply(nb, stub)
    nb.restart_and_run_all()
    replayed_then_undo_and_apply(nb, stub, sent)


def test_a_notebook_renamed_in_the_explorer_replays_its_record_after_restart_and_run_all(
    page, code_server, workspace, artifacts, stub
):
    """VS Code ends the kernel of a renamed notebook (the kernel belongs to the document, which a rename
    replaces: microsoft/vscode-jupyter#11010), so there is no kernel left to restart: Run All starts the new
    one, which starts with the new name. The companion saw the rename; the new kernel takes the record over
    from the old name's place."""
    nb = _open(page, code_server, workspace, artifacts, CELLS)
    sent = ask_and_apply(nb, stub)
    nb.rename("final.ipynb")
    nb.command("Notebook: Run All")
    nb.wait_for_kernel()
    replayed_then_undo_and_apply(nb, stub, sent)
    text = nb.outputs_text()  # the path is its own text node in the output: a space may follow it
    assert re.search(shown_as(messages.RECORD_FOLLOWED, aside=""), text), "no line said the record followed"
    assert str(nb.path) in text
