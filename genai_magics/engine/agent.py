"""The agent's turn as data: the changes it made to the notebook, in order (what its one Undo reverses).

Pure: no IPython, no frontend. ``Inserted`` and ``Edited`` carry the text the turn left in the cell, so
Undo can tell a cell changed by hand since (kept, and named) from one the turn left as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Inserted:
    """The turn inserted a cell; ``source``: what it wrote there (None: unknown, never taken as changed)."""

    cell_id: str
    source: str | None = None


@dataclass(frozen=True)
class Edited:
    """The turn changed a cell's text from ``before`` to ``after``."""

    cell_id: str
    before: str
    after: str


@dataclass(frozen=True)
class Deleted:
    """The turn deleted a cell: ``cell`` its nbformat JSON as the frontend held it (outputs included), put
    back right below ``after_id`` (None: at the top)."""

    cell: dict[str, Any]
    after_id: str | None


Change = Inserted | Edited | Deleted


@dataclass
class TurnChanges:
    """Every change of one agent turn, oldest first, and the cells it ran (which no Undo un-runs)."""

    changes: list[Change] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)  # the labels of the cells run, in order

    def add(self, change: Change) -> None:
        self.changes.append(change)

    def left(self) -> dict[str, str | None]:
        """cell id -> the text the turn left in it (None: deleted, or unknown) for every cell it touched."""
        out: dict[str, str | None] = {}
        for change in self.changes:
            if isinstance(change, Inserted):
                out[change.cell_id] = change.source
            elif isinstance(change, Edited):
                out[change.cell_id] = change.after
            else:
                cell_id = change.cell.get("id")
                if isinstance(cell_id, str):
                    out[cell_id] = None
        return out
