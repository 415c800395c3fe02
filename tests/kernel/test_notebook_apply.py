"""``--notebook`` Apply and Undo on a real kernel (issue 8, cases 3, 4, 5 and 13).

The live bridge is the fake frontend on jupyter_client (tests/helpers/fake_frontend.py,
the extension's comm schema); the proposal is the stand-in's own edit or one
scripted with ``stub.script_edit`` (what a model would answer, written against
the document it was sent). VS Code is simulated, with no bridge, by the shapes
vscode-jupyter sends (tests/helpers/vscode.py names the file of each).
"""

from __future__ import annotations

import copy

import pytest
from helpers.fake_frontend import FakeCell, FakeFrontend
from helpers.kernel import FAKE_KEY
from helpers.lazy import lazy_import
from helpers.vscode import VSCode, set_next_input
from helpers.wire import api_requests, current_payload

from genai_magics import messages
from genai_magics.engine.cells import Cell
from genai_magics.engine.notebook_text import notebook_text

nbformat = lazy_import("nbformat")

pytestmark = pytest.mark.kernel  # every test here drives a real kernel

SCRIPT = (
    "# %%\nimport pandas as pd\n\n# %% Display a data frame\ndf = pd.DataFrame({'A': [1, 2]})\n"
    "df\n\n# %% id=b\ndf.plot(kind='bar')\n"
)
OUT = {"output_type": "stream", "name": "stdout", "text": "3\n"}
RESULT = {"output_type": "execute_result", "execution_count": 7, "metadata": {}, "data": {"text/plain": "'kept'"}}


def frontend(stub, tmp_path, cells):
    stub.reset()
    return FakeFrontend(
        cells=cells, env={"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY}, cwd=str(tmp_path)
    )


def managed(ff) -> list[Cell]:
    """The cells the document holds: every cell but the setup and magic cells."""
    return [Cell(c.id, c.source, c.cell_type) for c in ff.cells if c.id not in ("setup", "m")]


def test_a_cell_with_percent_lines_is_not_split_and_undo_restores_it(stub, tmp_path):
    """Case 3: a cell holding '# %%' and '# %% id=b' lines next to a cell b: Apply changes only what
    the proposal changed, the preview counts it right, and Undo puts the text back."""
    cells = [
        ("setup", "%load_ext genai_magics"),
        ("a", SCRIPT),
        ("b", "x = 2\n"),
        FakeCell("md", "# Notes", "markdown"),
        ("m", "%%gemini_edit --notebook\nAdd a title comment."),
    ]
    with frontend(stub, tmp_path, cells) as ff:
        ff.execute("setup")
        ff.execute("m")
        doc = current_payload(api_requests(stub)[-1])["currentSource"]
        assert doc.count("\n# %% id=b\n") == 1 and "\\# %% id=b" in doc  # the real header once; the line escaped
        assert any("1 changed, 0 new, 0 removed" in v for v in ff.statuses())
        before = ff.snapshot()
        ff.click_until("Apply", "Applied")
        assert ff.source("a") == "# stub edit: Add a title comment.\n" + SCRIPT
        assert [c.id for c in ff.cells] == ["setup", "a", "b", "md", "m"]
        assert ff.source("b") == "x = 2\n" and ff.source("md") == "# Notes"
        assert [r["op"] for r in ff.requests_received] == ["set_source"]
        ff.click_until("Undo", "Undone")
        assert ff.snapshot() == before


def test_a_proposal_changing_another_cell_leaves_the_script_cell_alone(stub, tmp_path):
    """Case 3: the model repeats the script cell as it got it and changes cell b: one edit, to b."""
    cells = [
        ("setup", "%load_ext genai_magics"),
        ("a", SCRIPT),
        ("b", "x = 2\n"),
        ("m", "%%gemini_edit --notebook\nDouble x."),
    ]
    with frontend(stub, tmp_path, cells) as ff:
        ff.execute("setup")
        stub.script_edit(notebook_text([Cell("a", SCRIPT), Cell("b", "x = 4\n")]))
        ff.execute("m")
        assert any("1 changed, 0 new, 0 removed" in v for v in ff.statuses())
        ff.click_until("Apply", "Applied")
        assert ff.source("a") == SCRIPT and ff.source("b") == "x = 4\n"
        assert [c.id for c in ff.cells] == ["setup", "a", "b", "m"]


def test_undo_after_removed_cells_restores_text_type_order_id_outputs_and_metadata(stub, tmp_path):
    """Case 4: Apply removes the first document cell (right below %load_ext), a markdown cell and a
    raw cell, changes one and adds two; Undo puts every removed cell back at its place with its id,
    type, text, metadata and outputs, and removes the new ones."""
    cells = [
        FakeCell("setup", "%load_ext genai_magics"),
        FakeCell("first", "total = 1 + 2\nprint(total)\n", "code", {"tags": ["keep"]}, [copy.deepcopy(OUT)], 3),
        FakeCell("md", "## Section\n\ntext", "markdown", {"editable": False}),
        FakeCell("keep", "def f(x):\n    return x\n", "code", {}, [copy.deepcopy(RESULT)], 7),
        FakeCell("raw", "raw text\n", "raw", {"raw_mimetype": "text/x-rst"}),
        FakeCell("last", "f(1)", "code", {"collapsed": True}, [], None),
        FakeCell("m", "%%gemini_edit --notebook\nTidy up."),
    ]
    with frontend(stub, tmp_path, cells) as ff:
        ff.execute("setup")
        before = ff.snapshot()
        proposal = "\n".join(
            [
                "# %%\nimport math\n",
                notebook_text([Cell("keep", "def f(x):\n    return 2 * x\n")]),
                "# %% [markdown]\nA new note.\n",
                notebook_text([Cell("last", "f(1)")]),
            ]
        )
        stub.script_edit(proposal)
        ff.execute("m")
        assert any("1 changed, 2 new, 3 removed" in v for v in ff.statuses())
        ff.click_until("Apply", "Applied")
        ids = [c.id for c in ff.cells]
        assert ids[0] == "setup" and ids[-1] == "m" and len(ids) == 6
        assert [c.source for c in ff.cells[1:5]] == [
            "import math",
            "def f(x):\n    return 2 * x\n",
            "A new note.",
            "f(1)",
        ]
        assert not {"first", "md", "raw"} & set(ids)
        ff.click_until("Undo", "Undone")
        assert ff.snapshot() == before  # text, type, order, id, metadata, outputs, execution count


def test_notebook_proposal_in_vscode_is_copy_only_and_never_written_into_the_magic_cell(kernel, stub, tmp_path):
    """Case 5: VS Code (only the running cell can be written, no bridge): a --notebook proposal is
    never written as percent text into the magic cell; Apply says it is copy-only."""
    path = tmp_path / "work.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1", id="c1"), nbformat.v4.new_code_cell("y = 2", id="c2")]
    nbformat.write(nb, str(path))
    vs = VSCode(kernel, str(path))
    vs.run("%config GeminiMagics.apply_wait = 2.0", 1)
    vs.open_notebook()
    vs.run("x = 1", 2)
    run = vs.run("%%gemini_edit --notebook\nAdd a title comment.", 3)
    assert not run.errors and "genai_magics:" not in run.stderr, run.stderr
    said = " ".join(kernel.html_values())
    assert messages.NOTEBOOK_RECORD_ONLY_APPLY.render() in said
    kernel.click("Apply")
    assert set_next_input(run) == []
    done = messages.KERNEL_STATE_DONE.render(verb="Applied", what="the proposal", label="the notebook")
    assert any(done in v for v in kernel.html_values())


KEY_CELL = f'import os\nos.environ["GEMINI_API_KEY"] = "{FAKE_KEY}"\n'


@pytest.mark.parametrize(
    "magic", ["%%gemini_edit --notebook\nAdd a title comment.", "%%gemini_edit --cell k\nAdd a title comment."]
)
def test_a_masked_key_comes_back_as_the_key_not_as_stars(stub, tmp_path, magic):
    """Case 13: the cell that sets the key goes to the model as ***; the proposal repeats it; Apply
    keeps the real key in the cell, and neither the preview nor any output shows the key."""
    cells = [("setup", "%load_ext genai_magics"), ("k", KEY_CELL), ("a", "x = 1\n"), ("m", magic)]
    with frontend(stub, tmp_path, cells) as ff:
        ff.execute("setup")
        run = ff.execute("m")
        sent = api_requests(stub)[-1]["json"]
        assert FAKE_KEY not in str(sent) and '"***"' in current_payload(api_requests(stub)[-1])["currentSource"]
        if "--notebook" in magic:
            assert any("1 changed, 0 new, 0 removed" in v for v in ff.statuses())
        ff.click_until("Apply", "Applied")
        assert ff.source("k") == "# stub edit: Add a title comment.\n" + KEY_CELL
        assert ff.source("a") == "x = 1\n"
        shown = " ".join(ff.statuses()) + run.plain
        assert FAKE_KEY not in shown and "***" in shown  # the diff's context line shows the mask


def test_a_changed_key_line_leaves_the_cell_untouched_and_says_so(stub, tmp_path):
    """Case 13: the model moves the key line (its mask cannot be placed back): that cell is left as
    it is, the other change goes through, and the cell says why."""
    cells = [
        ("setup", "%load_ext genai_magics"),
        ("k", KEY_CELL),
        ("a", "x = 1\n"),
        ("m", "%%gemini_edit --notebook\nReorder."),
    ]
    with frontend(stub, tmp_path, cells) as ff:
        ff.execute("setup")
        masked = 'os.environ["GEMINI_API_KEY"] = "***"\n'
        stub.script_edit(notebook_text([Cell("k", masked + "import os\n"), Cell("a", "x = 2\n")]))
        run = ff.execute("m")
        assert messages.KEY_LINE_CHANGED.render(cells="cell k") in run.plain
        assert any("1 changed, 0 new, 0 removed" in v for v in ff.statuses())
        ff.click_until("Apply", "Applied")
        assert ff.source("k") == KEY_CELL and ff.source("a") == "x = 2\n"
