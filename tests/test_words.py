"""Words that match what happened: the demo, the terminal, status, help and saved notebooks.

(`%%gemini_edit?` and a proposal's text form in the fast layer: test_in_process.py; the
terminal's words: test_terminal.py.)
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers.lazy import lazy_import

nbformat = lazy_import("nbformat")

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """`python -m genai_magics.demo`, run once: what it printed, and the notebook it wrote."""
    out = tmp_path_factory.mktemp("demo") / "quickstart.executed.ipynb"
    run = subprocess.run(
        [sys.executable, "-m", "genai_magics.demo", "--output", str(out)], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    cells = {}
    for block in run.stdout.split("\n>>> ")[1:]:
        magic, _, shown = block.partition("\n")
        cells[magic] = shown
    return cells, nbformat.read(str(out), as_version=4)


@pytest.mark.kernel
def test_the_demo_says_applied_only_where_apply_happened(demo):
    cells, _ = demo
    edit = cells["%%gemini_edit"]
    assert "+# stub edit: Add input validation" in edit  # the diff
    assert "Apply records the proposal" in edit  # what Apply will do, as the cell showed it then
    assert "Applied" not in edit and "[Undo]" not in edit
    assert cells["%gemini apply"].startswith("Applied for the conversation")


@pytest.mark.kernel
def test_a_saved_notebook_without_widgets_shows_the_diff_as_text(demo):
    _, nb = demo
    (edit,) = [c for c in nb.cells if c.source.startswith("%%gemini_edit")]
    (proposal,) = [o for o in edit.outputs if WIDGET_VIEW in o.get("data", {})]
    plain = proposal["data"]["text/plain"]
    assert "VBox(" not in plain and "HTML(" not in plain
    assert plain.startswith("--- In[") and "+# stub edit: Add input validation" in plain
    assert "+# stub edit: Add input validation" in proposal["data"]["text/html"]


def test_status_without_the_frontend_extension_says_not_connected(kernel):
    status = kernel.run("%gemini status").stdout
    assert "comm open" not in status
    assert "live bridge: not connected: no notebook has answered" in status


def test_the_stand_in_help_is_plain_text():
    run = subprocess.run(
        [sys.executable, "-m", "genai_magics.stub", "--help"], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0
    assert "``" not in run.stdout and "::" not in run.stdout
    assert "Serve the stand-in Gemini API" in run.stdout and "--chunk-delay SECONDS" in run.stdout
