"""Words that match what happened: the demo, the terminal, status, help and saved notebooks.

(`%%gemini_edit?` and a proposal's text form in the fast layer: test_in_process.py; the
terminal's words: test_terminal.py.)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers.lazy import lazy_import

from genai_magics import messages

nbformat = lazy_import("nbformat")

ROOT = Path(__file__).resolve().parents[2]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """`python -m genai_magics.demo`, run once: what each cell printed, the notebook it wrote, the run."""
    out = tmp_path_factory.mktemp("demo") / "quickstart.executed.ipynb"
    run = subprocess.run(
        [sys.executable, "-m", "genai_magics.demo", "--output", str(out)], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    cells = {}
    for block in run.stdout.split("\n>>> ")[1:]:
        magic, _, shown = block.partition("\n")
        cells.setdefault(magic, shown)  # the first cell that starts so
    return cells, nbformat.read(str(out), as_version=4), run


@pytest.mark.kernel
def test_the_demo_says_applied_only_where_apply_happened(demo):
    cells, _, _ = demo
    edit = cells["%%gemini_edit"]
    assert "+# stub edit: Add input validation" in edit  # the diff
    assert messages.KERNEL_STATE_APPLY.within(edit)  # what Apply will do, as the cell showed it then
    assert "Applied" not in edit and "[Undo]" not in edit
    assert messages.KERNEL_STATE_DONE.pattern(verb="Applied").match(cells["%gemini apply"])


@pytest.mark.kernel
def test_the_demo_prints_no_kernel_noise(demo):
    _, _, run = demo
    assert run.stderr == ""  # ipykernel's warning about unencrypted TCP among others: the kernel talks over IPC


@pytest.mark.kernel
def test_the_readme_footer_is_the_one_the_demo_prints(demo):
    """The README's footer example is the demo's follow-up about its 2,000-line cell, as printed."""
    _, _, run = demo
    (follow_up,) = [b for b in run.stdout.split("\n>>> ") if b.startswith("%%gemini_ask -c big\nAnd which")]
    shown = next(line for line in follow_up.splitlines() if line.startswith("turn 2 "))
    assert "cached)" in shown
    readme = (ROOT / "README.md").read_text()
    assert f"\n{shown}\n" in readme, shown


@pytest.mark.kernel
def test_a_saved_notebook_without_widgets_shows_the_diff_as_text(demo):
    _, nb, _ = demo
    edit = next(c for c in nb.cells if c.source.startswith("%%gemini_edit"))
    (proposal,) = [o for o in edit.outputs if WIDGET_VIEW in o.get("data", {})]
    plain = proposal["data"]["text/plain"]
    assert "VBox(" not in plain and "HTML(" not in plain
    assert plain.startswith("--- In[") and "+# stub edit: Add input validation" in plain
    assert "+# stub edit: Add input validation" in proposal["data"]["text/html"]


def test_status_without_the_frontend_extension_says_not_connected(kernel):
    status = kernel.run("%gemini status").stdout
    assert "comm open" not in status
    assert messages.BRIDGE_UNANSWERED.render() in status.splitlines()


def test_the_stand_in_help_is_plain_text():
    run = subprocess.run(
        [sys.executable, "-m", "genai_magics.stub", "--help"], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0
    assert "``" not in run.stdout and "::" not in run.stdout
    assert "Serve the stand-in Gemini API" in run.stdout and "--chunk-delay SECONDS" in run.stdout
