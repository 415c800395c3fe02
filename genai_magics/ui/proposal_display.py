"""Showing an edit's proposal: its controller, then the diff and buttons (at a terminal the diff
printed and the next prompt pre-filled), and the wait for the click where Apply needs one."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from .. import messages
from ..engine.cells import WHOLE_NOTEBOOK, Cell
from ..engine.conversation import Conversation, Turn
from ..frontends.cell_writer import StagedApply
from ..frontends.frontend import Frontend, Kind
from ..frontends.notebook_edit import NotebookWriter
from . import report
from .proposal import Listener, ProposalController, Status


@dataclass(frozen=True)
class Proposed:
    """An edit turn's answer, as the magic shows it."""

    conversation: Conversation
    turn: Turn
    target: Cell | None  # the cell it is for; None: the whole notebook (--notebook)
    instruction: str
    replayed: bool  # shown from the record of an earlier kernel, not asked


@dataclass(frozen=True)
class Place:
    """Where a proposal lives in this shell, and what it may call there."""

    staged: dict[str, StagedApply]  # magic cell id -> an Apply waiting for that cell's next run
    latest: dict[str, ProposalController]  # conversation -> its newest proposal (%gemini apply)
    current_source: Callable[[str], str | None]  # a cell's code at the moment it is asked (a click)
    saved: Listener  # Apply, Discard or Undo happened
    prefill: Callable[[str], None]  # the terminal's next prompt
    ran_source: Callable[[str], str | None] = lambda _cell_id: None  # the code the kernel ran last in a cell


def controller_for(
    proposed: Proposed,
    frontend: Frontend,
    current_source: Callable[[str], str | None],
    ran_source: Callable[[str], str | None] = lambda _cell_id: None,
) -> ProposalController:
    """The proposal's controller, its writer chosen by the frontend; a replayed one says so."""
    turn, whole = proposed.turn, proposed.target is None
    cell_id = str(WHOLE_NOTEBOOK) if proposed.target is None else proposed.target.id
    notebook = (turn.base_source or "", turn.proposal_source or "") if whole else None
    writer = frontend.writer(proposed.instruction, notebook)
    controller = ProposalController(
        conversation=proposed.conversation,
        turn=turn,
        cell_id=cell_id,
        writer=writer,
        # a --notebook edit through the bridge: the document is the cells it manages, not one cell
        current_source=writer.current_source if isinstance(writer, NotebookWriter) else current_source,
        ran_source=ran_source,
    )
    if proposed.replayed:
        replayed = report.replayed_proposal(turn, current_source(cell_id))
        if turn.outcome == "proposed":  # still open: say what Apply does here
            replayed += " " + writer.describe_apply()
        controller.status = Status(replayed)
    return controller


def show_proposal(
    proposed: Proposed, frontend: Frontend, place: Place, footer: Callable[[], None]
) -> Awaitable[None] | None:
    """Show the diff and buttons; where only the running cell can be written, wait here (what
    the magic returns to IPython: an awaitable while the cell waits for the click, else None)."""
    if proposed.replayed:
        frontend = frontend.without_waiting(place.staged)
    controller = controller_for(proposed, frontend, place.current_source, place.ran_source)
    controller.listeners.append(place.saved)
    place.latest[proposed.conversation.name] = controller
    if frontend.kind is Kind.TERMINAL:
        footer()
        print(controller.diff or "(no change)")
        place.prefill(proposed.turn.proposal_source or "")
        print(messages.PREFIX + controller.message)
        return None
    from IPython.display import display

    from .widgets import ProposalWidget

    display(ProposalWidget(controller, frontend.live.save_view if frontend.live is not None else None))
    footer()
    return frontend.wait_for_choice(controller, proposed.instruction, place.staged)
