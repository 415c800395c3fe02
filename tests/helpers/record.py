"""Reading a record as the next kernel would: the record file with its journal's lines spliced on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from genai_magics.engine.record import NotebookRecord
from genai_magics.persistence.schema import journaled, loads

FAMILY = ("", ".journal", ".prev", ".prev.journal")  # the record's files: what a key must be kept out of


def _journal(path: Path) -> bytes:
    journal = path.with_name(path.name + ".journal")
    return journal.read_bytes() if journal.exists() else b""


def on_disk(path: Path) -> NotebookRecord:
    """The record a load of ``path`` reads (no .prev to put back: the writes were flushed)."""
    return loads(path.read_text(), True, _journal(path))


def data_on_disk(path: Path) -> dict[str, Any]:
    """Its JSON, the journal's lines spliced on."""
    return journaled(json.loads(path.read_text()), _journal(path))


def _text_if_there(path: Path) -> str:
    # .prev goes when the flush of the write after it ends, on the store's own thread, at any moment
    try:
        return path.read_text(errors="surrogateescape")
    except FileNotFoundError:
        return ""


def text_on_disk(path: Path) -> str:
    """Everything the record's files hold, as text."""
    return "\n".join(_text_if_there(path.with_name(path.name + suffix)) for suffix in FAMILY)
