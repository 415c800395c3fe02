"""The merged view kept across turns (``notebook_view.merged``): brought up to date where the changed cells
stand, it is always the whole merge (``merge_file_and_executed``) of the same file version and executed cells,
whatever cells ran, ran again, were applied, counted or saved, with ids the file holds, ids it never holds
(VS Code's) and ids it holds twice."""

from __future__ import annotations

import pytest
from helpers.properties import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from genai_magics.engine.cells import Cell
from genai_magics.frontends import notebook_view
from genai_magics.frontends.notebook_view import ExecutedCells, merge_file_and_executed, merged

IDS = ["f0", "f1", "f2", "f3", "In[3]", "vs-a"]  # the last two never in a file cell's id below but by chance
TEXTS = ["a = 1", "b = 2", "c = 3", "d = 4"]
TYPES = ["code", "code", "markdown", "raw"]

FILE = st.lists(st.tuples(st.sampled_from(IDS), st.sampled_from(TEXTS), st.sampled_from(TYPES)), max_size=6)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("run"), st.sampled_from([*IDS, None]), st.sampled_from(TEXTS)),
        st.tuples(st.just("again"), st.integers(0, 9), st.integers(0, 3)),  # a cell run again with a text it held
        st.tuples(st.just("apply"), st.integers(0, 9), st.sampled_from(TEXTS)),  # set_source: Apply, Undo
        st.tuples(st.just("count"), st.integers(0, 9), st.integers(1, 99)),
        st.tuples(st.just("save"), FILE, st.just(0)),
    ),
    max_size=30,
)


def _step(executed: ExecutedCells, op: tuple, file_cells: tuple[Cell, ...]) -> tuple[Cell, ...]:
    kind, a, b = op
    ids = list(executed.by_id)
    if kind == "run":
        executed.add(a, b, len(executed.order) + 1)
    elif kind == "save":
        file_cells = tuple(Cell(i, text, cell_type) for i, text, cell_type in a)
    elif ids:
        cell_id = ids[a % len(ids)]
        if kind == "again":
            held = sorted(executed.sources[cell_id]) or [executed.by_id[cell_id].source]
            source = next((t for t in TEXTS if Cell(cell_id, t).sha256 == held[b % len(held)]), None)
            executed.add(cell_id, source if source is not None else executed.by_id[cell_id].source, 7)
        elif kind == "apply":
            executed.set_source(cell_id, b)
        else:
            executed.set_count(cell_id, b)
    return file_cells


@pytest.mark.parametrize("listed", [3, notebook_view.MAX_CHANGED])  # a short list of changes starts over often
@settings(max_examples=examples(300), deadline=None)
@given(first=FILE, ops=OPS)
# a cell run again as it was (each turn's magic cell), then given the text of a file cell it was not matched with
@example(
    first=[("f0", "a = 1", "code"), ("f1", "b = 2", "code")],
    ops=[("run", "f0", "a = 1"), ("run", "f1", "b = 2"), ("again", 1, 0), ("apply", 1, "a = 1"), ("again", 0, 0)],
)
# an id the file holds twice: the second cell of it is looked for by text
@example(
    first=[("f0", "a = 1", "code"), ("f0", "b = 2", "code"), ("f1", "c = 3", "code")],
    ops=[("run", "f0", "a = 1"), ("run", "f1", "c = 3"), ("apply", 1, "b = 2"), ("count", 1, 4)],
)
def test_the_merge_brought_up_to_date_is_the_whole_merge(listed, first, ops):
    executed = ExecutedCells()
    file_cells = tuple(Cell(i, text, cell_type) for i, text, cell_type in first)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(notebook_view, "MAX_CHANGED", listed)
        for op in ops:
            file_cells = _step(executed, op, file_cells)
            assert list(merged(file_cells, executed)) == merge_file_and_executed(file_cells, executed)
