"""Before a turn: an agent turn's changes sent without waiting that did not land go with the next request.

Not in agent_run.py: every turn asks, and the agent's modules are imported by its first turn only.
"""

from __future__ import annotations

from dataclasses import replace

from ..turn.requests import TurnRequest
from .shell_state import ShellState


def told_not_landed(state: ShellState, request: TurnRequest) -> TurnRequest:
    """Before the next request of the conversation of a turn whose changes were sent without waiting: each checked,
    and the ones that did not land go with the request (``agentChangesNotMade``), told once."""
    check = state.landed_check
    if check is None or request.dry_run or request.conversation != check.conversation:
        return request
    state.landed_check = None
    piece = check.told()
    return request if piece is None else replace(request, extra_pieces=(*request.extra_pieces, piece))
