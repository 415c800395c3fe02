"""One object per magic run that knows what this frontend can do.

Chosen once, when the magic starts, from what the kernel knows: a live bridge
(JupyterLab's, or VS Code's companion), a VS Code cell that can wait for the
click, a VS Code cell that cannot
(staged Apply), any other frontend (copy only), or a terminal. It owns the
notebook view, the default target, the writer (and with it the wording of
what Apply will do) and the waiting. Nothing else asks which frontend it is.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .. import messages
from ..engine.applied import strip_applied_marker
from ..engine.cells import Cell, is_genai_magic
from . import waiting
from .bridge import Bridge
from .cell_writer import (
    CellWriter,
    KernelStateWriter,
    PrefilledWriter,
    RunningCellWriter,
    StagedApply,
    StagedWriter,
)
from .companion import Companion
from .live_notebook import LiveNotebook
from .notebook_edit import NotebookCopyWriter, NotebookWriter
from .notebook_view import ExecutedCells, MergedView, NotebookView

VSCODE_CELL = "vscode-notebook-cell:"


class Kind(enum.Enum):
    LIVE = "live"
    COMPANION = "companion"
    RUNNING_CELL = "running_cell"
    STAGED = "staged"
    COPY = "copy"
    TERMINAL = "terminal"

    def describe(self) -> str:
        """What Apply does in this kind of frontend, as %gemini status says it."""
        return _KIND_TEXT[self].render()


_KIND_TEXT = {
    Kind.LIVE: messages.FRONTEND_LIVE,
    Kind.COMPANION: messages.FRONTEND_COMPANION,
    Kind.RUNNING_CELL: messages.FRONTEND_RUNNING_CELL,
    Kind.STAGED: messages.FRONTEND_STAGED,
    Kind.COPY: messages.FRONTEND_COPY,
    Kind.TERMINAL: messages.FRONTEND_TERMINAL,
}


@dataclass
class Frontend:
    kind: Kind
    view: NotebookView
    executed: ExecutedCells
    magic_cell_id: str | None
    make_writer: Callable[[str], CellWriter]  # instruction -> writer
    cell_above: Callable[[str], Cell | None] | None = None  # the layout, where it is known
    # (base, proposal) of a --notebook turn -> its writer: cell edits through a bridge, else copy-only
    make_notebook_writer: Callable[[str, str], CellWriter] = lambda _base, _proposal: NotebookCopyWriter()
    waits: waiting.Mechanism | None = None  # a running cell that waits for the click, and how
    live_view: bool = False  # the view is the live notebook's (a cell it lacks is gone)
    stale: bool = False  # a live view is there but has not caught up with the running cell
    live: LiveNotebook | None = None  # the live notebook (bridge or companion) this run writes through

    def default_target(self) -> Cell | None:
        """The code cell directly above the magic where the layout is known, else the newest run one."""
        running = self.magic_cell_id
        if self.cell_above is not None and running:
            above = self.cell_above(running)
            if above is not None:
                return above
        return self.executed.latest_document(exclude=running)

    def current_source(self, cell_id: str) -> str | None:
        """A cell's code now (without the instruction line Apply adds in running-cell frontends)."""
        for cell in self.view.cells():
            if cell.id == cell_id:
                return strip_applied_marker(cell.source)
        if self.live_view:
            return None  # the live notebook no longer has it
        ran = self.executed.by_id.get(cell_id)
        return strip_applied_marker(ran.source) if ran else None

    def magic_source(self) -> str:
        """The magic cell's text as it ran (a staged Apply is for that text only)."""
        cell = self.executed.by_id.get(self.magic_cell_id or "")
        return cell.source if cell is not None else ""

    def writer(self, instruction: str, notebook: tuple[str, str] | None = None) -> CellWriter:
        """How Apply reaches the notebook; ``notebook``: (base, proposal) of a --notebook turn."""
        if notebook is not None:  # never the percent text into one cell
            return self.make_notebook_writer(*notebook)
        return self.make_writer(instruction)

    def without_waiting(self, staged: dict) -> Frontend:
        """This frontend with Apply staged instead of a waiting cell (a replayed proposal: Run All
        must not stop at it, and a click after the cell finished must not reach another cell)."""
        if self.kind is not Kind.RUNNING_CELL:
            return self
        magic_id = self.magic_cell_id or ""
        return replace(
            self,
            kind=Kind.STAGED,
            waits=None,
            make_writer=lambda i: StagedWriter(staged, magic_id, i, self.magic_source()),
        )

    def wait_for_choice(self, controller: Any, instruction: str, staged: dict) -> Awaitable[None] | None:
        """Keep the magic cell running until the click (where Apply needs that); what to return."""
        writer = controller.writer
        if self.waits is None or not isinstance(writer, RunningCellWriter):
            return None

        def release(decided: bool) -> None:
            writer.running = False
            if not decided:
                controller.replace_writer(
                    StagedWriter(staged, writer.magic_cell_id, instruction, self.magic_source()),
                    messages.NO_CHOICE_STAGED.render(timeout_s=writer.timeout_s),
                )

        if self.waits == "poll":
            writer.running = True
            try:
                release(waiting.wait_poll(lambda: controller.decided, writer.timeout_s))
            except BaseException:
                release(controller.decided)
                raise
            return None

        async def wait() -> None:
            # running only once the cell really awaits: set_next_input then reaches this cell's reply
            writer.running = True
            decided = False
            try:
                decided = await waiting.wait_async(lambda: controller.decided, writer.timeout_s)
            finally:
                release(decided or controller.decided)

        return wait()


def choose(
    *,
    terminal: bool,
    bridge: LiveNotebook | None,
    bridge_fresh: bool,
    executed: ExecutedCells,
    file_view: NotebookView,
    staged: dict,
    set_next_input: Callable[[str], None],
    apply_wait: float,
) -> Frontend:
    """The frontend of this run, from what the kernel knows now."""
    magic_id = executed.running_id
    if terminal:
        return Frontend(Kind.TERMINAL, file_view, executed, magic_id, lambda _i: PrefilledWriter(executed.set_source))
    if bridge is not None:
        view = bridge if bridge_fresh else file_view

        def notebook_writer(base: str, proposal: str) -> CellWriter:
            return NotebookWriter(
                bridge, base, proposal, lambda: [c for c in bridge.cells() if not is_genai_magic(c.source)]
            )

        return Frontend(
            Kind.COMPANION if isinstance(bridge, Companion) else Kind.LIVE,
            view,
            executed,
            magic_id,
            lambda _i: bridge.writer,
            cell_above=bridge.cell_above if bridge_fresh else None,
            make_notebook_writer=notebook_writer,
            live_view=bridge_fresh,
            live=bridge,
        )
    if magic_id and magic_id.startswith(VSCODE_CELL):
        mechanism = waiting.mechanism()
        # async waiting works only if the cell awaits what the magic returns (see waiting.py)
        if mechanism == "poll" or (mechanism == "async" and waiting.will_be_awaited()):
            return Frontend(
                Kind.RUNNING_CELL,
                file_view,
                executed,
                magic_id,
                lambda i: RunningCellWriter(set_next_input, executed.set_source, magic_id, i, apply_wait),
                waits=mechanism,
            )
        return Frontend(
            Kind.STAGED,
            file_view,
            executed,
            magic_id,
            lambda i: StagedWriter(staged, magic_id, i, executed.by_id[magic_id].source),
        )
    return Frontend(Kind.COPY, file_view, executed, magic_id, lambda _i: KernelStateWriter(executed.set_source))


@dataclass(frozen=True)
class KernelSide:
    """What the kernel knows when a magic runs (or a button is clicked), to pick the frontend from."""

    terminal: bool  # terminal IPython: no widgets, the next prompt can be pre-filled
    bridge: Bridge | None  # JupyterLab's live bridge, if this shell has one
    companion: Companion  # VS Code's companion, connected or not
    executed: ExecutedCells
    notebook_path: Path | None  # the .ipynb the frontend named, if any
    staged: dict[str, StagedApply]
    set_next_input: Callable[[str], None]
    apply_wait: float


def live_of(side: KernelSide) -> LiveNotebook | None:
    """The bridge, if a live frontend is connected or its first snapshot is on its way (the cells of
    Restart & Run All run before it arrives: their proposals write live when clicked); else VS Code's
    companion, if it is there.

    Typed ``LiveNotebook``: mypy checks here that both implement it."""
    if side.bridge is not None and (side.bridge.connected or side.bridge.coming):
        return side.bridge
    return side.companion if side.companion.connected else None


def is_stale(live: LiveNotebook | None, executed: ExecutedCells) -> bool:
    """The live view has not caught up with the cell that is running (a late snapshot)."""
    cell = executed.by_id.get(executed.running_id or "")
    return bool(live and cell and not live.is_fresh_for(cell.id, cell.source))


def for_run(side: KernelSide) -> Frontend:
    """The frontend of this run (or click), decided once from what the kernel knows now. A bridge whose
    first snapshot is still on its way has no view yet: the executed cells and the file serve, without
    a note that the view is behind."""
    live = live_of(side)
    viewed = live if live is not None and (live is side.companion or live.connected) else None
    stale = is_stale(viewed, side.executed)
    frontend = choose(
        terminal=side.terminal,
        bridge=live,
        bridge_fresh=viewed is not None and not stale,
        executed=side.executed,
        file_view=MergedView(side.executed, side.notebook_path),
        staged=side.staged,
        set_next_input=side.set_next_input,
        apply_wait=side.apply_wait,
    )
    return replace(frontend, stale=stale)
