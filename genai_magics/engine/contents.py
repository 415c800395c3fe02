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

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
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


def _user(payload: dict[str, Any], full: Sequence[ContextPiece]) -> tuple[dict[str, Any], Contents | None]:
    """A user turn's content, and its two as an explicit cache splits them when it holds material
    (the document or context in full; None when it holds none)."""
    whole = _content("user", payload, full)
    material = {"currentSource"} | {p.field for p in full}
    if not material & set(payload):
        return whole, None
    held = {k: v for k, v in payload.items() if k in material or k == "document"}
    rest = {k: v for k, v in payload.items() if k not in held}
    return whole, [_content("user", held, full), _content("user", rest)]


@dataclass(frozen=True)
class Rendered:
    """One rendering of the transcript in both forms: as it goes out whole, and split for an explicit cache."""

    whole: Contents
    split: Contents
    head: int  # how many leading ``split`` contents form the stable head


def render(history: Sequence[Turn], plan: TurnPlan) -> Rendered:
    """The transcript rendered once, for the cache step and the request alike."""
    whole: Contents = []
    split: Contents = []
    head = 0  # split contents up to the last one holding material in full
    for role, payload, full, holds in (*_turns(history, plan), ("user", plan.payload, plan.pieces, False)):
        if role == "model":
            content = _content("model", payload)
            whole.append(content)
            split.append(content)
            head = len(split) if holds else head
            continue
        one, two = _user(payload, full)
        whole.append(one)
        head = len(split) + 1 if two is not None else head
        split.extend(two or [one])
    return Rendered(whole, split, head)


Rendering = tuple[str, dict[str, Any], Sequence[ContextPiece], bool]


def _turns(history: Sequence[Turn], plan: TurnPlan) -> Iterator[Rendering]:
    """(role, payload, context sent in full, whether a model turn holds the code in full) per history turn."""
    # the turns that render the version the current turn builds on stay as sent; other versions become markers
    builds_on = plan.document.sha256 if plan.synchronized and plan.document else plan.patch_base_sha256
    chain = set(version_chain(history, builds_on) or ())
    keep = _latest_full_pieces(history, plan)
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
        yield "user", user, full, False
        proposed = turn.proposal_source if (i, "model") in chain else None
        model = model_payload(
            "code_proposal" if turn.proposal_source is not None else "answer",
            turn.response,
            proposed_source=proposed,
            edits=turn.proposal_edits if proposed is not None else None,
            superseded_proposal_sha256=turn.proposal_sha256,
            outcome=turn.outcome if turn.outcome in ("applied", "discarded", "undone") else None,
        )
        # edits, like a patch, leave the head as it was
        yield "model", model, (), proposed is not None and turn.proposal_edits is None


def build_contents(history: Sequence[Turn], plan: TurnPlan) -> Contents:
    """``contents`` for generate_content: history turns, compacted, then the new turn."""
    return render(history, plan).whole


def cacheable(history: Sequence[Turn], plan: TurnPlan) -> tuple[Contents, int]:
    """The contents with material split from prompts, and how many leading ones form the stable head.

    The head ends with the last content holding the document or context in full
    (0 when none does); the current prompt is never part of it.
    """
    rendered = render(history, plan)
    return rendered.split, rendered.head


def shared_prefix(previous: Sequence[Any], current: Sequence[Any]) -> int:
    """How many leading items two requests' contents have in common."""
    n = 0
    for a, b in zip(previous, current, strict=False):
        if a != b:
            break
        n += 1
    return n
