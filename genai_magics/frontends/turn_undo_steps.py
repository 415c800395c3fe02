"""One Undo for a whole agent turn, through the live notebook.

The turn's changes (``engine/agent.py``'s ``TurnChanges``) are reversed newest first: an inserted
cell deleted, an edited one set back, a deleted one put back with its outputs (the frontend's
``insert_cell`` given the cell's JSON) below the nearest cell above it that is still there, else at
its old index. A cell changed by hand since the turn left it (another text, or gone) is kept as it
is and named, with every change of the turn to it. A later agent turn whose change to one of the
same cells still stands is undone first: till then this Undo says so and stays ready (so undoing
two turns in either order gives back the notebook as before both). Each edit waits for the
frontend's reply before the next is sent, so the order holds. What ran stays run: Undo says so.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

from .. import messages
from ..engine.agent import Change, Deleted, Edited, Inserted, TurnChanges, put_back_after
from ..engine.cells import cell_type_of
from ..engine.text import counted
from .cell_writer import Done
from .live_notebook import LiveNotebook
from .notebook_view import source_text

Step = Callable[[Done], None]  # one edit sent to the frontend; ``done`` gets its error or None
Listener = Callable[["TurnUndo"], None]


def _touched(change: Change) -> tuple[str | None, str | None, str | None]:
    """The cell a change touched, its text before the change and after it (None: no cell then); a deleted cell
    whose JSON has no id names none."""
    if isinstance(change, Inserted):
        return change.cell_id, None, change.source
    if isinstance(change, Edited):
        return change.cell_id, change.before, change.after
    cell_id = change.cell.get("id")
    return (
        (cell_id, source_text(change.cell.get("source", "")), None) if isinstance(cell_id, str) else (None, None, None)
    )


def _before_and_left(changes: TurnChanges) -> tuple[dict[str, str | None], dict[str, str | None]]:
    """cell id -> its text before the turn, and -> the text the turn left in it (None: no such cell then), for
    every cell the turn touched."""
    before: dict[str, str | None] = {}
    left: dict[str, str | None] = {}
    for change in changes.items:
        cell_id, was, now = _touched(change)
        if cell_id is not None:
            before.setdefault(cell_id, was)
            left[cell_id] = now
    return before, left


@dataclass(eq=False)  # one turn's Undo is itself only (``turns`` holds it)
class TurnUndo:
    """The Undo of one agent turn: done at most once; ``message`` says what it did once it is done."""

    notebook: LiveNotebook
    changes: TurnChanges
    ran: list[str]  # the labels of the cells the turn ran (which no Undo un-runs)
    label: Callable[[str], str]  # a cell id as the user knows it: In[3], or the cell's id
    message: str = ""
    state: str = "ready"  # ready -> undoing -> undone
    listeners: list[Listener] = field(default_factory=list)
    turns: list[TurnUndo] = field(default_factory=list)  # every agent turn's Undo in this kernel, in order
    # once undone (by this Undo or the notebook's own): the turn's record says so; a line when it cannot be written
    on_undone: Callable[[], str | None] | None = None

    @property
    def empty(self) -> bool:
        return not self.changes.items

    def undo(self) -> None:
        """Start the Undo (a second click while it runs, or after it, only says so)."""
        if self.state != "ready":
            self._say(messages.TURN_UNDO_ONCE.render())
            return
        if self.empty:
            self._say(messages.TURN_UNDO_NOTHING.render())
            return
        if not self.notebook.connected:
            self._say(messages.UNDO_NEEDS_LIVE.render())
            return
        later = self._later_first()
        if later:  # stays ready: it works once the later turn is undone
            self._say(messages.TURN_UNDO_LATER_FIRST.render(cells=", ".join(later)))
            return
        self.state = "undoing"
        steps, kept, already = self._plan()
        failures: list[str] = []
        counts = {"deleted": 0, "set back": 0, "put back": 0}

        def next_step(i: int) -> None:
            if i == len(steps):
                self._undone(self._summary(counts, kept, already, failures))
                return
            kind, what, step = steps[i]

            def done(error: str | None) -> None:
                if error:
                    failures.append(messages.TURN_UNDO_FAILED.render(what=what, error=error))
                else:
                    counts[kind] += 1
                next_step(i + 1)

            step(done)

        next_step(0)

    def notice_taken_back(self) -> None:
        """After the notebook's own undo (z, Ctrl+Z) put every cell the turn changed back as the turn found it:
        the turn is undone, and its line says so without a click."""
        if self.state != "ready" or self.empty or not self.notebook.connected:
            return
        now = {cell.id: cell.source for cell in self.notebook.cells()}
        before, left = _before_and_left(self.changes)
        if before != left and all(now.get(cell_id) == was for cell_id, was in before.items()):
            self._undone(messages.TURN_UNDONE_BY_NOTEBOOK.render())

    def _undone(self, message: str) -> None:
        self.state = "undone"
        note = self.on_undone() if self.on_undone is not None else None
        self._say("\n".join(line for line in (message, note) if line))

    def _later_first(self) -> list[str]:
        """The cells a later agent turn changed after this one, whose change still stands (that turn's Undo
        goes first: its change is no hand edit for this one to keep)."""
        now = {cell.id: cell.source for cell in self.notebook.cells()}
        mine = set(_before_and_left(self.changes)[0])
        later = self.turns[self.turns.index(self) + 1 :] if self in self.turns else []
        cells: list[str] = []
        for turn in later:
            if turn.state == "undone":
                continue
            for cell_id, text in _before_and_left(turn.changes)[1].items():
                if cell_id in mine and now.get(cell_id) == text and self.label(cell_id) not in cells:
                    cells.append(self.label(cell_id))
        return cells

    def _plan(self) -> tuple[list[tuple[str, str, Step]], list[str], int]:
        """The edits to send, newest change first, the cells kept (changed by hand since), and how many cells
        the turn changed are as it found them again."""
        now = {cell.id: cell.source for cell in self.notebook.cells()}
        # A cell the turn changed that is as the turn found it again was taken back already (the notebook's
        # own undo, z in JupyterLab): it gets no edit. Cells the turn left as it found them (inserted and
        # deleted again) keep theirs, as other steps may be placed after them, unless every cell is back.
        before, left = _before_and_left(self.changes)
        settled = {cell_id for cell_id, was in before.items() if now.get(cell_id) == was}
        taken_back = {cell_id for cell_id in settled if left[cell_id] != before[cell_id]}
        back = settled if settled == set(before) else taken_back
        kept = [
            cell_id
            for cell_id, text in left.items()
            if text is not None and now.get(cell_id) != text and cell_id not in back
        ]
        steps: list[tuple[str, str, Step]] = []
        nb = self.notebook
        for change in reversed(self.changes.items):
            if _touched(change)[0] in back:
                continue
            if isinstance(change, Inserted) and change.cell_id not in kept:
                steps.append(
                    (
                        "deleted",
                        f"the inserted {self.label(change.cell_id)}",
                        functools.partial(nb.delete_cell, change.cell_id),
                    )
                )
            elif isinstance(change, Edited) and change.cell_id not in kept:
                steps.append(
                    (
                        "set back",
                        self.label(change.cell_id),
                        functools.partial(nb.set_source, change.cell_id, change.before),
                    )
                )
            elif isinstance(change, Deleted) and change.cell.get("id") not in now:
                steps.append(
                    ("put back", f"the deleted {self.label(str(change.cell.get('id')))}", self._put_back(change))
                )
        return steps, [self.label(cell_id) for cell_id in kept], len(taken_back)

    def _put_back(self, change: Deleted) -> Step:
        cell = change.cell
        text = source_text(cell.get("source", ""))

        def step(done: Done) -> None:  # where, once the steps before it are made
            after = put_back_after(change, [c.id for c in self.notebook.cells()])
            self.notebook.insert_cell(after, text, cell_type_of(cell.get("cell_type")), done, cell=cell)

        return step

    def _summary(self, counts: dict[str, int], kept: list[str], already: int, failures: list[str]) -> str:
        done = ", ".join(f"{counted(n, 'cell')} {kind}" for kind, n in counts.items() if n) or "nothing written"
        lines = [messages.TURN_UNDONE.render(done=done)]
        if already:
            lines.append(messages.TURN_UNDO_ALREADY.render(count=already))
        if kept:
            lines.append(messages.TURN_UNDO_KEPT.render(cells=", ".join(kept)))
        lines += failures
        if self.ran:
            lines.append(messages.TURN_UNDO_RAN.render(cells=", ".join(self.ran)))
        return "\n".join(lines)

    def _say(self, message: str) -> None:
        self.message = message
        for listener in list(self.listeners):
            listener(self)
