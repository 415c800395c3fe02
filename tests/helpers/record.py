"""Reading a record as the next kernel would: the record file with its journal's lines spliced on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from genai_magics.engine.record import NotebookRecord
from genai_magics.persistence.schema import journaled, loads

FAMILY = ("", ".journal", ".prev", ".prev.journal")  # the record's files: what a key must be kept out of


def _bytes_if_there(path: Path) -> bytes:
    # a kernel's write renames .journal to .prev.journal, and the flush after it deletes .prev and
    # .prev.journal on the store's own thread: a file may go between a look and a read
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def _journal(path: Path) -> bytes:
    return _bytes_if_there(path.with_name(path.name + ".journal"))


def on_disk(path: Path) -> NotebookRecord:
    """The record a load of ``path`` reads (no .prev to put back: the writes were flushed)."""
    return loads(path.read_text(), True, _journal(path))


def data_on_disk(path: Path) -> dict[str, Any]:
    """Its JSON, the journal's lines spliced on."""
    return journaled(json.loads(path.read_text()), _journal(path))


def text_on_disk(path: Path) -> str:
    """Everything the record's files hold, as text."""
    files = (_bytes_if_there(path.with_name(path.name + suffix)) for suffix in FAMILY)
    return "\n".join(f.decode("utf-8", errors="surrogateescape") for f in files)
