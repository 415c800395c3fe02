"""Click on Apply -> the proposal's text in the target cell's editor, in a real VS Code (code-server).

Side by side in one run, against the stand-in:

* **companion**: VS Code with the genai-magics companion: Apply writes the code cell above the
  magic cell (the magic cell finished long before the click);
* **running cell**: VS Code without it: Apply replaces the waiting magic cell in its execute reply;
* **JupyterLab**: JupyterLab 4 with the bundled bridge, the same notebook.

Each variant: one code-server, one notebook (``%load_ext``, a code cell, the magic cell); per
click the magic cell runs, the Apply button is scrolled on screen, then the time from the click
until the target cell's editor shows the proposal's first line (polled every ~5 ms from
Playwright, so both carry the same polling and click-dispatch overhead). Between clicks: Undo
(companion) or the magic typed back into its cell as a new conversation (running cell). Prints the medians and the
ratio. Needs ``scripts/setup_vscode.sh`` and the companion's VSIX (``npm run package`` in
vscode-extension/). For comparison, **JupyterLab** 4 with the bridge (tests/browser's server and
page helpers): Apply writes the code cell above through the bridge's comm; Undo between clicks.

    .venv/bin/python benchmarks/vscode_apply.py            # ~4 min on 2 busy cores; --clicks N
    .venv/bin/python benchmarks/vscode_apply.py --smoke    # one click each: it still runs (tests/vscode runs it)
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests" / "vscode"), str(REPO / "tests" / "browser"), str(REPO / "tests")]

import importlib.util  # noqa: E402
import re  # noqa: E402

from helpers.pages import watch_console  # noqa: E402
from notebook_page import Notebook, write_notebook  # noqa: E402
from smoke import add_flag  # noqa: E402
from test_lab_bridge import NotebookPage  # noqa: E402
from test_lab_bridge import write_notebook as write_lab_notebook  # noqa: E402
from vscode_server import EXTENSIONS, CodeServer, install_extension  # noqa: E402

from genai_magics.stub.server import StubServer  # noqa: E402

CODE = "def f(x):\n    return x + 1"
MAGIC = "%%gemini_edit\nAdd a docstring"
STUB_LINE = "# stub edit: Add a docstring"


def _wait_text(nb: Notebook, row: int, text: str, timeout: float = 20.0) -> float:
    """Seconds until cell ``row``'s editor shows ``text``."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        try:
            if text in nb.editor_text(row):
                return time.perf_counter() - start
        except Exception:
            pass
        time.sleep(0.005)
    raise TimeoutError(f"{text!r} never showed in cell {row}")


def measure(variant: str, clicks: int, stub: StubServer, browser, root: Path, shots: Path) -> list[float]:
    extensions = root / "ext"
    shutil.copytree(EXTENSIONS, extensions, symlinks=True)
    if variant == "companion":
        vsix = sorted((REPO / "vscode-extension").glob("genai-magics-companion-*.vsix"))[-1]
        install_extension(extensions, vsix, root / "install")
    env = {"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": "fake-key-for-the-stand-in"}
    server = CodeServer(root, env, extensions, root / "code-server.log")
    context = browser.new_context(viewport={"width": 1500, "height": 1100})
    try:
        page = context.new_page()
        watch_console(page)  # the notebook page tells a kernel VS Code failed to start by its console
        folder = root / "ws"
        folder.mkdir()
        write_notebook(folder / "nb.ipynb", ["%load_ext genai_magics", CODE, MAGIC])
        nb = Notebook(page, server, folder, "nb.ipynb", shots)
        nb.open(3)
        nb.run(0)
        nb.run(1)
        times = []
        for k in range(clicks):
            if variant == "running cell" and k:
                # Apply made the magic cell the conversation's code: a new conversation per click,
                # about the code cell run again just before
                nb.type_into(2, f"%%gemini_edit -c run{k}\nAdd a docstring")
                nb.run(1)
            nb.run(2, wait=variant == "companion")
            # the new proposal's line (the previous one says Applied or Undone by now)
            nb.wait_output("Apply writes the proposal into" if variant == "companion" else "This cell waits up to")
            button = nb.on_screen("Apply")
            nb.wait_enabled(button)
            start = time.perf_counter()
            button.click()
            clicked = time.perf_counter() - start
            target = 1 if variant == "companion" else 2
            times.append(clicked + _wait_text(nb, target, STUB_LINE))
            if variant == "companion":
                nb.click("Undo")
                nb.wait_output("Undone: the code from before")
                _wait_text(nb, 1, "def f(x)")
            else:
                nb.wait_finished(2, None, 30)
        return times
    except Exception:
        nb.shot("failed")
        (shots / "code-server.log").write_text((root / "code-server.log").read_text())
        raise
    finally:
        context.close()
        server.stop()


def _lab_server_class():
    """tests/browser's JupyterServer (it lives in that directory's conftest)."""
    spec = importlib.util.spec_from_file_location("browser_conftest", REPO / "tests" / "browser" / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.JupyterServer


def measure_lab(clicks: int, stub: StubServer, browser, root: Path, shots: Path) -> list[float]:
    """JupyterLab 4 with the bridge: Apply writes the code cell above through the bridge's comm."""
    (root / "root").mkdir(parents=True)
    (root / "home").mkdir()
    env = {"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": "fake-key-for-the-stand-in"}
    server = _lab_server_class()("lab", root / "root", root / "home", env, root / "lab.log")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        write_lab_notebook(
            root / "root" / "nb.ipynb", [("load", "%load_ext genai_magics"), ("code", CODE), ("m", MAGIC)]
        )
        nb = NotebookPage(page, shots)
        nb.open(server.notebook_url("nb.ipynb"), 3)
        nb.run(0)
        nb.run(1)
        times = []
        for _ in range(clicks):
            nb.run(2)
            button = nb.cell(2).locator("button", has_text=re.compile(r"^\s*Apply\s*$"))
            button.wait_for(state="visible", timeout=30_000)
            start = time.perf_counter()
            button.click()
            clicked = time.perf_counter() - start
            times.append(clicked + _wait_lab_text(nb, STUB_LINE))
            nb.cell(2).locator("button", has_text=re.compile(r"^\s*Undo\s*$")).click()
            deadline = time.perf_counter() + 20
            while STUB_LINE in nb.editor(1).inner_text() and time.perf_counter() < deadline:
                time.sleep(0.02)
        return times
    finally:
        context.close()
        server.stop()


def _wait_lab_text(nb, text: str, timeout: float = 20.0) -> float:
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if text in nb.editor(1).inner_text():
            return time.perf_counter() - start
        time.sleep(0.005)
    raise TimeoutError(f"{text!r} never showed in the code cell")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clicks", type=int, default=10)
    parser.add_argument("--shots", type=Path, default=REPO / "test-artifacts" / "vscode-bench", help="screenshots")
    add_flag(parser)
    args = parser.parse_args()
    if args.smoke:
        args.clicks = 1
    from playwright.sync_api import sync_playwright

    results = {}
    with StubServer() as stub, sync_playwright() as pw, tempfile.TemporaryDirectory() as tmp:
        browser = pw.chromium.launch(executable_path=shutil.which("chromium"), headless=True, args=["--no-sandbox"])
        for variant in ("companion", "running cell", "JupyterLab"):
            name = variant.replace(" ", "-")
            (args.shots / name).mkdir(parents=True, exist_ok=True)
            if variant == "JupyterLab":
                results[variant] = measure_lab(args.clicks, stub, browser, Path(tmp) / name, args.shots / name)
            else:
                results[variant] = measure(variant, args.clicks, stub, browser, Path(tmp) / name, args.shots / name)
        browser.close()
    print(f"click -> proposal in the target cell's editor, {args.clicks} clicks each (seconds)")
    print(f"{'variant':<14} {'median':>8} {'min':>8} {'max':>8}  target cell")
    for variant, times in results.items():
        target = "the magic cell itself" if variant == "running cell" else "the code cell above"
        print(f"{variant:<14} {statistics.median(times):8.3f} {min(times):8.3f} {max(times):8.3f}  {target}")
    companion = statistics.median(results["companion"])
    for other in ("running cell", "JupyterLab"):
        print(f"companion / {other} (medians): {companion / statistics.median(results[other]):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
