"""The agent tried without a key: the stand-in acts on the docs' own ``%%gemini_agent`` examples.

A real kernel behind the fake JupyterLab frontend, the real SDK over real HTTP to the stand-in, with no
script: the README's and flags.md's example prompts make the stand-in insert a cell, run it, read its
error, edit the cell and run it again (genai_magics/stub/agent_play.py), each step a line in the cell.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.fake_frontend import FakeFrontend
from helpers.kernel import FAKE_KEY
from helpers.wire import api_requests

from genai_magics import messages

pytestmark = pytest.mark.kernel

ROOT = Path(__file__).resolve().parents[2]
PARSE = "def parse(s):\n    return int(s)"


def agent_example(doc: str) -> str:
    """The first ``%%gemini_agent`` cell a document shows."""
    (found, *_) = re.findall(r"```python\n(%%gemini_agent\n.*?)```", (ROOT / doc).read_text(encoding="utf-8"), re.S)
    return found


@pytest.mark.parametrize(("doc", "mode"), [("README.md", "contents"), ("docs/flags.md", "interactions")])
def test_the_docs_agent_example_makes_the_stand_in_insert_run_edit_and_run_again(stub, tmp_path, doc, mode):
    stub.reset()
    cells = [("setup", "%load_ext genai_magics"), ("a", PARSE), ("m", agent_example(doc))]
    env = {"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY}
    with FakeFrontend(cells=cells, env=env, cwd=str(tmp_path)) as lab:
        lab.execute("setup")
        lab.execute("a")
        lab.execute_code(f"%config GeminiMagics.agent_approve = 'none'\n%config GeminiMagics.state = {mode!r}")
        run = lab.execute("m")
        assert run.error is None, run.error
        plain = run.plain
        assert "Stub answer to" in plain and f"agent · {mode}" in plain  # the stand-in's answer, after its steps
        (new,) = [c for c in lab.cells if c.id not in ("setup", "a", "m")]
        assert [c.id for c in lab.cells] == ["setup", "a", new.id, "m"]  # below the latest cell run
        assert new.source.endswith("checked = True  # defined after reading the NameError\nprint(checked)\n")
        calls = [c["name"] for req in api_requests(stub) for c in req["tool_calls"]]
        assert calls == ["insert_cell", "run_cell", "edit_cell", "run_cell"]
        first_run = [r for req in api_requests(stub) for r in req["tool_results"] if r["name"] == "run_cell"][0]
        assert "NameError" in first_run["response"]["error"]
        # one line a step, in order: insert, run (the error read), edit, run again
        steps = [line for line in plain.splitlines() if line.startswith(("✎", "▶", "→"))]
        assert len(steps) == 4, plain
        assert steps[0].startswith("✎ inserted") and steps[2].startswith("✎ edited")
        assert "NameError" in steps[1] and "NameError" not in steps[3]
        lab.pump(0.5)
        assert any("True" in o.get("text", "") for o in lab.cell(new.id).outputs)  # the second run's output
        assert "ran it again" in plain and "it ran without an error" in plain


def test_a_prompt_without_run_check_or_test_gets_an_answer_and_no_step(stub, tmp_path):
    stub.reset()
    cells = [("setup", "%load_ext genai_magics"), ("a", PARSE), ("m", "%%gemini_agent\nWhat does parse do?")]
    env = {"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY}
    with FakeFrontend(cells=cells, env=env, cwd=str(tmp_path)) as lab:
        lab.execute("setup")
        lab.execute("a")
        run = lab.execute("m")
        assert run.error is None, run.error
        assert [c.id for c in lab.cells] == ["setup", "a", "m"]
        assert "Stub answer to: What does parse do?" in run.plain
        assert not messages.AGENT_INSERTED.within(run.plain)
