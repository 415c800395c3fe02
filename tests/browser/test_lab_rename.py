"""A notebook's record follows the notebook in a real JupyterLab: named at the first save, renamed
while its kernel runs, Restart Kernel and Run All replays it (no request to the stand-in), and the
replayed proposal's Undo and Apply write the cell live (issue 32, items 9 and 10)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from helpers.pages import shown_as
from test_lab_bridge import NotebookPage, write_notebook
from test_lab_replay import api_requests

from genai_magics import messages

pytestmark = pytest.mark.stand_in  # the server's kernels talk to the stand-in (browser/conftest.py: server_env)

EDITED = ["# stub edit: Add input validation", "total = 1 + 2"]


def button(nb: NotebookPage, i: int, label: str):
    return nb.cell(i).locator("button", has_text=re.compile(rf"^\s*{label}\s*$"))


def dialog_rename(page, name: str) -> None:
    """Fill the file name into JupyterLab's rename dialog and accept it."""
    from playwright.sync_api import expect

    field = page.locator('.jp-Dialog input:not([type="checkbox"])')
    expect(field).to_be_visible(timeout=10_000)
    field.fill(name)
    page.locator(".jp-Dialog-button.jp-mod-accept").click()
    expect(page.locator(".jp-Dialog")).to_have_count(0, timeout=10_000)


def is_listing(url: str) -> bool:
    """JupyterLab's file browser asking for the server's root folder with its files (``/api/contents?content=1``)."""
    parts = urlsplit(url)
    return parts.path.rstrip("/").endswith("/api/contents") and parse_qs(parts.query).get("content") == ["1"]


class Listings:
    """Holds JupyterLab's folder listings off a rename: those under way finish first, new ones wait for it.

    Jupyter Server lists a folder by its names, then reads each file's model; a file renamed in between
    fails the whole listing with 404 ("No such file or directory: Untitled.ipynb"), and JupyterLab
    opens its "Directory not found" dialog over the notebook (seen at load 5). Watched from before the
    page loads, so that every listing under way is known.
    """

    def __init__(self, page):
        self.page = page
        self.flying: set = set()  # listings sent and not answered yet
        self.held: list = []  # routes of listings asked while a rename runs
        self.holding = False
        self.seen = 0  # listings asked (a gate that sees none watches the wrong address)
        page.route(is_listing, self._route)
        page.on("requestfinished", self._landed)
        page.on("requestfailed", self._landed)

    def _landed(self, request) -> None:
        self.flying.discard(request)

    def _route(self, route) -> None:
        self.seen += 1
        if self.holding:
            self.held.append(route)
            return
        self.flying.add(route.request)
        route.continue_()

    @contextmanager
    def held_off(self) -> Iterator[None]:
        """No listing runs on the server during the ``with`` block: one before it sees the old name, one after
        it the new."""
        self.holding = True
        try:
            for _ in range(300):  # a slow server's listing too
                if not self.flying:
                    break
                self.page.wait_for_timeout(100)
            assert not self.flying, "a folder listing took over 30 s"
            yield
        finally:
            self.holding = False
            held, self.held = self.held, []
            for route in held:
                self.flying.add(route.request)
                route.continue_()


def wait_renamed(page, old: Path, new: Path) -> None:
    """The server renamed the file (the tab's title follows a moment later)."""
    for _ in range(100):
        if new.exists() and not old.exists():
            return
        page.wait_for_timeout(100)
    raise AssertionError(f"{old.name} was not renamed to {new.name}")


def ask_and_apply(nb: NotebookPage, stub_url: str) -> int:
    """The magic cell's proposal, applied live; the requests the stand-in saw."""
    from playwright.sync_api import expect

    nb.run(0)
    nb.run(1)
    nb.run(2)
    expect(button(nb, 2, "Apply")).to_be_visible(timeout=30_000)
    button(nb, 2, "Apply").click()
    expect(nb.editor(1).locator(".cm-line")).to_have_text(EDITED, timeout=10_000)
    sent = len(api_requests(stub_url))
    assert sent == 1
    return sent


def restart_run_all_then_undo_and_apply(nb: NotebookPage, stub_url: str, sent: int) -> None:
    """Restart Kernel and Run All: the magic replays (no request), and its Undo and Apply write the cell."""
    from playwright.sync_api import expect

    nb.page.locator('[data-command="notebook:restart-run-all"]').first.click()
    nb.page.locator(".jp-Dialog-button.jp-mod-accept").click()
    expect(nb.cell(2).locator(".jp-InputPrompt")).to_have_text(re.compile(r"\[3\]:"), timeout=60_000)
    expect(nb.cell(2)).to_contain_text(shown_as(messages.REPLAYED_FOOTER, turn=1), timeout=30_000)
    assert len(api_requests(stub_url)) == sent, "Run All after the restart sent a request"
    nb.shot("replayed")
    expect(button(nb, 2, "Undo")).to_be_enabled()
    button(nb, 2, "Undo").click()
    expect(nb.editor(1).locator(".cm-line")).to_have_text(["total = 1 + 2"], timeout=10_000)
    expect(button(nb, 2, "Apply")).to_be_enabled(timeout=10_000)
    button(nb, 2, "Apply").click()
    expect(nb.editor(1).locator(".cm-line")).to_have_text(EDITED, timeout=10_000)
    nb.shot("undone-and-applied")
    assert len(api_requests(stub_url)) == sent


@pytest.mark.parametrize("jupyter_server", ["lab"], indirect=True)
def test_a_new_notebook_named_at_its_first_save_replays_and_its_buttons_write(
    jupyter_server, page, artifacts, stub_url
):
    from playwright.sync_api import expect

    nb = NotebookPage(page, artifacts)
    listings = Listings(page)
    page.goto(jupyter_server.url + f"/lab?token={jupyter_server.token}")
    page.locator('.jp-LauncherCard[data-category="Notebook"]').first.click()
    expect(page.locator(".jp-Notebook .jp-Cell")).to_have_count(1, timeout=30_000)
    nb.wait_kernel()
    assert (jupyter_server.root / "Untitled.ipynb").exists()
    nb.focus_editor(0)
    with listings.held_off():
        page.keyboard.press("Control+s")  # the first save of an untitled notebook asks for its name
        dialog_rename(page, "work.ipynb")
        wait_renamed(page, jupyter_server.root / "Untitled.ipynb", jupyter_server.root / "work.ipynb")
    expect(page.locator(".jp-Dialog")).to_have_count(0)  # no "Directory not found" over the notebook
    assert listings.seen, "the file browser listed no folder: Listings watches the wrong address"
    for i, source in enumerate(["%load_ext genai_magics", "total = 1 + 2", "%%gemini_edit\nAdd input validation"]):
        if i:
            nb.page.keyboard.press("Escape")
            nb.page.keyboard.press("b")  # a new cell below
            expect(page.locator(".jp-Notebook .jp-Cell")).to_have_count(i + 1, timeout=10_000)
        nb.type_into(i, source)
    nb.shot("typed")
    sent = ask_and_apply(nb, stub_url)
    restart_run_all_then_undo_and_apply(nb, stub_url, sent)


def rename_in_the_app(jupyter_server, page, listings: Listings, old: str, new: str) -> None:
    """JupyterLab: File › Rename Notebook…; Notebook 7: a click on the notebook's name at the top. Both ask
    for the name in the same dialog."""
    with listings.held_off():
        if jupyter_server.app == "lab":
            page.locator(".lm-MenuBar-itemLabel", has_text="File").click()
            page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Rename Notebook")).click()
        else:
            page.locator("#jp-title h1").click()
        dialog_rename(page, new)
        wait_renamed(page, jupyter_server.root / old, jupyter_server.root / new)


@pytest.mark.parametrize("jupyter_server", ["lab", "notebook"], indirect=True)
def test_a_notebook_renamed_while_its_kernel_runs_replays_and_its_buttons_write(
    jupyter_server, page, artifacts, stub_url
):
    write_notebook(
        jupyter_server.root / "draft.ipynb",
        [
            ("setup", "%load_ext genai_magics"),
            ("code", "total = 1 + 2"),
            ("magic", "%%gemini_edit\nAdd input validation"),
        ],
    )
    nb = NotebookPage(page, artifacts)
    listings = Listings(page)
    nb.open(jupyter_server.notebook_url("draft.ipynb"), 3)
    sent = ask_and_apply(nb, stub_url)
    rename_in_the_app(jupyter_server, page, listings, "draft.ipynb", "final.ipynb")
    restart_run_all_then_undo_and_apply(nb, stub_url, sent)
