"""A proposal's buttons from before a kernel restart or a ``%reload_ext``, in a real JupyterLab.

After a restart the widget's comms are gone with the old kernel process: a click
would reach nothing (ipywidgets only shows a broken-link icon and the browser
logs ``Cannot send``). The labextension marks every genai_magics proposal still
on screen as stale, with one line, and disables its buttons. After
``%reload_ext genai_magics`` the bridge is the same one, so an old Apply and Undo
still write the right cell.
"""

from __future__ import annotations

import re

import pytest
from helpers.pages import shown_as
from test_lab_bridge import NotebookPage, write_notebook

from genai_magics import messages

STALE = "The kernel restarted: these buttons no longer work."
ONE_PROPOSAL = [("setup", "%load_ext genai_magics"), ("code", "t = 1"), ("magic", "%%gemini_edit\nAdd a comment")]


pytestmark = pytest.mark.stand_in  # the server's kernels talk to the stand-in (browser/conftest.py: server_env)


def stale_lines(nb: NotebookPage, i: int, text: str = STALE):
    """The lines saying so that are shown in cell i (the widget carries a hidden one, see ui/widgets.py)."""
    return nb.cell(i).get_by_text(text).filter(visible=True)


def button(nb: NotebookPage, i: int, label: str):
    return nb.cell(i).locator(".jp-OutputArea button", has_text=re.compile(rf"^\s*{label}\s*$"))


def open_and_run(jupyter_server, page, artifacts, name: str, cells: list[tuple[str, str]], runs: int) -> NotebookPage:
    """Write the notebook, open it, run its first ``runs`` cells."""
    write_notebook(jupyter_server.root / name, cells)
    nb = NotebookPage(page, artifacts)
    nb.open(jupyter_server.notebook_url(name), len(cells))
    for i in range(runs):
        nb.run(i)
    return nb


def kernel_menu(nb: NotebookPage, item: str) -> None:
    nb.page.locator(".lm-MenuBar-itemLabel", has_text="Kernel").click()
    nb.page.locator(".lm-Menu-itemLabel", has_text=re.compile(rf"^{item}$")).click()


def restart_kernel(nb: NotebookPage) -> None:
    """Kernel > Restart Kernel…, accepted: the outputs stay on screen."""
    kernel_menu(nb, "Restart Kernel…")
    nb.page.locator(".jp-Dialog button.jp-mod-accept").click()
    nb.wait_kernel()


def crash_kernel(nb: NotebookPage, i: int) -> None:
    """Run a cell that kills the kernel process: the server restarts it on its own."""
    from playwright.sync_api import expect

    nb.editor(i).click()
    nb.page.keyboard.press("Shift+Enter")
    dialog = nb.page.locator(".jp-Dialog", has_text="restart automatically")
    expect(dialog).to_be_visible(timeout=30_000)
    dialog.locator("button.jp-mod-accept").click()
    nb.wait_kernel()


@pytest.mark.parametrize(
    ("jupyter_server", "how"), [("lab", "menu"), ("lab", "crash"), ("notebook", "menu")], indirect=["jupyter_server"]
)
def test_buttons_from_before_a_kernel_restart_say_so_and_click_nothing(jupyter_server, page, artifacts, how):
    """Kernel > Restart Kernel…, or the kernel process dies and the server restarts it."""
    from playwright.sync_api import expect

    nb = open_and_run(
        jupyter_server,
        page,
        artifacts,
        "restart.ipynb",
        [
            ("setup", "%load_ext genai_magics"),
            ("code", "total = 1 + 2"),
            ("first", "%%gemini_edit\nAdd input validation"),
            ("second", "%%gemini_edit\nAdd a comment"),
            ("crash", "import os\nos._exit(1)"),
        ],
        3,
    )
    expect(button(nb, 2, "Apply")).to_be_enabled(timeout=30_000)
    nb.run(3)
    button(nb, 3, "Apply").click()
    applied = ["# stub edit: Add a comment", "total = 1 + 2"]
    expect(nb.editor(1).locator(".cm-line")).to_have_text(applied, timeout=10_000)
    expect(button(nb, 3, "Undo")).to_be_enabled(timeout=10_000)
    expect(stale_lines(nb, 2)).to_have_count(0)

    if how == "menu":
        restart_kernel(nb)
    else:
        crash_kernel(nb, 4)
    # one line in each old proposal, and every button of it disabled
    for i in (2, 3):
        expect(stale_lines(nb, i)).to_have_count(1, timeout=10_000)
        for label in ("Apply", "Discard", "Copy"):
            expect(button(nb, i, label)).to_be_disabled()
    expect(button(nb, 3, "Undo")).to_be_disabled()
    nb.shot("stale")

    errors_before = len([line for line in page.console_log if "Cannot send" in line])
    button(nb, 2, "Apply").click(force=True)
    button(nb, 3, "Undo").click(force=True)
    page.wait_for_timeout(1_500)
    expect(nb.editor(1).locator(".cm-line")).to_have_text(applied)
    assert len([line for line in page.console_log if "Cannot send" in line]) == errors_before

    # the magic cell run again in the new kernel: its turn replayed from the record, a new widget, not marked
    nb.run(0)
    nb.run(2)
    expect(nb.cell(2).locator(".jp-OutputArea")).to_contain_text(
        shown_as(messages.REPLAYED_FOOTER, turn=1), timeout=30_000
    )
    expect(button(nb, 2, "Discard")).to_have_count(1)
    expect(stale_lines(nb, 2)).to_have_count(0)
    expect(stale_lines(nb, 3)).to_have_count(1)
    nb.shot("rerun")


@pytest.mark.parametrize("jupyter_server", ["lab"], indirect=True)
@pytest.mark.parametrize(("how", "line"), [("shutdown", "The kernel stopped"), ("change", "The kernel changed")])
def test_buttons_from_a_stopped_or_replaced_kernel_say_so(jupyter_server, page, artifacts, how, line):
    """Kernel > Shut Down Kernel, or Kernel > Change Kernel… to a new Python kernel."""
    from playwright.sync_api import expect

    nb = open_and_run(
        jupyter_server,
        page,
        artifacts,
        "other.ipynb",
        ONE_PROPOSAL,
        3,
    )
    expect(button(nb, 2, "Apply")).to_be_enabled(timeout=30_000)
    if how == "shutdown":
        kernel_menu(nb, "Shut Down Kernel")
    else:
        kernel_menu(nb, "Change Kernel…")
        dialog = page.locator(".jp-Dialog")
        dialog.locator("select").select_option(label="Python 3 (ipykernel)")  # a new kernel, not this one
        dialog.locator("button.jp-mod-accept").click()
    expect(stale_lines(nb, 2, f"{line}: these buttons no longer work.")).to_have_count(1, timeout=15_000)
    for label in ("Apply", "Discard", "Copy"):
        expect(button(nb, 2, label)).to_be_disabled()


@pytest.fixture
def without_the_extension(tmp_path, server_env):
    """The server's config disables the genai-magics-bridge labextension (as if installed without Node.js)."""
    config = tmp_path / "no-bridge-config"
    (config / "labconfig").mkdir(parents=True)
    (config / "labconfig" / "page_config.json").write_text('{"disabledExtensions": {"genai-magics-bridge": true}}')
    server_env["JUPYTER_CONFIG_PATH"] = str(config)


@pytest.mark.parametrize("jupyter_server", ["lab"], indirect=True)
def test_without_the_extension_a_restart_from_the_menu_still_shows_one_line(
    without_the_extension, jupyter_server, page, artifacts
):
    """ipywidgets marks the old kernel's views disconnected; the widget's own CSS shows its line then
    and lets no click through (ipywidgets marks no view after Shut Down or Change Kernel: see docs/failures.md)."""
    from playwright.sync_api import expect

    nb = open_and_run(
        jupyter_server,
        page,
        artifacts,
        "plain.ipynb",
        ONE_PROPOSAL,
        3,
    )
    expect(nb.cell(2)).to_contain_text("paste", timeout=30_000)  # no live bridge: Apply only records
    assert not any("genai-magics-bridge: active" in line for line in page.console_log)
    expect(stale_lines(nb, 2)).to_have_count(0)
    restart_kernel(nb)
    expect(stale_lines(nb, 2)).to_have_count(1, timeout=10_000)
    nb.shot("plain-stale")
    errors_before = len([line for line in page.console_log if "Cannot send" in line])
    button(nb, 2, "Apply").click(force=True)
    page.wait_for_timeout(1_000)
    assert len([line for line in page.console_log if "Cannot send" in line]) == errors_before


@pytest.mark.parametrize("jupyter_server", ["lab"], indirect=True)
def test_an_old_apply_after_reload_ext_writes_the_right_cell(jupyter_server, page, artifacts):
    from playwright.sync_api import expect

    nb = open_and_run(
        jupyter_server,
        page,
        artifacts,
        "reload.ipynb",
        [
            ("setup", "%load_ext genai_magics"),
            ("other", "unrelated = 0"),
            ("code", "total = 1 + 2"),
            ("magic", "%%gemini_edit\nAdd input validation"),
            ("reload", "%reload_ext genai_magics"),
            ("last", "x = 1"),
        ],
        3,
    )
    # a hand edit never run: the proposal is made from it, so Apply must compare against the live cell
    nb.type_into(2, "total = 40 + 2")
    nb.run(3)
    expect(button(nb, 3, "Apply")).to_be_enabled(timeout=30_000)
    nb.run(4)

    button(nb, 3, "Apply").click()
    proposed = ["# stub edit: Add input validation", "total = 40 + 2"]
    expect(nb.editor(2).locator(".cm-line")).to_have_text(proposed, timeout=10_000)
    expect(nb.cell(3)).to_contain_text("Applied", timeout=10_000)
    nb.shot("applied-after-reload")
    button(nb, 3, "Undo").click()
    expect(nb.editor(2)).to_have_text("total = 40 + 2", timeout=10_000)
    expect(nb.cell(3)).to_contain_text("Undone", timeout=10_000)
    # no other cell was touched
    expect(nb.editor(1)).to_have_text("unrelated = 0")
    expect(nb.editor(3).locator(".cm-line")).to_have_text(["%%gemini_edit", "Add input validation"])
    expect(nb.editor(5)).to_have_text("x = 1")
    expect(page.locator(".jp-Notebook .jp-Cell")).to_have_count(6)
    errors = [line for line in page.console_log if "genai-magics-bridge" in line and "error" in line.lower()]
    assert not errors, errors
