"""A live notebook: the cells as the frontend holds them now (unsaved edits included), and cell
edits through that frontend. Two implement it: JupyterLab's bridge (``bridge.py``, a comm) and
VS Code's companion (``companion.py``, files); everything else sees only this interface.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from .. import messages
from ..engine.cells import Cell, cell_type_of
from .cell_writer import CellWriter, Done, live_done
from .notebook_view import NotebookView

OnRemoved = Callable[[dict[str, Any]], None]  # gets a deleted cell as the frontend held it


class LiveNotebook(NotebookView, Protocol):
    """What the kernel asks of a live frontend; each edit calls ``done`` once, with an error or None."""

    @property
    def connected(self) -> bool:
        """A frontend answers for this kernel's notebook now."""

    @property
    def writer(self) -> CellWriter:
        """How Apply writes one cell through this frontend."""

    def cell(self, cell_id: str) -> Cell | None: ...

    def is_fresh_for(self, cell_id: str, running_source: str) -> bool:
        """Whether the view has ``cell_id`` holding exactly ``running_source`` (else it may be stale)."""

    def path(self) -> str | None:
        """The notebook's file, as the frontend names it."""

    def status(self) -> str:
        """One line for ``%gemini status``."""

    def set_source(self, cell_id: str, source: str, done: Done) -> None: ...

    def insert_cell(
        self, after_id: str | None, source: str, cell_type: str, done: Done, cell: dict[str, Any] | None = None
    ) -> str:
        """Insert a cell right below ``after_id`` (None: at the top); returns the id the kernel calls it by.

        ``cell``: what ``delete_cell`` gave ``on_removed``, to put a removed cell back as it was.
        """

    def delete_cell(self, cell_id: str, done: Done, on_removed: OnRemoved | None = None) -> None:
        """Delete a cell; ``on_removed`` gets it as the frontend held it, before ``done``."""

    def set_outputs(self, cell_id: str, outputs: list[dict[str, Any]], execution_count: int | None, done: Done) -> None:
        """Replace a code cell's outputs (nbformat v4 output dicts) and its execution count, as if the
        frontend had run it (the kernel ran its code for the agent)."""

    def save_view(self, model_id: str, data: dict[str, str]) -> None:
        """A widget's saved text changed (what happened to a proposal, an agent's question, a turn's Undo): set it
        in the outputs showing that widget, for a reopened notebook to show. Sent and forgotten: no reply, nothing
        to fail."""


class LiveWriter:
    """Apply writes into the cell in the live notebook."""

    target_must_exist = True

    def __init__(self, notebook: LiveNotebook):
        self.bridge = notebook

    describe_done = staticmethod(live_done)

    def holder(self, cell_id: str) -> str:
        return cell_id

    def describe_apply(self) -> str:
        return messages.LIVE_APPLY.render()

    def write(self, cell_id: str, source: str, done: Done) -> str | None:
        """Send set_source; ``done`` is called when the frontend's reply arrives (never blocks)."""
        self.bridge.set_source(cell_id, source, done)
        return None


def cell_from_wire(raw: object) -> Cell | None:
    """A cell of a snapshot (``{id, cell_type, source}``, from either frontend); None for what is not
    one: no string id, or a source that is neither text nor nbformat's list of lines (a cell whose
    text is unknown is left out rather than taken for empty). The type: ``cell_type_of``."""
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
        return None
    source = raw.get("source")
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        source = "".join(source)
    if not isinstance(source, str):
        return None
    return Cell(raw["id"], source, cell_type_of(raw.get("cell_type")))
