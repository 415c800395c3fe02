"""A stand-in for the VS Code companion (vscode-extension/) on the real file channel, in a thread.

It writes the presence file and answers the kernel's requests the way src/extension.ts does, from
an in-memory notebook; every file it reads or writes is checked against
genai_magics/frontends/companion_protocol.schema.json, and what is not a message of it lands in
``bad`` (the ``channel`` fixtures fail on it), so every test through it checks the kernel's side.
The real extension in a real VS Code is tests/vscode/test_vscode_companion.py.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from genai_magics.engine.hashing import sha256_text
from genai_magics.frontends.frontend import Frontend, choose
from genai_magics.frontends.live_notebook import LiveNotebook
from genai_magics.frontends.notebook_view import ExecutedCells
from helpers import protocol

NB = "vscode-notebook-cell:/home/u/nb.ipynb"
CELLS = [f"{NB}#W0sZmlsZQ%3D%3D", f"{NB}#W1sZmlsZQ%3D%3D", f"{NB}#W2sZmlsZQ%3D%3D"]


def _checked(definition: str, data: Any, bad: list[str]) -> None:
    try:
        protocol.check(definition, data, protocol.COMPANION_SCHEMA_PATH)
    except AssertionError as exc:
        bad.append(str(exc))


class FakeCompanion:
    """Answers from ``cells`` (URI -> text, in notebook order; ``types`` for cells that are not code);
    ``closed`` makes it say the notebook is not open, ``answering = False`` leaves requests in the inbox."""

    def __init__(self, directory: Path, pid: int | None = None, cells: dict[str, str] | None = None):
        self.dir = directory
        self.inbox = directory / "in-fake"
        self.inbox.mkdir(parents=True)
        default = {CELLS[0]: "import os", CELLS[1]: "x = 1", CELLS[2]: "%%gemini_edit\nfix"}
        self.cells: dict[str, str] = dict(cells or default)
        self.types: dict[str, str] = {}
        self.outputs: dict[str, tuple[list[dict], int | None]] = {}  # URI -> set_outputs' outputs, execution count
        self.requests: list[dict] = []
        self.bad: list[str] = []  # every message outside the schema, from either side
        self.closed = False
        self.answering = True
        self._made = 0
        self.presence = directory / "companion-fake.json"
        presence = {
            "version": 1,
            "pid": pid or os.getpid(),
            "inbox": str(self.inbox),
            "notebooks": [NB],
            "companion": "t",
        }
        _checked("Presence", presence, self.bad)
        self.presence.write_text(json.dumps(presence))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            for path in sorted(self.inbox.glob("*.json")) if self.answering else []:
                request = json.loads(path.read_text())
                path.unlink()
                self.requests.append(request)
                _checked("Request", request, self.bad)
                reply = {"request_id": request["request_id"], **self._answer(request)}
                _checked("Reply", reply, self.bad)
                Path(request["reply_to"]).write_text(json.dumps(reply))
            time.sleep(0.002)

    def _answer(self, request: dict) -> dict:
        if self.closed or request["notebook"] != NB:
            return {"ok": False, "error": "the notebook is not open in VS Code"}
        op = request["op"]
        if op == "snapshot":
            cells = [{"id": i, "cell_type": self.types.get(i, "code"), "source": s} for i, s in self.cells.items()]
            return {"ok": True, "cells": cells, "path": "/home/u/nb.ipynb"}
        if op == "set_source":
            current = self.cells.get(request["cell_id"])
            if current is None:
                return {"ok": False, "error": "the cell is no longer in the notebook"}
            if "expect_sha256" in request and sha256_text(current) != request["expect_sha256"]:
                return {"ok": False, "error": "the cell changed in VS Code since the kernel last saw it"}
            self.cells[request["cell_id"]] = request["source"]
            return {"ok": True, "cell_id": request["cell_id"]}
        if op == "insert_cell":
            order = list(self.cells)
            after = request["after_id"]
            if after is not None and after not in order:
                return {"ok": False, "error": "the cell to insert below is no longer in the notebook"}
            new_id = self._new_uri()  # VS Code names every new cell, a cell put back too
            order.insert(0 if after is None else order.index(after) + 1, new_id)
            self.cells = {i: request["source"] if i == new_id else self.cells[i] for i in order}
            if request["cell_type"] == "markdown":  # as the extension: markdown, else code
                self.types[new_id] = "markdown"
            return {"ok": True, "cell_id": new_id}
        if op == "delete_cell":
            source = self.cells.pop(request["cell_id"], None)
            if source is None:
                return {"ok": False, "error": "the cell is no longer in the notebook"}
            kind = self.types.pop(request["cell_id"], "code")
            stored = {"cell_type": kind, "source": source, "language": "python", "metadata": {}, "outputs": []}
            return {"ok": True, "cell_id": request["cell_id"], "cell": stored}
        if op == "set_outputs":
            old = request["cell_id"]
            if old not in self.cells:
                return {"ok": False, "error": "the cell is no longer in the notebook"}
            if self.types.get(old, "code") != "code":
                return {"ok": False, "error": "only a code cell has outputs"}
            new_id = self._new_uri()  # the extension replaces the cell by a copy with the outputs: a new URI
            self.cells = {new_id if i == old else i: s for i, s in self.cells.items()}
            self.outputs.pop(old, None)
            self.outputs[new_id] = (request["outputs"], request["execution_count"])
            return {"ok": True, "cell_id": new_id}
        return {"ok": False, "error": f"unknown op {op}"}

    def _new_uri(self) -> str:
        self._made += 1
        return f"{NB}#new{self._made}"

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def choose_live(live: LiveNotebook | None, executed: ExecutedCells) -> Frontend:
    """The frontend a magic run in a notebook (not a terminal) gets with ``live`` connected (None: none)."""
    return choose(
        terminal=False,
        bridge=live,
        bridge_fresh=True,
        executed=executed,
        file_view=executed,
        staged={},
        set_next_input=lambda _text: None,
        apply_wait=5,
    )
