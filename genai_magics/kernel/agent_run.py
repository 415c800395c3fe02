"""An agent turn's run_cell and write approval wired to this shell: the results as ``cell_outputs`` gives them
(sources/outputs.py, under its caps), an error's traceback as ``last_error`` trims it (sources/last_error.py), the
approval widget (ui/approval.py) in the agent cell. What the agent's magic hands to its actions."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .. import messages
from ..engine.agent import TurnChanges
from ..engine.context import ContextPiece
from ..engine.errors import UserError
from ..frontends.agent_actions import AgentActions
from ..frontends.bridge import Bridge
from ..frontends.cell_runner import (
    Approvals,
    ApproveWrite,
    CellRunner,
    ShowAsked,
    approval_wait,
    make_approve_write,
)
from ..frontends.code_check import shell_check
from ..frontends.live_notebook import LiveNotebook
from ..sources.last_error import CellForFilename, capture_last_error, render_error
from ..sources.outputs import shown_pieces
from ..turn.requests import Settings, TurnOutcome
from ..turn.session import Session
from ..ui.approval import show_approval
from ..ui.landed_line import show_landed_line
from ..ui.turn_undo_widget import offer_undo
from .shell_state import ShellState, state_of

Undone = Callable[[], "str | None"]  # an undone turn's outcome recorded; a line when the record cannot be written


def approval_in(notebook: LiveNotebook | None) -> ShowAsked:
    """The approval widget shown in the agent cell, its saved text kept by the live notebook as it is answered."""
    return functools.partial(show_approval, save_view=notebook.save_view if notebook is not None else None)


def turn_run_cell(
    shell: Any,
    notebook: LiveNotebook | None,
    session: Session,
    settings: Settings,
    cell_for_filename: CellForFilename,
    approvals: Approvals,
    awaited: bool,
    timeout_s: float,
    changes: TurnChanges | None = None,
) -> CellRunner:
    """The ``RunCell`` of an agent turn in this shell: the results as ``cell_outputs`` gives them (under its caps),
    the error's traceback as ``last_error`` trims it, the approval widget in the agent cell; a run's next input
    (``%load``) kept among ``changes``, the turn's."""

    def shown(cell_id: str, label: str) -> list[ContextPiece]:
        caps = (settings.max_output_chars, settings.max_images, settings.max_image_bytes)
        return shown_pieces(session.outputs, cell_id, label, *caps)

    def last_error() -> str | None:
        found = capture_last_error(shell, cell_for_filename)
        return render_error(found) if found is not None else None

    return CellRunner(
        shell,
        notebook,
        session.executed,
        session.outputs,
        shown,
        last_error,
        approvals,
        approval_in(notebook),
        approval_wait(awaited),
        timeout_s=timeout_s,
        check=shell_check(shell),
        while_running=lambda now: setattr(state_of(shell), "agent_running", now),
        changes=changes,
    )


def turn_approve_write(approvals: Approvals, awaited: bool, timeout_s: float, live: LiveNotebook) -> ApproveWrite:
    """The hook each agent write calls first (it waits only with ``agent_approve = "all"``)."""
    return make_approve_write(approvals, approval_in(live), approval_wait(awaited), timeout_s)


def agent_failure(exc: Exception, actions: AgentActions | None) -> Exception:
    """What a failed agent turn's line says: stopped after writing through the live notebook, that what it wrote
    stays and its Undo is there (not that nothing was recorded)."""
    stopped = isinstance(exc, UserError) and exc.message is messages.STOPPED
    if stopped and actions is not None and actions.live is not None and actions.changes:
        return UserError(messages.AGENT_STOPPED)
    return exc


def end_agent_turn(state: ShellState, actions: AgentActions, undone: Undone | None = None) -> None:
    """At the end of an agent turn (answered, stopped, interrupted or failed): an approval still waiting says the
    turn ended and takes no click any more; the turn's Undo is offered (``undone``: what its Undo also does to the
    committed turn's record)."""
    if isinstance(actions.run, CellRunner):  # the turn's approvals, its writes' included
        actions.run.approvals.end()
    offer_turn_undo(state, actions, undone)


def turn_undone(session: Session, outcome: TurnOutcome) -> Undone | None:
    """What an agent turn's Undo (or the notebook's own undo of it) does to the turn answered: its outcome
    ``undone`` in the conversation (the next request tells the model) and in the record; None for a replay."""
    turn, conv = outcome.turn, outcome.conversation
    if turn is None or outcome.replayed is not None:
        return None

    def undone() -> str | None:
        return session.keeper.outcome_changed(conv) if conv.agent_undone(turn) else None

    return undone


def offer_turn_undo(state: ShellState, actions: AgentActions, undone: Undone | None = None) -> None:
    """At the end of an agent turn (answered, stopped or failed) that changed cells through the live notebook:
    its Undo button, kept as the shell's latest agent turn for ``%gemini undo``; the bridge's snapshots tell it
    when the notebook's own undo took the turn back; the line proving the changes it sent without waiting landed."""
    keep_landed_check(state, actions)
    if actions.live is None or not actions.changes:
        return
    cells = {cell.id: cell for cell in actions.view.cells()}

    def label(cell_id: str) -> str:  # the turn's own name for the cell, as its step lines said it
        if cell_id in actions.names:
            return actions.names[cell_id]
        cell = cells.get(cell_id)
        return actions.name(cell) if cell is not None else f"cell {cell_id[:12]}"

    ran = actions.run.ran if isinstance(actions.run, CellRunner) else []
    state.agent_undo = offer_undo(actions.live, actions.changes, ran, label, state.agent_undos)
    if state.agent_undo is not None:
        state.agent_undo.on_undone = undone
        if isinstance(actions.live, Bridge):
            actions.live.on_snapshot.append(state.agent_undo.notice_taken_back)


def keep_landed_check(state: ShellState, actions: AgentActions) -> None:
    """A turn that sent changes without waiting: the line that proves them landed, and the check kept for the
    conversation's next request."""
    if actions.landed is not None and actions.landed.sent:
        show_landed_line(actions.landed)
        state.landed_check = actions.landed
