"""The record file under contention: kernels writing at the same moment never interleave."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest
from helpers.record import on_disk

from genai_magics import messages
from genai_magics.engine.cells import Document
from genai_magics.engine.conversation import Conversation
from genai_magics.engine.record import NotebookRecord, dumps
from genai_magics.engine.replay import RecordedConversation, TurnKey, TurnMeta, state_after
from genai_magics.persistence.schema import loads
from genai_magics.persistence.store import RecordStore, record_path


def a_record(name: str, turns: int) -> NotebookRecord:
    conv = Conversation(name)
    rec = RecordedConversation(conv, created=time.time())
    for i in range(turns):
        doc = Document("c", "In[1]", f"x = {i}\n" * 200)
        conv.commit(conv.plan_turn("ask", f"{name} {i}", doc), "answer " * 50)
        rec.meta[i + 1] = TurnMeta(
            TurnKey.of("ask", f"{name} {i}", "m", "contents", (), None, doc.sha256, ()),
            time.time(),
            state_after(conv, rec.told),
        )
    return NotebookRecord("/nb.ipynb", time.time(), conversations={name: rec})


def test_two_writers_at_the_same_moment_one_wins_the_file_is_always_whole(tmp_path):
    path = tmp_path / "r.json"
    for round_ in range(20):
        path.unlink(missing_ok=True)
        stores = [RecordStore(path), RecordStore(path)]
        for s in stores:
            assert s.load() == (None, None)
        records = [a_record(f"k{i}", 30) for i in range(2)]
        notes: list = [None, None]
        start = threading.Barrier(2)

        def write(i: int, start=start, stores=stores, records=records, notes=notes) -> None:
            start.wait()
            notes[i] = stores[i].save(records[i])

        threads = [threading.Thread(target=write, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        lost = [i for i in range(2) if notes[i] is not None]
        assert len(lost) == 1 and messages.RECORD_LOST.matches(notes[lost[0]], prefixed=False), (round_, notes)
        winner = 1 - lost[0]
        held = on_disk(path)
        assert list(held.conversations) == [f"k{winner}"] and held.generation == 1
        assert stores[lost[0]].save(records[lost[0]]) is None, "the loser says it once and writes nothing"
        assert list(on_disk(path).conversations) == [f"k{winner}"]
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".tmp"] == []


def test_the_record_is_private_by_default(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    nb = tmp_path / "work.ipynb"
    path = record_path("user", nb)
    assert path.parent == tmp_path / "data" / "genai_magics" / "records" and nb.name not in path.name
    assert record_path("user", None) is None and record_path("notebook", None) is None
    assert record_path("notebook", nb) == tmp_path / "work.genai_magics.json"
    assert record_path(str(tmp_path / "ci.json"), None) == tmp_path / "ci.json"
    store = RecordStore(path, private=True)  # as the magics make it for this location
    store.save(a_record("k", 1))
    store.save(a_record("k", 2))  # a journal line
    assert path.stat().st_mode & 0o077 == 0 and path.parent.stat().st_mode & 0o077 == 0
    assert store.journal.stat().st_mode & 0o077 == 0
    assert json.loads(path.read_text())["schema"] == 1


def test_a_write_by_another_kernel_after_this_ones_own_write_is_still_seen(tmp_path):
    path = tmp_path / "r.json"
    mine, theirs = RecordStore(path), RecordStore(path)
    assert mine.save(a_record("mine", 2)) is None
    assert mine.save(a_record("mine", 3)) is None  # its own file, unchanged since: written without a re-read
    assert theirs.load()[0] is not None and theirs.save(a_record("theirs", 2)) is None
    assert messages.RECORD_LOST.matches(mine.save(a_record("mine", 4)) or "", prefixed=False)
    assert list(on_disk(path).conversations) == ["theirs"]


def test_a_write_is_the_record_at_once_and_its_flush_to_the_disk_keeps_the_one_before_until_it_ends(tmp_path):
    path = tmp_path / "r.json"
    store = RecordStore(path)
    assert store.save(a_record("k", 1)) is None and not store.prev.exists(), "nothing to fall back to yet"
    assert store.save(a_record("k", 2)) is None
    assert len(on_disk(path).conversations["k"].conversation.history) == 2  # renamed over already
    store.wait()
    assert not store.prev.exists(), "flushed: the record before it is let go"
    assert [p.name for p in tmp_path.iterdir() if p.suffix in (".tmp", ".prev")] == []


@pytest.mark.parametrize("torn", [b"", b'{"schema":1,"notebook":"/nb.ipynb","conv'], ids=["empty", "half"])
def test_a_record_torn_by_a_power_cut_before_its_flush_ended_gives_way_to_the_one_before(tmp_path, torn):
    path = tmp_path / "r.json"
    store = RecordStore(path, private=True)
    store.save(a_record("k", 1))
    store.wait()
    os.link(path, store.prev)  # the state a write leaves until its flush ends: the record before it as .prev
    path.unlink()
    path.write_bytes(torn)  # ... and the power went before the new one reached the disk
    again = RecordStore(path, private=True)
    record, note = again.load()
    assert note is None and record is not None and len(record.conversations["k"].conversation.history) == 1
    assert not again.prev.exists() and again.save(a_record("k", 2)) is None  # and it goes on from there


def test_a_whole_record_beside_a_stale_prev_is_kept(tmp_path):
    path = tmp_path / "r.json"
    store = RecordStore(path)
    store.save(a_record("k", 1))
    store.save(a_record("k", 2))
    store.wait()
    os.link(path, store.prev)  # a crash after the flush, before .prev was let go
    record, note = RecordStore(path).load()
    assert note is None and record is not None and len(record.conversations["k"].conversation.history) == 2
    assert not store.prev.exists()


def test_writes_in_a_row_do_not_wait_for_the_flush_before_them_and_prev_stays_a_flushed_record(tmp_path):
    from genai_magics.persistence.store import _FLUSHER

    path = tmp_path / "r.json"
    store = RecordStore(path, private=True)
    store.save(a_record("k", 1))  # the first write is flushed before its rename: nothing to fall back to
    release = threading.Event()
    _FLUSHER.submit(lambda: release.wait(10))  # a slow disk: no flush ends until released
    try:
        started = time.monotonic()
        for turns in (2, 3, 4):  # each without the conversation before: written whole
            assert store.save(a_record(f"k{turns}", turns)) is None
            assert store.save(a_record(f"k{turns}", turns + 1)) is None  # and a journal line
        assert time.monotonic() - started < 5, "a write waited for the flush before it"
        assert len(on_disk(path).conversations["k4"].conversation.history) == 5
        kept = loads(store.prev.read_text())
        assert list(kept.conversations) == ["k"], "the last record known on the disk"
        assert not store.prev_journal.exists(), "and its journal: none"
    finally:
        release.set()
    store.wait()
    assert not store.prev.exists(), "every write flushed: .prev let go"
    record, note = RecordStore(path, private=True).load()
    assert note is None and len(record.conversations["k4"].conversation.history) == 5


def test_a_load_between_a_writes_two_renames_waits_for_the_new_record_and_a_kill_there_leaves_the_old(tmp_path):
    """A write renames the record to .prev, then the new one to the record's name: a kernel loading in that
    moment (another kernel on the same notebook) waits for the writer's lock and reads the new record; a
    writer killed in that moment leaves only .prev, which the next load puts back."""
    path = tmp_path / "r.json"
    store = RecordStore(path, private=True)
    store.save(a_record("k", 1))
    store.save(a_record("k", 2))
    store.wait()
    new = tmp_path / "new.tmp"
    new.write_text(dumps(a_record("k", 3)))
    got: list = []
    with RecordStore(path)._lock.held():  # the writer, between its renames
        os.replace(path, store.prev)
        reader = threading.Thread(target=lambda: got.append(RecordStore(path, private=True).load()))
        reader.start()
        reader.join(0.5)
        assert reader.is_alive() and not got, "the load did not wait for the writer"
        os.replace(new, path)
    reader.join(10)
    record, note = got[0]
    assert note is None and len(record.conversations["k"].conversation.history) == 3

    os.replace(path, store.prev)  # killed between the renames: no record, only .prev
    record, note = RecordStore(path, private=True).load()
    assert note is None and len(record.conversations["k"].conversation.history) == 3
    assert path.exists() and not store.prev.exists()


@pytest.mark.parametrize("dangling", [False, True], ids=["target-there", "target-not-yet"])
def test_a_record_at_a_symbolic_link_is_written_through_to_its_target(tmp_path, dangling):
    """Issue 26, case 4: the shared target updates at every write and the link stays a link; the temporary
    file, .prev and the lock live beside the target (a rename there), nothing beside the link."""
    shared, mine = tmp_path / "shared", tmp_path / "mine"
    shared.mkdir()
    mine.mkdir()
    target, link = shared / "team.json", mine / "team.json"
    link.symlink_to(os.path.relpath(target, mine))  # relative, as `ln -s ../shared/team.json` makes it
    if not dangling:
        first = RecordStore(target)
        assert first.load() == (None, None) and first.save(a_record("theirs", 1)) is None
    store = RecordStore(link)
    record, note = store.load()
    assert note is None
    for turns in (2, 3):
        assert store.save(a_record("mine", turns)) is None
        store.wait()
        assert link.is_symlink() and os.readlink(link) == os.path.relpath(target, mine)
        held = on_disk(target)
        assert len(held.conversations["mine"].conversation.history) == turns
    assert sorted(p.name for p in mine.iterdir()) == ["team.json"]
    assert not any(p.name.endswith(".tmp") for p in shared.iterdir())
    other = RecordStore(target)  # the other user of the shared record reads this kernel's writes
    assert other.load()[0].generation == store.generation
