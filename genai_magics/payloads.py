"""The wire contract: the JSON text parts of user and model turns (protocol.md).

Pure functions over plain values; both transports and the dry run use them, so
what the tests read is what goes over the wire.
"""
from __future__ import annotations

import json
from typing import Any, Mapping

from .context import ContextPiece

SYSTEM_INSTRUCTION = """\
You are a code assistant inside a Jupyter notebook. Every user turn is one JSON object:
- "mode": "ask" (answer in Markdown) or "edit" (propose a new version of the document);
- "prompt": the user's request;
- "currentSource": the full current source of the document (a cell, or the notebook as
  percent-style cells headed "# %% id=..."), sent when it changed outside this conversation;
- "sourceSynchronized": true means the document is exactly the latest full version you hold
  (the latest "currentSource", or your latest "proposedSource" that was not discarded or undone);
- "supersededSourceSha256" / "supersededProposalSha256" mark older versions that were replaced;
- "secondaryContext": other cells of the notebook, read-only, each headed by its id and hash;
- "proposalOutcomes": what the user did with your earlier proposals (applied, discarded, undone).
In edit mode reply with JSON: "explanation" (short, Markdown) and "proposedSource" (the whole
new source of the document, not a diff). Never invent cells the user did not ask for.
"""

EDIT_RESPONSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "explanation": {"type": "string"},
        "proposedSource": {"type": "string"},
    },
    "required": ["explanation", "proposedSource"],
}


def superseded_field(field: str) -> str:
    """``secondaryContext`` -> ``supersededSecondaryContextSha256``."""
    return f"superseded{field[0].upper()}{field[1:]}Sha256"


def _add_pieces(payload: dict[str, Any], full: list[ContextPiece], superseded: list[ContextPiece]) -> None:
    for piece in full:
        if piece.name is None:
            payload[piece.field] = piece.text
        else:
            payload.setdefault(piece.field, {})[piece.name] = piece.text
    for piece in superseded:
        key = superseded_field(piece.field)
        if piece.name is None:
            payload[key] = piece.sha256
        else:
            payload.setdefault(key, {})[piece.name] = piece.sha256


def user_payload(
    mode: str,
    prompt: str,
    *,
    current_source: str | None = None,
    synchronized: bool = False,
    superseded_source_sha256: str | None = None,
    pieces: list[ContextPiece] | None = None,
    superseded_pieces: list[ContextPiece] | None = None,
    proposal_outcomes: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    payload: dict[str, Any] = {"mode": mode, "prompt": prompt}
    if current_source is not None:
        payload["currentSource"] = current_source
    elif synchronized:
        payload["sourceSynchronized"] = True
    elif superseded_source_sha256 is not None:
        payload["supersededSourceSha256"] = superseded_source_sha256
    _add_pieces(payload, pieces or [], superseded_pieces or [])
    if proposal_outcomes:
        payload["proposalOutcomes"] = dict(proposal_outcomes)
    return payload


def model_payload(
    kind: str,
    explanation: str,
    *,
    proposed_source: str | None = None,
    superseded_proposal_sha256: str | None = None,
    outcome: str | None = None,
) -> dict[str, Any]:
    payload: dict[str, Any] = {"kind": kind, "explanation": explanation}
    if proposed_source is not None:
        payload["proposedSource"] = proposed_source
    elif superseded_proposal_sha256 is not None:
        payload["supersededProposalSha256"] = superseded_proposal_sha256
    if outcome is not None:
        payload["outcome"] = outcome
    return payload


def to_text(payload: Mapping[str, Any]) -> str:
    """The one JSON text part a turn carries (compact: every byte is uploaded)."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
