"""Restart Kernel and Run All Cells in a real JupyterLab: the magic cells replay their
recorded turns (footer 'replayed turn N'), the stand-in receives no request, and the replayed
proposal's Undo and Apply write the cell live, also after a page reload."""

from __future__ import annotations

import json
import re
import urllib.request

import pytest
from helpers.pages import shown_as
from test_lab_bridge import NotebookPage, write_notebook

from genai_magics import messages

pytestmark = pytest.mark.stand_in  # the server's kernels talk to the stand-in (browser/conftest.py: server_env)


def api_requests(stub_url: str) -> list[dict]:
    with urllib.request.urlopen(f"{stub_url}/_stub/requests", timeout=10) as response:
        return [r for r in json.load(response) if r["kind"] in ("stream", "generate", "interaction.create")]


@pytest.mark.parametrize("jupyter_server", ["lab"], indirect=True)
def test_restart_kernel_and_run_all_replays_without_a_request(jupyter_server, page, artifacts, stub_url):
    from playwright.sync_api import expect

    write_notebook(
        jupyter_server.root / "replay.ipynb",
        [
            ("setup", "%load_ext genai_magics"),
            ("code", "total = 1 + 2"),
            ("magic", "%%gemini_edit\nAdd input validation"),
            ("ask", "%%gemini_ask\nWhat changed?"),
        ],
    )
    nb = NotebookPage(page, artifacts)
    nb.open(jupyter_server.notebook_url("replay.ipynb"), 4)
    nb.run(0)
    nb.run(1)
    nb.run(2)
    apply = nb.cell(2).locator("button", has_text=re.compile(r"^\s*Apply\s*$"))
    expect(apply).to_be_visible(timeout=30_000)
    apply.click()
    expect(nb.editor(1).locator(".cm-line")).to_have_text(
        ["# stub edit: Add input validation", "total = 1 + 2"], timeout=10_000
    )
    nb.run(3)
    expect(nb.cell(3)).to_contain_text("Stub answer to: What changed?", timeout=30_000)
    expect(nb.cell(3)).to_contain_text(shown_as(messages.FOOTER_TURN, turn=2, mode="ask"), timeout=10_000)
    sent = len(api_requests(stub_url))
    assert sent == 2
    nb.shot("first-session")

    page.locator('[data-command="notebook:restart-run-all"]').first.click()
    page.locator(".jp-Dialog-button.jp-mod-accept").click()
    expect(nb.cell(3).locator(".jp-InputPrompt")).to_have_text(re.compile(r"\[4\]:"), timeout=60_000)
    expect(nb.cell(2)).to_contain_text(shown_as(messages.REPLAYED_FOOTER, turn=1), timeout=30_000)
    expect(nb.cell(3)).to_contain_text(shown_as(messages.REPLAYED_FOOTER, turn=2), timeout=30_000)
    expect(nb.cell(3)).to_contain_text("Stub answer to: What changed?")
    expect(nb.cell(2)).to_contain_text(shown_as(messages.REPLAYED_PROPOSAL, outcome=messages.REPLAYED_APPLIED.render()))
    nb.shot("replayed")
    assert len(api_requests(stub_url)) == sent, "Run All after the restart sent a request"
    # the buttons say what happened: applied, so Undo is offered and Apply is not
    expect(nb.cell(2).locator("button", has_text=re.compile(r"^\s*Apply\s*$"))).to_be_disabled()
    expect(nb.cell(2).locator("button", has_text=re.compile(r"^\s*Undo\s*$"))).to_be_enabled()
    # and they write the cell live (issue 32, item 10: the cells ran before the bridge's first snapshot)
    nb.cell(2).locator("button", has_text=re.compile(r"^\s*Undo\s*$")).click()
    expect(nb.editor(1).locator(".cm-line")).to_have_text(["total = 1 + 2"], timeout=10_000)
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")  # a reload shows the notebook as saved
    expect(page.locator(".lm-TabBar-tab.jp-mod-current.jp-mod-dirty")).to_have_count(0, timeout=10_000)
    page.reload()  # and after a page reload, the same widgets through the comm the page takes over
    expect(nb.cell(3)).to_be_visible(timeout=30_000)
    nb.wait_kernel()
    apply = nb.cell(2).locator("button", has_text=re.compile(r"^\s*Apply\s*$"))
    expect(apply).to_be_enabled(timeout=30_000)
    apply.click()
    expect(nb.editor(1).locator(".cm-line")).to_have_text(
        ["# stub edit: Add input validation", "total = 1 + 2"], timeout=10_000
    )
    nb.shot("undone-then-applied-after-a-reload")
    assert len(api_requests(stub_url)) == sent


@pytest.mark.parametrize("jupyter_server", ["lab"], indirect=True)
def test_restart_and_run_all_gemini_apply_and_status_reach_the_bridge(jupyter_server, page, artifacts, stub_url):
    """Restart Kernel and Run All Cells (issue 41): the extension's first snapshot comes after the queued cells.
    ``%gemini apply`` in the run waits for it and writes the cell above the edit; ``%gemini status`` says the
    bridge is connecting, never that no notebook answered."""
    from playwright.sync_api import expect

    write_notebook(
        jupyter_server.root / "runall.ipynb",
        [
            ("setup", "%load_ext genai_magics"),
            ("code", "total = 1 + 2"),
            ("magic", "%%gemini_edit\nAdd input validation"),
            ("apply", "%gemini apply"),
            ("status", "%gemini status"),
        ],
    )
    nb = NotebookPage(page, artifacts)
    nb.open(jupyter_server.notebook_url("runall.ipynb"), 5)
    page.locator('[data-command="notebook:restart-run-all"]').first.click()
    page.locator(".jp-Dialog-button.jp-mod-accept").click()
    expect(nb.cell(4).locator(".jp-InputPrompt")).to_have_text(re.compile(r"\[5\]:"), timeout=90_000)
    expect(nb.editor(1).locator(".cm-line")).to_have_text(
        ["# stub edit: Add input validation", "total = 1 + 2"], timeout=15_000
    )
    expect(nb.cell(3)).to_contain_text(shown_as(messages.LIVE_DONE, verb="Applied"), timeout=10_000)
    expect(nb.cell(4)).to_contain_text(messages.BRIDGE_COMING.render())
    for cell in (3, 4):
        expect(nb.cell(cell)).not_to_contain_text(messages.BRIDGE_NOT_CONNECTED.render())
        expect(nb.cell(cell)).not_to_contain_text(messages.BRIDGE_UNANSWERED.render())
    nb.shot("run-all")
