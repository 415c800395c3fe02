"""Read-only context that travels beside the document, each piece with its own hash.

A piece is sent when the model does not hold its current hash yet, and in the
app-managed transcript only its newest version stays in full (older versions
become a ``superseded…Sha256`` marker). The secondary context (the other cells)
is one piece; later kinds (last error, variables) are more pieces of the same
shape, so one rule covers all of them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

from .cells import Cell, is_genai_magic
from .hashing import sha256_text, short

SECONDARY_FIELD = "secondaryContext"


@dataclass(frozen=True)
class ContextPiece:
    field: str  # payload field, e.g. "secondaryContext"
    text: str
    name: str | None = None  # entry inside a dict-valued field (e.g. a variable)
    sha256: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sha256", sha256_text(self.text))

    @property
    def key(self) -> str:
        return self.field if self.name is None else f"{self.field}:{self.name}"


def serialize_cells(cells: Iterable[Cell]) -> str:
    """Percent-style text of cells, each headed by its id and its own hash."""
    chunks = []
    for cell in cells:
        kind = "" if cell.cell_type == "code" else f" [{cell.cell_type}]"
        count = f" {cell.label}" if cell.execution_count is not None else ""
        chunks.append(f"# %%{kind}{count} id={cell.id} sha256={short(cell.sha256)}\n{cell.source}")
    return "\n\n".join(chunks)


def context_cells(cells: Sequence[Cell], exclude_ids: Iterable[str]) -> list[Cell]:
    """The other cells: not the document, not genai magic cells, not empty."""
    excluded = set(exclude_ids)
    return [
        c
        for c in cells
        if c.id not in excluded and c.source.strip() and not is_genai_magic(c.source)
    ]


def secondary_context(cells: Sequence[Cell], exclude_ids: Iterable[str], max_chars: int) -> ContextPiece | None:
    """One piece holding the other cells, capped at ``max_chars`` (nearest cells kept)."""
    chosen = context_cells(cells, exclude_ids)
    if not chosen:
        return None
    text = serialize_cells(chosen)
    dropped = 0
    while len(text) > max_chars and len(chosen) > 1:
        chosen = chosen[1:]  # drop the oldest (topmost) first: nearer cells matter more
        dropped += 1
        text = serialize_cells(chosen)
    if len(text) > max_chars:
        text = text[:max_chars]
    if dropped:
        text = f"# ({dropped} earlier cells left out: context cap {max_chars} chars)\n\n" + text
    return ContextPiece(SECONDARY_FIELD, text)
