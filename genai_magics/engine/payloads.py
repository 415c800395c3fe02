"""The wire contract: the JSON text parts of user and model turns (docs/protocol.md).

Pure functions over plain values; both transports and the dry run use them, so
what the tests read is what goes over the wire.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .context import ContextPiece
from .edits import Edits
from .outputs import OutputPiece, payload_entry
from .redaction import redact
from .tools import FETCHED_LINE

SYSTEM_INSTRUCTION = """\
You assist in a Jupyter notebook. Each user turn is JSON: "mode" is "ask" (answer in Markdown)
or "edit" (reply JSON: "explanation", short Markdown, and either "edits" or "proposedSource", the
whole new source; for a change that is small against the document, "edits": [{"find", "replace"}],
each "find" an exact piece of your latest version occurring exactly once, with enough lines to be
unique, the edits applied in order, each to the result of the one before; for a rewrite or a short
document, "proposedSource");
"prompt" is the request; "currentSource" is the document (a cell, or the notebook: each cell a
"# %% id=<id>" block, "# %% [markdown] id=<id>" or "[raw]" for those, blocks apart by a blank
line; a cell's own lines starting "# %%" carry a leading backslash, keep it; keep headers and
ids, a block without id is a new cell, a block left out removes its cell), sent when it changed;
"sourcePatch", sent instead for a small change, is that change as unified-diff hunks to apply to
your latest version; "sourceSynchronized" means the document is your latest version (patches
applied) not discarded or undone; "superseded...Sha256" mark replaced versions;
"secondaryContext" holds other cells (read-only); "lastError" the last exception with its
trimmed traceback; "variables" summaries of live variables; "proposalOutcomes" says what the
user did with your proposals.
"outputs" is what cells showed (label, sha256, text; "[image k]" marks where a cell showed an
image: it follows this JSON as an image part, in the order of the "outputs" entries naming it).
"""

# The whole text only: what a second request asks for when an answer's edits did not apply.
WHOLE_RESPONSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "explanation": {"type": "string"},
        "proposedSource": {"type": "string"},
    },
    "required": ["explanation", "proposedSource"],
}
EDIT_RESPONSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "explanation": {"type": "string"},
        "edits": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"find": {"type": "string"}, "replace": {"type": "string"}},
                "required": ["find", "replace"],
            },
        },
        "proposedSource": {"type": "string"},
    },
    "required": ["explanation"],
}


def retry_payload(reason: str) -> dict[str, Any]:
    """The user turn that asks once more, in the same conversation, for the whole text."""
    return {
        "mode": "edit",
        "prompt": f"Your edits did not apply ({reason}). Answer again with proposedSource, the whole new source.",
    }


def superseded_field(field: str) -> str:
    """``secondaryContext`` -> ``supersededSecondaryContextSha256``."""
    return f"superseded{field[0].upper()}{field[1:]}Sha256"


def _add_pieces(payload: dict[str, Any], full: list[ContextPiece], superseded: list[ContextPiece]) -> None:
    for piece in full:
        if isinstance(piece, OutputPiece):  # a list: each entry names its cell and its sha256
            payload.setdefault(piece.field, []).append(payload_entry(piece))
        elif piece.name is None:
            payload[piece.field] = piece.text
        else:
            payload.setdefault(piece.field, {})[piece.name] = piece.text
    for piece in superseded:
        key = superseded_field(piece.field)
        if isinstance(piece, OutputPiece):
            payload.setdefault(key, []).append(piece.sha256)
        elif piece.name is None:
            payload[key] = piece.sha256
        else:
            payload.setdefault(key, {})[piece.name] = piece.sha256


def user_payload(
    mode: str,
    prompt: str,
    *,
    current_source: str | None = None,
    source_patch: str | None = None,
    synchronized: bool = False,
    superseded_source_sha256: str | None = None,
    pieces: list[ContextPiece] | None = None,
    superseded_pieces: list[ContextPiece] | None = None,
    proposal_outcomes: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    payload: dict[str, Any] = {"mode": mode, "prompt": prompt}
    if current_source is not None:
        payload["currentSource"] = current_source
    elif source_patch is not None:
        payload["sourcePatch"] = source_patch
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
    edits: Edits | None = None,
    superseded_proposal_sha256: str | None = None,
    outcome: str | None = None,
) -> dict[str, Any]:
    payload: dict[str, Any] = {"kind": kind, "explanation": explanation}
    if edits is not None:  # as the model sent them: it holds its base plus these
        payload["edits"] = [e.to_json() for e in edits]
    elif proposed_source is not None:
        payload["proposedSource"] = proposed_source
    elif superseded_proposal_sha256 is not None:
        payload["supersededProposalSha256"] = superseded_proposal_sha256
    if outcome is not None:
        payload["outcome"] = outcome
    return payload


def faded_question(prompt: str, fetched: Sequence[str]) -> str:
    """An earlier ask turn whose results faded, as text: JSON keys and quotes were a quarter of what each such
    turn costs on every later request (``FADED_INSTRUCTION`` says what it is)."""
    return f"{prompt}\n{FETCHED_LINE}{', '.join(fetched)}"


def compact_json(value: Any) -> str:
    """JSON without spaces, non-ASCII kept as it is: what a turn uploads and the record stores."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def to_text(payload: Mapping[str, Any]) -> str:
    """The one JSON text part a turn carries (compact: every byte is uploaded)."""
    # The API key never travels in a turn (a variable or a cell may hold it): the dry run shows this too.
    return redact(compact_json(payload))
