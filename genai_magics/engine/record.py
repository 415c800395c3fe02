"""A notebook's conversations as plain data, and which recorded turn a cell replays.

Pure: (de)serialization of ``Conversation`` objects and the replay rules; the
file, its lock and its location live in ``persistence/``. After a kernel
restart, the k-th turn a conversation is asked for is compared with its k-th
recorded turn: same magic cell (when the frontend names cells), mode, prompt,
flags, model, state mode, the hashes of the explicit context (last error,
variables) and a document the conversation already knew from that turn on.
Never the execution count: a restarted kernel counts from 1 again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .cells import DocumentKey, key_from_store, stored_key
from .context import SECONDARY_FIELD, ContextPiece
from .conversation import Conversation, SyncState, Turn, Usage
from .edits import parse_edits
from .outputs import held_after_restore, recorded_output, restored_output
from .payloads import compact_json
from .redaction import redact
from .tools import round_from_dict, round_to_dict

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class TurnKey:
    """What makes a cell's turn the same turn as a recorded one."""

    mode: str
    prompt: str
    model: str
    state_mode: str
    flags: tuple[str, ...]  # --cell REF, --notebook, --no-context, --new
    magic_cell: str | None  # the frontend's id of the magic cell (nbformat id, VS Code URI) when known
    document_sha256: str | None
    pieces: tuple[tuple[str, str], ...]  # (key, sha256) of the explicit context: last error, variables
    # the sha256 of everything else that shapes the answer: system instruction, response schema,
    # generation settings (temperature...); None in a record written before it was kept
    settings: str | None = None

    @staticmethod
    def of(
        mode: str,
        prompt: str,
        model: str,
        state_mode: str,
        flags: tuple[str, ...],
        magic_cell: str | None,
        document_sha256: str | None,
        pieces: tuple[ContextPiece, ...],
        settings: str | None = None,
    ) -> TurnKey:
        # The other cells are background that grows as the notebook does: Run All sees
        # its final state, so they are not part of a turn's identity (see README).
        explicit = tuple(sorted((p.key, p.sha256) for p in pieces if p.field != SECONDARY_FIELD))
        return TurnKey(
            mode, prompt, model, state_mode, tuple(sorted(flags)), magic_cell, document_sha256, explicit, settings
        )

    def to_dict(self) -> dict[str, Any]:
        # field by field: dataclasses.asdict's recursive deep copy was a third of a record's write
        d = dict(vars(self))
        d["flags"], d["pieces"] = list(self.flags), [list(p) for p in self.pieces]
        return d

    @staticmethod
    def from_dict(d: dict[str, Any]) -> TurnKey:
        pieces = d["pieces"]
        return TurnKey(
            d["mode"],
            d["prompt"],
            d["model"],
            d["state_mode"],
            tuple(d["flags"]),
            d["magic_cell"],
            d["document_sha256"],
            tuple(map(tuple, pieces)) if pieces else (),
            d.get("settings"),
        )


@dataclass
class TurnMeta:
    key: TurnKey
    at: float  # when the turn finished, epoch seconds
    after: dict[str, Any]  # the conversation's state right after the turn (to branch from it)


@dataclass
class RecordedConversation:
    """One conversation as the record holds it, plus this kernel's replay position."""

    conversation: Conversation
    meta: dict[int, TurnMeta] = field(default_factory=dict)  # turn index -> meta
    created: float = 0.0
    loaded: int = 0  # turns read from the file
    replayable: int = 0  # the first this many turns came from an earlier kernel and may be replayed
    cursor: int = 0  # how many of them this kernel has replayed, in order
    told: dict[str, str] = field(default_factory=dict)  # outcomes told up to the newest meta
    resume_document_key: DocumentKey | None = None  # the conversation's document once every recorded turn replayed
    cache: dict[str, Any] | None = None  # its explicit context cache when the record was written (name, expiry...)
    continued: bool = False  # went live after its last recorded turn, every recorded turn kept


# -- conversations as plain data ---------------------------------------------
def _state(conv: Conversation) -> dict[str, Any]:
    return {
        "state_mode": conv.state_mode,
        "active_document_sha256": conv.sync.active_document_sha256,
        "context_hashes": dict(conv.sync.context_hashes),
        "last_interaction_id": conv.last_interaction_id,
        "outcomes_told": dict(conv.outcomes_told),
        "chain_versions": [list(v) for v in conv.chain_versions],
        "document_key": stored_key(conv.document_key),
    }


def _set_state(conv: Conversation, s: dict[str, Any]) -> None:
    conv.state_mode = s["state_mode"]
    pieces = [p for t in conv.history for p in t.pieces]
    conv.sync = SyncState(s["active_document_sha256"], held_after_restore(s["context_hashes"], s["state_mode"], pieces))
    conv.last_interaction_id = s["last_interaction_id"]
    conv.outcomes_told = dict(s["outcomes_told"])
    conv.chain_versions = [(sha, proposer) for sha, proposer in s["chain_versions"]]
    conv.document_key = key_from_store(s.get("document_key"))


def state_after(conv: Conversation, told: dict[str, str]) -> dict[str, Any]:
    """The conversation's state now, for the meta of the turn it just recorded.

    The outcomes the server was told only grow, so each turn keeps what is new
    since ``told`` (updated here): a 500-turn record stays linear in size.
    """
    state = _state(conv)
    everything = state.pop("outcomes_told")
    state["outcomes_told_new"] = {k: v for k, v in everything.items() if told.get(k) != v}
    told.update(state["outcomes_told_new"])
    return state


def _told_until(rec: RecordedConversation, turns: list[Turn]) -> dict[str, str]:
    told: dict[str, str] = {}
    for t in turns:
        if t.index in rec.meta:
            told.update(rec.meta[t.index].after["outcomes_told_new"])
    return told


def _piece(d: dict[str, Any]) -> ContextPiece:
    piece = restored_output(d) or ContextPiece(d["field"], d["text"], d.get("name"))
    object.__setattr__(piece, "sha256", d["sha256"])  # the hash of what was sent, before redaction
    return piece


_SHARED = (("base_source", "base_sha256"), ("proposal_source", "proposal_sha256"))


def _turn_dict(t: Turn, sources: dict[str, str], images: bool = False) -> dict[str, Any]:
    """One turn; each version of the code goes into ``sources`` once, turns name it by sha."""
    d = {k: v for k, v in t.__dict__.items() if k not in _OWN_FIELDS}
    for text_field, sha_field in _SHARED:
        text = getattr(t, text_field)
        if text is not None:
            sources.setdefault(getattr(t, sha_field), text)

    def piece(p: ContextPiece) -> dict[str, Any]:
        return {"field": p.field, "name": p.name, "text": p.text, "sha256": p.sha256} | recorded_output(p, images)

    d["pieces"] = [piece(p) for p in t.pieces]
    if t.tool_rounds:  # written only when the model called functions: other turns stay as they were
        d["tool_rounds"] = [round_to_dict(r, piece) for r in t.tool_rounds]
    d["usage"] = dict(vars(t.usage))  # plain fields: asdict's deep copy cost ~5% of an edit turn
    d["document_key"] = stored_key(t.document_key)
    if t.proposal_edits is not None:
        d["proposal_edits"] = [e.to_json() for e in t.proposal_edits]
    return d


_OWN_FIELDS = frozenset({"pieces", "usage", "base_source", "proposal_source", "proposal_edits", "tool_rounds"})
_PLAIN_FIELDS = frozenset(Turn.__dataclass_fields__) - _OWN_FIELDS


def _turn(d: dict[str, Any], sources: dict[str, str]) -> Turn:
    fields = {k: d[k] for k in _PLAIN_FIELDS.intersection(d)}
    fields["document_key"] = key_from_store(d.get("document_key"))
    base, proposal = d.get("base_sha256"), d.get("proposal_sha256")
    return Turn(
        **fields,
        base_source=sources[base] if base else None,
        proposal_source=sources[proposal] if proposal else None,
        pieces=tuple(_piece(p) for p in d["pieces"]) if d["pieces"] else (),
        usage=Usage(**d["usage"]),
        proposal_edits=parse_edits(d["proposal_edits"]) if "proposal_edits" in d else None,
        tool_rounds=tuple(round_from_dict(r, _piece) for r in d.get("tool_rounds", ())),
    )


@dataclass(frozen=True)
class ConversationText:
    """One conversation's JSON in its parts: what a journal line compares with what the file holds."""

    head: str  # its own fields: a JSON object's text without the closing brace
    sources: dict[str, str]  # sha -> the JSON text of that version of the code, in the order turns name them
    turns: tuple[str, ...]  # each turn's JSON text

    def text(self) -> str:
        return self._object(self.sources, self.turns)

    def from_turn(self, start: int, sources: dict[str, str]) -> str:
        """Its fields and its turns from ``start`` on, with the versions of the code given: a journal line's."""
        return self._object(sources, self.turns[start:], f',"from":{start}')

    def _object(self, sources: dict[str, str], turns: tuple[str, ...], extra: str = "") -> str:
        listed = ",".join(f"{compact_json(sha)}:{text}" for sha, text in sources.items())
        return f'{self.head}{extra},"sources":{{{listed}}},"turns":[{",".join(turns)}]}}'


def _conversation_text(rec: RecordedConversation, images: bool) -> ConversationText:
    """One conversation's JSON: its turns' texts are made once each (``_turn_text``), so a write costs
    the new turn, not the whole conversation again."""
    conv = rec.conversation
    sources: dict[str, str] = {}
    turns: list[str] = []
    for t in conv.history:
        text, named = _turn_text(t, rec.meta.get(t.index), images)
        turns.append(text)
        for sha, source in named:
            if sha not in sources:
                sources[sha] = _source_text(sha, source)
    head = {
        "name": conv.name,
        "created": rec.created,
        "model": rec.meta[conv.history[-1].index].key.model
        if conv.history and conv.history[-1].index in rec.meta
        else None,
        **_state(conv),
    } | ({"cache": rec.cache} if rec.cache else {})
    return ConversationText(compact_json(head)[:-1], sources, tuple(turns))


TurnText = tuple[str, tuple[tuple[str, str], ...]]  # a turn's JSON text, and (sha, text) of the versions it names


@dataclass
class _Texts:
    """JSON texts kept from one write to the next, bounded by the characters they hold: emptied when over."""

    max_chars: int = 32_000_000
    entries: dict[Any, tuple[Any, Any]] = field(default_factory=dict)
    chars: int = 0

    def get(self, key: Any) -> Any:
        hit = self.entries.get(key)
        return hit[1] if hit is not None else None

    def put(self, key: Any, keep: Any, made: Any, size: int) -> None:
        """``keep``: an object whose id is in ``key``, kept alive while the entry is."""
        if self.chars + size > self.max_chars:
            self.entries.clear()
            self.chars = 0
        self.entries[key] = (keep, made)
        self.chars += size


# (a turn's values, images, its meta) -> its TurnText, keeping the meta's state (its id is in the key); and a
# version of the code's sha -> its JSON text, once for every turn that names it (a long session on a large cell
# names ~200 KB of code a turn)
_TURN_TEXTS = _Texts()
_SOURCE_TEXTS = _Texts()


def _turn_text(t: Turn, meta: TurnMeta | None, images: bool) -> TurnText:
    """A turn's JSON text and the versions of the code it names, made again only when the turn changed (an
    outcome, a usage) or its meta did. Keyed on the turn's values, not the object: a conversation's copy (a
    snapshot, a branch) holds the same texts."""
    key = (tuple(t.__dict__.values()), images, None if meta is None else (meta.key, meta.at, id(meta.after)))
    hit = _TURN_TEXTS.get(key)
    if hit is not None:
        return hit
    sources: dict[str, str] = {}
    d = _turn_dict(t, sources, images)
    if meta is not None:
        d |= {"key": meta.key.to_dict(), "at": meta.at, "after": meta.after}
    made = (compact_json(d), tuple(sources.items()))
    _TURN_TEXTS.put(key, meta and meta.after, made, len(made[0]))
    return made


def _source_text(sha: str, source: str) -> str:
    """A version of the code as JSON text, made once."""
    hit = _SOURCE_TEXTS.get(sha)
    if hit is None:
        hit = compact_json(source)
        _SOURCE_TEXTS.put(sha, None, hit, len(hit))
    return hit


def _conversation(d: dict[str, Any]) -> RecordedConversation:
    conv = Conversation(
        name=d["name"], state_mode=d["state_mode"], history=[_turn(t, d["sources"]) for t in d["turns"]]
    )
    _set_state(conv, d)
    meta = {t["index"]: TurnMeta(TurnKey.from_dict(t["key"]), t["at"], t["after"]) for t in d["turns"] if "key" in t}
    rec = RecordedConversation(
        conv, meta, d.get("created", 0.0), loaded=len(conv.history), replayable=len(conv.history), cache=d.get("cache")
    )
    rec.told = _told_until(rec, conv.history)
    rec.resume_document_key = conv.document_key
    return rec


@dataclass
class NotebookRecord:
    """Everything one notebook's record file holds."""

    notebook: str  # the notebook's path, for %gemini status
    created: float
    generation: int = (
        0  # bumped on every whole write (a journal line names the one it follows): a second kernel is detected
    )
    conversations: dict[str, RecordedConversation] = field(default_factory=dict)
    images: bool = (
        False  # keep the bytes of the images cells showed (GeminiMagics.record_images), not only their hashes
    )


def conversation_texts(record: NotebookRecord) -> dict[str, ConversationText]:
    """The JSON of every conversation the file holds (one with no turn is left out)."""
    return {
        name: _conversation_text(r, record.images) for name, r in record.conversations.items() if r.conversation.history
    }


def dumps(record: NotebookRecord, texts: dict[str, ConversationText] | None = None) -> str:
    """The whole record; ``texts``: its conversations' JSON when already made (``conversation_texts``)."""
    head = {
        "schema": SCHEMA_VERSION,
        "notebook": record.notebook,
        "created": record.created,
        "generation": record.generation,
    }
    texts = conversation_texts(record) if texts is None else texts
    convs = ",".join(f"{compact_json(name)}:{t.text()}" for name, t in texts.items())
    # The API key never lands on disk, even where a cell or a variable held it.
    return redact(f'{compact_json(head)[:-1]},"conversations":{{{convs}}}}}')


def journal_line(
    record: NotebookRecord, base: int, texts: dict[str, ConversationText], before: dict[str, ConversationText]
) -> str | None:
    """What changed since the file held ``before``, as one line for the record's journal: each conversation
    that changed, its fields and its turns from the first that changed on (with the versions of the code those
    name that ``before`` did not), to splice onto the record of generation ``base`` (``persistence/schema.py``
    reads it). None where a conversation the file holds is gone: only a whole record says that."""
    if not before.keys() <= texts.keys():
        return None
    changed: list[str] = []
    for name, now in texts.items():
        was = before.get(name)
        if was is None:
            start, sources = 0, now.sources
        else:
            same = min(len(now.turns), len(was.turns))
            start = next(
                (i for i in range(same) if now.turns[i] is not was.turns[i] and now.turns[i] != was.turns[i]), same
            )
            if start == len(now.turns) == len(was.turns) and now.head == was.head:
                continue
            # from the first turn on the conversation is new: every version it names goes along
            sources = (
                now.sources if start == 0 else {sha: t for sha, t in now.sources.items() if sha not in was.sources}
            )
        changed.append(f"{compact_json(name)}:{now.from_turn(start, sources)}")
    head = compact_json({"base": base, "notebook": record.notebook})[:-1]
    return redact(f'{head},"conversations":{{{",".join(changed)}}}}}') + "\n"


def from_data(data: dict[str, Any]) -> NotebookRecord:
    """The record from its parsed JSON, which ``persistence/schema.py`` has validated."""
    convs = {name: _conversation(c) for name, c in data["conversations"].items()}
    return NotebookRecord(data["notebook"], data["created"], data["generation"], convs)


def generation_of(text: str) -> int | None:
    """The generation of a record's text, or None when it cannot be read."""
    try:
        value = json.loads(text).get("generation")
    except (ValueError, AttributeError, RecursionError):
        return None
    return value if isinstance(value, int) else None


# -- replay ------------------------------------------------------------------
def _versions_from(history: list[Turn], position: int) -> set[str]:
    """Every version of the turn's document the conversation knew from this turn on:
    Run All runs the code cells as they are now, after later Applies and hand edits."""
    key = history[position].document_key
    versions: set[str] = set()
    for t in history[position:]:
        if t.document_key != key:
            continue
        if t.base_sha256:
            versions.add(t.base_sha256)
        if t.proposal_sha256 and t.outcome == "applied":
            versions.add(t.proposal_sha256)
    return versions


def replay_match(rec: RecordedConversation, key: TurnKey) -> Turn | None:
    """The recorded turn this cell replays, or None (the cell goes live)."""
    if rec.cursor >= rec.replayable:
        return None
    turn = rec.conversation.history[rec.cursor]
    meta = rec.meta.get(turn.index)
    if meta is None:
        return None
    was = meta.key
    same = (was.mode, was.prompt, was.model, was.state_mode, was.flags, was.pieces) == (
        key.mode,
        key.prompt,
        key.model,
        key.state_mode,
        key.flags,
        key.pieces,
    )
    if not same or (was.magic_cell and key.magic_cell and was.magic_cell != key.magic_cell):
        return None
    if was.settings is not None and was.settings != key.settings:  # another temperature, instruction...
        return None
    if (key.document_sha256 is None) != (was.document_sha256 is None):
        return None
    if key.document_sha256 is not None and key.document_sha256 not in _versions_from(
        rec.conversation.history, rec.cursor
    ):
        return None
    return turn


def seek(rec: RecordedConversation, magic_cell: str | None) -> bool:
    """Where the frontend names cells, this magic cell's recorded turn is the replay position
    (after a restart cells may run in another order than they were recorded). False: the record
    names its cells and none still to replay is this one, so the cell is a new turn after the
    last recorded one (only a recorded cell re-run with other inputs branches, in ``branch``)."""
    if magic_cell is None or rec.cursor >= rec.replayable:
        return True
    ahead = rec.conversation.history[rec.cursor : rec.replayable]
    cells = [rec.meta[t.index].key.magic_cell if t.index in rec.meta else None for t in ahead]
    if magic_cell in cells:
        rec.cursor += cells.index(magic_cell)
        return True
    return not any(cells)  # recorded without cell ids: the order alone decides (replay_match)


def continue_after_record(rec: RecordedConversation) -> None:
    """Replay ends here; the conversation goes on from its last recorded turn, all of them kept."""
    rec.replayable = rec.cursor
    rec.continued = True
    rec.conversation.document_key = rec.resume_document_key


def document_at_cursor(rec: RecordedConversation) -> None:
    """While replaying, the conversation's document is the one it had before the next recorded
    turn (follow-ups without --cell resolve to it), so Run All resolves each cell as then."""
    conv, at = rec.conversation, rec.cursor
    if at >= rec.replayable:
        return
    before = rec.meta.get(conv.history[at - 1].index) if at else None
    conv.document_key = key_from_store(before.after.get("document_key")) if before else None


def replayed(rec: RecordedConversation) -> None:
    """One more recorded turn was shown; after the last one the conversation resumes as recorded."""
    rec.cursor += 1
    if rec.cursor == rec.replayable == rec.loaded:
        rec.conversation.document_key = rec.resume_document_key


def branch(rec: RecordedConversation) -> None:
    """A cell went live at the replay position: the recorded turns from there on are
    replaced, as re-running the notebook from that cell would; the conversation
    continues from the last replayed turn (its state, its interaction id)."""
    conv, keep = rec.conversation, rec.cursor
    rec.replayable = keep
    if keep >= len(conv.history):
        conv.document_key = rec.resume_document_key
        return  # every recorded turn was replayed: continue from the end
    dropped = conv.history[keep:]
    conv.history = conv.history[:keep]
    for t in dropped:
        rec.meta.pop(t.index, None)
    # the state after the last kept turn the record has it for (a turn recorded before
    # the record was on has none)
    last = next((rec.meta[t.index] for t in reversed(conv.history) if t.index in rec.meta), None)
    if last is None:
        rec.told = {}
        _set_state(conv, _state(Conversation(conv.name, conv.state_mode)))
        return
    rec.told = _told_until(rec, conv.history)
    _set_state(conv, last.after | {"outcomes_told": rec.told})
    # What happened to a kept proposal later (Discard, Undo) still holds.
    for t in conv.history:
        if t.outcome in ("discarded", "undone") and conv.sync.active_document_sha256 == t.proposal_sha256:
            conv.sync.active_document_sha256 = t.base_sha256
