"""An agent turn at its bounds, in real kernels: a turn stopped or failed after some writes without a live
notebook still proposes them (nothing lost), and one Undo puts a corpus notebook back as it was."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from helpers.fake_frontend import FakeCell, FakeFrontend
from helpers.kernel import FAKE_KEY
from helpers.wire import api_requests

from genai_magics import messages

pytestmark = pytest.mark.kernel

CELL_A = "def parse(s):\n    return int(s)"
BIG = "".join(f"row_{i} = {i}  # a long cell the model wrote\n" for i in range(1_200))  # ~45 KB: ~11k tokens


def _first_estimate(kernel) -> float:
    """What the kernel estimates the agent turn's first request costs (gemini/budget.py on its dry run)."""
    from genai_magics.gemini import budget
    from genai_magics.gemini.models import DEFAULT_MODEL
    from genai_magics.gemini.pricing import price_for

    shown = kernel.run("%%gemini_agent --dry-run\nAdd the table.", cell_id="d")
    (text,) = [t for t in shown.area if t.startswith(messages.DRY_RUN.render(state="contents"))]
    return budget.estimate(price_for(DEFAULT_MODEL), json.loads(text.split("\n", 1)[1]), [], DEFAULT_MODEL)


@pytest.mark.parametrize("ending", ["budget", "input limit"])
def test_a_turn_stopped_or_failed_after_writes_without_a_live_notebook_still_proposes_them(kernel, stub, ending):
    """Issue 34.7 (nothing lost): without a live notebook the writes become one --notebook proposal at the end of
    the turn; a turn stopped (the budget) or failed (Gemini refused the request carrying the insert as past the
    input limit) after an insert showed only its one line, and the insert was lost."""
    kernel.run(CELL_A, cell_id="a")
    if ending == "budget":  # the first request and its answer fit; the answer carrying the big insert cannot
        kernel.run(f"%config GeminiMagics.max_turn_cost = {_first_estimate(kernel) * 2.2!r}", cell_id="cfg")
    else:
        stub.limit_input(6_000)
    stub.script_tools([[{"name": "insert_cell", "args": {"after": "a", "source": BIG}}], []])
    try:
        run = kernel.run("%%gemini_agent\nAdd the table.", cell_id="m")
    finally:
        stub.limit_input(None)
    line = run.stderr.strip().splitlines()[-1]
    ended = messages.BUDGET_STOPPED if ending == "budget" else messages.INPUT_LIMIT
    assert ended.parse(line) is not None, run.stderr
    assert len(api_requests(stub)) == 1 + (ending == "input limit")  # the insert's result was never answered
    assert messages.AGENT_INSERTED.within(run.plain)  # the step it made is shown ...
    assert messages.AGENT_PROPOSAL.within(run.plain, count=1)  # ... and proposed: nothing lost
    assert kernel.buttons("Copy")
    assert any("+row_1199 = 1199" in html.unescape(v) for v in kernel.html_values())  # the diff holds the cell


CORPUS = Path(__file__).parent.parent / "corpus" / "handson-ml2_19_training_and_deploying_at_scale.ipynb"


def _corpus_cells() -> list[FakeCell]:
    """The public notebook's cells as the frontend holds them (it has no ids: nbformat 4.4), kept outputs too."""
    cells = json.loads(CORPUS.read_text(encoding="utf-8"))["cells"]
    return [FakeCell.from_json({**c, "id": f"c{i:03d}"}) for i, c in enumerate(cells)]


def test_one_undo_puts_a_corpus_notebook_back_as_it_was_before_the_agent_turn(stub, tmp_path):
    """Issue 34.5 on a real notebook: an agent turn inserts a cell, edits one with outputs and deletes another
    with outputs (through the live bridge); one %gemini undo and every cell is as before: ids, text, type,
    metadata, outputs, execution counts, order."""
    stub.reset()
    cells = _corpus_cells()
    edited, deleted = cells[10], cells[13]
    assert edited.outputs and deleted.outputs and deleted.execution_count == 8
    env = {"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY, "JUPYTER_DATA_DIR": str(tmp_path / "d")}
    agent = ("m", "%%gemini_agent\nVersion the model 0002, print its path, and drop the listing.")
    with FakeFrontend(cells=[("setup", "%load_ext genai_magics"), *cells, agent], env=env, cwd=str(tmp_path)) as ff:
        assert ff.execute("setup").error is None
        before = [c.to_json() for c in ff.cells]
        stub.script_tools(
            [
                [
                    {"name": "insert_cell", "args": {"after": edited.id, "source": "print(model_path)\n"}},
                    {
                        "name": "edit_cell",
                        "args": {"ref": edited.id, "edits": [{"find": '"0001"', "replace": '"0002"'}]},
                    },
                    {"name": "delete_cell", "args": {"ref": deleted.id}},
                ]
            ]
        )
        run = ff.execute("m")
        assert run.error is None and run.stderr == "", run.stderr
        after = {c.id: c for c in ff.cells}
        assert deleted.id not in after and '"0002"' in after[edited.id].source
        assert [c.source for c in ff.cells].count("print(model_path)\n") == 1 and len(after) == len(before)
        ff.execute_code("%gemini undo")
        assert ff.pump_until(lambda: any("Undone" in html.unescape(v) for v in ff.statuses()), timeout=15)
        assert [c.to_json() for c in ff.cells] == before
