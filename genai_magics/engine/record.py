"""A notebook's conversations as plain data: the record's JSON, whole and as a journal line.

Pure: the file, its lock and its location live in ``persistence/``; which recorded turn a
cell replays, and the cursor each conversation keeps for it, in ``engine/replay.py``.
Texts kept from one write to the next are the caller's (``TextMaker``): nothing here
outlives a call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from .cells import key_from_store, stored_key
from .context import ContextPiece
from .conversation import Conversation, Spent, Turn, Usage
from .edits import parse_edits
from .grounding import Grounding
from .outputs import recorded_output, restored_output
from .payloads import compact_json
from .redaction import redact
from .replay import RecordedConversation, TurnKey, TurnMeta, conversation_state, restore_state, told_until
from .tools import round_from_dict, round_to_dict

SCHEMA_VERSION = 1


# -- conversations as plain data ---------------------------------------------
def _piece(d: dict[str, Any]) -> ContextPiece:
    piece = restored_output(d) or ContextPiece(d["field"], d["text"], d.get("name"))
    object.__setattr__(piece, "sha256", d["sha256"])  # the hash of what was sent, before redaction
    return piece


_SHARED = (("base_source", "base_sha256"), ("proposal_source", "proposal_sha256"))


def _turn_dict(t: Turn, sources: dict[str, str], images: bool = False) -> dict[str, Any]:
    """One turn; each version of the code goes into ``sources`` once, turns name it by sha."""
    d = {k: v for k, v in t.__dict__.items() if k not in _OWN_FIELDS}
    if not t.agent:  # written only for an agent turn: other turns stay as they were
        del d["agent"]
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
    if t.grounding is not None:  # written only for a grounded answer: other turns stay as they were
        d["grounding"] = t.grounding.to_json()
    return d


_OWN_FIELDS = frozenset(
    {"pieces", "usage", "base_source", "proposal_source", "proposal_edits", "tool_rounds", "grounding"}
)
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
        grounding=Grounding.from_json(d["grounding"]) if d.get("grounding") else None,
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


def _conversation_text(rec: RecordedConversation, images: bool, made: TextMaker) -> ConversationText:
    """One conversation's JSON, its turns' and versions' texts from ``made``."""
    conv = rec.conversation
    sources: dict[str, str] = {}
    turns: list[str] = []
    for t in conv.history:
        text, named = made.turn(t, rec.meta.get(t.index), images)
        turns.append(text)
        for sha, source in named:
            if sha not in sources:
                sources[sha] = made.source(sha, source)
    head = {
        "name": conv.name,
        "created": rec.created,
        "model": rec.meta[conv.history[-1].index].key.model
        if conv.history and conv.history[-1].index in rec.meta
        else None,
        **conversation_state(conv),
    } | ({"cache": rec.cache} if rec.cache else {})
    return ConversationText(compact_json(head)[:-1], sources, tuple(turns))


TurnText = tuple[str, tuple[tuple[str, str], ...]]  # a turn's JSON text, and (sha, text) of the versions it names


def turn_text(t: Turn, meta: TurnMeta | None, images: bool) -> TurnText:
    """A turn's JSON text (with its meta's) and the versions of the code it names."""
    sources: dict[str, str] = {}
    d = _turn_dict(t, sources, images)
    if meta is not None:
        d |= {"key": meta.key.to_dict(), "at": meta.at, "after": meta.after}
    return compact_json(d), tuple(sources.items())


class TextMaker(Protocol):
    """Where a write gets a turn's text and a version of the code's (by its sha): ``MADE`` makes each anew;
    a caller that writes again and again keeps them (``persistence/texts.py``), so a write costs the new
    turn, not the whole conversation again."""

    def turn(self, t: Turn, meta: TurnMeta | None, images: bool) -> TurnText: ...

    def source(self, sha: str, source: str) -> str: ...


class _Made:
    def turn(self, t: Turn, meta: TurnMeta | None, images: bool) -> TurnText:
        return turn_text(t, meta, images)

    def source(self, sha: str, source: str) -> str:
        return compact_json(source)


MADE: TextMaker = _Made()


def _conversation(d: dict[str, Any]) -> RecordedConversation:
    conv = Conversation(
        name=d["name"], state_mode=d["state_mode"], history=[_turn(t, d["sources"]) for t in d["turns"]]
    )
    restore_state(conv, d)
    meta = {t["index"]: TurnMeta(TurnKey.from_dict(t["key"]), t["at"], t["after"]) for t in d["turns"] if "key" in t}
    rec = RecordedConversation(
        conv, meta, d.get("created", 0.0), loaded=len(conv.history), replayable=len(conv.history), cache=d.get("cache")
    )
    rec.told = told_until(rec, conv.history)
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
    # The ledger: every turn that Gemini billed, committed or failed, in order, of every conversation the
    # record ever held (one started over, reset, branched or forgotten included): what %gemini cost reads.
    billed: list[Spent] = field(default_factory=list)


def conversation_texts(record: NotebookRecord, made: TextMaker = MADE) -> dict[str, ConversationText]:
    """The JSON of every conversation the file holds (one with no turn is left out)."""
    return {
        name: _conversation_text(r, record.images, made)
        for name, r in record.conversations.items()
        if r.conversation.history
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
    return redact(f'{compact_json(head)[:-1]},"conversations":{{{convs}}},"billed":{_ledger(record.billed)}}}')


def _ledger(billed: list[Spent]) -> str:
    """Ledger entries as a JSON list: a turn's conversation, model and usage, ``failed`` and ``estimated``
    only when true."""
    entries = (
        {"conversation": s.conversation, "model": s.model, "usage": dict(vars(s.usage))}
        | ({"failed": True} if s.failed else {})
        | ({"estimated": True} if s.estimated else {})
        for s in billed
    )
    return f"[{','.join(compact_json(e) for e in entries)}]"


def _spent(d: dict[str, Any]) -> Spent:
    return Spent(d["conversation"], d["model"], Usage(**d["usage"]), d.get("failed", False), d.get("estimated", False))


def recorded_spending(convs: dict[str, RecordedConversation]) -> list[Spent]:
    """A record written before the ledger: what its turns were billed (all it knows)."""
    return [
        Spent(name, rec.meta[turn.index].key.model if turn.index in rec.meta else "?", turn.usage)
        for name, rec in convs.items()
        for turn in rec.conversation.history
    ]


def journal_line(
    record: NotebookRecord,
    base: int,
    texts: dict[str, ConversationText],
    before: dict[str, ConversationText],
    billed_before: int = 0,
) -> str | None:
    """What changed since the file held ``before`` (and the first ``billed_before`` entries of the ledger), as
    one line for the record's journal: each conversation that changed, its fields and its turns from the first
    that changed on (with the versions of the code those name that ``before`` did not), and the ledger's new
    entries, to splice onto the record of generation ``base`` (``persistence/schema.py`` reads it). None where
    a conversation the file holds is gone: only a whole record says that."""
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
    billed = f',"billed":{_ledger(record.billed[billed_before:])}' if len(record.billed) > billed_before else ""
    return redact(f'{head},"conversations":{{{",".join(changed)}}}{billed}}}') + "\n"


def from_data(data: dict[str, Any]) -> NotebookRecord:
    """The record from its parsed JSON, which ``persistence/schema.py`` has validated."""
    convs = {name: _conversation(c) for name, c in data["conversations"].items()}
    billed = [_spent(d) for d in data["billed"]] if "billed" in data else recorded_spending(convs)
    return NotebookRecord(data["notebook"], data["created"], data["generation"], convs, billed=billed)


def with_cells_of(record: NotebookRecord, key: str) -> NotebookRecord:
    """The record of a notebook whose cell ids name its file (VS Code's cell URIs, ``<key>#<cell>``) once the
    file was renamed: every such cell id in it names the file as ``key`` does now, its cell part kept (so the
    recorded magic cells and documents are this notebook's cells again)."""
    scheme = key.split(":", 1)[0] + ":"

    def renamed(value: Any) -> Any:
        if isinstance(value, str):
            if not value.startswith(scheme) or any(c.isspace() for c in value):  # a cell id, not a text
                return value
            cell = value.find("#")
            return key + value[cell:] if cell > 0 else value
        if isinstance(value, list):
            return [renamed(v) for v in value]
        if isinstance(value, dict):
            return {renamed(k): renamed(v) for k, v in value.items()}
        return value

    return from_data(renamed(json.loads(dumps(record))))


def generation_of(text: str) -> int | None:
    """The generation of a record's text, or None when it cannot be read."""
    try:
        value = json.loads(text).get("generation")
    except (ValueError, AttributeError, RecursionError):
        return None
    return value if isinstance(value, int) else None
