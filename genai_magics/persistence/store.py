"""The record file: where it lives, atomic writes, one writer at a time.

Private by default (the user's Jupyter data dir, one file per notebook named by
a hash of its absolute path); next to the notebook, or any path, on request.
Every write goes to a temporary file in the same folder and is renamed over the
record, under a lock, and only if nobody else wrote since this kernel read it.
The rename is done before the turn's cell finishes (so a killed kernel loses
nothing); the flush to the disk (fsync), which can take tens of ms on a busy
disk, runs on a thread, while the record before it, renamed to ``.prev`` just
before, stays there: a power cut before that flush ends leaves the new record
or, if it is torn, ``.prev``, which the next load puts back (the last write
lost, as when the power goes during a write). A write never waits for the flush
before it: while one is pending, ``.prev`` stays the last record known to be on
the disk.
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
from ..engine.record import NotebookRecord, dumps, generation_of
from .schema import OURS, Damaged, NotOurs, loads

USER = "user"
NOTEBOOK = "notebook"


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


@contextmanager
def _locked(path: Path):
    """An exclusive advisory lock beside the record (POSIX; elsewhere the generation check alone)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


class _Flusher:
    """One thread for every record's fsync: handing a file over is a queue put, not a thread start
    (~0.5 ms on a busy machine). A daemon: the exit waits for its work through ``RecordStore.wait``."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], None], threading.Event]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, job: Callable[[], None]) -> threading.Event:
        done = threading.Event()
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="genai_magics record fsync", daemon=True)
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

    @property
    def prev(self) -> Path:
        """The record before the last write, kept until that write is flushed to the disk."""
        return self.path.with_name(self.path.name + ".prev")

    def wait(self) -> None:
        """The last write flushed to the disk."""
        if self._syncing is not None:
            self._syncing.wait()
            self._syncing = None

    def load(self) -> tuple[NotebookRecord | None, str | None]:
        """The record and None, or None and one line saying why there is none to use."""
        try:
            raw = self._read()
        except FileNotFoundError:
            return None, None
        except OSError as exc:
            return None, self._leave(f"unreadable ({type(exc).__name__}: {exc.strerror})")
        try:
            record = loads(raw.decode("utf-8"), self.private)
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
        with _locked(self.path):
            try:
                raw = self.path.read_bytes()
                loads(raw.decode("utf-8"), True)
            except (OSError, UnicodeDecodeError, NotOurs, Damaged):  # a missing record included
                os.replace(self.prev, self.path)
                return self.path.read_bytes()
            self.prev.unlink(missing_ok=True)
            return raw

    def _leave(self, why: str) -> str:
        self.read_only = True
        return messages.RECORD_LEFT_UNTOUCHED.render(path=self.path, why=why)

    def _set_aside(self, why: str) -> str:
        aside = self.path.with_name(f"{self.path.name}.{time.strftime('%Y%m%d-%H%M%S')}.set-aside")
        with _locked(self.path):
            os.replace(self.path, aside)
        self.generation, self.written = 0, None
        return messages.RECORD_SET_ASIDE.render(path=self.path, why=why, aside=aside.name)

    def save(self, record: NotebookRecord) -> str | None:
        """Write the record; one line when this kernel lost the record to another kernel."""
        if self.lost or self.read_only:
            return None  # said once already
        import tempfile  # only when writing: %load_ext stays cheap

        self.saved = False
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with _locked(self.path):
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
            if on_disk != self.generation:
                self.lost = True
                return messages.RECORD_LOST.render(path=self.path)
            record.generation = self.generation + 1
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
            # a lone surrogate (an undecodable file name) is written as its JSON escape \udcff
            f = os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace")
            try:
                f.write(dumps(record))
                f.flush()
                with self._prev_lock:
                    self._writes += 1
                    write = self._writes
                    later = bool(on_disk)  # a record to fall back to until this one is flushed
                    if not later:
                        os.fsync(f.fileno())
                    self._put(tmp, later)
            except BaseException:
                f.close()
                Path(tmp).unlink(missing_ok=True)
                raise
            if later:
                self._syncing = _FLUSHER.submit(lambda: self._sync(f, write))
            else:
                f.close()
            self.generation = record.generation
            self.written = _identity(self.path)
            self.saved = True
        return None

    def _put(self, tmp: str, fall_back: bool) -> None:
        """The new record in place of the old one (under ``_prev_lock``). Where it falls back to a record on
        the disk, that one becomes ``.prev`` first: renamed there while no earlier flush is pending (a rename
        onto a name that exists makes ext4 start writing the new file out at once, ~0.25 ms here; onto a free
        one it does not), kept while one is (the .prev that write kept is the last record on the disk)."""
        if fall_back and not (self._syncing is not None and not self._syncing.is_set() and self.prev.exists()):
            self.prev.unlink(missing_ok=True)
            # until the next rename there is no record, only .prev: a reader waits for the lock (load)
            os.replace(self.path, self.prev)
        os.replace(tmp, self.path)

    def _sync(self, f, write: int) -> None:
        try:
            os.fsync(f.fileno())
        except OSError:
            return  # not known to be on the disk: .prev stays for the next load to judge
        finally:
            f.close()
        with self._prev_lock:
            if write == self._writes:  # a later write, not yet flushed, still falls back to .prev
                self.prev.unlink(missing_ok=True)

    def delete(self) -> None:
        if self.read_only:
            return  # not ours to delete
        self.wait()
        with _locked(self.path):
            self.path.unlink(missing_ok=True)
            self.prev.unlink(missing_ok=True)
        self.generation, self.written, self.saved = 0, None, False
