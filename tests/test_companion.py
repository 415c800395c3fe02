"""The kernel side of the VS Code companion over its real file channel, with a companion stand-in in a thread.

The stand-in writes the presence file and answers requests the way
vscode-extension/src/extension.ts does (its pure rules are unit-tested there
with node's test runner); the real extension in a real VS Code is
tests/vscode/test_vscode_companion.py.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from genai_magics import messages
from genai_magics.engine.hashing import sha256_text
from genai_magics.frontends.companion import Companion, notebook_key, presences
from genai_magics.frontends.frontend import Kind, choose
from genai_magics.frontends.notebook_view import ExecutedCells

NB = "vscode-notebook-cell:/home/u/nb.ipynb"
CELLS = [f"{NB}#W0sZmlsZQ%3D%3D", f"{NB}#W1sZmlsZQ%3D%3D", f"{NB}#W2sZmlsZQ%3D%3D"]


class FakeCompanion:
    """Answers the kernel's requests from an in-memory notebook; ``closed`` makes it say the notebook is not open."""

    def __init__(self, directory: Path, pid: int | None = None):
        self.dir = directory
        self.inbox = directory / "in-fake"
        self.inbox.mkdir(parents=True)
        self.cells = {CELLS[0]: "import os", CELLS[1]: "x = 1", CELLS[2]: "%%gemini_edit\nfix"}
        self.requests: list[dict] = []
        self.closed = False
        self.answering = True
        self.presence = directory / "companion-fake.json"
        self.presence.write_text(
            json.dumps(
                {"version": 1, "pid": pid or os.getpid(), "inbox": str(self.inbox), "notebooks": [NB], "companion": "t"}
            )
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            for path in sorted(self.inbox.glob("*.json")) if self.answering else []:
                request = json.loads(path.read_text())
                path.unlink()
                self.requests.append(request)
                Path(request["reply_to"]).write_text(
                    json.dumps({"request_id": request["request_id"], **self._answer(request)})
                )
            time.sleep(0.002)

    def _answer(self, request: dict) -> dict:
        if self.closed or request["notebook"] != NB:
            return {"ok": False, "error": "the notebook is not open in VS Code"}
        if request["op"] == "snapshot":
            cells = [{"id": i, "cell_type": "code", "source": s} for i, s in self.cells.items()]
            return {"ok": True, "cells": cells, "path": "/home/u/nb.ipynb"}
        if request["op"] == "set_source":
            if sha256_text(self.cells.get(request["cell_id"], "")) != request.get("expect_sha256"):
                return {"ok": False, "error": "the cell changed in VS Code since the kernel last saw it"}
            self.cells[request["cell_id"]] = request["source"]
            return {"ok": True, "cell_id": request["cell_id"]}
        return {"ok": False, "error": "not in this stand-in"}

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


@pytest.fixture
def channel(tmp_path):
    fake = FakeCompanion(tmp_path)
    yield fake
    fake.stop()


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
    assert "not in VS Code" in companion.status()


def test_a_presence_file_of_a_vscode_that_is_gone_does_not_count(tmp_path):
    gone = FakeCompanion(tmp_path, pid=2**22 + 12345)  # no such process
    try:
        assert presences(tmp_path) == []
        companion = _companion(gone)
        assert not companion.connected
        assert "not connected" in companion.status() and "code --install-extension" in companion.status()
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


def _choose(companion) -> Kind:
    executed = ExecutedCells()
    executed.add(CELLS[1], "x = 1", 1)
    executed.add(CELLS[2], "%%gemini_edit\nfix", 2)
    live = companion if companion.connected else None
    frontend = choose(
        terminal=False,
        bridge=live,
        bridge_fresh=True,
        executed=executed,
        file_view=executed,
        staged={},
        set_next_input=lambda _text: None,
        apply_wait=5,
    )
    return frontend


def test_with_the_companion_apply_targets_the_code_cell_and_says_so_before_the_click(channel):
    frontend = _choose(_companion(channel))
    assert frontend.kind is Kind.COMPANION
    assert frontend.default_target().id == CELLS[1]
    assert frontend.writer("fix").describe_apply() == messages.COMPANION_APPLY.render()


def test_without_the_companion_the_running_cell_behaviour_stays(tmp_path):
    companion = Companion(directory=tmp_path)
    companion.follow(CELLS[2])
    assert _choose(companion).kind in (Kind.RUNNING_CELL, Kind.STAGED)
