"""The ``--notebook`` percent format (issue 8, case 3): any cell text round-trips exactly.

A cell may hold lines ``# %%`` or ``# %% id=b`` (scripts pasted into a cell,
files converted from scripts), CRLF, blank lines and trailing newlines; none of
them may split the cell, address another cell, or show up as a change.
"""

from __future__ import annotations

from helpers.list_bridge import ListBridge
from helpers.properties import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from genai_magics.engine.cells import Cell
from genai_magics.engine.diff import APPLIED
from genai_magics.engine.notebook_text import (
    Block,
    blocks_text,
    describe_ops,
    notebook_diff,
    notebook_text,
    parse_blocks,
    plan_ops,
    proposal_ops,
)

# Pieces real cells are made of, the awkward ones over-represented.
PIECES = [
    "# %%",
    "# %% id=b",
    "# %% [markdown] id=c",
    "\\# %%",
    "\\\\# %% id=a",
    "#%%",
    " # %%",
    "x = 1",
    "print('# %%')",
    "",
    "\n",
    "\r\n",
    "\r",
    "\n\n",
    "\\",
    " ",
    "id=b",
    "[markdown]",
    "é",
    "\t",
]
sources = st.lists(st.sampled_from(PIECES) | st.text(max_size=5), max_size=12).map("".join)
cell_types = st.sampled_from(["code", "markdown", "raw"])


@st.composite
def notebooks(draw, min_size=1):
    n = draw(st.integers(min_size, 6))
    return [Cell(f"c{i}", draw(sources), draw(cell_types)) for i in range(n)]


def blocks_of(cells):
    return [Block(c.id, c.cell_type, c.source) for c in cells]


@settings(max_examples=examples(400), deadline=None)
@given(notebooks())
def test_any_cell_text_round_trips_exactly(cells):
    """Case 3: parse(notebook_text(cells)) == cells, for sources with # %%, id=..., CRLF, blank lines."""
    assert parse_blocks(notebook_text(cells)) == blocks_of(cells)


@settings(max_examples=examples(300), deadline=None)
@given(notebooks(min_size=2), st.data())
def test_a_proposal_changing_one_cell_changes_exactly_that_cell(cells, data):
    """Case 3: a proposal that rewrites one cell's text (to anything, # %% lines included) is one set op."""
    i = data.draw(st.integers(0, len(cells) - 1))
    new = data.draw(sources.filter(lambda s: s.rstrip("\n") != cells[i].source.rstrip("\n")))
    changed = [Cell(c.id, new if k == i else c.source, c.cell_type) for k, c in enumerate(cells)]
    ops = plan_ops(parse_blocks(notebook_text(changed)), cells, {c.id for c in cells})
    assert [(o.kind, o.cell_id, o.source) for o in ops] == [("set", cells[i].id, new)]
    assert describe_ops(proposal_ops(notebook_text(cells), notebook_text(changed))) == "1 changed, 0 new, 0 removed"


SCRIPT = "# %%\nimport pandas as pd\n\n# %% Display a data frame\ndf = pd.DataFrame()\n# %% id=b\ndf\n"


def test_a_script_cell_is_not_split_and_cannot_overwrite_another_cell():
    """Case 3: the issue's repro: a cell with '# %%' and '# %% id=b' lines next to a cell b."""
    cells = [Cell("a", SCRIPT), Cell("b", "x = 2\n"), Cell("md", "# Title", "markdown")]
    text = notebook_text(cells)
    assert "\\# %% id=b" in text and "\n# %% id=b\n" in text  # the cell's line escaped; the real header not
    # The model changes only cell md and repeats everything else as it got it.
    proposal = text.replace("# Title", "# A better title")
    ops = proposal_ops(text, proposal)
    assert [(o.kind, o.cell_id) for o in ops] == [("set", "md")]
    assert describe_ops(ops) == "1 changed, 0 new, 0 removed"
    diff = notebook_diff(text, proposal)
    assert "cell md" in diff and "cell a" not in diff and "cell b" not in diff


def test_preview_counts_for_changed_new_and_removed_cells():
    """Case 3: the preview counts what the proposal does (1 changed, 2 new, 2 removed)."""
    cells = [Cell("a", SCRIPT), Cell("b", "b = 1"), Cell("c", "c = 1"), Cell("d", "d = 1")]
    # a changed; a new cell whose text names cell c; b kept; a new markdown cell; c and d left out
    proposal = "\n".join(
        [
            notebook_text([Cell("a", SCRIPT + "extra = 1\n")]),
            "# %%\n\\# %% id=c\nnew = 1\n",
            notebook_text([Cell("b", "b = 1")]),
            "# %% [markdown]\ntwo = 2\n",
        ]
    )
    ops = proposal_ops(notebook_text(cells), proposal)
    assert describe_ops(ops) == "1 changed, 2 new, 2 removed"
    assert [(o.kind, o.cell_id) for o in ops if o.kind != "insert"] == [("set", "a"), ("delete", "c"), ("delete", "d")]
    assert [o.source for o in ops if o.kind == "insert"] == ["# %% id=c\nnew = 1", "two = 2"]


def test_a_model_that_drops_the_blank_lines_or_escapes_changes_nothing_it_did_not_mean():
    """Case 3: leniency: no blank separator lines, or an unescaped '# %% title' line, stay inside their cell."""
    cells = [Cell("a", "x = 1"), Cell("b", "y = 2")]
    assert parse_blocks("# %% id=a\nx = 1\n# %% id=b\ny = 2") == blocks_of(cells)
    assert parse_blocks("# %% id=a\n# %% Display\nx = 1\n") == [Block("a", "code", "# %% Display\nx = 1")]


UNMANAGED = {"setup", "ask", "m"}  # genai magic cells: never part of the document


@st.composite
def notebook_with_proposal(draw):
    """A notebook (magic cells among the document's cells) and a proposal that keeps, changes,
    removes and adds cells; both as the cell dicts the frontend holds."""
    n = draw(st.integers(1, 7))
    doc = [
        {
            "id": f"c{i}",
            "cell_type": draw(cell_types),
            "source": draw(sources),
            "metadata": {"n": i},
            "outputs": [{"output_type": "stream", "name": "stdout", "text": f"{i}\n"}],
        }
        for i in range(n)
    ]
    magic = {"id": "ask", "cell_type": "code", "source": "%%gemini_ask\nWhy?", "metadata": {}}
    cells = [
        {"id": "setup", "cell_type": "code", "source": "%load_ext genai_magics", "metadata": {}},
        *doc,
        {"id": "m", "cell_type": "code", "source": "%%gemini_edit --notebook\nGo.", "metadata": {}},
    ]
    cells.insert(draw(st.integers(1, len(cells) - 1)), magic)
    proposal: list[Block] = []
    for c in doc:
        if draw(st.booleans()) and draw(st.booleans()):
            continue  # removed
        source = draw(sources) if draw(st.booleans()) else c["source"]
        proposal.append(Block(c["id"], c["cell_type"], source))
        if draw(st.integers(0, 3)) == 0:
            proposal.append(Block(None, draw(cell_types), draw(sources)))
    if draw(st.booleans()):
        proposal.insert(0, Block(None, "code", draw(sources)))
    return cells, proposal


@settings(max_examples=examples(300), deadline=None)
@given(notebook_with_proposal())
def test_apply_makes_the_proposal_and_undo_restores_every_cell_exactly(case):
    """Cases 3 and 4: Apply of any --notebook proposal leaves the document cells reading as the
    proposal (magic cells untouched, the preview's counts are the edits made); Undo restores every
    cell exactly: id, type, text, metadata, outputs and position among the magic cells."""
    from genai_magics.engine.notebook_text import blocks_text
    from genai_magics.frontends.notebook_edit import NotebookWriter

    cells, proposal = case
    bridge = ListBridge(cells)
    live = lambda: [c for c in bridge.cells() if c.id not in UNMANAGED]  # noqa: E731
    base_text = notebook_text(live())
    proposal_text = blocks_text(proposal)
    writer = NotebookWriter(bridge, base_text, proposal_text, live)
    results: list = []
    writer.write("notebook", proposal_text, results.append)
    bridge.answer()
    assert results == [None]
    after = [c for c in bridge.nb if c["id"] not in UNMANAGED]
    assert [c["source"].rstrip("\n") for c in after] == [b.source.rstrip("\n") for b in proposal]
    kept_type = {c["id"]: c["cell_type"] for c in cells}  # a kept cell keeps its type
    assert [c["cell_type"] for c in after] == [kept_type.get(b.id, b.cell_type) for b in proposal]
    assert [c for c in bridge.nb if c["id"] in UNMANAGED] == [c for c in cells if c["id"] in UNMANAGED]
    made = describe_ops(proposal_ops(base_text, proposal_text))
    assert writer.preview == made
    writer.write("notebook", base_text, results.append)
    bridge.answer()
    assert results == [None, None]
    assert bridge.nb == cells


def test_diff_headers_name_vscode_cells_by_their_place_not_their_uri():
    """VS Code's cell ids are long vscode-notebook-cell: URIs: the headers say 'cell #2' instead."""
    uri = "vscode-notebook-cell:/home/u/nb.ipynb#W{}sZmlsZQ%3D%3D"
    cells = [Cell(uri.format(1), "a = 1"), Cell(uri.format(2), "b = 1"), Cell(uri.format(3), "c = 1")]
    text = notebook_text(cells)
    blocks = parse_blocks(text)
    proposal = blocks_text([blocks[0], Block(blocks[1].id, "code", "b = 2"), Block(None, "code", "new = 1")])
    diff = notebook_diff(text, proposal)
    assert "vscode-notebook-cell" not in diff
    headers = [line for line in diff.splitlines() if line.startswith("--- ")]
    assert headers == [
        "--- cell #2 (current)",
        "--- new code cell after cell #2 (current)",
        "--- cell #3 (removed) (current)",
    ]
    # once applied, no cell's old text is current any more
    applied = notebook_diff(text, proposal, APPLIED)
    assert [line for line in applied.splitlines() if line.startswith(("--- ", "+++ "))] == [
        "--- cell #2 (before Apply)",
        "+++ cell #2 (applied)",
        "--- new code cell after cell #2 (before Apply)",
        "+++ new code cell after cell #2 (applied)",
        "--- cell #3 (removed) (before Apply)",
        "+++ cell #3 (removed) (applied)",
    ]
    assert "No newline at end of file" not in diff + applied  # cells never end in a newline: no noise
