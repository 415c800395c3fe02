"""The conversation engine: history turns, the sync state and its transitions.

Pure: no IPython, no network. ``plan_turn`` decides what the next request
carries; ``Conversation.commit`` commits a finished turn; ``apply``/``discard``/
``undo`` are the button transitions of docs/protocol.md. A failed request is simply
never recorded, so the state is exactly as before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeVar

from .. import messages
from .cells import Document, DocumentKey
from .context import ContextPiece
from .diff import source_patch
from .edits import Edits, edits_chars
from .grounding import Grounding
from .hashing import sha256_text
from .payloads import faded_question, user_payload
from .text import clip
from .tools import ToolRound, faded_keys, fetched, tool_pieces

Mode = Literal["ask", "edit"]
StateMode = Literal["contents", "interactions"]
Outcome = Literal["none", "proposed", "applied", "discarded", "undone"]
STATE_MODES: tuple[StateMode, ...] = ("contents", "interactions")
DIGEST_TURNS = 16  # a new server chain learns this many earlier turns, in short
DIGEST_PROMPT_CHARS = 1_000  # of each prompt (a new chain started at the input limit must be small)
# A hand edit goes as a patch while the patches on the version the model holds in full stay
# under this share of the document. Both are billed at the input rate: patches read again on
# each of ~10 later turns cost less than the whole document written once into a new cache (or
# read once more in full), and a model applies a few small hunks more reliably than many.
PATCH_SHARE = 0.1
Holder = tuple[int, Literal["user", "model"]]
_N = TypeVar("_N", int, float)


@dataclass(frozen=True)
class Usage:
    input_tokens: int | None = None  # everything the model read, cached tokens included
    output_tokens: int | None = None
    request_bytes: int = 0
    cached_tokens: int | None = None  # input served from a cache, explicit or implicit
    thinking_tokens: int | None = None
    cache_write_tokens: int = 0  # tokens written into an explicit cache for this turn (billed as input)
    requests: int = 1  # the requests the turn sent (a function call answered is one more); the rest sums them
    cost_usd: float | None = None  # None: the model has no price (on that day)
    priced_on: str | None = None  # the day (YYYY-MM-DD) whose price cost_usd is at: the turn's own
    resend_cost_usd: float | None = None  # the same input and output with nothing cached
    searches: int = 0  # the web searches the model ran (--search): each billed at the model's rate, in cost_usd

    @property
    def per_request(self) -> int:
        """What a request of the turn read, on the mean (0 without the API's count)."""
        return (self.input_tokens or 0) // max(1, self.requests)


def added(a: Usage, b: Usage) -> Usage:
    """Two requests' usage as one turn's: the tokens summed, and the dollars, each request priced by
    itself first (a long-prompt rate is a request's, by its own size: never priced on a sum)."""

    def plus(x: _N | None, y: _N | None) -> _N | None:
        return None if x is None and y is None else (x or 0) + (y or 0)

    return Usage(
        input_tokens=plus(a.input_tokens, b.input_tokens),
        output_tokens=plus(a.output_tokens, b.output_tokens),
        request_bytes=a.request_bytes + b.request_bytes,
        cached_tokens=plus(a.cached_tokens, b.cached_tokens),
        thinking_tokens=plus(a.thinking_tokens, b.thinking_tokens),
        cache_write_tokens=a.cache_write_tokens + b.cache_write_tokens,
        requests=a.requests + b.requests,
        cost_usd=plus(a.cost_usd, b.cost_usd),
        priced_on=a.priced_on or b.priced_on,
        resend_cost_usd=plus(a.resend_cost_usd, b.resend_cost_usd),
        searches=a.searches + b.searches,
    )


@dataclass(frozen=True)
class Spent:
    """One turn's bill: its conversation, its model, the usage its footer showed; or, ``failed``, what a
    turn that failed after Gemini answered some of its requests was billed for them (``estimated``: a
    request whose answer began and then failed, its usage never reported, counted by the kernel's estimate)."""

    conversation: str
    model: str
    usage: Usage
    failed: bool = False
    estimated: bool = False


@dataclass
class Turn:
    index: int  # 1-based, stable: the footer and %gemini history name turns by it
    mode: Mode
    prompt: str
    state_mode: StateMode
    document_key: DocumentKey | None = None
    document_label: str | None = None
    base_source: str | None = None  # the document when asked: kept locally for diff/undo
    base_sha256: str | None = None
    sent_source: bool = False  # this user turn carried currentSource
    source_patch: str | None = None  # this user turn carried sourcePatch: the document as a patch ...
    patch_base_sha256: str | None = None  # ... against this version, which the model held
    synchronized: bool = False  # this user turn said sourceSynchronized
    pieces: tuple[ContextPiece, ...] = ()  # context sent in full with this turn
    response: str = ""  # the answer, or the proposal's explanation
    proposal_source: str | None = None  # the whole proposal, also when the model answered with edits
    proposal_sha256: str | None = None
    proposal_edits: Edits | None = None  # the model answered with these edits on base_source
    outcome: Outcome = "none"
    interaction_id: str | None = None
    usage: Usage = field(default_factory=Usage)
    saved_tokens: int = 0
    tool_rounds: tuple[ToolRound, ...] = ()  # the functions the model called, each request's calls and results
    agent: bool = False  # asked by %%gemini_agent: its mode is ask (it answers), and it may act
    grounding: Grounding | None = None  # --search: the searches run and the sources the answer cites

    @property
    def magic(self) -> str:
        """The magic that asked the turn, as the footer and %gemini history name it: ask, edit or agent."""
        return "agent" if self.agent else self.mode

    @property
    def holds_valid_proposal(self) -> bool:
        return self.proposal_source is not None and self.outcome in ("proposed", "applied")


@dataclass
class SyncState:
    active_document_sha256: str | None = None
    context_hashes: dict[str, str] = field(default_factory=dict)  # piece key -> sha

    @property
    def secondary_context_hash(self) -> str | None:
        return self.context_hashes.get("secondaryContext")


@dataclass(frozen=True)
class TurnPlan:
    """Everything decided before a request goes out; transports only serialize it."""

    mode: Mode
    prompt: str
    state_mode: StateMode
    document: Document | None
    send_source: bool
    source_patch: str | None  # sent instead of the whole document (a small hand edit)
    patch_base_sha256: str | None
    synchronized: bool
    pieces: tuple[ContextPiece, ...]  # sent in full now
    omitted: tuple[ContextPiece, ...]  # held by the model already: not sent
    previous_interaction_id: str | None
    proposal_outcomes: dict[str, str]  # interactions: outcomes the server was not told yet
    new_chain_digest: tuple[Turn, ...]  # interactions: earlier turns the new chain must learn
    payload: dict[str, Any]  # the current user turn (docs/protocol.md)
    restarted: bool = False  # interactions: a new chain started for its cost, seeded with every earlier turn
    # interactions: the tokens of filler the chain's instruction carries, so that implicit caching can serve a
    # chain under the model's minimum (turn/send.py ``pad``; 0: none); the same on every request of the chain
    chain_pad: int = 0


def _pieces_sent(
    pieces: Sequence[ContextPiece], holds: SyncState
) -> tuple[tuple[ContextPiece, ...], tuple[ContextPiece, ...]]:
    """Rule: a context piece goes only when the model does not hold it as it is (its hash); (sent, omitted)."""
    sent = tuple(p for p in pieces if holds.context_hashes.get(p.key) != p.sha256)
    return sent, tuple(p for p in pieces if p not in sent)


# A seed's keys after its earlier turns: this turn's own, new on every seed (the pieces, before them, change
# only with the notebook)
SEED_LAST = (
    "mode",
    "prompt",
    "currentSource",
    "sourcePatch",
    "sourceSynchronized",
    "supersededSourceSha256",
    "document",
    "proposalOutcomes",
)


def _payload(
    mode: Mode,
    prompt: str,
    document: Document | None,
    send_source: bool,
    patch: str | None,
    synchronized: bool,
    sent: tuple[ContextPiece, ...],
    outcomes: dict[str, str],
    digest: tuple[Turn, ...],
    whole: bool,
) -> dict[str, Any]:
    """The user turn's JSON: the document's label goes with its source or its patch. A new chain's seed puts
    its digest of earlier turns (``whole``: every turn, in full) after the context pieces and before the turn's
    own keys (``SEED_LAST``): what changes least goes first, so the next seed begins as this one did, the prefix
    implicit caching serves (turn/send.py ``restart``)."""
    payload = user_payload(
        mode,
        prompt,
        current_source=document.source if send_source and document is not None else None,
        source_patch=patch,
        synchronized=synchronized,
        pieces=list(sent),
        proposal_outcomes=outcomes,
    )
    if (send_source or patch is not None) and document is not None:
        payload["document"] = document.label
    if digest:
        own = {k: payload.pop(k) for k in SEED_LAST if k in payload}
        payload["earlierTurns"] = [_digested(t, whole) for t in digest]
        payload.update(own)
    return payload


def _digested(turn: Turn, whole: bool) -> dict[str, Any] | list[str]:
    """An earlier turn as a new chain learns it: its prompt and reply (``whole``, or clipped to keep a chain
    started at the input limit small), its outcome, and what it fetched as the calls that fetch it again
    (the results themselves are left out, as contents mode leaves them out). An ask (it has no outcome) is
    the pair ``[question, reply]``, the question as contents mode's faded form: the object's keys were ~15
    of an entry's ~105 tokens, read on every request of the chain."""
    prompt, reply = turn.prompt, turn.response
    if not whole:
        prompt, reply = clip(prompt, DIGEST_PROMPT_CHARS), clip(reply, 400)
    calls = fetched(turn.tool_rounds)
    if turn.mode == "ask" and turn.outcome == "none":
        return [faded_question(prompt, calls) if calls else prompt, reply]
    entry: dict[str, Any] = {"mode": turn.mode, "prompt": prompt, "reply": reply}
    if turn.outcome != "none":
        entry["outcome"] = turn.outcome
    if calls:
        entry["fetched"] = calls
    return entry


def version_chain(history: Sequence[Turn], sha: str | None) -> tuple[Holder, ...] | None:
    """The turns whose material renders version ``sha`` in the app-managed transcript, oldest first.

    The most recent turn (and its side) holding a version in full, then the
    patches sent on top of it; None when no turn renders ``sha``.
    """
    if sha is None:
        return None
    for i in range(len(history) - 1, -1, -1):
        t = history[i]
        if t.holds_valid_proposal and t.proposal_sha256 == sha:
            if t.proposal_edits is None:
                return ((i, "model"),)
            # edits hold their version on top of the one the user side of this turn renders
            held = _user_chain(history, i)
            if held is not None:
                return (*held, (i, "model"))
        if t.base_sha256 == sha and (t.sent_source or t.source_patch is not None):
            held = _user_chain(history, i)
            if held is not None:
                return held
    return None


def _user_chain(history: Sequence[Turn], i: int) -> tuple[Holder, ...] | None:
    """The turns rendering the version turn ``i`` was asked about, up to its user side."""
    t = history[i]
    if t.sent_source:
        return ((i, "user"),)
    if t.source_patch is not None:
        base = version_chain(history[:i], t.patch_base_sha256)
        return None if base is None else (*base, (i, "user"))
    return version_chain(history[:i], t.base_sha256)


def carried_chars(history: Sequence[Turn], chain: Sequence[Holder]) -> int:
    """The patches and edits a version chain carries on top of its full version."""
    return sum(
        len(history[j].source_patch or "") if side == "user" else edits_chars(history[j].proposal_edits or ())
        for j, side in chain
    )


def agent_turn_key(index: int) -> str:
    """How ``proposalOutcomes`` names an agent turn (a proposal is named by its sha256's first 12 digits)."""
    return f"agent turn {index}"


class TransitionRefused(Exception):
    """A click that must not change anything; the message says why."""


@dataclass(frozen=True)
class ChainRent:
    """interactions mode: what re-reading a server chain's excess over a new chain's seed has cost on the chain's
    turns so far (``paid``, at the price table's rates per 1M tokens), and that excess as last weighed
    (``excess``, tokens: what a turn not weighed reads again)."""

    paid: float = 0.0
    excess: int = 0


@dataclass
class Conversation:
    name: str
    state_mode: StateMode = "contents"
    history: list[Turn] = field(default_factory=list)
    sync: SyncState = field(default_factory=SyncState)
    last_interaction_id: str | None = None
    outcomes_told: dict[str, str] = field(default_factory=dict)  # proposal sha12 -> outcome
    # full versions of the code on the server chain, oldest first: (sha, the turn that proposed it or None)
    chain_versions: list[tuple[str, int | None]] = field(default_factory=list)
    # interactions: what re-reading the chain's excess over a new chain's seed has cost on its turns so far
    # (turn/send.py ``restart``); the kernel's own, never recorded
    chain_rent: ChainRent = ChainRent()
    # interactions: the filler the chain's requests carry (``TurnPlan.chain_pad``); the kernel's own, never recorded
    chain_pad: int = 0
    # interactions: the user turn the server chain began with (turn/send.py ``restart`` weighs what a new chain's
    # seed shares with it, which implicit caching serves); the kernel's own, never recorded, and no part of what
    # the conversation holds (a memo for a cost estimate: read back, it is empty and the estimate shares nothing)
    chain_start: dict[str, Any] = field(default_factory=dict, compare=False)
    # contents: a turn of this kernel's left earlier turns out to fit the input limit; each later turn builds
    # its whole request to check it (turn/send.py ``fit``); the kernel's own, never recorded
    compacted: bool = False
    closed: bool = False  # reset or started over: its proposals' buttons do nothing
    # the cell this conversation works on: follow-ups without --cell keep it; an Apply that wrote
    # the code into another cell (the running magic cell in VS Code) moves it there
    document_key: DocumentKey | None = None

    # -- planning -----------------------------------------------------------
    def plan_turn(
        self,
        mode: Mode,
        prompt: str,
        document: Document | None,
        pieces: Sequence[ContextPiece] = (),
        state_mode: StateMode | None = None,
        max_chain_versions: int = 0,
        patches: bool = True,
        restart: bool = False,
    ) -> TurnPlan:
        """What this turn sends, each rule in its step: a new server chain or the same (``_chain_start``), the
        document held as it is (``_synchronized``), sent whole, as a patch or not at all (``_document_sent``),
        the context pieces the model does not hold (``_pieces_sent``), the user turn's JSON (``_payload``)."""
        state_mode = state_mode or self.state_mode
        interactions = state_mode == "interactions"
        new_chain, whole = self._chain_start(interactions, max_chain_versions, restart)
        holds = SyncState() if new_chain else self.sync
        synchronized = self._synchronized(document, holds, interactions)
        send_source, patch = self._document_sent(document, synchronized, patches and not new_chain, interactions)
        sent, omitted = _pieces_sent(pieces, holds)
        continued = interactions and not new_chain  # the server chain goes on: it holds the earlier turns
        outcomes = self._untold_outcomes() if continued else {}
        digest = self._digest(whole) if new_chain else ()
        payload = _payload(mode, prompt, document, send_source, patch, synchronized, sent, outcomes, digest, whole)
        return TurnPlan(
            mode=mode,
            prompt=prompt,
            state_mode=state_mode,
            document=document,
            send_source=send_source,
            source_patch=patch,
            patch_base_sha256=self.sync.active_document_sha256 if patch is not None else None,
            synchronized=synchronized,
            pieces=sent,
            omitted=omitted,
            previous_interaction_id=self.last_interaction_id if continued else None,
            proposal_outcomes=outcomes,
            new_chain_digest=digest,
            payload=payload,
            restarted=new_chain and whole,
        )

    def _chain_start(self, interactions: bool, max_chain_versions: int, restart: bool) -> tuple[bool, bool]:
        """Rule: whether this turn starts a new server chain, and whether its digest is every earlier turn.

        A new chain holds nothing, so everything is sent again: after contents turns, when the server lost
        the chain, when the chain holds more than max_chain_versions full copies of the code (the server
        cannot compact them, and the model reads them all on every turn), or when the send stage found a
        new chain cheaper (``restart``: seeded with every earlier turn, what the model fetched as the calls
        that fetch it again). Only a chain given up for its cost carries every turn (``whole``)."""
        lost = self.last_interaction_id is None and bool(self.history)
        crowded = bool(max_chain_versions) and len(self.chain_versions) > max_chain_versions
        new_chain = interactions and (lost or crowded or (restart and bool(self.history)))
        return new_chain, restart and not (lost or crowded)

    def _synchronized(self, document: Document | None, holds: SyncState, interactions: bool) -> bool:
        """Rule: the model holds this document as it is now: its active version, and in interactions mode the
        server chain's head, in contents mode rendered by the transcript (``_renders``)."""
        if document is None or holds.active_document_sha256 != document.sha256:
            return False
        return document.sha256 == self.chain_head() if interactions else self._renders(document)

    def _document_sent(
        self, document: Document | None, synchronized: bool, patches: bool, interactions: bool
    ) -> tuple[bool, str | None]:
        """Rule: how the document goes with the request (whole, a patch, or not at all): nothing when the model
        holds it as it is; a patch of the user's edits when ``patches`` allows one (never on a new chain) and it
        is small enough (``_hand_edit_patch``); else the whole source."""
        if document is None or synchronized:
            return False, None
        patch = self._hand_edit_patch(document, interactions) if patches else None
        return patch is None, patch

    def _digest(self, whole: bool) -> tuple[Turn, ...]:
        """The earlier turns a new chain is seeded with: every one (``whole``), else the last DIGEST_TURNS."""
        return tuple(self.history) if whole else tuple(self.history[-DIGEST_TURNS:])

    def _renders(self, document: Document) -> bool:
        """The transcript renders the document, with no more patches and edits on it than a new copy costs."""
        chain = version_chain(self.history, document.sha256)
        return chain is not None and carried_chars(self.history, chain) <= PATCH_SHARE * len(document.source)

    def _hand_edit_patch(self, document: Document, interactions: bool) -> str | None:
        """The document as a patch against the version the model holds, when that is small enough.

        Only for the conversation's own document, and only while the model holds
        the active version as its latest: in contents mode the transcript renders
        it (in full, or in full plus earlier patches); in interactions mode it is
        the server chain's head.
        """
        held = self.sync.active_document_sha256
        if interactions and held != self.chain_head():
            return None
        chain = version_chain(self.history, held)
        if chain is None or document.key != self.document_key:
            return None
        if interactions and any(side == "model" for _, side in chain):
            # the server chain keeps the patch while a later Discard or Undo of that proposal is only
            # told afterwards: the model could no longer tell what the patch applies to
            return None
        i, side = chain[-1]
        base = self.history[i].proposal_source if side == "model" else self.history[i].base_source
        if base is None:
            return None
        patch = source_patch(base, document.source)
        patched = carried_chars(self.history, chain)
        return patch if patched + len(patch) <= PATCH_SHARE * len(document.source) else None

    def chain_head(self) -> str | None:
        """The newest version on the server chain (sent whole, patched or proposed) not discarded or undone.

        The model takes the latest code it holds as the current one, so only that
        version can be "synchronized"; any older one must be sent again.
        """
        outcomes = {t.index: t.outcome for t in self.history}
        for sha, proposer in reversed(self.chain_versions):
            if proposer is None or outcomes.get(proposer) not in ("discarded", "undone"):
                return sha
        return None

    def _untold_outcomes(self) -> dict[str, str]:
        told: dict[str, str] = {}
        for t in self.history:
            if t.proposal_sha256 and t.outcome in ("applied", "discarded", "undone"):
                told[t.proposal_sha256[:12]] = t.outcome
            elif t.agent and t.outcome == "undone":  # its changes to the notebook were taken back
                told[agent_turn_key(t.index)] = t.outcome
        # Only what changed since the last interaction: the server has the rest.
        return {k: v for k, v in told.items() if self.outcomes_told.get(k) != v}

    # -- committing ---------------------------------------------------------
    def commit(
        self,
        plan: TurnPlan,
        response: str,
        *,
        proposal_source: str | None = None,
        proposal_edits: Edits | None = None,
        interaction_id: str | None = None,
        usage: Usage = Usage(),
        saved_tokens: int = 0,
        tool_rounds: tuple[ToolRound, ...] = (),
        agent: bool = False,
        grounding: Grounding | None = None,
    ) -> Turn:
        doc = plan.document
        turn = Turn(
            index=(self.history[-1].index + 1) if self.history else 1,
            mode=plan.mode,
            prompt=plan.prompt,
            state_mode=plan.state_mode,
            document_key=doc.key if doc else None,
            document_label=doc.label if doc else None,
            base_source=doc.source if doc else None,
            base_sha256=doc.sha256 if doc else None,
            sent_source=plan.send_source,
            source_patch=plan.source_patch,
            patch_base_sha256=plan.patch_base_sha256,
            synchronized=plan.synchronized,
            pieces=plan.pieces,
            response=response,
            proposal_source=proposal_source,
            proposal_sha256=sha256_text(proposal_source) if proposal_source is not None else None,
            proposal_edits=proposal_edits if proposal_source is not None else None,
            outcome="proposed" if proposal_source is not None else "none",
            interaction_id=interaction_id,
            usage=usage,
            saved_tokens=saved_tokens,
            tool_rounds=tool_rounds,
            agent=agent,
            grounding=grounding,
        )
        if plan.state_mode == "interactions":
            if plan.previous_interaction_id is None:  # a new chain holds only what this turn sends
                self.sync = SyncState()
                self.chain_versions = []
                self.chain_rent = ChainRent()
                self.chain_start = plan.payload
                # the digest told the new chain every outcome so far, as they were when planned
                # (a button clicked while the request was out is told on the next turn)
                told = zip(plan.new_chain_digest, plan.payload.get("earlierTurns", ()), strict=False)
                self.outcomes_told.update(
                    {
                        t.proposal_sha256[:12]: e["outcome"]
                        for t, e in told
                        if t.proposal_sha256 and isinstance(e, dict) and e.get("outcome") not in (None, "proposed")
                    }
                )
            self.last_interaction_id = interaction_id
            self.chain_pad = plan.chain_pad
            self.outcomes_told.update(plan.proposal_outcomes)
            if (turn.sent_source or turn.source_patch is not None) and turn.base_sha256:
                # a patched version counts as one: the chain holds it (as its base and the patch)
                self.chain_versions.append((turn.base_sha256, None))
            if turn.proposal_sha256:
                self.chain_versions.append((turn.proposal_sha256, turn.index))
        else:
            # Contents turns are not on any server chain: a later interactions
            # turn must start a chain that includes them.
            self.last_interaction_id = None
            self.chain_versions = []
            self.chain_rent = ChainRent()
            self.chain_pad = 0
            self.chain_start = {}
        self.state_mode = plan.state_mode
        if turn.proposal_sha256 is not None:
            self.sync.active_document_sha256 = turn.proposal_sha256
        elif doc is not None:
            self.sync.active_document_sha256 = doc.sha256
        for piece in (*plan.pieces, *tool_pieces(tool_rounds)):  # a result the model received, it holds
            self.sync.context_hashes[piece.key] = piece.sha256
        if doc is not None:
            self.document_key = doc.key
        self.history.append(turn)
        if plan.state_mode == "contents":  # a result is left out of the next request: no longer held
            for key in faded_keys(self.history):
                self.sync.context_hashes.pop(key, None)
        return turn

    # -- button transitions -------------------------------------------------
    def owns(self, turn: Turn) -> bool:
        return any(t is turn for t in self.history)

    def refusal(self, action: str, turn: Turn) -> str | None:
        """Why ``action`` on ``turn`` must do nothing, or None when it may proceed."""
        if self.closed or not self.owns(turn):
            return messages.RESET_SINCE.render()
        if turn.proposal_source is None:
            return messages.NO_PROPOSAL_IN_TURN.render()
        later_applied = next((t for t in self.history if t.index > turn.index and t.outcome == "applied"), None)
        if action == "apply":
            if turn.outcome == "applied":
                return messages.ALREADY_APPLIED.render()
            if turn.outcome == "discarded":
                return messages.DISCARDED_SINCE.render()
            if later_applied is not None:
                return messages.NEWER_APPLIED.render(turn=later_applied.index)
        elif action == "discard":
            if turn.outcome != "proposed":
                return messages.NOTHING_TO_DISCARD.render(outcome=turn.outcome)
        elif action == "undo":
            if turn.outcome != "applied":
                return messages.NOTHING_TO_UNDO.render(outcome=turn.outcome)
            if later_applied is not None:
                return messages.UNDO_LATER_FIRST.render(turn=later_applied.index)
        else:
            raise ValueError(action)
        return None

    def _transition(self, action: str, turn: Turn, outcome: Outcome) -> Turn:
        reason = self.refusal(action, turn)
        if reason:
            raise TransitionRefused(reason)
        turn.outcome = outcome
        return turn

    def apply(self, turn: Turn) -> Turn:
        self._transition("apply", turn, "applied")
        self.sync.active_document_sha256 = turn.proposal_sha256
        return turn

    def discard(self, turn: Turn) -> Turn:
        self._transition("discard", turn, "discarded")
        # Only if the model's view is this proposal: a newer turn may have moved on.
        if self.sync.active_document_sha256 == turn.proposal_sha256:
            self.sync.active_document_sha256 = turn.base_sha256
        return turn

    def undo(self, turn: Turn) -> Turn:
        self._transition("undo", turn, "undone")
        self.sync.active_document_sha256 = turn.base_sha256
        return turn

    def agent_undone(self, turn: Turn) -> bool:
        """An agent turn's changes were taken back (its Undo, or the notebook's own undo): its outcome is
        ``undone``, which the next request tells the model; False when the conversation no longer holds it."""
        if not turn.agent or not self.owns(turn):
            return False
        turn.outcome = "undone"
        return True

    def lose_chain(self) -> None:
        """The server forgot the interaction chain: the next turn starts a new one."""
        self.last_interaction_id = None

    def snapshot(self) -> Conversation:
        """A deep enough copy to compare against (tests, reference models)."""
        return replace(
            self,
            history=[replace(t) for t in self.history],
            sync=SyncState(self.sync.active_document_sha256, dict(self.sync.context_hashes)),
            outcomes_told=dict(self.outcomes_told),
            chain_versions=list(self.chain_versions),
        )
