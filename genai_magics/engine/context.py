"""Read-only context that travels beside the document, each piece with its own hash.

A piece is sent when the model does not hold its current hash yet, and in the
app-managed transcript only its newest version stays in full (older versions
become a ``superseded…Sha256`` marker). The secondary context (the other cells)
is one piece; later kinds (last error, variables) are more pieces of the same
shape, so one rule covers all of them.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .cells import Cell
from .hashing import sha256_text, short
from .redaction import redact, redaction_keys

SECONDARY_FIELD = "secondaryContext"


@dataclass(frozen=True)
class ContextPiece:
    field: str  # payload field, e.g. "secondaryContext"
    text: str
    name: str | None = None  # entry inside a dict-valued field (e.g. a variable)
    sha256: str = dataclasses.field(init=False)  # `field` is the attribute above

    def __post_init__(self) -> None:
        object.__setattr__(self, "sha256", sha256_text(self.text))

    @property
    def key(self) -> str:
        return self.field if self.name is None else f"{self.field}:{self.name}"


@dataclass(frozen=True)
class LabelledPiece(ContextPiece):
    """A piece about cells, with the label that names them for the model (``In[4]``): shown beside the
    text, never part of it, so the hash (a replay's identity, the sent-once rule) holds no execution count."""

    label: str = ""


@functools.lru_cache(maxsize=4096)
def _block(cell: Cell) -> str:
    """One cell's text for the context; cached, since most cells do not change between turns."""
    kind = "" if cell.cell_type == "code" else f" [{cell.cell_type}]"
    count = f" {cell.label}" if cell.execution_count is not None else ""
    return f"# %%{kind}{count} id={cell.id} sha256={short(cell.sha256)}\n{cell.source}"


def context_cells(cells: Sequence[Cell], exclude_ids: Iterable[str]) -> list[Cell]:
    """The other cells: not the document and usable (above)."""
    excluded = set(exclude_ids)
    return [c for c in cells if c.id not in excluded and c.usable]


def _nearest_first(cells: Sequence[Cell], anchor: str | None) -> list[int]:
    """Positions of ``cells`` ordered by distance to the anchor cell (below before above on a tie);
    without a known anchor, the lowest cells first (the newest code sits at the bottom)."""
    ids = [c.id for c in cells]
    if anchor in ids:
        at = ids.index(anchor)
        return sorted(range(len(cells)), key=lambda i: (abs(i - at), i < at))
    return list(reversed(range(len(cells))))


def secondary_context(
    cells: Sequence[Cell], exclude_ids: Iterable[str], max_chars: int, anchor: str | None = None
) -> ContextPiece | None:
    """One piece holding the other cells, capped at ``max_chars``: the cells nearest the
    ``anchor`` (the document, or the magic cell) are kept, in notebook order. Distances count
    the cells that could go (magic cells do not), so a new magic cell leaves the piece as it was.

    Whole, not a one-line index read with ``read_cell``, by measurement (issue 43.3; docs/token-economy.md,
    "The head, weighed"): the index is cheaper only where nothing is cached (tools_economy's 31 cells,
    interactions never hitting: tools ÷ up front 1.98x -> 0.96x), dearer wherever a cache serves the head
    (contents 1.63x -> 2.80x never hitting, 1.52x -> 2.95x always; interactions always 1.53x -> 3.57x), and a
    first turn cannot tell which holds."""
    excluded = set(exclude_ids)
    # the anchor stays only to measure distances from
    ordered = tuple([c for c in cells if c.id == anchor or (c.id not in excluded and c.usable)])
    # the memo's key holds only the exclusions among these cells, at most the anchor (each turn's new magic cell
    # is not one of them), and the keys masked now: a key seen since makes another piece
    excluded_here = frozenset(excluded.intersection((anchor,)))
    key = (ordered, excluded_here, max_chars, anchor, redaction_keys())
    for known, piece in _SECONDARY:
        if known == key:
            return piece
    piece = _secondary(ordered, excluded_here, max_chars, anchor)
    _SECONDARY[:] = [*_SECONDARY[-7:], (key, piece)]
    return piece


# The last pieces made, with what each was made of: most turns ask for the one of the turn before (~0.5 ms
# on 200 cells). Compared, not hashed: two tuples of the same cells are equal at a glance, where a dict's
# key would hash every cell each turn.
_SECONDARY: list[tuple[tuple[object, ...], ContextPiece | None]] = []


def _secondary(
    ordered: tuple[Cell, ...], excluded: frozenset[str], max_chars: int, anchor: str | None
) -> ContextPiece | None:
    """The piece for these cells."""
    chosen = {i for i, c in enumerate(ordered) if c.id not in excluded and (c.id != anchor or c.usable)}
    if not chosen:
        return None
    kept: set[int] = set()
    size = -2
    for i in _nearest_first(ordered, anchor):
        if i not in chosen:
            continue
        block = _block(ordered[i])
        if kept and size + 2 + len(block) > max_chars:
            break
        size += 2 + len(block)
        kept.add(i)
    text = redact("\n\n".join(_block(ordered[i]) for i in sorted(kept)))  # masked before the cut below
    if len(text) > max_chars:  # one cell alone is over the cap
        text = text[:max_chars] + "\n# … (cut at the context cap)"
    dropped = len(chosen) - len(kept)
    if dropped:
        text = f"# ({dropped} farther cells left out: context cap {max_chars} chars)\n\n" + text
    return ContextPiece(SECONDARY_FIELD, text)
