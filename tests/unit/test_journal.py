"""The record's journal (persistence/store.py, engine/record.py's journal_line): a write after a kernel's
first appends one line of what changed; what the next kernel reads is what a whole write would have held,
after any sequence of turns, clicks and conversations, and after a kill or a power cut at any step."""

from __future__ import annotations

import json
import os
import tempfile
import threading
from pathlib import Path

import pytest
from helpers.properties import examples
from helpers.record import data_on_disk, on_disk, text_on_disk
from hypothesis import given, settings
from hypothesis import strategies as st

from genai_magics import messages
from genai_magics.engine.cells import Document
from genai_magics.engine.context import ContextPiece
from genai_magics.engine.conversation import Conversation, Spent, Usage
from genai_magics.engine.record import NotebookRecord, dumps
from genai_magics.engine.replay import RecordedConversation, TurnKey, TurnMeta, state_after
from genai_magics.persistence import store as store_module
from genai_magics.persistence.store import RecordStore

CODE = "def f(x):\n    return x\n"


def add_turn(rec: RecordedConversation, mode: str, i: int) -> None:
    """One turn as a cell commits it: an edit proposes a line more than the code the conversation holds."""
    conv = rec.conversation
    last = next((t for t in reversed(conv.history) if t.outcome == "applied"), None)
    source = last.proposal_source if last is not None and last.proposal_source else CODE
    doc = Document("cell-a", "In[2]", source)
    pieces = [ContextPiece("secondaryContext", f"other cells {i % 3}\n" * 40)]
    plan = conv.plan_turn(mode, f"prompt {i}", doc, pieces)  # type: ignore[arg-type]
    usage = Usage(10, 2, 100)
    if mode == "edit":
        turn = conv.commit(plan, f"explain {i}", proposal_source=source + f"# edit {i}\n", usage=usage)
    else:
        turn = conv.commit(plan, f"answer {i}", usage=usage)
    key = TurnKey.of(mode, f"prompt {i}", "m", conv.state_mode, (), f"magic-{i}", doc.sha256, tuple(pieces))
    rec.meta[turn.index] = TurnMeta(key, 1_700_000_000.0 + i, state_after(conv, rec.told))


def a_record(names: tuple[str, ...] = ("k",), turns: int = 1) -> NotebookRecord:
    record = NotebookRecord("/nb.ipynb", 1_700_000_000.0)
    for name in names:
        rec = record.conversations[name] = RecordedConversation(Conversation(name), created=1_700_000_000.0)
        for i in range(turns):
            add_turn(rec, "edit" if i % 2 else "ask", i)
    return record


def holds(path: Path, record: NotebookRecord) -> None:
    """The files hold what a whole write of ``record`` would: a line keeps the versions of the code the
    record held before (one that no turn names any more is left there), everything else the same."""
    got, whole = data_on_disk(path), json.loads(dumps(record))
    for name, conv in whole["conversations"].items():
        assert name in got["conversations"], name
        kept = got["conversations"][name]["sources"]
        assert conv["sources"].items() <= kept.items(), name
        got["conversations"][name]["sources"] = conv["sources"]
    assert got == whole


def histories(record: NotebookRecord) -> dict[str, object]:
    return {name: rec.conversation.snapshot() for name, rec in record.conversations.items() if rec.conversation.history}


OPS = st.lists(
    st.tuples(
        st.sampled_from(
            ["ask", "edit", "apply", "discard", "undo", "usage", "cache", "new", "forget", "reload", "failed"]
        ),
        st.sampled_from(["a", "b"]),
        st.integers(0, 20),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=examples(120), deadline=None)
@given(OPS)
def test_after_any_sequence_of_writes_the_files_hold_what_a_whole_write_would(ops):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "r.json"
        store, record = RecordStore(path, private=True), a_record(("a",))
        assert store.load() == (None, None) and store.save(record) is None
        for i, (op, name, k) in enumerate(ops):
            rec = record.conversations.get(name)
            if rec is None or op == "new":  # a new conversation, or one started over with --new
                rec = record.conversations[name] = RecordedConversation(Conversation(name), created=float(i))
            turns = rec.conversation.history
            if op in ("ask", "edit"):
                add_turn(rec, op, 100 + i)
            elif op in ("apply", "discard", "undo") and turns:
                turn = turns[k % len(turns)]
                if rec.conversation.refusal(op, turn) is None:
                    getattr(rec.conversation, op)(turn)
            elif op == "usage" and turns:
                turns[k % len(turns)].usage = Usage(k, i, 10 * k)
            elif op == "cache":
                rec.cache = (
                    None
                    if k % 3 == 0
                    else {
                        "name": f"cachedContents/c{k}",
                        "model": "m",
                        "head_sha": "0" * 64,
                        "length": k,
                        "tokens": 4096 + k,
                        "created": 1_700_000_000.0,
                        "expires": 1_700_000_600.0,
                    }
                )
            elif op == "forget":
                del record.conversations[name]
            elif op == "failed":  # a turn that failed after a billed request: the ledger's alone
                record.billed.append(Spent(name, "m", Usage(k, i, requests=2), failed=True, estimated=k % 2 == 0))
            elif op == "reload":  # a kernel restart: the next kernel reads the files and writes on
                store.wait()
                store = RecordStore(path, private=True)
                loaded, note = store.load()
                assert note is None and loaded is not None and histories(loaded) == histories(record)
                assert loaded.billed == record.billed
                record = loaded
            assert store.save(record) is None
            holds(path, record)
        store.wait()
        loaded, note = RecordStore(path, private=True).load()
        assert note is None and loaded is not None and histories(loaded) == histories(record)


def test_a_write_after_the_first_is_one_line_and_the_record_is_written_whole_once_the_journal_grew(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(store_module, "JOURNAL_FLOOR", 0)  # the journal may grow to the record's size
    path = tmp_path / "r.json"
    store, record = RecordStore(path, private=True), a_record(turns=4)
    store.save(record)
    generations, whole_writes = [], 0
    for i in range(40):
        add_turn(record.conversations["k"], "ask", 10 + i)
        before = store.generation
        assert store.save(record) is None
        whole_writes += store.generation != before
        if store.generation == before:
            assert store.journal.exists() and b"\n" in store.journal.read_bytes()
        assert store.journal.stat().st_size <= path.stat().st_size if store.journal.exists() else True
        generations.append(store.generation)
        holds(path, record)
    assert 2 <= whole_writes <= 20, generations  # the record (4 turns, then more) is rewritten now and then
    # the next kernel's first write is whole: the journal it read is in the record then
    store.wait()
    again = RecordStore(path, private=True)
    loaded, _ = again.load()
    assert loaded is not None and again.save(loaded) is None and again.generation == store.generation + 1
    again.wait()
    assert not again.journal.exists() and not again.prev_journal.exists() and not again.prev.exists()
    holds(path, loaded)


def test_a_line_torn_by_a_power_cut_is_not_read_and_the_next_write_is_whole(tmp_path):
    path = tmp_path / "r.json"
    store, record = RecordStore(path, private=True), a_record(turns=2)
    store.save(record)
    for i in (2, 3):
        add_turn(record.conversations["k"], "edit", i)
        store.save(record)
    store.wait()
    expected = histories(record)
    torn = b'{"base":1,"notebook":"/nb.ipynb","conversations":{"k":{"name":"k","created":1700000000.0,"mod'
    with open(store.journal, "ab") as f:
        f.write(torn)  # the power went while the next line was written
    again = RecordStore(path, private=True)
    loaded, note = again.load()
    assert note is None and loaded is not None and histories(loaded) == expected
    add_turn(loaded.conversations["k"], "ask", 4)
    assert again.save(loaded) is None and again.generation == 2, "written whole"
    again.wait()
    assert torn.decode() not in text_on_disk(path)
    holds(path, loaded)


@pytest.mark.parametrize("step", ["the record moved to .prev", "its journal moved to .prev.journal"])
def test_a_kill_between_a_whole_writes_renames_leaves_every_line_with_its_record(tmp_path, step):
    path = tmp_path / "r.json"
    store, record = RecordStore(path, private=True), a_record(("a", "b"), turns=2)
    store.save(record)
    for i in (2, 3):
        add_turn(record.conversations["b"], "edit", i)
        store.save(record)
    store.wait()
    expected = histories(record)
    with store._lock.held():  # a whole write, killed before the new record took the record's name
        os.replace(path, store.prev)
        if step.startswith("its journal"):
            os.replace(store.journal, store.prev_journal)
    again = RecordStore(path, private=True)
    loaded, note = again.load()
    assert note is None and loaded is not None and histories(loaded) == expected
    assert path.exists() and not again.prev.exists() and again.journal.exists()
    assert again.save(loaded) is None
    again.wait()
    holds(path, loaded)


def test_a_power_cut_before_a_whole_writes_flush_ended_falls_back_to_the_record_and_journal_before_it(tmp_path):
    path = tmp_path / "r.json"
    store, record = RecordStore(path, private=True), a_record(("a", "b"), turns=2)
    store.save(record)
    add_turn(record.conversations["a"], "edit", 2)
    store.save(record)  # a line
    store.wait()
    expected = histories(record)
    release = threading.Event()
    store_module._FLUSHER.submit(lambda: release.wait(10))  # a slow disk: no flush ends until released
    try:
        del record.conversations["b"]
        assert store.save(record) is None and store.generation == 2, "a conversation gone: written whole"
        add_turn(record.conversations["a"], "ask", 3)
        assert store.save(record) is None and store.generation == 2 and store.journal.exists()
        assert store.prev.exists() and store.prev_journal.exists(), "kept until the whole write is flushed"
        path.write_bytes(path.read_bytes()[:100])  # ... and the power went before it reached the disk
        loaded, note = RecordStore(path, private=True).load()
        assert note is None and loaded is not None and histories(loaded) == expected, "the last record on the disk"
    finally:
        release.set()


def test_lines_left_beside_a_newer_record_are_not_read(tmp_path):
    """A kill after a whole write renamed the new record into place but before its old journal was gone
    (a flush pending) leaves lines written for the record before: they name its generation, not this one."""
    path = tmp_path / "r.json"
    store, record = RecordStore(path, private=True), a_record(("a", "b"), turns=2)
    store.save(record)
    add_turn(record.conversations["b"], "edit", 2)
    store.save(record)
    old_lines = store.journal.read_bytes()
    del record.conversations["b"]
    store.save(record)  # written whole, without b
    store.wait()
    store.journal.write_bytes(old_lines)
    loaded, note = RecordStore(path, private=True).load()
    assert note is None and loaded is not None and histories(loaded) == histories(record)
    assert list(loaded.conversations) == ["a"]


def test_a_line_another_kernel_appended_after_this_ones_load_is_seen(tmp_path):
    path = tmp_path / "r.json"
    mine, record = RecordStore(path, private=True), a_record(turns=2)
    mine.save(record)
    add_turn(record.conversations["k"], "ask", 2)
    mine.save(record)
    theirs = RecordStore(path, private=True)
    their_record, _ = theirs.load()
    assert their_record is not None
    add_turn(record.conversations["k"], "ask", 3)
    assert mine.save(record) is None and mine.generation == 1, "a line"
    written = text_on_disk(path)
    add_turn(their_record.conversations["k"], "edit", 9)
    assert messages.RECORD_LOST.matches(theirs.save(their_record) or "", prefixed=False)
    assert text_on_disk(path) == written, "the kernel that lost the record writes nothing"
    # and the other way round: a whole write by another kernel stops this kernel's lines
    other = RecordStore(path, private=True)
    other_record, _ = other.load()
    assert other_record is not None and other.save(other_record) is None and other.generation == 2
    add_turn(record.conversations["k"], "ask", 4)
    assert messages.RECORD_LOST.matches(mine.save(record) or "", prefixed=False)
    holds(path, other_record)


def test_forget_all_deletes_the_journal_and_a_damaged_record_is_set_aside_with_it(tmp_path):
    path = tmp_path / "r.json"
    store, record = RecordStore(path, private=True), a_record(turns=2)
    store.save(record)
    add_turn(record.conversations["k"], "ask", 2)
    store.save(record)
    assert store.journal.exists()
    store.delete()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json.lock"]

    store = RecordStore(path, private=True)
    store.load()
    store.save(record)
    add_turn(record.conversations["k"], "ask", 3)
    store.save(record)
    store.wait()
    lines = store.journal.read_bytes()
    path.write_text("\x00 not json")
    again = RecordStore(path, private=True)
    loaded, note = again.load()
    assert loaded is None and note is not None and "set aside" in note
    assert not again.journal.exists()
    aside = [p for p in tmp_path.iterdir() if p.name.endswith(".set-aside.journal")]
    assert len(aside) == 1 and aside[0].read_bytes() == lines
    assert again.save(a_record()) is None and again.generation == 1


def test_a_key_seen_after_a_line_held_it_is_masked_everywhere_by_the_next_write(tmp_path, monkeypatch):
    key = "AIzaSyJournalKey0123456789abcdefghijklmnop"
    path = tmp_path / "r.json"
    store, record = RecordStore(path, private=True), a_record(turns=2)
    store.save(record)
    add_turn(record.conversations["k"], "ask", 2)
    record.conversations["k"].conversation.history[-1].prompt = f"is {key} safe?"
    store.save(record)  # a line: the key is not known as one yet
    assert key in store.journal.read_text()
    monkeypatch.setenv("GOOGLE_API_KEY", key)  # set in the kernel now (a cell, a rotation)
    add_turn(record.conversations["k"], "ask", 3)
    assert store.save(record) is None and store.generation == 2, "written whole"
    store.wait()
    assert key not in text_on_disk(path) and "is *** safe?" in text_on_disk(path)


def test_a_record_beside_the_notebook_or_at_a_named_path_is_one_file_written_whole(tmp_path):
    path = tmp_path / "work.genai_magics.json"
    store, record = RecordStore(path), a_record(turns=2)  # not the private folder: the file is moved, shared
    for i in range(3):
        add_turn(record.conversations["k"], "ask", 10 + i)
        assert store.save(record) is None and store.generation == i + 1
    store.wait()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work.genai_magics.json", "work.genai_magics.json.lock"]
    assert len(on_disk(path).conversations["k"].conversation.history) == 5
