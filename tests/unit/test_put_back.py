"""Where an agent turn's Undo puts a deleted cell back (engine/agent.py's ``put_back_after``): below the nearest
cell that was above it and is still there, else at its old index."""

from __future__ import annotations

import pytest

from genai_magics.engine.agent import Deleted, put_back_after

CELL = {"id": "c", "cell_type": "code", "source": "c = 3"}


@pytest.mark.parametrize(
    ("above", "now", "after"),
    [
        (("s", "a", "x"), ["s", "a", "x", "m"], "x"),  # the cell it followed is there
        (("s", "a", "x"), ["s", "a", "m"], "a"),  # it is gone (deleted by hand, or by a later turn)
        (("s", "a", "x"), ["s", "m"], "s"),
        (("s", "a"), ["n", "p", "q"], "p"),  # none left above it: at its old index
        (("s", "a"), ["n"], "n"),  # ... or as near as the notebook now allows
        ((), ["n", "p"], None),  # it was the first cell
    ],
)
def test_a_deleted_cell_goes_below_the_nearest_cell_above_it_that_is_still_there(above, now, after):
    assert put_back_after(Deleted(CELL, above[-1] if above else None, above), now) == after


def test_a_change_without_the_cells_above_it_goes_below_the_one_it_followed():
    assert put_back_after(Deleted(CELL, "b"), ["a", "b", "m"]) == "b"
    assert put_back_after(Deleted(CELL, "b"), ["a", "m"]) == "a"
