"""Undo never loses a cell (issue 40, item 1): a cell an agent turn deleted comes back with its text and outputs
even when the cell it followed is gone (the user deleted the agent's new cell; a later turn deleted it), below
the nearest cell above it still there; two agent turns undone in either order give back the notebook as before
both, and an Undo that cannot go first says why and stays usable. Real kernel, the fake JupyterLab (its
requests checked against the bridge's schema), the real SDK over HTTP to the stand-in, which plays the agent.
"""

from __future__ import annotations

import html

import pytest
from helpers.fake_frontend import FakeCell, FakeFrontend
from helpers.kernel import FAKE_KEY
from test_agent import call

from genai_magics import messages

pytestmark = pytest.mark.kernel

SHOWN = [{"output_type": "execute_result", "data": {"text/plain": "3"}, "metadata": {}, "execution_count": 4}]
USER_CELLS = ["setup", "a", "b", "c"]


@pytest.fixture
def nb(stub, tmp_path):
    stub.reset()
    cells = [
        ("setup", "%load_ext genai_magics"),
        ("a", "def parse(s):\n    return int(s)"),
        ("b", "scratch = 1"),
        FakeCell("c", "c = 3\nc", outputs=SHOWN, execution_count=4),
        ("m1", "%%gemini_agent\nTidy up."),
        ("m2", "%%gemini_agent\nTidy up more."),
    ]
    env = {"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY, "JUPYTER_DATA_DIR": str(tmp_path / "d")}
    with FakeFrontend(cells=cells, env=env, cwd=str(tmp_path)) as ff:
        ff.execute("setup")
        ff.execute_code("%config GeminiMagics.agent_approve = 'none'")
        yield ff


def user_cells(ff: FakeFrontend) -> list[dict]:
    """The notebook's cells but the agent cells (which show their turns), as saved."""
    return [c.to_json() for c in ff.cells if c.id not in ("m1", "m2")]


def turn(ff: FakeFrontend, stub, cell_id: str, rounds: list) -> None:
    stub.script_tools(rounds)
    run = ff.execute(cell_id)
    assert run.error is None, run.error


def undo_buttons(ff: FakeFrontend) -> list[str]:
    """Each agent turn's Undo button, oldest first."""
    return [
        mid
        for mid, s in ff.widget_models.items()
        if s.get("_model_name") == "ButtonModel" and s.get("description") == "Undo"
    ]


def said(ff: FakeFrontend, words: str, count: int = 1) -> str:
    """The newest line holding ``words``, once ``count`` lines hold them."""
    assert ff.pump_until(lambda: sum(words in html.unescape(v) for v in ff.statuses()) >= count, timeout=20), (
        ff.statuses()[-3:]
    )
    return [html.unescape(v) for v in ff.statuses() if words in html.unescape(v)][-1]


def new_cell(ff: FakeFrontend) -> str:
    (new,) = [c.id for c in ff.cells if c.id not in (*USER_CELLS, "m1", "m2")]
    return new


def test_a_deleted_cell_comes_back_when_the_agents_new_cell_it_followed_was_deleted_by_hand(nb, stub):
    before = user_cells(nb)
    # the new cell goes right above c, then c goes: c followed the new cell
    turn(nb, stub, "m1", [[call("insert_cell", after="b", source="x = 1\n")], [call("delete_cell", ref="c")]])
    nb.remove_cell(new_cell(nb))  # the user deletes the agent's new cell first
    nb.push_snapshot()
    nb.click(undo_buttons(nb)[0])
    line = said(nb, "Undone")
    assert user_cells(nb) == before, line  # c back below b, with its outputs
    assert "could not undo" not in line


@pytest.mark.parametrize("order", ["earlier first", "later first"])
def test_two_agent_turns_undone_in_either_order_give_back_the_notebook_as_before_both(nb, stub, order):
    before = user_cells(nb)
    turn(nb, stub, "m1", [[call("insert_cell", after="a", source="x = 1\n")], [call("delete_cell", ref="c")]])
    new = new_cell(nb)
    # the later turn edits the earlier one's new cell and deletes b, which c followed
    turn(
        nb,
        stub,
        "m2",
        [[call("edit_cell", ref=new, edits=[{"find": "x = 1", "replace": "x = 2"}])], [call("delete_cell", ref="b")]],
    )
    assert [c.id for c in nb.cells] == ["setup", "a", new, "m1", "m2"]
    first, second = undo_buttons(nb)
    if order == "earlier first":
        nb.click(first)  # the later turn's edit of the new cell is no hand edit: that turn goes first
        line = said(nb, messages.TURN_UNDO_LATER_FIRST.render(cells="").split(":")[0])
        assert "changed by hand" not in line and [c.id for c in nb.cells] == ["setup", "a", new, "m1", "m2"]
        nb.click(second)
        said(nb, "Undone")
        nb.click(first)  # still usable
        said(nb, "Undone", count=2)
    else:
        nb.click(second)
        said(nb, "Undone")
        nb.click(first)
        said(nb, "Undone", count=2)
    assert user_cells(nb) == before
    assert not [v for v in nb.statuses() if "changed by hand" in v or "could not undo" in v]


def test_an_earlier_turns_undo_puts_its_cell_back_when_a_later_turn_deleted_the_cell_above_it(nb, stub):
    before = user_cells(nb)
    turn(nb, stub, "m1", [[call("delete_cell", ref="c")]])
    turn(nb, stub, "m2", [[call("delete_cell", ref="b")]])  # c followed b
    first, second = undo_buttons(nb)
    nb.click(first)  # no cell both turns changed: the earlier Undo goes first
    line = said(nb, "Undone")
    assert "could not undo" not in line and [c.id for c in nb.cells][:3] == ["setup", "a", "c"]
    nb.click(second)
    said(nb, "Undone", count=2)
    assert user_cells(nb) == before
