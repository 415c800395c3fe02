"""Damaged and foreign records fed to the store (issue 15, cases 7-9): one line, no traceback,
nothing of another writer renamed; a record that loads replays, reports and saves without error."""

from __future__ import annotations

import copy
import json

import pytest
from helpers.properties import examples
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_record import session

from genai_magics import messages
from genai_magics.engine.conversation import Spent, Usage
from genai_magics.engine.outputs import OUTPUTS_FIELD, ImagePiece, OutputPiece
from genai_magics.engine.record import NotebookRecord, dumps
from genai_magics.engine.replay import branch, document_at_cursor, replay_match, replayed, seek
from genai_magics.persistence.schema import OURS, Damaged, loads
from genai_magics.persistence.store import RecordStore
from genai_magics.ui import report


def valid_text() -> str:
    """A real record: six turns of both modes, one of them with an output text and an image (its bytes kept)."""
    rec, _, _ = session("contents")
    first = rec.conversation.history[0]
    shown = (
        OutputPiece(OUTPUTS_FIELD, "In[2] printed 42", "In[2]", label="In[2]"),
        ImagePiece(OUTPUTS_FIELD, "[image 1]", "In[2]#image1", data=b"\x89PNG tiny", label="In[2]", width=2, height=1),
    )
    first.pieces = (*first.pieces, *shown)
    return dumps(NotebookRecord("/nb.ipynb", 1.0, generation=1, conversations={"default": rec}, images=True))


VALID = valid_text()

json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


def paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from paths(v, (*prefix, i))


ALL_PATHS = list(paths(json.loads(VALID)))[1:]


def retyped(path: tuple, value) -> str:
    """VALID with the value at ``path`` replaced by ``value``."""
    data = json.loads(VALID)
    parent = data
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value
    return json.dumps(data, separators=(",", ":"))


def value_at(path: tuple):
    value = json.loads(VALID)
    for step in path:
        value = value[step]
    return value


# One value of each JSON type: every field of the record given each type it does not have (issue 26, case 6).
WRONG_TYPES = (None, True, 7, 0.5, "s", [], {})
RETYPED = [(p, w) for p in ALL_PATHS for w in WRONG_TYPES if type(value_at(p)) is not type(w)]
# a turn's document_key an object: it passed the check and every write failed in the encoder
DOCUMENT_KEY_AN_OBJECT = ("conversations", "default", "turns", 0, "document_key")


@st.composite
def damaged(draw) -> str:
    data = json.loads(VALID)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(ALL_PATHS))
        parent = data
        try:
            for step in path[:-1]:
                parent = parent[step]
            if draw(st.booleans()) and isinstance(parent, dict):
                parent.pop(path[-1], None)
            else:
                parent[path[-1]] = draw(json_value)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change removed the way there
    return json.dumps(data, separators=(",", ":"))


def schema_last(text: str) -> str:
    """The record ``text`` with its schema field moved to the end: JSON of ours, but not as we write it."""
    data = json.loads(text)
    data["schema"] = data.pop("schema")
    return json.dumps(data, separators=(",", ":"))


def exercise(record: NotebookRecord) -> None:
    """What an ask, Run All and %gemini do with a loaded record."""
    for rec in record.conversations.values():
        conv = rec.conversation
        report.history(conv)
        report.token_table(conv)
        report.status([conv], "m", "contents", "view")
        for turn in list(conv.history):
            meta = rec.meta.get(turn.index)
            document_at_cursor(rec)
            if meta is not None:
                seek(rec, meta.key.magic_cell)
                replay_match(rec, meta.key)
                report.replay_footer(turn, meta.at)
            replayed(rec)
        rec.cursor = min(1, rec.loaded)
        branch(copy.deepcopy(rec))
    dumps(record)


def load(tmp_path, text: str, private: bool):
    path = tmp_path / "record.json"
    for p in tmp_path.iterdir():
        p.unlink()
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    store = RecordStore(path, private=private)
    record, note = store.load()
    if record is not None:
        exercise(record)
    others = sorted(p.name for p in tmp_path.iterdir() if p.name != "record.json.lock")
    return record, note, others, path


def check(tmp_path, text: str, private: bool) -> None:
    record, note, others, path = load(tmp_path, text, private)
    if record is not None:
        assert note is None and others == ["record.json"]
        return
    assert note is not None and "\n" not in note and "Traceback" not in note
    if messages.RECORD_LEFT_UNTOUCHED.matches(note, prefixed=False):
        assert others == ["record.json"] and path.read_text(errors="surrogatepass") == text
    else:
        assert messages.RECORD_SET_ASIDE.matches(note, prefixed=False), note
        assert private or text.encode("utf-8", "surrogatepass").startswith(OURS) or not text.strip(), (
            "another writer's file was renamed"
        )
        assert len(others) == 1 and others[0].endswith(".set-aside")


@settings(max_examples=examples(600), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=damaged(), private=st.booleans())
@example(text=VALID.replace('"conversations":{', '"conversations":[{', 1), private=True)
@example(text=VALID.replace('"at":1.0', '"at":"yesterday"', 1), private=True)
@example(text=VALID.replace('"at":1.0', '"at":1e308', 1), private=True)
@example(text=VALID.replace('"at":1.0', '"at":NaN', 1), private=False)
@example(text=VALID.replace('"schema":1', '"schema":7', 1), private=True)
@example(text=retyped(DOCUMENT_KEY_AN_OBJECT, {}), private=True)
@example(text=retyped(DOCUMENT_KEY_AN_OBJECT, {}), private=False)
# found by this test: our schema field, but last (not how we begin a record), and a field damaged: was set aside
@example(text=schema_last(retyped(("created",), "yesterday")), private=False)
def test_a_damaged_record_is_one_line_never_a_traceback(tmp_path, text, private):
    check(tmp_path, text, private)


def test_every_field_of_a_wrong_type_is_set_aside_at_load_or_works():
    """Every field of a real record, given a value of each other JSON type: the schema check sets the record
    aside, or it loads and an ask, Run All, %gemini and the next write work with it (never a TypeError later)."""
    assert len(RETYPED) > 2_000
    for path, value in RETYPED:
        try:
            record = loads(retyped(path, value), private=True)
        except Damaged:
            continue
        try:
            exercise(record)
        except Exception as exc:  # noqa: BLE001 - the test's report: which field, which value
            raise AssertionError(
                f"{path} = {value!r} passed the schema check, then {type(exc).__name__}: {exc}"
            ) from exc


def test_a_turns_document_key_that_is_an_object_is_set_aside_in_one_line_naming_it(tmp_path):
    record, note, others, _ = load(tmp_path, retyped(DOCUMENT_KEY_AN_OBJECT, {}), private=False)
    assert record is None and messages.RECORD_SET_ASIDE.matches(note, prefixed=False)
    assert "turns[0].document_key" in note and len(others) == 1 and others[0].endswith(".set-aside")


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=json_value, private=st.booleans())
def test_any_other_json_is_one_line_and_another_writers_file_is_never_renamed(tmp_path, value, private):
    check(tmp_path, json.dumps(value), private)


@pytest.mark.parametrize(
    "text",
    [
        "[" * 200_000 + "]" * 200_000,
        '{"schema":1,"notebook":' + "[" * 200_000,
        '{"a":' * 100_000 + "1" + "}" * 100_000,
        VALID[: len(VALID) // 2],
        "",
        "\x00\x01binary",
        '{"schema":1,"x":"\udcff"}',
    ],
    ids=["nested", "ours-nested", "nested-objects", "truncated", "empty", "binary", "surrogate"],
)
@pytest.mark.parametrize("private", [True, False])
def test_huge_nesting_truncation_and_binary_are_one_line(tmp_path, text, private):
    check(tmp_path, text, private)


def test_a_record_written_before_the_ledger_loads_with_its_turns_as_what_was_billed():
    """Schema 1 without ``billed`` (every record before issue 32): its turns' bills are all it knows; the
    ledger a later write adds, and a journal line extends, loads as written."""
    old = json.loads(VALID)
    assert old.pop("billed") == []
    loaded = loads(json.dumps(old))
    turns = loaded.conversations["default"].conversation.history
    assert loaded.billed == [Spent("default", "m", t.usage) for t in turns] and len(turns) == 6
    failed = Spent("gone", "m", Usage(7, 3, 40, requests=2, cost_usd=0.5), failed=True, estimated=True)
    loaded.billed.append(failed)
    again = loads(dumps(loaded))
    assert again.billed == loaded.billed
    line = {
        "base": again.generation,
        "notebook": "/nb.ipynb",
        "conversations": {},
        "billed": [json.loads(dumps(NotebookRecord("", 1.0, billed=[failed])))["billed"][0]],
    }
    journaled = loads(dumps(again), journal=(json.dumps(line) + "\n").encode())
    assert journaled.billed == [*loaded.billed, failed]
    bad = copy.deepcopy(old) | {"billed": [{"conversation": "x", "model": "m", "usage": {"input_tokens": "many"}}]}
    with pytest.raises(Damaged):
        loads(json.dumps(bad))
