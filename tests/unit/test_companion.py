"""The kernel side of the VS Code companion over its real file channel, with a companion stand-in in a thread.

The stand-in (tests/helpers/companion.py) writes the presence file and answers requests the way
vscode-extension/src/extension.ts does (its pure rules are unit-tested there with node's test
runner), and checks every file against the protocol's schema; the real extension in a real VS Code
is tests/vscode/test_vscode_companion.py.
"""

from __future__ import annotations

import time

import pytest
from helpers.companion import CELLS, NB, FakeCompanion, choose_live

from genai_magics import messages
from genai_magics.engine.cells import is_genai_magic
from genai_magics.engine.hashing import sha256_text
from genai_magics.engine.notebook_text import Block, blocks_text, notebook_text
from genai_magics.frontends.companion import Companion, notebook_key, presences
from genai_magics.frontends.frontend import Frontend, Kind
from genai_magics.frontends.notebook_edit import NotebookWriter
from genai_magics.frontends.notebook_view import ExecutedCells


@pytest.fixture
def channel(tmp_path):
    fake = FakeCompanion(tmp_path)
    yield fake
    fake.stop()
    assert fake.bad == []  # every request the kernel wrote, and every reply, is a message of the schema


def _companion(channel, timeout: float = 2.0) -> Companion:
    companion = Companion(directory=channel.dir, timeout=timeout)
    companion.follow(CELLS[2])
    return companion


def test_the_notebook_is_named_by_its_cells_uri_without_the_fragment():
    assert notebook_key(CELLS[1]) == NB


def test_outside_vscode_nothing_is_connected_and_status_says_so(tmp_path):
    companion = Companion(directory=tmp_path)
    companion.follow("7c1d-jupyterlab-id")
    assert not companion.connected
    assert companion.status() == messages.COMPANION_NOT_IN_VSCODE.render()


def test_a_presence_file_of_a_vscode_that_is_gone_does_not_count(tmp_path):
    gone = FakeCompanion(tmp_path, pid=2**22 + 12345)  # no such process
    try:
        assert presences(tmp_path) == []
        companion = _companion(gone)
        assert not companion.connected
        assert (
            messages.COMPANION_ABSENT.matches(companion.status()) and "code --install-extension" in companion.status()
        )
    finally:
        gone.stop()


def test_snapshot_gives_the_live_cells_and_the_code_cell_above(channel):
    companion = _companion(channel)
    assert companion.connected and "connected" in companion.status()
    assert [c.id for c in companion.cells()] == CELLS
    assert companion.cell_above(CELLS[2]).source == "x = 1"
    assert companion.is_fresh_for(CELLS[2], "%%gemini_edit\nfix")


def test_a_write_names_the_text_it_replaces_so_a_cell_edited_since_is_never_overwritten(channel):
    companion = _companion(channel)
    companion.cells()
    results: list[str | None] = []
    channel.cells[CELLS[1]] = "x = 2  # typed in VS Code after the snapshot"
    companion.set_source(CELLS[1], "x = 10", results.append)
    assert results == ["the cell changed in VS Code since the kernel last saw it"]
    assert channel.cells[CELLS[1]].startswith("x = 2")
    companion.refresh()
    companion.set_source(CELLS[1], "x = 10", results.append)
    assert results[-1] is None and channel.cells[CELLS[1]] == "x = 10"
    assert channel.requests[-1]["expect_sha256"] == sha256_text("x = 2  # typed in VS Code after the snapshot")


def test_a_closed_notebook_refuses_the_write(channel):
    companion = _companion(channel)
    companion.cells()
    channel.closed = True
    results: list[str | None] = []
    companion.set_source(CELLS[1], "x = 10", results.append)
    assert results == ["the notebook is not open in VS Code"] and channel.cells[CELLS[1]] == "x = 1"


def test_no_reply_in_time_fails_and_the_request_is_never_done_later(channel):
    companion = _companion(channel, timeout=0.3)
    companion.cells()
    channel.answering = False
    results: list[str | None] = []
    companion.set_source(CELLS[1], "x = 10", results.append)
    assert results == [messages.COMPANION_NO_REPLY.render(timeout=0.3, op="set_source")]
    assert list(channel.inbox.glob("*.json")) == []  # withdrawn
    channel.answering = True
    time.sleep(0.05)
    assert channel.cells[CELLS[1]] == "x = 1"


def _choose(companion: Companion) -> Frontend:
    executed = ExecutedCells()
    executed.add(CELLS[1], "x = 1", 1)
    executed.add(CELLS[2], "%%gemini_edit\nfix", 2)
    return choose_live(companion if companion.connected else None, executed)


def test_with_the_companion_apply_targets_the_code_cell_and_says_so_before_the_click(channel):
    frontend = _choose(_companion(channel))
    assert frontend.kind is Kind.COMPANION
    assert frontend.default_target().id == CELLS[1]
    assert frontend.writer("fix").describe_apply() == messages.COMPANION_APPLY.render()


def test_without_the_companion_the_running_cell_behaviour_stays(tmp_path):
    companion = Companion(directory=tmp_path)
    companion.follow(CELLS[2])
    assert _choose(companion).kind in (Kind.RUNNING_CELL, Kind.STAGED)


def test_a_notebook_proposal_applied_and_undone_through_the_companion_puts_every_cell_back(channel):
    """Insert, delete and a removed cell put back (VS Code names it anew; the kernel keeps its name),
    every file of it a message of the schema (the fixture checks)."""
    companion = _companion(channel)
    live = lambda: [c for c in companion.cells() if not is_genai_magic(c.source)]  # noqa: E731
    before = dict(channel.cells)
    base = notebook_text(live())
    proposal = blocks_text([Block(None, "markdown", "# Setup"), Block(CELLS[1], "code", "x = 2")])
    writer = NotebookWriter(companion, base, proposal, live)
    results: list[str | None] = []
    writer.write("notebook", proposal, results.append)
    assert results == [None]
    assert list(channel.cells.values()) == ["# Setup", "x = 2", "%%gemini_edit\nfix"]
    assert sorted(channel.types.values()) == ["markdown"]
    companion.refresh()
    writer.write("notebook", base, results.append)
    assert results == [None, None]
    assert list(channel.cells.values()) == list(before.values()) and channel.types == {}
    assert CELLS[0] not in channel.cells  # put back under a new URI ...
    assert [c.id for c in companion.cells()] == CELLS  # ... which the kernel calls by its old one
    put_back = next(r for r in channel.requests if r["op"] == "insert_cell" and "cell" in r)
    assert put_back["cell"]["id"] == CELLS[0] and put_back["after_id"] is None
    assert {r["op"] for r in channel.requests} == {"snapshot", "set_source", "insert_cell", "delete_cell"}


RAN = [
    {"output_type": "stream", "name": "stdout", "text": "3\n"},
    {"output_type": "execute_result", "execution_count": 7, "data": {"text/plain": "9"}, "metadata": {}},
]


def test_set_outputs_replaces_the_cell_and_the_kernel_keeps_calling_it_by_its_name(channel):
    """VS Code sets outputs by replacing the cell (a new URI): snapshots and later edits still use the old
    name; an inserted cell is named at once in set_outputs, set_source and delete_cell."""
    companion = _companion(channel)
    companion.cells()
    results: list[str | None] = []
    companion.set_outputs(CELLS[1], RAN, 7, results.append)
    assert results == [None]
    assert CELLS[1] not in channel.cells and list(channel.outputs.values()) == [(RAN, 7)]
    assert [c.id for c in companion.cells()] == CELLS
    companion.set_source(CELLS[1], "x = 3", results.append)
    assert results == [None, None] and list(channel.cells.values())[1] == "x = 3"

    new_id = companion.insert_cell(CELLS[1], "print(3)", "code", results.append)
    companion.set_outputs(new_id, RAN[:1], 8, results.append)
    companion.set_source(new_id, "print(4)", results.append)
    assert results == [None] * 5 and list(channel.cells.values())[2] == "print(4)"
    assert (RAN[:1], 8) in channel.outputs.values()
    assert [c.id for c in companion.cells()] == [CELLS[0], CELLS[1], new_id, CELLS[2]]
    companion.delete_cell(new_id, results.append)
    assert results == [None] * 6 and len(channel.cells) == 3


def test_set_outputs_of_a_markdown_cell_or_a_gone_one_is_refused(channel):
    channel.types[CELLS[0]] = "markdown"
    companion = _companion(channel)
    companion.cells()
    results: list[str | None] = []
    companion.set_outputs(CELLS[0], RAN, 1, results.append)
    companion.set_outputs(f"{NB}#gone", RAN, 1, results.append)
    assert results == ["only a code cell has outputs", "the cell is no longer in the notebook"]
    assert channel.outputs == {}


def test_a_request_outside_the_schema_fails_the_stand_in(channel):
    companion = _companion(channel)
    companion.cells()
    companion._request("set_source", {"cell_id": CELLS[1], "source": "y", "why": "not in the protocol"})
    assert channel.bad and "not a Request" in channel.bad[0] and "why" in channel.bad[0]
    channel.bad.clear()  # caught: the fixture would fail the test on it
