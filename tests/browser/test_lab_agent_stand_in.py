"""The agent tried without a key, on screen: the README's own ``%%gemini_agent`` example in a real JupyterLab
(headless Chromium) against the stand-in, with no script: it inserts a cell below the cell run last, runs it
after the Run click (the NameError shows under the new cell), edits it and runs it again after the second
click (``True`` under it), a line per step in the agent cell."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_lab_agent import button
from test_lab_bridge import NotebookPage, write_notebook

from genai_magics.stub import agent_play

pytestmark = pytest.mark.stand_in

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("jupyter_server", ["lab"], indirect=True)
def test_the_readmes_agent_example_inserts_runs_reads_the_error_edits_and_runs_again(
    jupyter_server, page, artifacts, stub_url
):
    from playwright.sync_api import expect

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (example,) = re.findall(r"```python\n(%%gemini_agent\n.*?)```", readme, re.S)[:1]
    cells = [("setup", "%load_ext genai_magics"), ("a", "def parse(s):\n    return int(s)"), ("m", example)]
    write_notebook(jupyter_server.root / "try.ipynb", cells)
    nb = NotebookPage(page, artifacts)
    nb.open(jupyter_server.notebook_url("try.ipynb"), len(cells))
    nb.run(0)
    nb.run(1)
    nb.editor(2).click()
    page.keyboard.press("Shift+Enter")

    agent = nb.cell(3)  # the new cell goes in below the cell run last (a): the agent cell moves down one
    expect(nb.editor(2)).to_contain_text(f"print({agent_play.NAME})", timeout=30_000)
    run = button(agent, "Run")
    expect(run).to_be_visible(timeout=30_000)
    run.click()
    new = nb.cell(2)
    expect(new.locator(".jp-OutputArea")).to_contain_text("NameError", timeout=30_000)
    expect(button(agent, "Run")).to_have_count(2, timeout=30_000)  # the run after the edit asks again
    nb.shot("edited-asks-again")
    expect(nb.editor(2)).to_contain_text(f"{agent_play.NAME} = True")
    button(agent, "Run").nth(1).click()
    expect(new.locator(".jp-OutputArea")).to_have_text("True", timeout=30_000)
    output = agent.locator(".jp-OutputArea")
    expect(output).to_contain_text("ran it again", timeout=60_000)
    text = output.inner_text()
    for step in ("✎ inserted cell #3 after In[2] (2 lines)", "raised NameError", "✎ edited cell #3 (1 edit)"):
        assert step in text, text
    assert re.search(r'▶ ran cell #3 as In\[\d+\]: "True"', text), text
    nb.shot("ran-again")
