"""The whole flow in a real page: %%gemini_edit against the stand-in, Apply, Undo.

The code cell directly above the magic cell is the target; a hand edit in it
that was never run is what the proposal is made from; Apply writes into that
cell in the editor, Undo puts the hand-edited code back.
"""

from __future__ import annotations

import json
import re
import urllib.request

import pytest
from helpers import screenshots
from test_lab_bridge import NotebookPage, write_notebook

from genai_magics import messages
from genai_magics.ui.display import footer_legend

pytestmark = pytest.mark.stand_in  # the server's kernels talk to the stand-in (browser/conftest.py: server_env)


@pytest.mark.parametrize("jupyter_server", ["lab", "notebook"], indirect=True)
def test_gemini_edit_apply_and_undo_in_the_page(jupyter_server, page, artifacts, stub_url):
    from playwright.sync_api import expect

    write_notebook(
        jupyter_server.root / "magic.ipynb",
        [
            ("setup", "%load_ext genai_magics"),
            ("code", "total = 1 + 2"),
            ("magic", "%%gemini_edit\nAdd input validation"),
            ("ask", "%%gemini_ask\nWhat changed?"),
        ],
    )
    nb = NotebookPage(page, artifacts)
    nb.open(jupyter_server.notebook_url("magic.ipynb"), 4)
    nb.run(0)
    # a hand edit in the cell above, never run: the proposal is made from it
    nb.type_into(1, "total = 40 + 2")
    nb.run(2)
    apply = nb.cell(2).locator("button", has_text=re.compile(r"^\s*Apply\s*$"))
    expect(apply).to_be_visible(timeout=30_000)
    nb.shot("proposal")

    apply.click()
    proposed = ["# stub edit: Add input validation", "total = 40 + 2"]
    expect(nb.editor(1).locator(".cm-line")).to_have_text(proposed, timeout=10_000)
    nb.shot("applied")

    undo = nb.cell(2).locator("button", has_text=re.compile(r"^\s*Undo\s*$"))
    expect(undo).to_be_enabled(timeout=10_000)
    undo.click()
    expect(nb.editor(1)).to_have_text("total = 40 + 2", timeout=10_000)
    nb.shot("undone")
    # the magic cell itself was never touched
    expect(nb.editor(2).locator(".cm-line")).to_have_text(["%%gemini_edit", "Add input validation"])

    # another hand edit, never run: the next ask sends it (the stand-in's records say so)
    nb.type_into(1, "total = 7")
    nb.run(3)
    expect(nb.cell(3)).to_contain_text("Stub answer to: What changed?", timeout=30_000)
    nb.shot("asked")
    with urllib.request.urlopen(f"{stub_url}/_stub/requests", timeout=10) as response:
        records = [r for r in json.load(response) if r["kind"] == "stream"]
    last = json.loads(records[-1]["json"]["contents"][-1]["parts"][0]["text"])
    assert last["currentSource"] == "total = 7"


def test_a_proposal_reads_as_its_diff_and_apply_says_what_it_did(jupyter_server, page, artifacts, stub_url):
    """The README's example with a scripted proposal: the diff without noise, the buttons, the footer's
    legend on hover; after Apply the header no longer calls the old text current. Its picture is the
    README's (tests/helpers/screenshots.py)."""
    from playwright.sync_api import expect

    write_notebook(
        jupyter_server.root / "parse.ipynb",
        [
            ("setup", "%load_ext genai_magics"),
            ("code", screenshots.CODE),
            ("magic", f"%%gemini_edit\n{screenshots.INSTRUCTION}"),
        ],
    )
    request = urllib.request.Request(
        f"{stub_url}/_stub/script_edit",
        method="POST",
        data=json.dumps({"proposedSource": screenshots.PROPOSAL}).encode(),
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert json.load(response)["ok"] is True
    page.set_viewport_size({"width": 1000, "height": 650})  # the README shows it at about this size
    nb = NotebookPage(page, artifacts)
    nb.open(jupyter_server.notebook_url("parse.ipynb"), 3)
    page.keyboard.press("Control+b")  # the file browser closed: the notebook takes the width
    nb.run(0)
    nb.run(1)
    nb.run(2)
    magic = nb.cell(2)
    apply = magic.locator("button", has_text=re.compile(r"^\s*Apply\s*$"))
    expect(apply).to_be_visible(timeout=30_000)
    expect(magic.locator("button", has_text=re.compile(r"^\s*Discard\s*$"))).to_be_visible()
    diff = magic.locator(".genai-magics-proposal pre")
    expect(diff).to_contain_text("(current)")
    expect(diff).to_contain_text('+        raise ValueError(f"not an integer: {s!r}") from None')
    expect(diff).not_to_contain_text("No newline at end of file")
    footer = magic.locator("div[title]", has_text=re.compile(r"^turn 1 · edit"))
    expect(footer).to_have_attribute("title", footer_legend())
    page.mouse.move(0, 0)
    magic.scroll_into_view_if_needed()
    nb.shot("proposal")
    screenshots.save(page, "jupyterlab-proposal")

    apply.click()
    expect(nb.editor(1).locator(".cm-line").first).to_have_text("def parse(s):", timeout=10_000)
    expect(nb.editor(1)).to_contain_text("not an integer")
    applied = messages.LIVE_DONE.render(
        verb="Applied", what="the proposal", label="In[2]", run=messages.RUN_IT.render()
    )
    expect(magic.locator(".genai-magics-proposal")).to_contain_text(applied)  # and to run the cell
    expect(diff).to_contain_text("(before Apply)")
    expect(diff).not_to_contain_text("(current)")
    nb.shot("applied")
