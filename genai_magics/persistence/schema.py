"""The record's schema, checked on load: the one place that decides whether a file is ours.

Three answers besides a record: ``Damaged`` (ours, but truncated, corrupt, of the wrong
shape or with a bad field: set aside, a fresh record starts), ``NotOurs`` (another
writer's file, or a newer genai_magics's record: left untouched, this kernel reads and
writes no record). Every object of the file is checked against a typed shape below
before any of it is used, so a bad value is one line at load, never a traceback in
an ask or in a replayed cell.

Schema 1 grew three optional fields compatibly (``key.settings``, a conversation's
``cache``, the record's ``billed`` ledger, which journal lines extend); an older genai_magics
reads them as it always read schema 1 (and its next write drops the ledger: a record without
one is read as its turns' bills, all it then knows).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, TypedDict, Union

from .. import messages
from ..engine.conversation import STATE_MODES, Turn, Usage
from ..engine.record import SCHEMA_VERSION, NotebookRecord, from_data
from ..engine.redaction import redact
from ..engine.text import clip

OURS = b'{"schema":'  # how every record this package writes begins (compact JSON, schema first)
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


class Damaged(Exception):
    """Our record, unusable: the message says why (it is set aside)."""


class NotOurs(Exception):
    """Another writer's file or a newer schema: the message says which (it is left untouched)."""


Sha = str


class Seconds(float):
    """A time in epoch seconds (the shape of a field, never made): finite, from 1970 to year 5138."""


StateMode = Literal["contents", "interactions"]
assert typing.get_args(StateMode) == STATE_MODES  # one list of state modes


class _Piece(TypedDict):
    field: str
    name: str | None
    text: str
    sha256: Sha


class Base64(str):
    """Bytes as base64 text (the shape of a field, never made)."""


class Piece(_Piece, total=False):  # an output piece: label; an image also the rest (engine/outputs.py)
    label: str
    mime_type: str
    data: Base64
    position: int
    width: int
    height: int
    nbytes: int


_IMAGE = ("label", "position", "width", "height", "nbytes")  # what an image piece (mime_type) comes with


# (optional fields in a total=False subclass: Python 3.10 has no NotRequired)
class _Key(TypedDict):
    mode: Literal["ask", "edit"]
    prompt: str
    model: str
    state_mode: StateMode
    flags: list[str]
    magic_cell: str | None
    document_sha256: Sha | None
    pieces: list[tuple[str, Sha]]


class Key(_Key, total=False):
    settings: Sha | None


class _State(TypedDict):
    state_mode: StateMode
    active_document_sha256: Sha | None
    context_hashes: dict[str, Sha]
    last_interaction_id: str | None
    chain_versions: list[tuple[Sha, int | None]]


class State(_State, total=False):
    document_key: str | None


class After(State):
    outcomes_told_new: dict[str, str]


class Cache(TypedDict):
    name: str
    model: str
    head_sha: Sha
    length: int
    tokens: int
    created: Seconds
    expires: Seconds


class _Conversation(State):
    name: str
    created: Seconds
    model: str | None
    outcomes_told: dict[str, str]
    sources: dict[Sha, str]
    turns: list[TurnRecord]


class ConversationShape(_Conversation, total=False):
    cache: Cache


class _Billed(TypedDict):
    conversation: str
    model: str
    usage: Usage


class Billed(_Billed, total=False):  # one entry of the ledger (engine/record.py)
    failed: bool
    estimated: bool


class _Record(TypedDict):
    schema: int
    notebook: str
    created: Seconds
    generation: int
    conversations: dict[str, ConversationShape]


class Record(_Record, total=False):
    billed: list[Billed]


class TurnRecord:
    """The shape of a recorded turn (never made): TURN below."""


class EditShape(TypedDict):  # one of an edit answer's find/replace pairs (engine/edits.py)
    find: str
    replace: str


class ToolResultShape(TypedDict):  # one function call and its result (engine/tools.py)
    id: str | None
    name: str
    args: Any  # as the model sent them
    response: dict[str, Any]
    status: Literal["whole", "unchanged", "error"]
    pieces: list[Piece]
    identity: list[tuple[str, Sha]]


class SourceShape(TypedDict):  # a source a grounded answer cites (engine/grounding.py)
    title: str
    uri: str


class SupportShape(TypedDict):  # a piece of the answer and the sources supporting it
    text: str
    sources: list[int]


class GroundingShape(TypedDict):  # --search: the searches run and the sources cited
    queries: list[str]
    sources: list[SourceShape]
    supports: list[SupportShape]


class ToolRoundShape(TypedDict):
    model_content: dict[str, Any] | None
    results: list[ToolResultShape]


# A recorded turn is the engine's Turn as plain data: its simple fields as Turn declares them
# (so a field added there is checked here too), the code by sha, and the replay meta.
_SHARED = {"base_source": "base_sha256", "proposal_source": "proposal_sha256"}
_TURN_HINTS = typing.get_type_hints(Turn)
TURN: dict[str, tuple[Any, bool]] = {
    f.name: (_TURN_HINTS[f.name], f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
    for f in dataclasses.fields(Turn)
    if f.name not in (*_SHARED, "pieces", "usage", "proposal_edits", "document_key", "tool_rounds", "grounding")
} | {
    "document_key": (str | None, False),  # as stored (engine/cells.py's stored_key): the notebook's is a string
    "pieces": (list[Piece], True),
    "tool_rounds": (list[ToolRoundShape], False),
    "proposal_edits": (list[EditShape], False),
    "grounding": (GroundingShape, False),
    "usage": (Usage, True),
    "key": (Key, False),
    "at": (Seconds, False),
    "after": (After, False),
}


Check = Callable[[Any], "str | None"]  # None, or where and why the value is not of the shape


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _step(key: str) -> str:
    """A key in the path of a message: as is when it is a plain name, else quoted (one line)."""
    return f".{key}" if key.isidentifier() else f"[{_clip(key)}]"


def _clip(value: Any) -> str:
    return clip(redact(repr(value)), 40)  # masked, cut or not: a hand-edited record may hold the key


@functools.cache
def compiled(shape: Any) -> Check:
    """The check of ``shape`` (a type as the classes above write them), built once per shape:
    a record of 500 turns is checked in a few milliseconds, and no path text is made unless
    something fails."""
    origin, args = typing.get_origin(shape), typing.get_args(shape)
    if shape is Any:
        return lambda v: None
    if shape is None or shape is type(None):
        return lambda v: None if v is None else f": {_kind(v)}, not null"
    if origin in (Union, types.UnionType):
        options = [compiled(o) for o in args]
        plain = _plain(shape) or frozenset()

        def union(v: Any) -> str | None:
            if type(v) in plain or any(o(v) is None for o in options):
                return None
            return f": {_kind(v)} {_clip(v)} is none of {shape}"

        return union
    if origin is Literal:
        return lambda v: (
            None if any(v == a and type(v) is type(a) for a in args) else f": {_clip(v)} is not one of {args}"
        )
    if shape in (float, Seconds):
        low, high = (0, 1e11) if shape is Seconds else (-math.inf, math.inf)

        def number(v: Any) -> str | None:
            if type(v) not in (int, float) or not math.isfinite(v):
                return f": {_kind(v)} {_clip(v)}, not a number"
            return None if low <= v < high else f": {v} is not a time"

        return number
    if shape is Base64:
        return lambda v: None if type(v) is str and _BASE64.fullmatch(v) else f": {_kind(v)}, not base64"
    if shape in (int, str, bool):
        return lambda v: None if type(v) is shape else f": {_kind(v)}, not {shape.__name__}"
    if origin is list:
        item = compiled(args[0])

        def each(v: Any) -> str | None:
            if type(v) is not list:
                return f": {_kind(v)}, not a list"
            return next((f"[{i}]{m}" for i, x in enumerate(v) if (m := item(x)) is not None), None)

        return each
    if origin is tuple:
        items = [compiled(a) for a in args]

        def fixed(v: Any) -> str | None:
            if type(v) is not list or len(v) != len(items):
                return f": {_kind(v)}, not a list of {len(items)}"
            found = ((i, c(x)) for i, (c, x) in enumerate(zip(items, v, strict=True)))
            return next((f"[{i}]{m}" for i, m in found if m is not None), None)

        return fixed
    if origin is dict:
        value_check = compiled(args[1])

        def mapping(v: Any) -> str | None:
            if type(v) is not dict:
                return f": {_kind(v)}, not an object"
            return next((f"{_step(k)}{m}" for k, x in v.items() if (m := value_check(x)) is not None), None)

        return mapping
    if shape is TurnRecord:
        return _object(TURN)
    if dataclasses.is_dataclass(shape):  # every field has a default: present ones are checked, no others
        if not dataclasses.fields(shape):  # stored as something else (a marker as its string): say how, above
            raise TypeError(f"no check for {shape!r}: a dataclass without fields is not stored as an object")
        hints = typing.get_type_hints(shape)
        return _object({f.name: (hints[f.name], False) for f in dataclasses.fields(shape)}, closed=True)
    if typing.is_typeddict(shape):
        hints = typing.get_type_hints(shape)
        return _object({k: (hints[k], k in shape.__required_keys__) for k in hints})
    raise TypeError(f"no check for {shape!r}")  # a shape this module does not know: a bug here, not in the file


def _plain(shape: Any) -> frozenset[type] | None:
    """The JSON types a shape of only str, int, bool and null allows (checked without a call)."""
    if shape in (str, int, bool, type(None), None):
        return frozenset({type(None) if shape is None else shape})
    if typing.get_origin(shape) in (Union, types.UnionType):
        parts = [_plain(a) for a in typing.get_args(shape)]
        return frozenset().union(*parts) if all(p is not None for p in parts) else None  # type: ignore[arg-type]
    return None


def _object(fields: dict[str, tuple[Any, bool]], closed: bool = False) -> Check:
    checks = [(name, _plain(shape), compiled(shape), required) for name, (shape, required) in fields.items()]
    known = frozenset(fields)

    def obj(v: Any) -> str | None:
        if type(v) is not dict:
            return f": {_kind(v)}, not an object"
        for name, plain, check, required in checks:
            if name in v:
                value = v[name]
                if plain is not None and type(value) in plain:
                    continue
                if (m := check(value)) is not None:
                    return f".{name}{m}"
            elif required:
                return f": no {name!r}"
        if closed and not known.issuperset(v):
            return f": unknown field {sorted(set(v) - known)[0]!r}"
        if fields is TURN and "key" in v and not ("at" in v and "after" in v):  # the replay meta comes whole
            return ": a key without its 'at' and 'after'"
        if "mime_type" in v and "sha256" in v and not all(k in v for k in _IMAGE):
            return f": an image piece without its {', '.join(k for k in _IMAGE if k not in v)}"
        return None

    return obj


def _fail(where: str) -> typing.NoReturn:
    """``where``: a check's answer, ``.a.b[0]: why`` (or ``: why`` about the whole file)."""
    raise Damaged(
        messages.RECORD_WRONG_SHAPE.render(
            where="the top level" + where if where.startswith(":") else where.lstrip(".")
        )
    )


def _references(data: dict[str, Any]) -> None:
    """What the shapes cannot say: turns name code that the conversation holds, once each."""
    for name, conv in data["conversations"].items():
        indexes = set()
        for i, turn in enumerate(conv["turns"]):
            for sha_field in _SHARED.values():
                sha = turn.get(sha_field)
                if sha is not None and sha not in conv["sources"]:
                    _fail(f"conversations.{name}.turns[{i}].{sha_field}: names code the record does not hold")
            if turn["index"] in indexes:
                _fail(f"conversations.{name}.turns[{i}].index: turn {turn['index']} twice")
            indexes.add(turn["index"])


def journaled(data: Any, journal: bytes) -> Any:
    """The record's data with the journal's lines spliced on (``engine/record.py``, ``journal_line``), in
    order, up to the first that is not whole: a line torn by a power cut or a kill during its write, one
    written for another generation of the record (left from before the record was written whole), or not of
    a line's shape. What a line brings is checked with the rest of the record afterwards."""
    if not isinstance(data, dict) or not isinstance(data.get("conversations"), dict):
        return data  # not a record: the checks say why
    convs = data["conversations"]
    for raw in journal.split(b"\n")[:-1]:  # what follows the last newline is a write that did not end
        try:
            line = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
            break
        spliced = _spliced(line, data.get("generation"), convs)
        if spliced is None:
            break
        billed = line.get("billed", [])
        if not isinstance(billed, list):
            break
        convs.update(spliced)
        data["notebook"] = line["notebook"]
        if billed:
            data.setdefault("billed", []).extend(billed)
    return data


def _spliced(line: Any, generation: Any, convs: dict[str, Any]) -> dict[str, Any] | None:
    """The conversations a journal line changes, as they are after it; None: the line does not apply."""
    if not (isinstance(line, dict) and line.get("base") == generation and type(generation) is int):
        return None
    changed, notebook = line.get("conversations"), line.get("notebook")
    if not (isinstance(changed, dict) and isinstance(notebook, str)):
        return None
    out: dict[str, Any] = {}
    for name, conv in changed.items():
        if not isinstance(conv, dict):
            return None
        old = convs.get(name)
        old_turns = old.get("turns") if isinstance(old, dict) else None
        old_turns = old_turns if isinstance(old_turns, list) else []
        start, sources, turns = conv.pop("from", None), conv.get("sources"), conv.get("turns")
        if type(start) is not int or not 0 <= start <= len(old_turns):
            return None
        if not (isinstance(sources, dict) and isinstance(turns, list)):
            return None
        kept = old.get("sources") if start and isinstance(old, dict) else None
        conv["sources"] = {**kept, **sources} if isinstance(kept, dict) else sources
        conv["turns"] = old_turns[:start] + turns
        out[name] = conv
    return out


def loads(text: str, private: bool = False, journal: bytes = b"") -> NotebookRecord:
    """The record in ``text`` (with its ``journal``'s lines), or Damaged / NotOurs saying why not.
    ``private``: the file is in this package's own folder, where nobody else writes (any damage there is
    to a record of ours)."""
    ours = private or text.encode("utf-8", "surrogatepass").startswith(OURS) or not text.strip()
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        if not ours:
            raise NotOurs("not a genai_magics record (another program's file?)") from None
        why = f"{exc.msg} at character {exc.pos}" if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
        raise Damaged(f"corrupt or truncated ({why})") from None
    if not isinstance(data, dict) or type(data.get("schema")) is not int:
        if not ours:
            raise NotOurs("not a genai_magics record (another program's file?)")
        _fail(": no schema version")
    if data["schema"] > SCHEMA_VERSION:
        raise NotOurs(f"written by a newer genai_magics (schema {data['schema']}, this one reads {SCHEMA_VERSION})")
    try:
        data = journaled(data, journal)
        problem = compiled(Record)(data)
        if problem is not None:
            _fail(problem)
        _references(data)
    except Damaged:
        if not ours:  # JSON with a schema field that does not begin as ours writes it: never set aside
            raise NotOurs("not a genai_magics record (another program's file?)") from None
        raise
    return from_data(data)


compiled(Record)  # built at import: a Turn field of a type this module has no check for fails here, loudly
