"""``--notebook`` Apply and Undo through the live bridge in a real JupyterLab (issue 8, cases 3 and 4).

What the page holds is read back the way JupyterLab writes it: the notebook is
saved (Ctrl+S) before Apply and after Undo, and the two files compare equal
cell for cell (id, type, text, metadata, outputs, execution count).
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from pathlib import Path

import pytest
from helpers.lazy import lazy_import
from test_lab_bridge import NotebookPage

from genai_magics.engine.cells import Cell
from genai_magics.engine.notebook_text import notebook_text

nbformat = lazy_import("nbformat")

SCRIPT = "# %%\nimport math\n\n# %% Display\nradius = 2\n# %% id=total\narea = math.pi * radius ** 2\n"


pytestmark = pytest.mark.stand_in  # the server's kernels talk to the stand-in (browser/conftest.py: server_env)


def build(path: Path) -> list[dict]:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    total = nbformat.v4.new_code_cell(
        "total = 1 + 2\nprint(total)", id="total", execution_count=3, metadata={"tags": ["keep-me"]}
    )
    total.outputs = [nbformat.v4.new_output("stream", name="stdout", text="3\n")]
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext genai_magics", id="setup"),
        nbformat.v4.new_code_cell(SCRIPT, id="script"),
        total,
        nbformat.v4.new_markdown_cell("## Notes\n\nSome *text*.", id="notes", metadata={"custom": {"k": 1}}),
        nbformat.v4.new_raw_cell("raw text", id="raw", metadata={"raw_mimetype": "text/x-rst"}),
        nbformat.v4.new_code_cell("x = 1", id="last"),
        nbformat.v4.new_code_cell("%%gemini_edit --notebook\nAdd a title comment.", id="m"),
        nbformat.v4.new_code_cell("%%gemini_edit --notebook\nTidy up.", id="m2"),
    ]
    nbformat.write(nb, str(path))
    return nb.cells


def document(cells) -> list[dict]:
    """The cells a --notebook proposal may touch, as saved (everything but the setup and magic cells)."""
    return [dict(c) for c in cells if c["id"] not in ("setup", "m", "m2")]


def save(page, nb: NotebookPage, path: Path) -> list:
    """Save with Ctrl+S and read the file JupyterLab wrote."""
    before = path.stat().st_mtime_ns
    nb.cell(0).locator(".jp-InputPrompt").click()
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + 15
    while path.stat().st_mtime_ns == before:
        assert time.monotonic() < deadline, "the notebook was not saved"
        time.sleep(0.2)
    time.sleep(0.3)  # the write completes
    return nbformat.read(str(path), as_version=4).cells


def button(nb: NotebookPage, magic_text: str, label: str):
    cell = nb.page.locator(".jp-Notebook .jp-Cell", has_text=magic_text)
    return cell.locator("button", has_text=re.compile(rf"^\s*{label}\s*$"))


@pytest.mark.parametrize("jupyter_server", ["lab"], indirect=True)
def test_notebook_apply_and_undo_with_a_percent_cell_and_removed_cells(jupyter_server, page, artifacts, stub_url):
    """Case 3: a cell holding '# %%' and '# %% id=total' lines is edited as one cell, not split, and
    cell total is untouched; Undo restores it. Case 4: Apply removes a code cell with outputs and
    metadata, a markdown and a raw cell; Undo puts them back at their places with their ids, types,
    texts, metadata and outputs, exactly as saved before."""
    from playwright.sync_api import expect

    path = jupyter_server.root / "nbedit.ipynb"
    build(path)
    nb = NotebookPage(page, artifacts)
    nb.open(jupyter_server.notebook_url("nbedit.ipynb"), 8)
    cells = page.locator(".jp-Notebook .jp-Cell")
    nb.run(0)
    saved = document(save(page, nb, path))

    # case 3: the stand-in's edit adds a line at the top of the first document cell (the script)
    nb.run(6)
    expect(nb.cell(6)).to_contain_text("1 changed, 0 new, 0 removed", timeout=30_000)
    button(nb, "Add a title comment.", "Apply").click()
    expect(nb.cell(6)).to_contain_text("Applied", timeout=10_000)
    expect(nb.editor(1).locator(".cm-line").first).to_have_text("# stub edit: Add a title comment.")
    expect(cells).to_have_count(8)
    expect(nb.editor(2)).to_have_text("total = 1 + 2print(total)")
    nb.shot("script-applied")
    applied = document(save(page, nb, path))
    assert applied[0]["source"] == "# stub edit: Add a title comment.\n" + SCRIPT
    assert applied[1:] == saved[1:]
    button(nb, "Add a title comment.", "Undo").click()
    expect(nb.cell(6)).to_contain_text("Undone", timeout=10_000)
    assert document(save(page, nb, path)) == saved

    # case 4: a scripted answer that removes total, notes and raw, changes last and adds a cell
    proposal = "\n".join(
        [notebook_text([Cell("script", SCRIPT)]), "# %%\nprint('new')\n", notebook_text([Cell("last", "x = 2")])]
    )
    request = urllib.request.Request(
        f"{stub_url}/_stub/script_edit", method="POST", data=json.dumps({"proposedSource": proposal}).encode()
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert json.load(response)["ok"] is True
    nb.run(7)  # Shift+Enter on the last cell adds an empty cell below it (not part of the document sent)
    expect(cells).to_have_count(9)
    magic = page.locator(".jp-Notebook .jp-Cell", has_text="Tidy up.")
    expect(magic).to_contain_text("1 changed, 1 new, 3 removed", timeout=30_000)
    button(nb, "Tidy up.", "Apply").click()
    expect(magic).to_contain_text("Applied", timeout=10_000)
    expect(cells).to_have_count(7)
    nb.shot("cells-removed")
    button(nb, "Tidy up.", "Undo").click()
    expect(magic).to_contain_text("Undone", timeout=10_000)
    expect(cells).to_have_count(9)
    expect(nb.output(2)).to_contain_text("3")
    nb.shot("cells-restored")
    restored = save(page, nb, path)
    assert [c["id"] for c in restored][:8] == ["setup", "script", "total", "notes", "raw", "last", "m", "m2"]
    assert document(restored[:8]) == saved  # text, type, order, id, metadata, outputs, count
    errors = [line for line in page.console_log if "genai-magics-bridge" in line and "error" in line.lower()]
    assert not errors, errors
