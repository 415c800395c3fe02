"""The agent's run_cell without a kernel: iopub messages into nbformat outputs, the approval state and its
waits, the refusals the model reads, and the turn's Undo over an in-memory live notebook."""

from __future__ import annotations

import copy

import pytest
from helpers import aio
from helpers.list_bridge import ListBridge
from helpers.properties import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from genai_magics import messages
from genai_magics.engine.agent import Deleted, Edited, Inserted, TurnChanges
from genai_magics.engine.cells import Cell
from genai_magics.engine.outputs import MAX_CELL_CHARS
from genai_magics.frontends.cell_runner import (
    MAX_RUN_OUTPUTS,
    SHOWN_CHARS,
    Approvals,
    CellOutputs,
    CellRunner,
    _message_of,
    make_approve_write,
)
from genai_magics.frontends.notebook_view import ExecutedCells
from genai_magics.frontends.turn_undo_steps import TurnUndo


def test_outputs_are_built_as_a_frontend_builds_its_output_area():
    out = CellOutputs()
    out.add("stream", {"name": "stdout", "text": "a"})
    out.add("stream", {"name": "stdout", "text": "b\n"})
    out.add("stream", {"name": "stderr", "text": "warn\n"})
    out.add("display_data", {"data": {"text/plain": "p1"}, "metadata": {}, "transient": {"display_id": "d"}})
    assert out.add(
        "update_display_data", {"data": {"text/plain": "p2"}, "metadata": {}, "transient": {"display_id": "d"}}
    )
    # an update of a display this run did not show belongs to another cell: it goes through
    assert not out.add("update_display_data", {"data": {}, "transient": {"display_id": "elsewhere"}})
    out.add("execute_result", {"data": {"text/plain": "42"}, "metadata": {}, "execution_count": 7})
    out.add("error", {"ename": "E", "evalue": "v", "traceback": ["t1", "t2"]})
    assert out.nbformat() == [
        {"output_type": "stream", "name": "stdout", "text": "ab\n"},
        {"output_type": "stream", "name": "stderr", "text": "warn\n"},
        {"output_type": "display_data", "data": {"text/plain": "p2"}, "metadata": {}},
        {"output_type": "execute_result", "data": {"text/plain": "42"}, "metadata": {}, "execution_count": 7},
        {"output_type": "error", "ename": "E", "evalue": "v", "traceback": ["t1", "t2"]},
    ]


def test_clear_output_clears_now_or_at_the_next_output_and_outputs_are_capped():
    out = CellOutputs()
    out.add("stream", {"name": "stdout", "text": "0%"})
    out.add("clear_output", {"wait": True})
    assert len(out.nbformat()) == 1  # a progress bar: cleared when the next output comes
    out.add("stream", {"name": "stdout", "text": "100%"})
    assert out.nbformat() == [{"output_type": "stream", "name": "stdout", "text": "100%"}]
    out.add("clear_output", {"wait": False})
    assert out.nbformat() == []
    # past its bound a run says what it left out, where, and keeps its error
    for i in range(MAX_RUN_OUTPUTS + 5):
        out.add("display_data", {"data": {"text/plain": str(i)}})
    out.add("stream", {"name": "stderr", "text": "late warning\n"})  # left out too: not merged into the note
    out.add("error", {"ename": "E", "evalue": "v", "traceback": ["t"]})
    shown = out.nbformat()
    assert len(shown) == MAX_RUN_OUTPUTS + 2
    assert shown[MAX_RUN_OUTPUTS - 1]["data"]["text/plain"] == str(MAX_RUN_OUTPUTS - 1)
    left_out = messages.RUN_OUTPUTS_LEFT_OUT.render(count="6 outputs", kept=MAX_RUN_OUTPUTS)
    assert shown[-2] == {"output_type": "stream", "name": "stderr", "text": left_out}
    assert shown[-1]["output_type"] == "error"
    out.add("clear_output", {"wait": False})  # a cleared area counts afresh: no note left over
    for i in range(MAX_RUN_OUTPUTS + 1):
        out.add("display_data", {"data": {"text/plain": str(i)}})
    assert out.nbformat()[-1]["text"] == messages.RUN_OUTPUTS_LEFT_OUT.render(count="1 output", kept=MAX_RUN_OUTPUTS)
    long = CellOutputs()
    long.add("stream", {"name": "stdout", "text": "x" * (MAX_CELL_CHARS - 1)})
    long.add("stream", {"name": "stdout", "text": "yyy"})
    (stream,) = long.nbformat()
    said = messages.RUN_CHARS_LEFT_OUT.render(count="2 characters")
    assert stream["text"] == "x" * (MAX_CELL_CHARS - 1) + "y" + said


def test_a_send_call_is_read_in_both_of_its_shapes():
    parent = {"msg_id": "p"}
    msg = {"header": {"msg_type": "stream"}, "content": {"text": "x"}, "parent_header": parent}
    assert _message_of((None, msg), {}) == ("stream", {"text": "x"}, parent)
    assert _message_of((None, "error", {"ename": "E"}, parent), {}) == ("error", {"ename": "E"}, parent)
    assert _message_of((None, "clear_output"), {"content": {"wait": True}, "parent": parent}) == (
        "clear_output",
        {"wait": True},
        parent,
    )


@pytest.mark.parametrize(("mode", "run", "write"), [("runs", True, False), ("all", True, True), ("none", False, False)])
def test_what_waits_for_approval_in_each_mode(mode, run, write):
    approvals = Approvals(mode)
    assert (approvals.needed("run"), approvals.needed("write")) == (run, write)


def test_run_all_approves_the_rest_of_the_turns_runs_and_the_first_answer_stands():
    approvals = Approvals("all")
    code = "\n".join(f"line {i}" for i in range(20))
    assert approvals.ask("run", "In[3]", code).lines == code  # every line it approves, not the first few
    asked = approvals.ask("run", "In[3]", "x" * (SHOWN_CHARS + 5))
    assert asked.lines == "x" * SHOWN_CHARS + "\n… 5 more characters"
    asked.choose("all")
    asked.choose("stop")  # a second click changes nothing
    assert asked.choice == "all" and not approvals.needed("run") and approvals.needed("write")


def test_the_cells_lines_are_shown_with_the_key_masked(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "AIzaUNIT-test-key-987654")
    asked = Approvals().ask("run", "In[1]", "key = 'AIzaUNIT-test-key-987654'")
    assert asked.lines == "key = '***'"


def _runner(approvals: Approvals, wait, notebook=None, shown=None, timeout_s: float = 5.0) -> CellRunner:
    return CellRunner(
        shell=None,
        notebook=notebook,
        executed=ExecutedCells(),
        capture=None,  # type: ignore[arg-type]  # reached only by a run
        shown=shown or (lambda cell_id, label: []),
        last_error=lambda: None,
        approvals=approvals,
        show=lambda asked: None,
        wait=wait,
        timeout_s=timeout_s,
    )


class Connected(ListBridge):
    """A live notebook that runs nothing: the checks before a run, and the approval, are what is tested."""

    def __init__(self):
        super().__init__([{"id": "t", "cell_type": "code", "source": "x = 1", "metadata": {}}])


def test_without_a_live_notebook_run_cell_is_an_error_result_at_once():
    result = _runner(Approvals("none"), None)(Cell("t", "x = 1"), "In[1]")
    assert result.status == "error" and result.response["error"] == messages.AGENT_CANNOT_RUN.render()


def test_where_no_click_can_be_seen_a_run_needing_approval_is_refused_and_nothing_is_asked():
    approvals = Approvals("runs")
    runner = _runner(approvals, None, Connected())
    runner._cannot_run = lambda cell: None  # type: ignore[method-assign]  # no shell here to ask about await
    result = runner(Cell("t", "x = 1"), "In[1]")
    assert result.response["error"] == messages.AGENT_CANNOT_WAIT.render()
    assert approvals.asked == []


def test_an_unanswered_run_is_not_run_and_the_model_reads_why():
    runner = _runner(Approvals("runs"), "async", Connected(), timeout_s=0.1)
    runner._cannot_run = lambda cell: None  # type: ignore[method-assign]
    runner.run = lambda cell: pytest.fail("ran without approval")  # type: ignore[method-assign]
    result = aio.run(runner(Cell("t", "x = 1"), "In[1]"))  # type: ignore[arg-type]
    assert result.response["error"] == messages.RUN_UNANSWERED.render(label="In[1]", seconds=0.1)
    assert runner.approvals.asked[0].choice == "unanswered"


def test_stop_raises_keyboard_interrupt_into_the_turn_and_a_write_waits_in_all_mode():
    approvals = Approvals("all")
    shown: list = []
    approve = make_approve_write(approvals, shown.append, "async", 5.0)
    pending = approve("insert a cell after In[2]", "x = 1", ())
    shown[0].choose("stop")
    with pytest.raises(KeyboardInterrupt):
        aio.run(pending)  # type: ignore[arg-type]
    assert make_approve_write(Approvals("runs"), shown.append, None, 5.0)("edit In[2]", "", ()) is True
    assert make_approve_write(Approvals("all"), shown.append, None, 5.0)("edit In[2]", "", ()) is False


# -- the turn's Undo ---------------------------------------------------------------------------------
CELL = st.fixed_dictionaries(
    {
        "source": st.text(alphabet="ab \n=1", max_size=6),
        "cell_type": st.sampled_from(["code", "markdown"]),
    }
)


def _notebook(n: int) -> list[dict]:
    return [
        {
            "id": f"c{i}",
            "cell_type": "code",
            "source": f"x{i} = {i}\n",
            "metadata": {"n": i},
            "outputs": [{"output_type": "stream", "name": "stdout", "text": f"{i}\n"}],
            "execution_count": i + 1,
        }
        for i in range(n)
    ]


def _made(bridge: ListBridge, ops: list[tuple[str, int, dict]]) -> TurnChanges:
    """A random agent turn made through the bridge, recorded as the agent's actions record it: each op
    names its cell by its place, modulo the notebook's length (an insert's 0: the top)."""
    changes = TurnChanges()
    for kind, at, new in ops:
        ids = [c["id"] for c in bridge.nb]
        if kind == "insert" or not ids:
            after = [None, *ids][at % (len(ids) + 1)]
            cell_id = bridge.insert_cell(after, new["source"], new["cell_type"], lambda e: None)
            changes.add(Inserted(cell_id, new["source"], new["cell_type"], after))
        elif kind == "edit":
            cell_id = ids[at % len(ids)]
            before = bridge.nb[bridge._at(cell_id)]["source"]
            bridge.set_source(cell_id, new["source"], lambda e: None)
            changes.add(Edited(cell_id, before, new["source"]))
        else:
            cell_id = ids[at % len(ids)]
            after_id = ids[ids.index(cell_id) - 1] if ids.index(cell_id) else None
            removed: list = []
            bridge.delete_cell(cell_id, lambda e: None, removed.append)
            bridge.answer()
            changes.add(Deleted(removed[0], after_id))
        bridge.answer()
    return changes


OPS = st.lists(
    st.tuples(st.sampled_from(["insert", "edit", "delete"]), st.integers(0, 9), CELL), min_size=1, max_size=8
)
EMPTY = {"source": "", "cell_type": "code"}


@settings(max_examples=examples(200), deadline=None)
@given(st.integers(0, 5), OPS)
def test_one_undo_puts_every_cell_back_exactly(n, ops):
    """Any turn of inserts, edits and deletes: Undo leaves the notebook as it was (ids, types, text,
    metadata, outputs, order), and says what ran stays run."""
    before = _notebook(n)
    bridge = ListBridge(copy.deepcopy(before))
    changes = _made(bridge, ops)
    undo = TurnUndo(bridge, changes, ["In[9]"], lambda cell_id: cell_id)
    undo.undo()
    bridge.answer()
    assert bridge.nb == before
    assert undo.state == "undone" and messages.TURN_UNDO_RAN.render(cells="In[9]") in undo.message


@settings(max_examples=examples(200), deadline=None)
@given(st.integers(0, 5), OPS)
# found by this test: three cells inserted at the top, the middle one deleted again (its put-back was
# placed after a cell the notebook's undo had taken away)
@example(1, [("insert", 0, EMPTY), ("insert", 0, EMPTY), ("insert", 0, EMPTY), ("delete", 1, EMPTY)])
def test_after_the_notebooks_own_undo_the_turns_undo_writes_nothing(n, ops):
    """The turn taken back by the notebook's own undo first (z in JupyterLab puts every cell as it was):
    the turn's Undo then writes nothing, names no cell as changed by hand, and says they are back."""
    before = _notebook(n)
    bridge = ListBridge(copy.deepcopy(before))
    changes = _made(bridge, ops)
    touched = bridge.nb != before
    bridge.nb = copy.deepcopy(before)  # the notebook's own undo
    undo = TurnUndo(bridge, changes, [], lambda cell_id: cell_id)
    undo.undo()
    bridge.answer()
    assert bridge.nb == before and undo.state == "undone"
    assert "changed by hand" not in undo.message
    assert ("already as before the turn" in undo.message) == touched, undo.message


def test_a_cell_changed_by_hand_is_kept_and_named_and_a_refused_edit_is_said():
    bridge = ListBridge(_notebook(2))
    changes = TurnChanges([Edited("c0", "x0 = 0\n", "x0 = 'agent'\n"), Edited("c1", "x1 = 1\n", "x1 = 'agent'\n")])
    bridge.nb[0]["source"] = "x0 = 'mine'\n"  # by hand, after the turn
    bridge.nb[1]["source"] = "x1 = 'agent'\n"
    refused = ListBridge.set_source

    def set_source(self, cell_id, source, done):
        refused(self, cell_id, source, lambda e: done("the cell is read-only"))

    bridge.set_source = set_source.__get__(bridge)  # type: ignore[method-assign]
    undo = TurnUndo(bridge, changes, [], lambda cell_id: f"cell {cell_id}")
    undo.undo()
    bridge.answer()
    assert bridge.nb[0]["source"] == "x0 = 'mine'\n"
    assert messages.TURN_UNDO_KEPT.render(cells="cell c0") in undo.message
    assert messages.TURN_UNDO_FAILED.render(what="cell c1", error="the cell is read-only") in undo.message
    undo.undo()
    assert undo.message == messages.TURN_UNDO_ONCE.render()


def test_undo_needs_the_live_notebook_to_answer():
    bridge = ListBridge(_notebook(1))
    bridge.connected = False
    undo = TurnUndo(bridge, TurnChanges([Inserted("c0", "x0 = 0\n")]), [], str)
    undo.undo()
    assert undo.message == messages.UNDO_NEEDS_LIVE.render() and undo.state == "ready"
