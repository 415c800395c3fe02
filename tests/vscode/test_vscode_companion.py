"""VS Code with the genai-magics companion (vscode-extension/, its VSIX installed into code-server).

Apply writes the proposal into the code cell the conversation is about, after
the magic cell has finished; Undo writes the old code back; Ctrl+Z in the cell
undoes an Apply; a cell edited since is never overwritten; a --notebook
proposal changes, adds and removes cells and Undo restores the file exactly,
also a second time. Outputs the kernel sets (set_outputs) show under their
cell; %%gemini_agent inserts a cell, runs it after the click, and one Undo
takes it back.
Judged by the saved .ipynb and the widget's text.
"""

from __future__ import annotations

import json
import re

import pytest
from helpers import screenshots
from helpers.agent_scenario import (
    AFTER,
    AGENT,
    END,
    NEW,
    NEW_RAN,
    PARSE,
    RAN,
    RAN_NEW,
    ROUNDS,
    SCRATCH,
    SETUP,
    SHOWN,
    printed_by,
    set_outputs_code,
)
from notebook_page import open_notebook as _open
from notebook_page import stub_turns

from genai_magics import messages

COMPANION = True  # conftest installs the companion's VSIX for this module
pytestmark = pytest.mark.usefixtures("code_server")

CODE = "def f(x):\n    return x + 1"
STUB_LINE = "# stub edit: Add a docstring"
MAGIC = "%%gemini_edit\nAdd a docstring"


def test_apply_writes_the_code_cell_after_the_cell_finished_and_undo_writes_it_back(
    page, code_server, workspace, artifacts, stub
):
    nb = _open(page, code_server, workspace, artifacts, ["%load_ext genai_magics", CODE, MAGIC, "%gemini status"])
    nb.run(0)
    nb.run(1)
    nb.run(2)  # finishes: nothing waits for the click
    text = nb.wait_output("Apply writes the proposal into the cell it is about")
    assert "This cell waits" not in text
    nb.run(3)
    nb.wait_output("VS Code companion: connected")

    nb.click("Apply")
    nb.wait_output("Applied: the proposal is now in")
    assert nb.sources()[1:3] == [f"{STUB_LINE}\n{CODE}", MAGIC]  # the code cell itself; the magic cell untouched

    nb.click("Undo")
    nb.wait_output("Undone: the code from before the proposal is now in")
    assert nb.sources()[1:3] == [CODE, MAGIC]

    # the follow-up holds the document the model has: nothing re-sent after Undo to the base it was sent
    nb.type_into(3, "%%gemini_ask\nAnything else?")
    nb.run(3)
    nb.wait_output("Stub answer to: Anything else")
    assert "currentSource" not in stub_turns(stub)[-1]


def test_a_proposal_reads_as_its_diff_and_apply_writes_the_code_cell(page, code_server, workspace, artifacts, stub):
    """The README's example with a scripted proposal, its picture the README's (tests/helpers/screenshots.py):
    the diff without noise and the buttons; after Apply the header no longer calls the old text current."""
    page.set_viewport_size({"width": 1100, "height": 820})  # the README shows it at about this size
    stub.script_edit(screenshots.PROPOSAL)
    magic = f"%%gemini_edit\n{screenshots.INSTRUCTION}"
    nb = _open(page, code_server, workspace, artifacts, ["%load_ext genai_magics", screenshots.CODE, magic])
    for i in range(3):
        nb.run(i)
    text = nb.wait_output("Apply writes the proposal into the cell it is about")
    assert "(current)" in text and 'raise ValueError(f"not an integer: {s!r}") from None' in text
    assert "No newline at end of file" not in text
    nb.on_screen("Apply")
    page.mouse.move(160, 500)  # over the empty explorer: no hover tooltip over the notebook
    page.wait_for_selector(".monaco-hover, .workbench-hover", state="hidden", timeout=10_000)
    nb.shot("proposal")
    screenshots.save(page, "vscode-proposal")

    nb.click("Apply")
    text = nb.wait_output("Applied: the proposal is now in")
    assert nb.sources()[1:3] == [screenshots.PROPOSAL, magic]
    assert "(before Apply)" in text and "(current)" not in text


def test_apply_is_one_step_of_vscode_undo_in_the_cell(page, code_server, workspace, artifacts, stub):
    nb = _open(page, code_server, workspace, artifacts, ["%load_ext genai_magics", CODE, MAGIC])
    for i in range(3):
        nb.run(i)
    nb.click("Apply")
    nb.wait_output("Applied: the proposal is now in")
    assert nb.sources()[1] == f"{STUB_LINE}\n{CODE}"
    nb.row(1).locator(".monaco-editor .view-lines").click()
    page.keyboard.press("Control+Z")
    assert nb.sources()[1] == CODE


def test_a_cell_edited_since_the_proposal_is_never_overwritten(page, code_server, workspace, artifacts, stub):
    nb = _open(page, code_server, workspace, artifacts, ["%load_ext genai_magics", CODE, MAGIC])
    for i in range(3):
        nb.run(i)
    nb.wait_output("Apply writes the proposal")
    nb.type_into(1, "def f(x): return x + 2")  # a hand edit, never run
    nb.click("Apply")
    nb.wait_output("changed since this proposal was made")
    assert nb.sources()[1] == "def f(x): return x + 2"


def test_notebook_apply_changes_adds_and_removes_cells_and_undo_restores_the_file(
    page, code_server, workspace, artifacts, stub
):
    sources = ["%load_ext genai_magics", CODE, "y = f(1)\nprint(y)", "z = 3", "%%gemini_ask --notebook\nOverview?"]
    nb = _open(page, code_server, workspace, artifacts, sources + ["%%gemini_edit --notebook\nTidy up"])
    for i in range(5):
        nb.run(i)
    nb.wait_output("Stub answer to: Overview")
    text = stub_turns(stub)[-1]["currentSource"]  # the notebook as the model sees it: cells named by their URIs
    blocks = text.split("\n# %% ")  # the code cells; the genai magic cells are not part of the document
    assert len(blocks) == 3 and "vscode-notebook-cell:" in blocks[0]
    # change f, remove the y cell, keep z, add a new cell at the end
    proposal = "\n# %% ".join([blocks[0].replace("x + 1", "x + 10"), blocks[2]]) + "\n# %%\nw = 4\n"
    stub.script_edit(proposal)
    before = nb.save()
    nb.run(5)
    nb.wait_output("1 changed, 1 new, 1 removed")
    nb.click("Apply")
    nb.wait_output("Applied: the proposal is now in")
    applied = [c.source for c in nb.save().cells]
    assert applied[1] == "def f(x):\n    return x + 10"
    assert "y = f(1)\nprint(y)" not in applied and applied[2] == "z = 3" and applied[3] == "w = 4"

    nb.click("Undo")
    nb.wait_output("Undone: the code from before the proposal is now in")
    after = nb.save()
    assert [c.source for c in after.cells] == [c.source for c in before.cells]
    removed_before, removed_after = before.cells[2], after.cells[2]
    assert json.dumps(removed_after.outputs) == json.dumps(removed_before.outputs)  # its output "2" came back
    assert removed_after.execution_count == removed_before.execution_count

    # Apply again: the cell put back (VS Code gave it a new URI) is removed again, Undo brings it back again
    nb.click("Apply")
    nb.wait_output("Applied: the proposal is now in")
    assert [c.source for c in nb.save().cells] == applied
    nb.click("Undo")
    nb.wait_output("Undone: the code from before the proposal is now in")
    assert [c.source for c in nb.save().cells] == [c.source for c in before.cells]


def test_outputs_set_by_the_kernel_show_under_the_cell_and_a_new_one(page, code_server, workspace, artifacts, stub):
    """set_outputs (the agent's run_cell): the outputs and the execution count under the cell, as a run there
    leaves them, also under a cell inserted a moment before (named at once in set_outputs, set_source and
    delete_cell); the kernel keeps calling the cell (which VS Code replaced) by its name; the saved file holds
    the outputs as nbformat."""
    runner = (
        "from genai_magics.kernel.shell_state import state_of\n"
        "C = state_of(get_ipython()).companion\n"
        "target = C.cells()[1].id\n" + set_outputs_code("C")
    )
    check = "print('RES', res, [c.id for c in C.cells()][1:3] == [target, new])"
    nb = _open(page, code_server, workspace, artifacts, ["%load_ext genai_magics", "y = 1", runner, check])
    nb.run(0)
    nb.run(2)
    nb.wait_output("bad input")
    assert nb.execution_order(1) == "[42]"
    text = nb.wait_output("ran 3")
    assert all(shown in text for shown in SHOWN)
    nb.wait_finished(2, None, 30)
    assert nb.execution_order(2) == "[43]"
    nb.shot("outputs-set")
    nb.run(4)
    nb.wait_output(r"RES \[None, None, None, None, None, None\] True")

    cells = nb.save().cells
    assert [c.source for c in cells[1:3]] == ["y = 1", "print(2)"]
    assert (cells[1].execution_count, [dict(o) for o in cells[1].outputs]) == (42, RAN)
    assert (cells[2].execution_count, [dict(o) for o in cells[2].outputs]) == (43, RAN_NEW)


def test_the_agent_inserts_edits_deletes_runs_after_the_click_and_one_undo_takes_it_all_back(
    page, code_server, workspace, artifacts, stub
):
    """%%gemini_agent through the companion (the stand-in plays the agent): the writes at once, the run after
    the Run click; its output and execution order under the new cell (which VS Code replaced to set them),
    never in the agent cell; one Undo puts every cell back (the deleted one with its output) and says what
    ran stays."""
    sources = [SETUP, PARSE, SCRATCH, AGENT, END]
    stub.script_tools(ROUNDS)
    nb = _open(page, code_server, workspace, artifacts, sources)
    for i in range(3):
        nb.run(i)
    before = nb.save().cells
    nb.run(3, wait=False)  # the agent cell waits for the click
    nb.click("Run")
    nb.wait_finished(3, None, 90)  # the agent cell
    assert re.fullmatch(r"\[\d+\]", nb.execution_order(2))
    nb.shot("ran")
    cells = nb.save().cells
    assert [c.source for c in cells] == AFTER
    assert [dict(o) for o in cells[2].outputs] == NEW_RAN and isinstance(cells[2].execution_count, int)
    assert not printed_by(cells[3], "6")  # nothing of the run in the agent cell

    nb.click("Undo")
    nb.wait_output(messages.TURN_UNDO_RAN.pattern(prefixed=False).pattern)
    nb.shot("undone")
    after = nb.save().cells
    assert [c.source for c in after] == sources
    assert [c.outputs for c in after[:3] + after[4:]] == [c.outputs for c in before[:3] + before[4:]]
    # the deleted cell back with its count; an edited cell's count VS Code clears, as after any edit of its text
    assert after[2].execution_count == before[2].execution_count == 3 and after[1].execution_count is None


def test_stop_ends_the_agents_turn_at_once_what_was_written_stays_and_undo_takes_it_back(
    page, code_server, workspace, artifacts, stub
):
    sources = [SETUP, PARSE, AGENT, "%gemini undo", END]
    stub.script_tools([ROUNDS[0], ROUNDS[-1]])  # insert, then run the new cell
    nb = _open(page, code_server, workspace, artifacts, sources)
    nb.run(0)
    nb.run(1)
    nb.run(2, wait=False)
    nb.click("Stop")
    nb.wait_finished(3, None, 60)  # the agent cell, one down
    nb.wait_output(messages.AGENT_STOPPED.pattern(prefixed=False).pattern)
    nb.shot("stopped")
    cells = nb.save().cells
    assert [c.source for c in cells] == [SETUP, PARSE, NEW, AGENT, "%gemini undo", END]
    assert cells[2].outputs == [] and cells[2].execution_count is None  # never ran

    nb.run(4, wait=False)  # %gemini undo: the inserted cell goes
    nb.wait_output(messages.TURN_UNDONE.pattern(prefixed=False).pattern)
    assert nb.sources() == sources
