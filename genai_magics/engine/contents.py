"""The app-managed transcript: structured user/model turns with compaction.

Only the most recent turn holding the active document keeps it in full (with the
patches of small hand edits sent on top of it); every older version becomes a
superseded-sha marker, and likewise for each context piece. So a long edit
session costs about the same per turn as a short one, and a small hand edit
leaves the head of the transcript, and so its cache, as it was.

Earlier turns are rendered exactly as they were sent (``sourceSynchronized``,
``document``) unless compaction must change them, so consecutive requests share
the longest prefix the protocol allows: what implicit caching can hit.

With an explicit cache (``cacheable``) a user turn that carries the document or
context in full is split in two user contents, the material first and the prompt
after it, so the cache can hold the material while the prompt stays outside.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .context import ContextPiece
from .conversation import Turn, TurnPlan, version_chain
from .outputs import inline_parts, sendable
from .payloads import model_payload, to_text, user_payload

Contents = list[dict[str, Any]]


def _latest_full_pieces(history: Sequence[Turn], plan: TurnPlan) -> dict[str, tuple[int, str]]:
    """piece key -> (turn position, sha) of the version that stays in full."""
    resent = {p.key for p in plan.pieces}
    latest: dict[str, tuple[int, str]] = {}
    for i, turn in enumerate(history):
        for piece in turn.pieces:
            if piece.key not in resent and sendable(piece):
                latest[piece.key] = (i, piece.sha256)
    return latest


def _content(role: str, payload: dict[str, Any], pieces: Sequence[ContextPiece] = ()) -> dict[str, Any]:
    """One content: the JSON text part, then the images among ``pieces`` as inlineData parts."""
    return {"role": role, "parts": [{"text": to_text(payload)}, *inline_parts(pieces)]}


def _user(payload: dict[str, Any], full: Sequence[ContextPiece], split: bool) -> tuple[Contents, bool]:
    """A user turn's contents, and whether the first one holds material (document or context) in full."""
    material = {"currentSource"} | {p.field for p in full}
    if not split or not material & set(payload):
        return [_content("user", payload, full)], False
    held = {k: v for k, v in payload.items() if k in material or k == "document"}
    rest = {k: v for k, v in payload.items() if k not in held}
    return [_content("user", held, full), _content("user", rest)], True


def _render(history: Sequence[Turn], plan: TurnPlan, split: bool) -> tuple[Contents, int]:
    # the turns that render the version the current turn builds on stay as sent; other versions become markers
    builds_on = plan.document.sha256 if plan.synchronized and plan.document else plan.patch_base_sha256
    chain = set(version_chain(history, builds_on) or ())
    keep = _latest_full_pieces(history, plan)
    contents: Contents = []
    head = 0  # contents up to the last one holding material in full
    for i, turn in enumerate(history):
        full: list[ContextPiece] = []
        superseded: list[ContextPiece] = []
        for piece in turn.pieces:
            (full if keep.get(piece.key) == (i, piece.sha256) else superseded).append(piece)
        user = user_payload(
            turn.mode,
            turn.prompt,
            current_source=turn.base_source if (i, "user") in chain and turn.sent_source else None,
            source_patch=turn.source_patch if (i, "user") in chain else None,
            synchronized=turn.synchronized,
            superseded_source_sha256=turn.base_sha256 if turn.sent_source or turn.source_patch else None,
            pieces=full,
            superseded_pieces=superseded,
        )
        if "currentSource" in user or "sourcePatch" in user:  # as sent; a compacted turn loses the label
            user["document"] = turn.document_label
        user_contents, material = _user(user, full, split)
        if material:
            head = len(contents) + 1
        contents += user_contents
        proposed = turn.proposal_source if (i, "model") in chain else None
        model = model_payload(
            "code_proposal" if turn.proposal_source is not None else "answer",
            turn.response,
            proposed_source=proposed,
            superseded_proposal_sha256=turn.proposal_sha256,
            outcome=turn.outcome if turn.outcome in ("applied", "discarded", "undone") else None,
        )
        contents.append(_content("model", model))
        if proposed is not None:
            head = len(contents)
    current, material = _user(plan.payload, plan.pieces, split)
    if material:
        head = len(contents) + 1
    return contents + current, head


def build_contents(history: Sequence[Turn], plan: TurnPlan) -> Contents:
    """``contents`` for generate_content: history turns, compacted, then the new turn."""
    return _render(history, plan, split=False)[0]


def cacheable(history: Sequence[Turn], plan: TurnPlan) -> tuple[Contents, int]:
    """The contents with material split from prompts, and how many leading ones form the stable head.

    The head ends with the last content holding the document or context in full
    (0 when none does); the current prompt is never part of it.
    """
    return _render(history, plan, split=True)


def shared_prefix(previous: Sequence[Any], current: Sequence[Any]) -> int:
    """How many leading items two requests' contents have in common."""
    n = 0
    for a, b in zip(previous, current, strict=False):
        if a != b:
            break
        n += 1
    return n
