"""The app-managed transcript: structured user/model turns with compaction.

Only the most recent turn holding the active document keeps it in full; every
older version becomes a superseded-sha marker, and likewise for each context
piece. So a long edit session costs about the same per turn as a short one.
"""
from __future__ import annotations

from typing import Any, Sequence

from .context import ContextPiece
from .conversation import Turn, TurnPlan, find_holder
from .payloads import model_payload, to_text, user_payload


def _latest_full_pieces(history: Sequence[Turn], plan: TurnPlan) -> dict[str, tuple[int, str]]:
    """piece key -> (turn position, sha) of the version that stays in full."""
    resent = {p.key for p in plan.pieces}
    latest: dict[str, tuple[int, str]] = {}
    for i, turn in enumerate(history):
        for piece in turn.pieces:
            if piece.key not in resent:
                latest[piece.key] = (i, piece.sha256)
    return latest


def build_contents(history: Sequence[Turn], plan: TurnPlan) -> list[dict[str, Any]]:
    """``contents`` for generate_content: history turns, compacted, then the new turn."""
    holder = find_holder(history, plan.document.sha256) if plan.synchronized and plan.document else None
    keep = _latest_full_pieces(history, plan)
    contents: list[dict[str, Any]] = []
    for i, turn in enumerate(history):
        full: list[ContextPiece] = []
        superseded: list[ContextPiece] = []
        for piece in turn.pieces:
            (full if keep.get(piece.key) == (i, piece.sha256) else superseded).append(piece)
        user = user_payload(
            turn.mode,
            turn.prompt,
            current_source=turn.base_source if holder == (i, "user") else None,
            superseded_source_sha256=turn.base_sha256 if turn.sent_source else None,
            pieces=full,
            superseded_pieces=superseded,
        )
        model = model_payload(
            "code_proposal" if turn.proposal_source is not None else "answer",
            turn.response,
            proposed_source=turn.proposal_source if holder == (i, "model") else None,
            superseded_proposal_sha256=turn.proposal_sha256,
            outcome=turn.outcome if turn.outcome in ("applied", "discarded", "undone") else None,
        )
        contents.append({"role": "user", "parts": [{"text": to_text(user)}]})
        contents.append({"role": "model", "parts": [{"text": to_text(model)}]})
    contents.append({"role": "user", "parts": [{"text": to_text(plan.payload)}]})
    return contents
