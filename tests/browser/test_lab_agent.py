"""``%%gemini_agent`` in a real JupyterLab 4 and Notebook 7 (headless Chromium), through the live bridge.

The stand-in plays the agent (``/_stub/script_tools``: the second call names the inserted cell by
``{{id}}``): it inserts a cell below ``In[2]``, asks to run it, and the run waits for the Run click in
the agent cell; the kernel runs the cell's code and its output and execution count show under the
new cell, never in the agent cell; the turn's one Undo takes the cell back and says what ran stays.
What the page holds is read back from the file JupyterLab saves.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request

import pytest
from test_lab_bridge import NotebookPage, write_notebook
from test_lab_notebook_edit import save

from genai_magics import messages

pytestmark = pytest.mark.stand_in  # the server's kernels talk to the stand-in (browser/conftest.py: server_env)

PARSE = "def parse(s):\n    return int(s)"
AGENT = "%%gemini_agent\nShow parse('5') plus one."
NEW = "print(parse('5') + 1)\n"


def script_agent(stub_url: str, rounds: list) -> None:
    request = urllib.request.Request(
        f"{stub_url}/_stub/script_tools", method="POST", data=json.dumps({"rounds": rounds}).encode()
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert json.load(response)["ok"] is True


def button(cell, label: str):
    return cell.locator("button", has_text=re.compile(rf"^\s*{label}\s*$"))


@pytest.mark.parametrize("jupyter_server", ["lab", "notebook"], indirect=True)
def test_the_agent_inserts_a_cell_runs_it_after_the_click_and_one_undo_takes_it_back(
    jupyter_server, page, artifacts, stub_url
):
    from playwright.sync_api import expect

    path = jupyter_server.root / "agent.ipynb"
    write_notebook(path, [("setup", "%load_ext genai_magics"), ("a", PARSE), ("m", AGENT), ("end", "x = 0")])
    script_agent(
        stub_url,
        [
            [{"name": "insert_cell", "args": {"after": "In[2]", "source": NEW}}],
            [{"name": "run_cell", "args": {"ref": "{{id}}"}}],
        ],
    )
    nb = NotebookPage(page, artifacts)
    nb.open(jupyter_server.notebook_url("agent.ipynb"), 4)
    nb.run(0)
    nb.run(1)
    nb.editor(2).click()
    page.keyboard.press("Shift+Enter")  # the agent cell runs, and waits for the click

    cells = page.locator(".jp-Notebook .jp-Cell")
    expect(cells).to_have_count(5, timeout=30_000)  # the new cell, below In[2], before the run
    expect(nb.editor(2)).to_have_text(NEW.strip())
    agent = nb.cell(3)
    run = button(agent, "Run")
    expect(run).to_be_visible(timeout=30_000)
    expect(agent.locator(".jp-OutputArea")).to_contain_text("print(parse('5') + 1)")  # what would run
    nb.shot("waiting-for-run")
    run.click()

    new = nb.cell(2)
    expect(new.locator(".jp-OutputArea")).to_have_text("6", timeout=30_000)
    expect(new.locator(".jp-InputPrompt")).to_have_text(re.compile(r"\[\d+\]:"))
    expect(agent.locator(".jp-InputPrompt")).to_have_text(re.compile(r"\[\d+\]:"), timeout=60_000)  # finished
    expect(agent.locator(".jp-OutputArea")).to_contain_text("Undo")  # the turn's one Undo, at its end
    nb.shot("ran")
    saved = {c["id"]: c for c in save(page, nb, path)}
    (inserted,) = [c for c in saved.values() if c["source"] == NEW]
    assert [dict(o) for o in inserted["outputs"]] == [{"output_type": "stream", "name": "stdout", "text": "6\n"}]
    assert isinstance(inserted["execution_count"], int)
    assert not [o for o in saved["m"]["outputs"] if o.get("output_type") == "stream" and "6" in o.get("text", "")]

    button(agent, "Undo").click()
    expect(cells).to_have_count(4, timeout=30_000)
    said = nb.cell(2).locator(".jp-OutputArea")  # the agent cell, one up
    deadline = time.monotonic() + 15
    while not messages.TURN_UNDO_RAN.within(said.inner_text()):  # "what ran cannot be un-run"
        assert time.monotonic() < deadline, said.inner_text()
        time.sleep(0.2)
    nb.shot("undone")
    assert [c["source"] for c in save(page, nb, path)] == ["%load_ext genai_magics", PARSE, AGENT, "x = 0"]
