"""The live bridge in a real browser: JupyterLab 4 and Notebook 7, headless Chromium.

A hand edit that was never run is seen by the kernel at the next execute, and
a write from the kernel shows in the editor without a reload, as one undo step.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from helpers import protocol
from helpers.lazy import lazy_import

nbformat = lazy_import("nbformat")

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
        try:
            expect(prompt).not_to_have_text(before, timeout=10_000)
        except AssertionError:
            # not scheduled at all (a kernel not quite there yet drops the run): once more
            self.editor(i).click()
            self.page.keyboard.press("Shift+Enter")
            expect(prompt).not_to_have_text(before, timeout=timeout)
        expect(prompt).to_have_text(re.compile(r"\[\d+\]:"), timeout=timeout)

    def open(self, url: str, n_cells: int) -> None:
        """Open the notebook and wait for its kernel: a cell run before is silently not run."""
        from playwright.sync_api import expect

        self.page.goto(url)
        expect(self.page.locator(".jp-Notebook .jp-Cell")).to_have_count(n_cells, timeout=30_000)
        self.wait_kernel()

    def wait_kernel(self) -> None:
        """The session has its kernel (the status indicator starts as "idle" before that)."""
        from playwright.sync_api import expect

        expect(self.page.locator(".jp-Toolbar-kernelName").first).to_contain_text("Python", timeout=45_000)
        indicator = self.page.locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]')
        expect(indicator.first).to_be_attached(timeout=45_000)

    def focus_editor(self, i: int) -> None:
        """Click into the cell's editor and wait until it has the keyboard (edit mode)."""
        from playwright.sync_api import expect

        self.editor(i).click()
        expect(self.cell(i).locator(".cm-editor.cm-focused")).to_have_count(1, timeout=5_000)

    def type_into(self, i: int, text: str) -> None:
        self.focus_editor(i)
        self.page.keyboard.press("Control+a")
        self.page.keyboard.type(text)

    def shot(self, label: str) -> None:
        self.shots += 1
        self.page.screenshot(path=str(self.artifacts / f"{self.shots:02d}-{label}.png"))


@pytest.mark.parametrize("jupyter_server", APPS, indirect=True)
def test_hand_edit_seen_and_kernel_write_shows_in_editor(jupyter_server, page, artifacts):
    from playwright.sync_api import expect

    t0 = time.monotonic()
    write_notebook(
        jupyter_server.root / "bridge.ipynb",
        [
            # every message the extension sends is validated against the protocol's schema in the kernel
            (
                "setup",
                protocol.check_in_kernel()
                + "from genai_magics.frontends.bridge import Bridge\nB = Bridge.attach(get_ipython())",
            ),  # noqa: E501
            ("target", "y = 1"),
            ("probe", "print('SRC=' + B.cell('target').source, B.connected, B.cell_above('probe').id)"),
            ("writer", "res = []\nB.writer.write('target', \"y = 'written by the kernel'\", res.append)"),
            ("check", "print('RES', res, B.cell('target').source, 'OUTSIDE THE SCHEMA', _bridge_bad)"),
        ],
    )
    nb = NotebookPage(page, artifacts)
    nb.open(jupyter_server.notebook_url("bridge.ipynb"), 5)
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
    expect(nb.output(4)).to_contain_text("RES [None] y = 'written by the kernel' OUTSIDE THE SCHEMA []")

    # the write is one undo step in that cell
    nb.focus_editor(1)
    page.keyboard.press("Control+z")
    expect(nb.editor(1)).to_have_text("y = 41 + 1", timeout=5_000)
    nb.shot("undone")

    errors = [line for line in page.console_log if "genai-magics-bridge" in line and "error" in line.lower()]
    assert not errors, errors
    assert shown_after < 5
    assert time.monotonic() - t0 < 90


PROBE = (
    "_p = get_ipython().kernel.get_parent()\n"
    "print('FRESH' if B.is_fresh_for(_p['metadata']['cellId'], _p['content']['code']) else 'STALE')"
)


@pytest.mark.parametrize("jupyter_server", ["lab"], indirect=True)
def test_snapshot_precedes_every_run_after_a_widget_click(jupyter_server, page, artifacts):
    """Edit a cell and run it at once (the snapshot is pushed on executionScheduled,
    right before the execute request), many times, after an ipywidgets click
    wrote through the bridge: the kernel has the fresh source every time."""
    from playwright.sync_api import expect

    write_notebook(
        jupyter_server.root / "order.ipynb",
        [
            (
                "setup",
                "from genai_magics.frontends.bridge import Bridge\nB = Bridge.attach(get_ipython())\n"
                "import ipywidgets, threading\nres = []\n"
                "def _click(_):\n"
                "    res.append(threading.current_thread().name)\n"
                "    B.writer.write('target', 'z = 1  # from a click', res.append)\n"
                "btn = ipywidgets.Button(description='Write')\nbtn.on_click(_click)\nbtn",
            ),
            ("target", "z = 0"),
            ("probe", PROBE),
            ("info", "print('CLICK', res)"),
        ],
    )
    nb = NotebookPage(page, artifacts)
    nb.open(jupyter_server.notebook_url("order.ipynb"), 4)
    nb.run(0)
    button = nb.cell(0).locator("button", has_text="Write")
    button.click()
    expect(nb.editor(1)).to_have_text("z = 1  # from a click", timeout=10_000)
    nb.shot("clicked")
    nb.run(3)
    expect(nb.output(3)).to_contain_text("None]")
    click_thread = re.search(r"CLICK \['([^']*)'", nb.output(3).inner_text()).group(1)
    print(f"\nthe click ran on thread {click_thread!r}")

    runs, fresh = 20, 0
    for i in range(runs):
        nb.editor(2).click()
        page.keyboard.press("Control+Home")
        page.keyboard.type(f"# edit {i}\n")
        nb.run(2)
        text = nb.output(2).inner_text().strip()
        fresh += text == "FRESH"
    nb.shot("after-runs")
    print(f"\nbrowser ordering: {fresh}/{runs} fresh")
    assert fresh == runs


@pytest.mark.parametrize("jupyter_server", ["lab"], indirect=True)
def test_page_reload_and_kernel_restart(jupyter_server, page, artifacts):
    """After a page reload the extension takes the kernel's open comm over; after
    a kernel restart the comm is opened again when the bridge is attached again."""
    from playwright.sync_api import expect

    write_notebook(
        jupyter_server.root / "again.ipynb",
        [
            ("setup", "from genai_magics.frontends.bridge import Bridge\nB = Bridge.attach(get_ipython())"),
            ("target", "w = 1"),
            ("probe", "print('SRC=' + B.cell('target').source, B.snapshot_count > 0)"),
        ],
    )
    nb = NotebookPage(page, artifacts)
    url = jupyter_server.notebook_url("again.ipynb")
    nb.open(url, 3)
    nb.run(0)
    nb.run(2)
    expect(nb.output(2)).to_contain_text("SRC=w = 1 True")

    # reload: the kernel keeps its comm, the new page adopts it (one comm_info round trip; a run
    # pressed before it ends goes out with the kernel holding the snapshot from before the reload)
    took_over = len([line for line in page.console_log if "took over the kernel comm" in line])
    page.reload()
    nb.open(url, 3)
    deadline = time.monotonic() + 30
    while len([line for line in page.console_log if "took over the kernel comm" in line]) == took_over:
        assert time.monotonic() < deadline, "the reloaded page never took the kernel's comm over"
        page.wait_for_timeout(200)  # not time.sleep: the sync API takes the page's console lines in only while it waits
    nb.type_into(1, "w = 2")
    nb.run(2)
    expect(nb.output(2)).to_contain_text("SRC=w = 2 True")
    nb.shot("after-reload")

    # restart the kernel and clear the prompts, so a new run is seen for sure
    page.locator(".lm-MenuBar-itemLabel", has_text="Kernel").click()
    page.locator(".lm-Menu-itemLabel", has_text="Restart Kernel and Clear Outputs of All Cells").click()
    page.locator(".jp-Dialog button.jp-mod-accept").click()
    expect(nb.cell(0).locator(".jp-InputPrompt")).to_have_text(re.compile(r"\[ ?\]:"), timeout=30_000)
    nb.wait_kernel()
    nb.type_into(1, "w = 3")
    nb.run(0)
    nb.run(2)
    expect(nb.output(2)).to_contain_text("SRC=w = 3 True")
    nb.shot("after-restart")
