"""The two live notebooks (JupyterLab's bridge, VS Code's companion) read a snapshot's cells with one
rule: an unknown cell type is raw (nbformat's "unrecognized cell from a future minor-revision",
which JupyterLab's model opens as a raw cell), never code; the notebook file's reader says the same."""

from __future__ import annotations

import json

import pytest
from helpers.companion import CELLS, NB, FakeCompanion, choose_live

from genai_magics.frontends.bridge import Bridge
from genai_magics.frontends.companion import Companion
from genai_magics.frontends.notebook_view import ExecutedCells, read_notebook_cells

WIRE = [
    {"id": "c", "cell_type": "code", "source": "x = 1"},
    {"id": "m", "cell_type": "markdown", "source": "# t"},
    {"id": "r", "cell_type": "raw", "source": ".. raw"},
    {"id": "h", "cell_type": "heading", "source": "y = 2"},  # a type of another nbformat minor version
    {"id": "n", "source": "z = 3"},  # no type
    {"id": "l", "cell_type": "code", "source": ["a = 1\n", "b = 2"]},  # nbformat's list of lines
    {"id": "s", "cell_type": "code", "source": 7},  # text unknown: left out, never taken for empty
    {"id": "e", "cell_type": "code"},
    {"cell_type": "code", "source": "no id"},
    "not a cell",
]
READ = [
    ("c", "x = 1", "code"),
    ("m", "# t", "markdown"),
    ("r", ".. raw", "raw"),
    ("h", "y = 2", "raw"),
    ("n", "z = 3", "raw"),
    ("l", "a = 1\nb = 2", "code"),
]


def bridge_with(cells: list) -> Bridge:
    """A real Bridge holding a full snapshot of ``cells`` (no comm: nothing is sent back)."""
    bridge = Bridge()
    snapshot = {"type": "snapshot", "full": True, "seq": 1, "path": "n.ipynb", "cells": cells}
    bridge._on_msg({"content": {"data": snapshot}})
    return bridge


class WireCompanion(FakeCompanion):
    """A stand-in whose snapshot holds exactly ``wire`` (outside the schema where a case needs it)."""

    def __init__(self, directory, wire: list):
        super().__init__(directory)
        self.wire = wire

    def _answer(self, request: dict) -> dict:
        if request["op"] == "snapshot":
            return {"ok": True, "cells": self.wire, "path": "/home/u/nb.ipynb"}
        return super()._answer(request)


@pytest.fixture
def companion_with(tmp_path):
    fakes: list[FakeCompanion] = []

    def make(wire: list) -> Companion:
        fakes.append(WireCompanion(tmp_path / str(len(fakes)), wire))
        companion = Companion(directory=fakes[-1].dir, timeout=2.0)
        companion.follow(CELLS[0])
        return companion

    yield make
    for fake in fakes:
        fake.stop()


def _read(notebook) -> list[tuple[str, str, str]]:
    return [(c.id, c.source, c.cell_type) for c in notebook.cells()]


def test_both_live_notebooks_read_a_snapshots_cells_alike(companion_with):
    assert _read(bridge_with(WIRE)) == READ
    assert _read(companion_with(WIRE)) == READ


def test_the_notebook_file_reads_an_unknown_cell_type_as_raw_too(tmp_path):
    path = tmp_path / "n.ipynb"
    cells = [{**c, "metadata": {}} for c in WIRE[:5]]
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}))
    assert [(c.id, c.source, c.cell_type) for c in read_notebook_cells(path)] == READ[:5]


@pytest.mark.parametrize("frontend", ["bridge", "companion"])
def test_a_cell_of_an_unknown_type_above_the_magic_is_never_the_document(frontend, companion_with):
    magic = f"{NB}#magic"
    wire = [
        {"id": "c", "cell_type": "code", "source": "x = 1"},
        {"id": "h", "cell_type": "heading", "source": "y = 2"},
        {"id": magic, "cell_type": "code", "source": "%%gemini_edit\nfix"},
    ]
    live = bridge_with(wire) if frontend == "bridge" else companion_with(wire)
    executed = ExecutedCells()
    executed.add(magic, "%%gemini_edit\nfix", 1)
    chosen = choose_live(live, executed)
    target = chosen.default_target()
    assert target is not None and target.id == "c"
