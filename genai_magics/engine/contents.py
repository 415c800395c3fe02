"""The app-managed transcript: structured user/model turns with compaction.

Only the most recent turn holding the active document keeps it in full (with the
patches of small hand edits sent on top of it); every older version becomes a
superseded-sha marker, and likewise for each context piece. So a long edit
session costs about the same per turn as a short one, and a small hand edit
leaves the head of the transcript, and so its cache, as it was.

Earlier turns are rendered exactly as they were sent (``sourceSynchronized``,
``document``) unless compaction must change them, so consecutive requests share
the longest prefix the protocol allows: what implicit caching can hit.

What the model fetched with functions fades: a result stays whole in the requests of
its own turn (the function calls and their answers as received, thought signatures intact).
In later requests a turn whose calls were all read-only carries, in its user content, only
the calls that fetch its results again (``"fetched": ["read_cell(5)"]``), its function-call /
function-response pairs left out whole (a pair is never split; the signatures Gemini checks
are those of the current turn's calls), and without ``sourceSynchronized`` (the turn is rewritten
anyway, so dropping it breaks no prefix; the current turn says where the document stands: ~7 tokens
a turn, read on every later request), as a new interactions chain's seed lists them:
measured cheaper in both caching extremes than keeping each pair with its result as a marker
(~120 tokens a turn against ~290: benchmarks/long_session.py). An agent turn's calls changed
the notebook: they stay, each result as a marker naming the call that fetches it again
(``{"sha256": ..., "fetch again": "cell_outputs(5)"}``: a run's outputs are read again, never
run again). A faded ask holding nothing but a short prompt goes as text, the prompt and then the
``fetched: `` line (``SHORT_PROMPT``); every earlier answer as the Markdown the model wrote (it first
appears in the next turn's request, so no prefix is lost): the JSON keys were ~25 of a faded turn's
~103 tokens.

With an explicit cache (``cacheable``) a user turn that carries the document or
context in full is split in two user contents, the material first and the prompt
after it, so the cache can hold the material while the prompt stays outside; the finished turns after it, which
no longer change (their results faded, or none fetched), belong to the head too (whether a
cache takes them: gemini/caching.py).

Near the model's input limit the send stage renders with a ``Squeeze``: every earlier
result faded, then the oldest turns left out (one short user content says which),
never a turn holding the version of the document the current turn builds on, nor one holding the
notebook's rules in full (engine/rules.py).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .context import ContextPiece
from .conversation import Turn, TurnPlan, version_chain
from .outputs import inline_parts, sendable
from .payloads import faded_question, model_payload, to_text, user_payload
from .redaction import redact, redaction_keys
from .rules import RULES_FIELD
from .text import estimate_tokens
from .tools import ToolRound, contents_round, faded_result, fetched, read_only, tool_pieces

Contents = list[dict[str, Any]]


def _latest_full_pieces(history: Sequence[Turn], plan: TurnPlan) -> dict[str, tuple[int, str]]:
    """piece key -> (turn position, sha) of the version that stays in full."""
    resent = {p.key for p in plan.pieces}
    latest: dict[str, tuple[int, str]] = {}
    for i, turn in enumerate(history):
        for piece in (*turn.pieces, *tool_pieces(turn.tool_rounds)):
            if piece.key not in resent and sendable(piece):
                latest[piece.key] = (i, piece.sha256)
    return latest


def _content(role: str, text: str, images: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """One content: the JSON text part, then the images as inlineData parts."""
    return {"role": role, "parts": [{"text": text}, *images]}


# A user turn's JSON text whole, and as an explicit cache splits it when it holds material (the
# document or context in full): the held part and the rest; None when it holds none.
UserTexts = tuple[str, tuple[str, str] | None]


def _user_texts(payload: dict[str, Any], full: Sequence[ContextPiece]) -> UserTexts:
    whole = to_text(payload)
    material = {"currentSource"} | {p.field for p in full}
    if not material & set(payload):
        return whole, None
    held = {k: v for k, v in payload.items() if k in material or k == "document"}
    rest = {k: v for k, v in payload.items() if k not in held}
    return whole, (to_text(held), to_text(rest))


def _user(texts: UserTexts, full: Sequence[ContextPiece]) -> tuple[dict[str, Any], Contents | None]:
    """A user turn's content, and its two as an explicit cache splits them (None when it holds no material)."""
    whole, split = texts
    images = inline_parts(full)  # the base64 of each image: once for both forms
    if split is None:
        return _content("user", whole, images), None
    return _content("user", whole, images), [_content("user", split[0], images), _content("user", split[1])]


# A faded question goes as text, its JSON keys (~12 tokens, read on every later request) left out, where its
# prompt is short: the text no longer begins as the request that sent it did, so the next request re-reads the
# prompt at full price where implicit caching would have served it; for a longer prompt that costs more than the
# keys saved over ~50 later requests.
SHORT_PROMPT = 64


# History turns render as they were sent, turn after turn: each text is made once (JSON and
# redaction were most of a turn's rendering), keyed on everything it is made of and the keys redacted.
@functools.lru_cache(maxsize=1024)
def _history_user(args: tuple[Any, ...], label: str | None, keys: tuple[str, ...]) -> UserTexts:
    mode, prompt, current, patch, synchronized, superseded_sha, full, superseded, fetched = args
    user = user_payload(
        mode,
        prompt,
        current_source=current,
        source_patch=patch,
        synchronized=synchronized,
        superseded_source_sha256=superseded_sha,
        pieces=list(full),
        superseded_pieces=list(superseded),
    )
    if "currentSource" in user or "sourcePatch" in user:  # as sent; a compacted turn loses the label
        user["document"] = label
    if fetched:  # a faded turn (the module's docstring)
        user.pop("sourceSynchronized", None)
        if user.keys() == {"mode", "prompt"} and mode == "ask" and estimate_tokens(prompt) <= SHORT_PROMPT:
            return redact(faded_question(prompt, fetched)), None
        user["fetched"] = list(fetched)
    return _user_texts(user, full)


@functools.lru_cache(maxsize=1024)
def _history_model(args: tuple[Any, ...], keys: tuple[str, ...]) -> str:
    kind, response, proposed, edits, superseded_sha, outcome = args
    if kind == "answer" and outcome is None:  # the Markdown the model wrote (the module's docstring)
        return redact(response)
    return to_text(
        model_payload(
            kind,
            response,
            proposed_source=proposed,
            edits=edits,
            superseded_proposal_sha256=superseded_sha,
            outcome=outcome,
        )
    )


@dataclass(frozen=True)
class Squeeze:
    """A transcript compacted to fit the model's input limit: the ``dropped`` oldest turns that can go left out."""

    dropped: int


@dataclass(frozen=True)
class Rendered:
    """One rendering of the transcript in both forms: as it goes out whole, and split for an explicit cache."""

    whole: Contents
    split: Contents
    head: int  # how many leading ``split`` contents form the stable head


def render(history: Sequence[Turn], plan: TurnPlan, squeeze: Squeeze | None = None) -> Rendered:
    """The transcript rendered once, for the cache step and the request alike (``squeeze``: compacted to fit
    the input limit; None: the results fade by the rule alone)."""
    whole: Contents = []
    split: Contents = []
    head = 0  # split contents up to the last one holding material in full, or ending a finished turn
    current = ("user", _user_texts(plan.payload, plan.pieces), plan.pieces, False)
    for role, texts, full, holds in (*_turns(history, plan, squeeze), current):
        if role in ("call", "left out"):  # an agent turn's call and its answer, or the note of turns left out
            whole.append(texts)
            split.append(texts)
            continue
        if role == "finished":  # a turn that no longer changes ended here
            head = len(split)
            continue
        if role == "model":
            content = _content("model", texts)
            whole.append(content)
            split.append(content)
            head = len(split) if holds else head
            continue
        one, two = _user(texts, full)
        whole.append(one)
        head = len(split) + 1 if two is not None else head
        split.extend(two or [one])
    return Rendered(whole, split, head)


Rendering = tuple[str, Any, Sequence[ContextPiece], bool]  # role, its texts (UserTexts or a model's str), ...


def _turns(history: Sequence[Turn], plan: TurnPlan, squeeze: Squeeze | None) -> Iterator[Rendering]:
    """(role, its texts, context sent in full, whether a model turn holds the code in full) per history turn;
    ("finished", ...) after each turn that may go into the head, ("left out", the note's content, ...) once."""
    # the turns that render the version the current turn builds on stay as sent; other versions become markers
    chain = _chain(history, plan)
    keep = _latest_full_pieces(history, plan)
    keys = redaction_keys()
    gone = _left_out(history, _kept(history, chain, keep), squeeze.dropped if squeeze is not None else 0)
    settled = True  # no earlier turn's proposal waits for Apply or Discard
    for i, turn in enumerate(history):
        if i in gone:
            if i == min(gone):
                yield "left out", _left_out_note(history, gone), (), False
            continue
        named = read_only(turn.tool_rounds)  # its calls left out, named in its user content
        full: list[ContextPiece] = []
        superseded: list[ContextPiece] = []
        for piece in turn.pieces:
            (full if keep.get(piece.key) == (i, piece.sha256) else superseded).append(piece)
        user = (
            turn.mode,
            turn.prompt,
            turn.base_source if (i, "user") in chain and turn.sent_source else None,
            turn.source_patch if (i, "user") in chain else None,
            turn.synchronized,
            turn.base_sha256 if turn.sent_source or turn.source_patch else None,
            tuple(full),
            tuple(superseded),
            tuple(fetched(turn.tool_rounds)) if named else (),
        )
        yield "user", _history_user(user, turn.document_label, keys), full, False
        for round_ in () if named else turn.tool_rounds:  # an agent turn's calls, each result faded
            for content in contents_round(_faded(round_)):
                yield "call", content, (), False
        proposed = turn.proposal_source if (i, "model") in chain else None
        model = (
            "code_proposal" if turn.proposal_source is not None else "answer",
            turn.response,
            proposed,
            turn.proposal_edits if proposed is not None else None,
            turn.proposal_sha256,
            turn.outcome if turn.outcome in ("applied", "discarded", "undone") else None,
        )
        # edits, like a patch, leave the head as it was
        yield "model", _history_model(model, keys), (), proposed is not None and turn.proposal_edits is None
        # a finished turn no longer changes (its results faded), so it may go into the cache's head; but a
        # proposal still waiting for Apply or Discard will say what became of it, and so will every turn after it
        settled = settled and turn.outcome != "proposed"
        if settled:
            yield "finished", None, (), False


def _chain(history: Sequence[Turn], plan: TurnPlan) -> set[tuple[int, str]]:
    """The (position, side) of the turns rendering the version of the document the current turn builds on."""
    builds_on = plan.document.sha256 if plan.synchronized and plan.document else plan.patch_base_sha256
    return set(version_chain(history, builds_on) or ())


def left_out(history: Sequence[Turn], plan: TurnPlan, dropped: int) -> list[int]:
    """The indices of the turns a ``Squeeze`` leaving out ``dropped`` turns leaves out."""
    kept = _kept(history, _chain(history, plan), _latest_full_pieces(history, plan))
    return [history[i].index for i in sorted(_left_out(history, kept, dropped))]


def _kept(
    history: Sequence[Turn], chain: set[tuple[int, str]], keep: dict[str, tuple[int, str]]
) -> set[tuple[int, str]]:
    """The turns a squeeze never leaves out: the document's version chain, and the turns holding the
    notebook's rules in full (the model holds them there only; they are not sent again)."""
    return chain | {(i, "user") for key, (i, _) in keep.items() if key.startswith(f"{RULES_FIELD}:")}


def _left_out(history: Sequence[Turn], chain: set[tuple[int, str]], dropped: int) -> set[int]:
    """The positions of the ``dropped`` oldest turns that hold no part of ``chain`` (``_kept``)."""
    free = [i for i in range(len(history)) if (i, "user") not in chain and (i, "model") not in chain]
    return set(free[:dropped])


def _left_out_note(history: Sequence[Turn], left_out: set[int]) -> dict[str, Any]:
    """The one user content standing for the turns left out."""
    indices = [history[i].index for i in sorted(left_out)]
    note = {
        "leftOut": f"{len(indices)} earlier turn(s) ({indices[0]}-{indices[-1]}) are left out to stay under the "
        "model's input limit; ask the user or call the functions again for what you need from them"
    }
    return _content("user", to_text(note))


def _faded(round_: ToolRound) -> ToolRound:
    """A round of an earlier agent turn as the transcript keeps it: the model's content as received, each
    result with pieces as a marker (an error or ``unchanged`` result is short already)."""
    return replace(round_, results=tuple(faded_result(r) if r.pieces else r for r in round_.results))


def build_contents(history: Sequence[Turn], plan: TurnPlan) -> Contents:
    """``contents`` for generate_content: history turns, compacted, then the new turn."""
    return render(history, plan).whole


def cacheable(history: Sequence[Turn], plan: TurnPlan) -> tuple[Contents, int]:
    """The contents with material split from prompts, and how many leading ones form the stable head.

    The head ends with the last finished turn, or the current turn's document or context in
    full (0 when there is neither); the current prompt is never part of it.
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
