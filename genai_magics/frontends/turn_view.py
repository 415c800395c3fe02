"""The notebook as an agent turn left it so far: the frontend's view with the turn's changes made.

Its own module: the document's lookup (turn/document.py) tells a cell the turn deleted by it on every turn,
without importing the agent's actions (frontends/agent_actions.py) before an agent turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..engine.agent import Deleted, TurnChanges
from ..engine.cells import Cell, code_cell_above
from .notebook_view import NotebookView


@dataclass
class TurnView:
    """The notebook as the agent turn left it so far: the frontend's view with the turn's changes made."""

    base: NotebookView
    changes: TurnChanges = field(default_factory=TurnChanges)

    @property
    def description(self) -> str:
        return self.base.description

    def cells(self) -> Sequence[Cell]:
        return self.changes.applied(self.base.cells())

    def cell_above(self, cell_id: str) -> Cell | None:
        return code_cell_above(self.cells(), cell_id)

    def deleted(self, cell_id: str) -> bool:
        """The turn deleted this cell: a ref that still finds it (the kernel ran it) finds nothing."""
        gone = any(isinstance(c, Deleted) and c.cell.get("id") == cell_id for c in self.changes.items)
        return gone and all(c.id != cell_id for c in self.cells())
