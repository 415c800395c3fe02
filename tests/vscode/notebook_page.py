"""Driving a notebook in code-server's page: open it, run cells, click the proposal's buttons, save and read.

What is on screen is judged where it is reliable (outputs and widgets in the
output webview, the cell's run state); cell text is read from the saved
.ipynb, since Monaco renders only the visible lines.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import nbformat
from vscode_server import KERNEL_DISPLAY, KERNEL_NAME, CodeServer

_TEXT_JS = """() => {
  const out = [];
  const walk = (node) => {
    if (node.shadowRoot) walk(node.shadowRoot);
    for (const child of node.childNodes) {
      if (child.nodeType === Node.TEXT_NODE) out.push(child.textContent);
      else if (child.nodeType === Node.ELEMENT_NODE && !['STYLE', 'SCRIPT'].includes(child.tagName)) walk(child);
    }
  };
  const root = document.getElementById('container');
  if (root) walk(root);
  return out.join(' ').replace(/\\s+/g, ' ');
}"""


def write_notebook(path: Path, sources: list[str], *, kinds: list[str] | None = None) -> None:
    """A notebook of code cells (``kinds`` may make some ``markdown``) for the test kernel."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": KERNEL_NAME, "display_name": KERNEL_DISPLAY, "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for i, source in enumerate(sources):
        kind = (kinds or [])[i] if kinds and i < len(kinds) else "code"
        nb.cells.append(
            nbformat.v4.new_markdown_cell(source) if kind == "markdown" else nbformat.v4.new_code_cell(source)
        )
    nbformat.write(nb, str(path))


def open_notebook(page: Any, server: CodeServer, folder: Path, artifacts: Path, sources: list[str]) -> Notebook:
    """``nb.ipynb`` of these code cells in ``folder``, opened in the page with its kernel started."""
    write_notebook(folder / "nb.ipynb", sources)
    nb = Notebook(page, server, folder, "nb.ipynb", artifacts)
    nb.open(len(sources))
    return nb


class KernelStartFailed(Exception):
    """VS Code said "Failed to start the Kernel" (in the browser console) while a run waited."""


class Notebook:
    def __init__(self, page: Any, server: CodeServer, folder: Path, name: str, artifacts: Path):
        self.page = page
        self.server = server
        self.folder = folder
        self.path = folder / name
        self.artifacts = artifacts
        self.shots = 0

    # ------------------------------------------------------------ opening
    def open(self, cells: int) -> None:
        page = self.page
        page.goto(f"{self.server.url}/?folder={self.folder}")
        page.wait_for_selector(".monaco-workbench", timeout=90_000)
        page.wait_for_selector(".part.activitybar", timeout=60_000)
        self._quick_open(self.path.name)
        page.wait_for_function(
            "n => document.querySelectorAll('.notebook-editor .cell-list-container .monaco-list-row').length >= n",
            arg=cells,
            timeout=60_000,
        )
        self.wait_for_kernel()
        self.shot("opened")

    def _quick_open(self, name: str) -> None:
        page = self.page
        for _ in range(3):
            page.keyboard.press("Control+P")
            try:
                page.wait_for_selector(".quick-input-widget input", state="visible", timeout=5_000)
                break
            except Exception:
                page.mouse.click(700, 500)
        page.keyboard.type(name)
        page.wait_for_selector(f".quick-input-list .monaco-list-row[aria-label*='{name}']", timeout=20_000)
        page.keyboard.press("Enter")
        page.wait_for_selector(".notebook-editor .cell-inner-container", timeout=60_000)

    def wait_for_kernel(self, timeout: float = 120_000) -> None:
        self.page.wait_for_function(
            "k => [...document.querySelectorAll('.kernel-label')].some(e => e.innerText.trim() === k)",
            arg=KERNEL_DISPLAY,
            timeout=timeout,
        )

    def command(self, title: str) -> None:
        """Run a command from the command palette by its title: the row that names it is clicked
        (Enter would run whichever row is highlighted, which under load can be another), and the
        palette must close."""
        page = self.page
        self._focus_editor()
        page.keyboard.press("F1")
        page.wait_for_selector(".quick-input-widget input", state="visible", timeout=10_000)
        page.keyboard.type(title)
        row = page.locator(f".quick-input-list .monaco-list-row[aria-label*='{title}']").first
        row.wait_for(state="visible", timeout=20_000)
        row.click()
        page.wait_for_selector(".quick-input-widget", state="hidden", timeout=10_000)

    def restart_and_run_all(self) -> None:
        """Clear the outputs, restart the kernel and run every cell: any output after it is the new
        kernel's (the execution orders after a restart are those of before, so they cannot tell).
        The command is given once more if no output came within 45 s (seen in CI under load: a
        palette command dropped, and once the kernel restarted with no cell run)."""
        self.command("Clear All Outputs")
        deadline = time.monotonic() + 20
        while self.outputs_text().strip() and time.monotonic() < deadline:
            time.sleep(0.3)
        assert not self.outputs_text().strip(), "Clear All Outputs left outputs on screen"
        self.command("Restart Kernel and Run All Cells")
        deadline = time.monotonic() + 45
        while not self.outputs_text().strip() and time.monotonic() < deadline:
            time.sleep(0.5)
        if not self.outputs_text().strip():
            self.shot("no-run-after-restart")
            self.command("Restart Kernel and Run All Cells")

    def rename(self, name: str) -> None:
        """Rename the notebook's file in VS Code's explorer (F2 on its row), as a user does; the editor
        follows the file (VS Code closes the old notebook document and opens the new one)."""
        page = self.page
        old = self.path
        self.command("View: Show Explorer")
        row = page.locator(f".explorer-folders-view .monaco-list-row[aria-label='{old.name}']").first
        row.wait_for(state="visible", timeout=20_000)
        row.click()
        page.keyboard.press("F2")
        field = page.locator(".explorer-folders-view .monaco-inputbox input")
        field.wait_for(state="visible", timeout=10_000)
        field.fill(name)
        page.keyboard.press("Enter")
        self.path = old.with_name(name)
        deadline = time.monotonic() + 30
        while (old.exists() or not self.path.exists()) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert self.path.exists() and not old.exists(), f"{old.name} was not renamed to {name}"
        page.wait_for_selector(f".tab.active[aria-label*='{name}']", timeout=30_000)
        page.wait_for_selector(".notebook-editor .cell-inner-container", timeout=60_000)
        self.shot("renamed")

    # -------------------------------------------------------------- cells
    def row(self, i: int) -> Any:
        """Cell ``i``'s row (Monaco's list is virtualised: rows are found by their index, not DOM order)."""
        self._reveal(i)
        return self._row(i)

    def _row(self, i: int) -> Any:
        return self.page.locator(f'.notebook-editor .cell-list-container .monaco-list-row[data-index="{i}"]')

    def _reveal(self, i: int) -> None:
        """Scroll the cell list until row ``i`` is rendered (rows far off screen are not in the DOM)."""
        for _ in range(40):
            if self._row(i).count():
                return
            shown = self.page.eval_on_selector_all(
                ".notebook-editor .cell-list-container .monaco-list-row", "rows => rows.map(r => +r.dataset.index)"
            )
            box = self.page.locator(".notebook-editor .cell-list-container").first.bounding_box()
            if box:
                self.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            self.page.mouse.wheel(0, 500 if not shown or max(shown) < i else -500)
            time.sleep(0.15)

    def run(self, i: int, timeout: float = 60.0, wait: bool = True) -> None:
        """Run cell ``i`` with its own button (Ctrl+Enter inserts a line in the web build). A kernel
        VS Code failed to start is started once more: its launcher takes ports from 9000 up after
        checking they are free, and another process on the machine can bind one in between
        ("ZMQError: Address already in use", seen with other code-servers on the machine)."""
        failed = self._failed_starts()
        before = self._press_run(i)
        if not wait:
            return
        try:
            self.wait_finished(i, before, timeout, failed_starts=failed)
        except KernelStartFailed:
            self.shot("kernel-start-failed")
            self._press_run(i)
            self.wait_finished(i, before, timeout)

    def _failed_starts(self) -> int:
        return sum("Failed to start the Kernel" in line for line in self.page.console_log)

    def _press_run(self, i: int) -> str:
        """Press cell ``i``'s run button; its execution order before."""
        before = self.execution_order(i)
        for attempt in range(4):
            row = self.row(i)
            row.scroll_into_view_if_needed()
            row.hover(position={"x": 30, "y": 12})  # where the run button shows
            button = row.locator(".run-button-container .codicon-notebook-execute")
            try:
                button.wait_for(state="visible", timeout=3_000)
                button.click(timeout=5_000)
                break
            except Exception:
                if attempt == 3:
                    raise
                self.page.mouse.move(5, 5)  # hover off and on again
        return before

    def execution_order(self, i: int) -> str:
        try:
            return self.row(i).locator(".cell-execution-order").first.inner_text(timeout=1_000).strip()
        except Exception:
            return ""

    def running(self, i: int) -> bool:
        return self.row(i).locator(".codicon-notebook-state-executing, .codicon-modifier-spin").count() > 0

    def wait_finished(self, i: int, before: str | None, timeout: float, failed_starts: int | None = None) -> None:
        """Until the cell shows an execution order (a new one, unless ``before`` is None) and no longer runs;
        with ``failed_starts`` (the console's count before the run), KernelStartFailed when VS Code says
        it failed to start the kernel since."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            order = self.execution_order(i)
            if order != before and re.search(r"\d", order) and not self.running(i):
                return
            if failed_starts is not None and self._failed_starts() > failed_starts:
                raise KernelStartFailed(f"VS Code failed to start the kernel for cell {i}")
            time.sleep(0.2)
        self.shot(f"not-finished-{i}")
        raise TimeoutError(f"cell {i} did not finish within {timeout} s (order {self.execution_order(i)!r})")

    def type_into(self, i: int, text: str) -> None:
        """Replace cell ``i``'s text by typing (a hand edit, not run); checked on screen, retried."""
        for _ in range(3):
            self.row(i).locator(".monaco-editor .view-lines").click()
            time.sleep(0.3)  # the cell's editor takes the focus after the click
            self.page.keyboard.press("Control+A")
            self.page.keyboard.press("Delete")
            self.page.keyboard.insert_text(text)  # as pasted: no auto-indent
            time.sleep(0.3)
            if self.editor_text(i).strip() == text.strip():
                break
        self.page.keyboard.press("Escape")

    # ------------------------------------------------------------ outputs
    def frames(self) -> list[Any]:
        return [f for f in self.page.frames if f != self.page.main_frame]

    def outputs_text(self) -> str:
        """Every output's text (Markdown renders in shadow roots, which innerText does not enter)."""
        texts = []
        for frame in self.frames():
            try:
                texts.append(frame.evaluate(_TEXT_JS))
            except Exception:
                pass
        return "\n".join(texts)

    def wait_output(self, pattern: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.outputs_text()
            if re.search(pattern, text):
                return text
            time.sleep(0.3)
        self.shot("no-output")
        raise TimeoutError(f"no output matching {pattern!r}; outputs: {self.outputs_text()[-2000:]}")

    def button(self, label: str, nth: int = -1) -> Any:
        """A widget button by its label in the output webview (the newest proposal's by default)."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for frame in self.frames():
                found = frame.locator(
                    "button.jupyter-button, button.widget-button", has_text=re.compile(rf"^\s*{label}\s*$")
                )
                try:
                    count = found.count()
                except Exception:
                    continue
                if count:
                    return found.nth(nth if nth >= 0 else count + nth)
            time.sleep(0.3)
        self.shot(f"no-button-{label}")
        raise TimeoutError(f"no {label!r} button in the outputs")

    def click(self, label: str) -> None:
        """Click the newest proposal's button, scrolled on screen."""
        self.on_screen(label).click()

    def on_screen(self, label: str) -> Any:
        """The newest proposal's button, the notebook scrolled until it is on screen (the output
        webview does not scroll itself: the notebook's list does)."""
        button = self.button(label)
        self.wait_enabled(button)
        height = self.page.viewport_size["height"]
        box = self.page.locator(".notebook-editor .cell-list-container").first.bounding_box()
        for _ in range(40):
            where = button.bounding_box()
            if where and 60 < where["y"] < height - 80:
                break
            if box:
                self.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            self.page.mouse.wheel(0, 300 if not where or where["y"] >= height - 80 else -300)
            time.sleep(0.15)
        return button

    def editor_text(self, i: int) -> str:
        """What cell ``i``'s editor shows now (its rendered lines)."""
        return self.row(i).locator(".monaco-editor .view-lines").inner_text().replace("\u00a0", " ")

    def wait_enabled(self, button: Any, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if button.is_enabled():
                return
            time.sleep(0.2)
        raise TimeoutError("the button stayed disabled")

    def _focus_editor(self) -> None:
        """Click into a cell editor that is fully on screen (a click in the output webview keeps the
        keyboard there; a cell scrolled under the tabs would not get the click)."""
        top = self.page.locator(".notebook-editor .cell-list-container").first.bounding_box()
        editors = self.page.locator(".notebook-editor .code-cell-row .monaco-editor .view-lines")
        for i in range(editors.count()):
            box = editors.nth(i).bounding_box()
            if box and top and box["y"] > top["y"] + 5 and box["y"] + box["height"] < top["y"] + top["height"]:
                editors.nth(i).click(position={"x": box["width"] - 5, "y": 5})
                return
        self.row(0).locator(".monaco-editor .view-lines").click()

    # -------------------------------------------------------------- the file
    def save(self) -> nbformat.NotebookNode:
        """Save from the notebook editor (Ctrl+S) and read the file back once it changed."""
        before = self.path.stat().st_mtime_ns
        self._focus_editor()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            self.page.keyboard.press("Control+S")
            end = time.monotonic() + 3
            while time.monotonic() < end:
                if self.path.stat().st_mtime_ns != before:
                    time.sleep(0.3)  # the write may still be going on
                    return nbformat.read(str(self.path), as_version=4)
                time.sleep(0.1)
        raise TimeoutError("the notebook was not saved")

    def sources(self) -> list[str]:
        return [c.source for c in self.save().cells]

    def shot(self, name: str) -> None:
        self.shots += 1
        try:
            self.page.screenshot(path=str(self.artifacts / f"{self.shots:02d}-{name}.png"))
        except Exception:
            pass


def wait_replayed(nb: Notebook, stub: Any, sent: int, pattern: str) -> None:
    """Wait for the replay's line; asked again instead, fail with what the new kernel's turn sent beside the
    document (which says why the replay missed)."""
    try:
        nb.wait_output(pattern, timeout=120)
    except TimeoutError as exc:
        again = [{k: turn.get(k) for k in ("outputs", "secondaryContext")} for turn in stub_turns(stub)[sent:]]
        raise AssertionError(f"{exc}\nsent again: {again}") from None


def stub_turns(stub: Any) -> list[dict[str, Any]]:
    """The user turns the stand-in received, newest last (each the JSON text of the last content)."""
    out = []
    for record in stub.requests:
        if record.get("kind") != "stream":
            continue
        contents = record["json"].get("contents") or []
        out.append(json.loads(contents[-1]["parts"][0]["text"]))
    return out
