"""The record's schema, checked on load: the one place that decides whether a file is ours.

Three answers besides a record: ``Damaged`` (ours, but truncated, corrupt, of the wrong
shape or with a bad field: set aside, a fresh record starts), ``NotOurs`` (another
writer's file, or a newer genai_magics's record: left untouched, this kernel reads and
writes no record). Every object of the file is checked against a typed shape below
before any of it is used, so a bad value is one line at load, never a traceback in
an ask or in a replayed cell.

Schema 1 grew two optional fields compatibly (``key.settings``, a conversation's
``cache``); an older genai_magics reads them as it always read schema 1.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from typing import Any, Literal, TypedDict, Union

from ..engine.conversation import STATE_MODES, Turn, Usage
from ..engine.record import SCHEMA_VERSION, NotebookRecord, from_data

OURS = b'{"schema":'  # how every record this package writes begins (compact JSON, schema first)


class Damaged(Exception):
    """Our record, unusable: the message says why (it is set aside)."""


class NotOurs(Exception):
    """Another writer's file or a newer schema: the message says which (it is left untouched)."""


Sha = str


class Seconds(float):
    """A time in epoch seconds (the shape of a field, never made): finite, from 1970 to year 5138."""


StateMode = Literal["contents", "interactions"]
assert typing.get_args(StateMode) == STATE_MODES  # one list of state modes


class Piece(TypedDict):
    field: str
    name: str | None
    text: str
    sha256: Sha


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
    turns: list[dict[str, Any]]  # each checked as TURN below


class ConversationShape(_Conversation, total=False):
    cache: Cache


class Record(TypedDict):
    schema: int
    notebook: str
    created: Seconds
    generation: int
    conversations: dict[str, ConversationShape]


# A recorded turn is the engine's Turn as plain data: its simple fields as Turn declares them
# (so a field added there is checked here too), the code by sha, and the replay meta.
_SHARED = {"base_source": "base_sha256", "proposal_source": "proposal_sha256"}
_TURN_HINTS = typing.get_type_hints(Turn)
TURN: dict[str, tuple[Any, bool]] = {
    f.name: (_TURN_HINTS[f.name], f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
    for f in dataclasses.fields(Turn)
    if f.name not in (*_SHARED, "pieces", "usage")
} | {
    "pieces": (list[Piece], True),
    "usage": (Usage, True),
    "key": (Key, False),
    "at": (Seconds, False),
    "after": (After, False),
}


def _fail(path: str, why: str) -> typing.NoReturn:
    raise Damaged(f"of the wrong shape ({path or 'the top level'}: {why})")


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def check(value: Any, shape: Any, path: str = "") -> None:
    """``value`` (parsed JSON) has ``shape`` (a type as the classes above write them), or Damaged."""
    origin, args = typing.get_origin(shape), typing.get_args(shape)
    if shape is Any:
        return
    if shape is None or shape is type(None):
        if value is not None:
            _fail(path, f"{_kind(value)}, not null")
    elif origin in (Union, types.UnionType):
        for option in args:
            try:
                check(value, option, path)
                return
            except Damaged:
                continue
        _fail(path, f"{_kind(value)} {str(value)[:40]!r} is none of {shape}")
    elif origin is Literal:
        if not any(value == a and type(value) is type(a) for a in args):
            _fail(path, f"{str(value)[:40]!r} is not one of {', '.join(map(repr, args))}")
    elif shape in (float, Seconds):
        if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
            _fail(path, f"{_kind(value)} {str(value)[:20]}, not a number")
        if shape is Seconds and not 0 <= value < 1e11:
            _fail(path, f"{value} is not a time")
    elif shape in (int, str, bool):
        if type(value) is not shape:
            _fail(path, f"{_kind(value)}, not {shape.__name__}")
    elif origin is list:
        if not isinstance(value, list):
            _fail(path, f"{_kind(value)}, not a list")
        for i, item in enumerate(value):
            check(item, args[0], f"{path}[{i}]")
    elif origin is tuple:
        if not isinstance(value, list) or len(value) != len(args):
            _fail(path, f"not a list of {len(args)}")
        for i, (item, item_shape) in enumerate(zip(value, args, strict=True)):
            check(item, item_shape, f"{path}[{i}]")
    elif origin is dict:
        if not isinstance(value, dict):
            _fail(path, f"{_kind(value)}, not an object")
        for k, item in value.items():
            check(item, args[1], f"{path}.{k}")
    elif dataclasses.is_dataclass(shape):  # every field has a default: present ones are checked, no others
        hints = typing.get_type_hints(shape)
        _object(value, {f.name: (hints[f.name], False) for f in dataclasses.fields(shape)}, path, closed=True)
    elif typing.is_typeddict(shape):
        hints = typing.get_type_hints(shape)
        _object(value, {k: (hints[k], k in shape.__required_keys__) for k in hints}, path)
    else:  # a shape this module does not know is a bug here, not in the file
        raise TypeError(f"no check for {shape!r}")


def _object(value: Any, fields: dict[str, tuple[Any, bool]], path: str, closed: bool = False) -> None:
    if not isinstance(value, dict):
        _fail(path, f"{_kind(value)}, not an object")
    for name, (shape, required) in fields.items():
        if name in value:
            check(value[name], shape, f"{path}.{name}")
        elif required:
            _fail(path, f"no {name!r}")
    if closed and not set(value) <= set(fields):
        _fail(path, f"unknown field {sorted(set(value) - set(fields))[0]!r}")


def _references(data: dict[str, Any]) -> None:
    """What the shapes cannot say: turns name code that the conversation holds, once each."""
    for name, conv in data["conversations"].items():
        indexes = set()
        for i, turn in enumerate(conv["turns"]):
            _object(turn, TURN, f"conversations.{name}.turns[{i}]")
            if "key" in turn and not {"at", "after"} <= set(turn):  # the replay meta comes whole
                _fail(f"conversations.{name}.turns[{i}]", "a key without its 'at' and 'after'")
            for sha_field in _SHARED.values():
                sha = turn.get(sha_field)
                if sha is not None and sha not in conv["sources"]:
                    _fail(f"conversations.{name}.turns[{i}].{sha_field}", "names code the record does not hold")
            if turn["index"] in indexes:
                _fail(f"conversations.{name}.turns[{i}].index", f"turn {turn['index']} twice")
            indexes.add(turn["index"])


def loads(text: str, private: bool = False) -> NotebookRecord:
    """The record in ``text``, or Damaged / NotOurs saying why not. ``private``: the file is in
    this package's own folder, where nobody else writes (any damage there is to a record of ours)."""
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
        _fail("schema", "missing")
    if data["schema"] > SCHEMA_VERSION:
        raise NotOurs(f"written by a newer genai_magics (schema {data['schema']}, this one reads {SCHEMA_VERSION})")
    check(data, Record)
    _references(data)
    return from_data(data)
