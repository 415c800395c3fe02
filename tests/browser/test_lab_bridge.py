"""The live bridge in a real browser: JupyterLab 4 and Notebook 7, headless Chromium.

A hand edit that was never run is seen by the kernel at the next execute, and
a write from the kernel shows in the editor without a reload, as one undo step.
"""
from __future__ import annotations

import re
import time
from pathlib import Path

import nbformat
import pytest

APPS = ["lab", "notebook"]


def write_notebook(path: Path, cells: list[tuple[str, str]]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source, id=cell_id) for cell_id, source in cells]
    nbformat.write(nb, str(path))


class NotebookPage:
    """Index-based helpers over the notebook DOM (the same in JupyterLab and Notebook 7)."""

    def __init__(self, page, artifacts: Path):
        self.page = page
        self.artifacts = artifacts
        self.shots = 0

    def cell(self, i: int):
        return self.page.locator(".jp-Notebook .jp-Cell").nth(i)

    def editor(self, i: int):
        return self.cell(i).locator(".cm-content")

    def output(self, i: int):
        return self.cell(i).locator(".jp-OutputArea-output")

    def run(self, i: int, timeout: float = 45_000) -> None:
        from playwright.sync_api import expect

        prompt = self.cell(i).locator(".jp-InputPrompt")
        before = prompt.inner_text()
        self.editor(i).click()
        self.page.keyboard.press("Shift+Enter")
        # "[*]:" while it runs, then "[n]:" with a new n
        expect(prompt).not_to_have_text(before, timeout=timeout)
        expect(prompt).to_have_text(re.compile(r"\[\d+\]:"), timeout=timeout)

    def type_into(self, i: int, text: str) -> None:
        self.editor(i).click()
        self.page.keyboard.press("Control+a")
        self.page.keyboard.type(text)

    def shot(self, label: str) -> None:
        self.shots += 1
        self.page.screenshot(path=str(self.artifacts / f"{self.shots:02d}-{label}.png"))


@pytest.mark.parametrize("jupyter_server", APPS, indirect=True)
def test_hand_edit_seen_and_kernel_write_shows_in_editor(jupyter_server, page, artifacts):
    from playwright.sync_api import expect

    t0 = time.monotonic()
    write_notebook(jupyter_server.root / "bridge.ipynb", [
        ("setup", "from genai_magics.bridge import Bridge\nB = Bridge.attach(get_ipython())"),
        ("target", "y = 1"),
        ("probe", "print('SRC=' + B.cell('target').source, B.connected, B.cell_above('probe').id)"),
        ("writer", "res = []\nB.writer.write('target', \"y = 'written by the kernel'\", res.append)"),
        ("check", "print('RES', res, B.cell('target').source)"),
    ])
    nb = NotebookPage(page, artifacts)
    page.goto(jupyter_server.notebook_url("bridge.ipynb"))
    expect(page.locator(".jp-Notebook .jp-Cell")).to_have_count(5, timeout=30_000)
    nb.shot("opened")

    nb.run(0)
    # a hand edit, never run
    nb.type_into(1, "y = 41 + 1")
    nb.run(2)
    expect(nb.output(2)).to_contain_text("SRC=y = 41 + 1 True target")
    nb.shot("hand-edit-seen")

    nb.run(3)
    t_write = time.monotonic()
    expect(nb.editor(1)).to_have_text("y = 'written by the kernel'", timeout=5_000)
    shown_after = time.monotonic() - t_write
    nb.shot("written-by-kernel")
    nb.run(4)
    expect(nb.output(4)).to_contain_text("RES [None] y = 'written by the kernel'")

    # the write is one undo step in that cell
    nb.editor(1).click()
    page.keyboard.press("Control+z")
    expect(nb.editor(1)).to_have_text("y = 41 + 1", timeout=5_000)
    nb.shot("undone")

    errors = [line for line in page.console_log if "genai-magics-bridge" in line and "error" in line.lower()]
    assert not errors, errors
    assert shown_after < 5
    assert time.monotonic() - t0 < 90
