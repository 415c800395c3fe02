"""Putting text into a cell: one interface, one implementation per mechanism.

A writer says, before the click, what Apply will do in this frontend, and
reports back when the write is done (or failed) so that the engine commits a
transition only after the cell really changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from .. import messages
from ..engine.applied import applied_text
from .notebook_view import ExecutedCells

# called with an error message, or None on success; the controller's returns whether it committed
Done = Callable[[str | None], "bool | None"]


class CellWriter(Protocol):
    target_must_exist: bool  # the frontend's notebook is known: a deleted target cell refuses the write

    def describe_apply(self) -> str:
        """One sentence shown before the click: what Apply will do here."""

    def describe_done(self, verb: str, what: str, label: str, ran: bool) -> str:
        """The line shown after a write succeeded (verb: Applied/Undone; what: the code written;
        ran: the kernel ran that code last in the cell, so there is nothing to run again)."""

    def holder(self, cell_id: str) -> str:
        """The cell that holds the code after a write to ``cell_id``."""

    def write(self, cell_id: str, source: str, done: Done) -> str | None:
        """Put ``source`` into the cell; call ``done`` once, with an error or None.

        May return a line to show until ``done`` is called (a write that waits).
        """


class _Writer:
    target_must_exist = False

    def holder(self, cell_id: str) -> str:
        return cell_id


def live_done(verb: str, what: str, label: str, ran: bool) -> str:
    """After a write into the live notebook: run the cell, unless the kernel ran that code last (an Undo
    back to it)."""
    run = messages.RAN_ALREADY if ran else messages.RUN_IT
    return messages.LIVE_DONE.render(verb=verb, what=what, label=label, run=run.render())


class KernelStateWriter(_Writer):
    """No way to reach the frontend's cell: keep the kernel's view and say so."""

    def __init__(self, set_source: Callable[[str, str], None]):
        self._set_source = set_source

    def describe_apply(self) -> str:
        return messages.KERNEL_STATE_APPLY.render()

    def describe_done(self, verb: str, what: str, label: str, ran: bool) -> str:
        return messages.KERNEL_STATE_DONE.render(verb=verb, what=what, label=label)

    def write(self, cell_id: str, source: str, done: Done) -> str | None:
        self._set_source(cell_id, source)
        done(None)
        return None


class PrefilledWriter(KernelStateWriter):
    """Terminal IPython: the proposal is already at the next prompt; Apply only records it."""

    def describe_apply(self) -> str:
        return messages.PREFILLED_APPLY.render()

    def describe_done(self, verb: str, what: str, label: str, ran: bool) -> str:
        if verb == "Applied":
            return messages.PREFILLED_APPLIED.render()
        return messages.PREFILLED_UNDONE.render(verb=verb, what=what)


def _running_cell_done(verb: str, what: str, label: str, ran: bool) -> str:
    if verb == "Applied":
        return messages.RUNNING_CELL_APPLIED.render()
    return messages.RUNNING_CELL_UNDONE.render(verb=verb, label=label)


class RunningCellWriter(_Writer):
    """VS Code and the like: only the running cell can be replaced, in its execute reply.

    ``set_next_input`` is called only while the magic cell is waiting for the
    click; the payload would otherwise land on whichever cell runs next.
    """

    def __init__(
        self,
        set_next_input: Callable[[str], None],
        set_source: Callable[[str, str], None],
        magic_cell_id: str,
        instruction: str,
        timeout_s: float,
    ):
        self._set_next_input = set_next_input
        self._set_source = set_source
        self.magic_cell_id = magic_cell_id
        self.instruction = instruction
        self.timeout_s = timeout_s
        self.running = False  # true only while the magic cell waits for the click

    def holder(self, cell_id: str) -> str:
        return self.magic_cell_id  # Apply wrote the running magic cell: it holds the code now

    describe_done = staticmethod(_running_cell_done)

    def describe_apply(self) -> str:
        return messages.RUNNING_CELL_APPLY.render(timeout_s=self.timeout_s)

    def write(self, cell_id: str, source: str, done: Done) -> str | None:
        if not self.running:
            # Undo after the cell finished: nothing can be written (the payload would land on
            # another cell); the target cell still holds the code from before, so only the
            # conversation changes.
            done(None)
            return None
        text = applied_text(self.instruction, source)
        self._set_next_input(text)
        self._set_source(self.magic_cell_id, text)
        done(None)
        return None


@dataclass(frozen=True)
class StagedApply:
    """An Apply waiting for the magic cell's next run."""

    text: str  # what replaces the magic cell
    cell_source: str  # the magic cell as it ran when the proposal was made: another text is a new request
    done: Done


class StagedWriter(_Writer):
    """No way to wait for a click: Apply is recorded and written when the cell runs again.

    Once the staged text was written, a later write (Undo) changes only the conversation:
    the original cell still holds the code from before, like a running cell that finished.
    """

    def __init__(self, staged: dict[str, StagedApply], magic_cell_id: str, instruction: str, cell_source: str):
        self._staged = staged
        self.magic_cell_id = magic_cell_id
        self.instruction = instruction
        self.cell_source = cell_source
        self.wrote = False

    def describe_apply(self) -> str:
        return messages.STAGED_APPLY.render()

    def holder(self, cell_id: str) -> str:
        return self.magic_cell_id

    describe_done = staticmethod(_running_cell_done)

    def write(self, cell_id: str, source: str, done: Done) -> str | None:
        if self.wrote:
            done(None)
            return None

        def written(error: str | None) -> bool:
            committed = bool(done(error))
            self.wrote = self.wrote or committed
            return committed

        self._staged[self.magic_cell_id] = StagedApply(
            applied_text(self.instruction, source), self.cell_source, written
        )
        return messages.STAGED.render()


def write_staged(
    staged: dict[str, StagedApply], executed: ExecutedCells, set_next_input: Callable[[str], None]
) -> bool:
    """The magic cell runs again with an Apply staged for it as it was: write the proposal into
    it now (True: the turn sends nothing). Committed first: a proposal discarded, reset or made
    stale since the click is never written."""
    running = executed.running_id or ""
    found = staged.pop(running, None)
    if found is None:
        return False
    cell = executed.by_id.get(running)
    if cell is None or cell.source != found.cell_source:
        found.done(messages.EDITED_BEFORE_RERUN.render())  # a new instruction is a new request
        return False
    if not found.done(None):
        return False  # the widget says why (discarded, reset, a newer one applied)
    set_next_input(found.text)
    executed.set_source(running, found.text)
    return True
