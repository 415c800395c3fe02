"""Apply and Undo of a notebook proposal (the ``--notebook`` percent format): several cell edits
through the live notebook (the bridge or the companion). The text rules (blocks, the edits a
proposal means) are ``engine/notebook_text.py``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import messages
from ..engine.cells import Cell
from ..engine.notebook_text import describe_ops, notebook_text, parse_blocks, plan_ops, proposal_ops
from .cell_writer import Done, live_done
from .live_notebook import LiveNotebook


@dataclass(frozen=True)
class _Removed:
    cell: dict[str, Any]  # the cell as the frontend held it: nbformat JSON with id, metadata, outputs
    above: str | None  # the cell directly above it before the edits that removed it (None: it was first)


@dataclass
class NotebookWriter:
    """Apply/Undo for a notebook proposal: several cell edits through the live notebook.

    A cell that Apply removed comes back on Undo as it was (id, type, text,
    metadata, outputs), right below the cell that was above it.
    """

    live: LiveNotebook
    base_text: str
    proposal_text: str
    live_cells: Callable[[], Sequence[Cell]]  # the cells a proposal may touch, in notebook order
    inserted: set[str] = field(default_factory=set)
    removed: dict[str, _Removed] = field(default_factory=dict)
    # text written (the proposal, or the base on Undo) -> the managed cells' text right after the write
    written: dict[str, str] = field(default_factory=dict)
    target_must_exist = False  # the document is the notebook, not one cell
    describe_done = staticmethod(live_done)

    def __post_init__(self) -> None:
        self.base_ids = {b.id for b in parse_blocks(self.base_text) if b.id}
        self.preview = describe_ops(proposal_ops(self.base_text, self.proposal_text))

    def holder(self, cell_id: str) -> str:
        return cell_id

    def _managed_text(self) -> str:
        managed = self.base_ids | self.inserted
        return notebook_text(c for c in self.live_cells() if c.id in managed)

    def current_source(self, _cell_id: str) -> str:
        """The document now, for the 'changed since' check: the text last written while the cells are
        as that write left them (new cells have the frontend's ids, not the proposal's), else as they are."""
        now = self._managed_text()
        return next((text for text, after in self.written.items() if after == now), now)

    def describe_apply(self) -> str:
        return messages.NOTEBOOK_EDITS_APPLY.render(preview=self.preview)

    def write(self, cell_id: str, source: str, done: Done) -> str | None:
        managed = self.base_ids | self.inserted
        ops = plan_ops(parse_blocks(source), list(self.live_cells()), managed)
        order = [c.id for c in self.live.cells()]
        above = {cid: (order[i - 1] if i else None) for i, cid in enumerate(order)}
        first = next((cid for cid in order if cid in managed), None)
        top = above.get(first) if first else None  # a new first cell goes right above the document's first cell
        present = set(order)
        new_ids: dict[int, str] = {}

        def step(i: int, error: str | None) -> None:
            if error:
                done(f"{error} (after {i - 1} of {len(ops)} cell edits)")
                return
            if i == len(ops):
                self.written[source] = self._managed_text()
                done(None)
                return
            op = ops[i]
            after = new_ids.get(op.after) if isinstance(op.after, int) else op.after
            after = top if op.after is None else after
            then = lambda e: step(i + 1, e)  # noqa: E731
            if op.kind == "set":
                assert op.cell_id is not None  # plan_ops names the cell of every set
                self.live.set_source(op.cell_id, op.source, then)
            elif op.kind == "delete":
                deleted = op.cell_id
                assert deleted is not None  # plan_ops names the cell of every delete
                self.inserted.discard(deleted)
                present.discard(deleted)
                self.live.delete_cell(deleted, then, on_removed=lambda cell: self._keep(deleted, cell, above))
            elif op.cell_id in self.removed and op.cell_id not in present:
                gone = self.removed.pop(op.cell_id)
                cell = dict(gone.cell)
                if str(cell.get("source", "")).rstrip("\n") != op.source.rstrip("\n"):
                    cell["source"] = op.source
                where = gone.above if gone.above is None or gone.above in present else after
                self.live.insert_cell(
                    where, cell.get("source", op.source), cell.get("cell_type", op.cell_type), then, cell=cell
                )
                new_ids[i] = op.cell_id
                present.add(op.cell_id)
            else:
                new_id = self.live.insert_cell(after, op.source, op.cell_type, then)
                new_ids[i] = new_id
                present.add(new_id)
                self.inserted.add(new_id)

        step(0, None)
        return None

    def _keep(self, cell_id: str, cell: dict[str, Any], above: dict[str, str | None]) -> None:
        self.removed[cell_id] = _Removed(cell, above.get(cell_id))


class NotebookCopyWriter:
    """Where only the running cell can be written (VS Code without the bridge): nothing is written.

    The whole notebook as percent text must never land in the magic cell; the
    diff shows each cell's change and Copy gives the text to paste by hand.
    """

    target_must_exist = False

    def describe_apply(self) -> str:
        return messages.NOTEBOOK_RECORD_ONLY_APPLY.render()

    def describe_done(self, verb: str, what: str, label: str, ran: bool) -> str:
        return messages.KERNEL_STATE_DONE.render(verb=verb, what=what, label=label)

    def holder(self, cell_id: str) -> str:
        return cell_id

    def write(self, cell_id: str, source: str, done: Done) -> str | None:
        done(None)
        return None
