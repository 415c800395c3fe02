"""The record file: where it lives, atomic writes, one writer at a time.

Private by default (the user's Jupyter data dir, one file per notebook named by a hash of
its path); beside the notebook, or any path, on request. Each write happens under a lock,
only if nobody else wrote since this kernel read it, before the turn's cell finishes: whole
(a temporary file renamed over it, the one before kept as ``.prev`` until the flush is done)
or, in the private folder, as one journal line. A path that is a symbolic link is written
through: every file of the record lives beside the link's target, so the link stays a link
(a shared record updates). How a kill or a power cut leaves it: docs/after-a-restart.md.
"""

from __future__ import annotations

import functools
import hashlib
import os
import queue
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .. import messages
from ..engine.background import BackgroundThread
from ..engine.record import ConversationText, NotebookRecord, conversation_texts, dumps, generation_of, journal_line
from ..engine.redaction import redaction_keys
from .schema import OURS, Damaged, NotOurs, loads
from .texts import KeptTexts

USER = "user"
NOTEBOOK = "notebook"
JOURNAL_FLOOR = 1 << 20  # a journal is let grow to the record's size, and at least this far (1 MiB)
_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def private_location(location: str) -> bool:
    """The record lives in the user's Jupyter data dir, in a folder only this package writes."""
    return location == USER


def record_path(location: str, notebook: Path | None) -> Path | None:
    """Where the notebook's record lives; None: nothing is persisted."""
    if location not in (USER, NOTEBOOK):
        return Path(location).expanduser()  # an explicit file: also without a known notebook (CI, terminal)
    if notebook is None:
        return None
    return _record_path(location, str(notebook), tuple(os.environ.get(v) for v in _DATA_DIR_ENV))


# What jupyter_core's jupyter_data_dir() reads: a change of any of them is another record folder.
_DATA_DIR_ENV = ("JUPYTER_DATA_DIR", "JUPYTER_PLATFORM_DIRS", "XDG_DATA_HOME", "HOME", "APPDATA")


@functools.lru_cache(maxsize=16)
def _record_path(location: str, notebook_text: str, _env: tuple[str | None, ...]) -> Path:
    """Resolved once per notebook and environment, not on every turn (~0.1 ms of path lookups)."""
    notebook = Path(notebook_text).resolve()
    if location == NOTEBOOK:
        return notebook.with_name(f"{notebook.stem}.genai_magics.json")
    from jupyter_core.paths import jupyter_data_dir

    name = hashlib.sha256(str(notebook).encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return Path(jupyter_data_dir()) / "genai_magics" / "records" / f"{name}.json"


class _Lock:
    """An exclusive advisory lock beside the record (POSIX; elsewhere the generation check alone), its file
    kept open between writes (an open and a close a write saved)."""

    def __init__(self, record: Path) -> None:
        self.path = record.with_name(record.name + ".lock")
        self._fd: int | None = None

    @contextmanager
    def held(self):
        try:
            import fcntl
        except ImportError:
            yield
            return
        if self._fd is None or os.fstat(self._fd).st_nlink == 0:  # deleted: lock the file there now
            if self._fd is not None:
                os.close(self._fd)
            self._fd = os.open(self.path, _APPEND, 0o666)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)


class _Flusher:
    """One thread for every record's fsync: handing a file over is a queue put, not a thread start
    (~0.5 ms on a busy machine). A daemon: the exit waits for its work through ``RecordStore.wait``."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], None], threading.Event]] = queue.SimpleQueue()
        self._thread: BackgroundThread | None = None
        self._lock = threading.Lock()

    def submit(self, job: Callable[[], None]) -> threading.Event:
        done = threading.Event()
        with self._lock:
            if self._thread is None:
                self._thread = BackgroundThread(self._run, "record fsync")
                self._thread.start()
        self._jobs.put((job, done))
        return done

    def _run(self) -> None:
        while True:
            job, done = self._jobs.get()
            try:
                job()
            finally:
                done.set()


_FLUSHER = _Flusher()


def _identity(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_mtime_ns, st.st_size, st.st_ino


def _identity_if_there(path: Path) -> tuple[int, int, int] | None:
    try:
        return _identity(path)
    except FileNotFoundError:
        return None


def _set_aside(path: Path) -> Path:
    """A record renamed out of the way (never deleted), its journal beside it: where it went."""
    aside = path.with_name(f"{path.name}.{time.strftime('%Y%m%d-%H%M%S')}.set-aside")
    os.replace(path, aside)
    journal = path.with_name(path.name + ".journal")
    if journal.exists():  # its lines belong to the record set aside
        os.replace(journal, aside.with_name(aside.name + ".journal"))
    return aside


def _fsync(fd: int) -> None:
    try:
        os.fsync(fd)
    except OSError:
        pass  # not known to be on the disk: a torn line is not read


@dataclass
class RecordStore:
    path: Path
    generation: int = 0  # the generation this kernel read or wrote last
    lost: bool = False  # another kernel wrote the record: this one stops writing
    # (mtime_ns, size, inode) of the file as this kernel last wrote it: while it is unchanged the
    # generation on disk is ours, and the file need not be read and parsed again before each write
    written: tuple[int, int, int] | None = None
    read_only: bool = False  # the file is another writer's (or a newer schema): never written, renamed, deleted
    private: bool = False  # in the package's own records folder: nobody else writes there
    saved: bool = False  # the file holds what this kernel read or wrote last (no write of it failed since)
    _syncing: threading.Event | None = field(default=None, repr=False)  # set once the last write is flushed
    # Which write is the newest, and .prev's changes: a flush that ends lets .prev go only if no later
    # write is still waiting for its own flush (that write falls back to the same .prev).
    _writes: int = field(default=0, repr=False)
    _prev_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    # The journal's (mtime_ns, size, inode) as this kernel last read or wrote it (None: there was none), what
    # the files hold as this kernel wrote them (None: the next write is whole) and the keys redacted then.
    _journal_at: tuple[int, int, int] | None = field(default=None, repr=False)
    _texts: dict[str, ConversationText] | None = field(default=None, repr=False)
    _keys: tuple[str, ...] = field(default=(), repr=False)
    _journal_fd: int | None = field(default=None, repr=False)  # open for appends until the next whole write
    _billed: int = field(default=0, repr=False)  # the ledger's entries the files hold as this kernel wrote them
    _made: KeptTexts = field(default_factory=KeptTexts, repr=False)  # the texts kept from write to write
    _lock: _Lock = field(init=False, repr=False, compare=False)
    named: Path = field(init=False, repr=False, compare=False)  # the path as named (``path``: where the file is)

    def __post_init__(self) -> None:
        # A symbolic link is written through: the record, its temporary file, .prev, journal and lock all live
        # beside the link's target, so a rename lands there and the link (a shared record) stays a link.
        self.named = self.path
        if self.path.is_symlink():
            self.path = Path(os.path.realpath(self.path))
        self._lock = _Lock(self.path)

    @property
    def prev(self) -> Path:
        """The record before the last whole write, kept until that write is flushed to the disk."""
        return self.path.with_name(self.path.name + ".prev")

    @property
    def journal(self) -> Path:
        """The lines written since the record was written whole."""
        return self.path.with_name(self.path.name + ".journal")

    @property
    def prev_journal(self) -> Path:
        """``.prev``'s journal, kept with it."""
        return self.path.with_name(self.path.name + ".prev.journal")

    def wait(self) -> None:
        """The last write flushed to the disk."""
        if self._syncing is not None:
            self._syncing.wait()
            self._syncing = None

    def load(self) -> tuple[NotebookRecord | None, str | None]:
        """The record and None, or None and one line saying why there is none to use."""
        self._texts = None  # what this kernel writes first is a whole record
        try:
            raw = self._read()
        except FileNotFoundError:
            self._journal_at = _identity_if_there(self.journal)
            return None, None
        except OSError as exc:
            return None, self._leave(f"unreadable ({type(exc).__name__}: {exc.strerror})")
        try:
            journal = self._read_journal()
            record = loads(raw.decode("utf-8"), self.private, journal)
        except OSError as exc:
            return None, self._leave(f"unreadable ({type(exc).__name__}: {exc.strerror})")
        except UnicodeDecodeError:
            if not (self.private or raw.startswith(OURS)):
                return None, self._leave("not a genai_magics record (not UTF-8 text)")
            return None, self._set_aside("corrupt (not UTF-8 text)")
        except NotOurs as exc:
            return None, self._leave(str(exc))
        except Damaged as exc:
            return None, self._set_aside(str(exc))
        self.generation, self.saved = record.generation, True
        return record, None

    def _read(self) -> bytes:
        """The record's bytes. A ``.prev`` beside it means a write is between its two renames (its lock is
        waited for) or the last write's flush may not have ended (a power cut, a crash): a record that reads
        whole is kept, a torn one is replaced by ``.prev``."""
        if not self.prev.exists():
            try:
                return self.path.read_bytes()
            except FileNotFoundError:
                if not self.prev.exists():
                    raise
        with self._lock.held():
            try:
                raw = self.path.read_bytes()
                loads(raw.decode("utf-8"), True)
            except (OSError, UnicodeDecodeError, NotOurs, Damaged):  # a missing record included
                os.replace(self.prev, self.path)
                # its journal: .prev.journal once the write that was cut had moved it there, else still the
                # journal (a newer record's lines there are not read: they name another generation)
                if self.prev_journal.exists():
                    os.replace(self.prev_journal, self.journal)
                return self.path.read_bytes()
            self.prev_journal.unlink(missing_ok=True)
            self.prev.unlink(missing_ok=True)
            return raw

    def _read_journal(self) -> bytes:
        """The journal's bytes (none: b""), and what it was as read: one appended to after the read is another
        writer's, and this kernel's next write finds it changed."""
        try:
            with open(self.journal, "rb") as f:
                data = f.read()
                st = os.fstat(f.fileno())
        except FileNotFoundError:
            self._journal_at = None
            return b""
        self._journal_at = (st.st_mtime_ns, len(data), st.st_ino)
        return data

    def _leave(self, why: str) -> str:
        self.read_only = True
        return messages.RECORD_LEFT_UNTOUCHED.render(path=self.path, why=why)

    def _set_aside(self, why: str) -> str:
        with self._lock.held():
            aside = _set_aside(self.path)
        self.generation, self.written, self._journal_at = 0, None, None
        return messages.RECORD_SET_ASIDE.render(path=self.path, why=why, aside=aside.name)

    def move(self, new: Path) -> Path | None:
        """The record's files renamed to ``new`` (its notebook was renamed or moved), written there from now
        on; the open journal and the lock keep working (a rename keeps the file). A record already at ``new``
        (of a notebook that had that name before) is set aside first: where it went, or None."""
        self.wait()
        new.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        aside = None
        with self._lock.held():
            if new.exists():
                aside = _set_aside(new)
            for suffix in ("", ".journal", ".prev", ".prev.journal", ".lock"):
                old = self.path.with_name(self.path.name + suffix)
                if old.exists():
                    os.replace(old, new.with_name(new.name + suffix))
        self.path = self.named = new
        self._lock.path = new.with_name(new.name + ".lock")
        return aside

    def save(self, record: NotebookRecord) -> str | None:
        """Write the record; one line when this kernel lost the record to another kernel."""
        if self.lost or self.read_only:
            return None  # said once already
        self.saved = False
        texts, keys = conversation_texts(record, self._made), redaction_keys()
        if self._texts is None:  # a first write may make the folder (later ones find the record in it)
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with self._lock.held():
            try:
                on_disk = (
                    self.generation
                    if self.written is not None and _identity(self.path) == self.written
                    else generation_of(self.path.read_text(encoding="utf-8"))
                )
            except FileNotFoundError:
                on_disk = 0
            except (OSError, UnicodeDecodeError):
                on_disk = None
            if on_disk != self.generation or _identity_if_there(self.journal) != self._journal_at:
                self.lost = True
                return messages.RECORD_LOST.render(path=self.path)
            line = self._line(record, texts, keys) if on_disk else None
            self._texts = None  # until this write went through
            if line is not None:
                self._append(line)
            else:
                self._write_whole(record, texts, bool(on_disk))
            self._texts, self._keys, self._billed = texts, keys, len(record.billed)
            self.saved = True
        return None

    def _line(self, record: NotebookRecord, texts: dict[str, ConversationText], keys: tuple[str, ...]) -> str | None:
        """The journal line of this write, or None: the record is written whole (this kernel's first write, a
        key seen since the last one, a conversation gone, a journal grown to the record's size; and always for a
        record beside the notebook or at a path named: one file, to move, share or commit)."""
        if not self.private or self._texts is None or keys != self._keys or self.written is None:
            return None
        line = journal_line(record, self.generation, texts, self._texts, self._billed)
        grown = (self._journal_at[1] if self._journal_at else 0) + (len(line) if line else 0)
        return line if line is not None and grown <= max(self.written[1], JOURNAL_FLOOR) else None

    def _append(self, line: str) -> None:
        """The line at the journal's end; its flush to the disk on the flusher thread."""
        if self._journal_fd is None:
            self._journal_fd = os.open(self.journal, _APPEND, 0o600)
        fd = self._journal_fd
        # a lone surrogate (an undecodable file name) is written as its JSON escape \udcff
        data = memoryview(line.encode("utf-8", "backslashreplace"))
        try:
            while data:
                data = data[os.write(fd, data) :]
        finally:  # also after a failed write: what the journal holds now is this kernel's
            st = os.fstat(fd)
            self._journal_at = (st.st_mtime_ns, st.st_size, st.st_ino)
        self._syncing = _FLUSHER.submit(lambda: _fsync(fd))

    def _write_whole(self, record: NotebookRecord, texts: dict[str, ConversationText], later: bool) -> None:
        """The record written whole, renamed over the old one; ``later``: there is a record to fall back to
        until this one is flushed (else it is flushed here)."""
        import tempfile  # only when writing: %load_ext stays cheap

        record.generation = self.generation + 1
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        # a lone surrogate (an undecodable file name) is written as its JSON escape \udcff
        f = os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace")
        try:
            f.write(dumps(record, texts))
            f.flush()
            with self._prev_lock:
                self._writes += 1
                write = self._writes
                if not later:
                    os.fsync(f.fileno())
                self._put(tmp, later)
        except BaseException:
            f.close()
            Path(tmp).unlink(missing_ok=True)
            record.generation = self.generation
            raise
        if later:
            self._syncing = _FLUSHER.submit(lambda: self._sync(f, write))
        else:
            f.close()
        self.generation = record.generation
        self.written = _identity(self.path)

    def _put(self, tmp: str, fall_back: bool) -> None:
        """The new record in place of the old one (under ``_prev_lock``). Where it falls back to a record on
        the disk, that one becomes ``.prev`` first and its journal ``.prev.journal``: renamed there while no
        earlier flush is pending (a rename onto a name that exists makes ext4 start writing the new file out
        at once, ~0.25 ms here; onto a free one it does not), kept while one is (the .prev that write kept is
        the last record on the disk). The journal's lines are in the new record; a kill between two steps
        leaves them where the next load reads them with the record they belong to (``_read``), or unread
        beside a newer record (a line names the record's generation it was written for)."""
        pending = self._syncing is not None and not self._syncing.is_set() and self.prev.exists()
        journal = self._journal_at is not None
        if not fall_back:
            if journal:
                self.journal.unlink()  # lines without their record (it was deleted by hand)
            os.replace(tmp, self.path)
        elif not pending:
            self.prev_journal.unlink(missing_ok=True)  # left by a crash: it would be taken for .prev's
            self.prev.unlink(missing_ok=True)
            # until the last rename there is no record, only .prev: a reader waits for the lock (load)
            os.replace(self.path, self.prev)
            if journal:
                os.replace(self.journal, self.prev_journal)
            os.replace(tmp, self.path)
        else:
            os.replace(tmp, self.path)
            if journal:
                self.journal.unlink()
        self._close_journal()

    def _close_journal(self) -> None:
        """The journal is closed once its flushes before ended (the flusher runs its jobs in order)."""
        self._journal_at = None
        fd, self._journal_fd = self._journal_fd, None
        if fd is not None:
            self._syncing = _FLUSHER.submit(lambda: os.close(fd))

    def _sync(self, f, write: int) -> None:
        try:
            os.fsync(f.fileno())
        except OSError:
            return  # not known to be on the disk: .prev stays for the next load to judge
        finally:
            f.close()
        with self._prev_lock:
            if write == self._writes:  # a later write, not yet flushed, still falls back to .prev
                self.prev_journal.unlink(missing_ok=True)
                self.prev.unlink(missing_ok=True)

    def delete(self) -> None:
        if self.read_only:
            return  # not ours to delete
        self._close_journal()
        self.wait()
        with self._lock.held():
            for path in (self.path, self.prev, self.journal, self.prev_journal):
                path.unlink(missing_ok=True)
        self.generation, self.written, self.saved, self._texts = 0, None, False, None
