"""The record keeper: this kernel's side of the notebook's record. It opens the record once, replays its
turns in order, and writes it after each change."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .. import messages
from ..engine.conversation import Conversation, Spent, Turn
from ..engine.errors import UserError
from ..engine.record import NotebookRecord, with_cells_of
from ..engine.replay import (
    RecordedConversation,
    TurnKey,
    TurnMeta,
    branch,
    continue_after_record,
    document_at_cursor,
    replay_match,
    replayed,
    seek,
    state_after,
    stop,
)
from .store import NOTEBOOK, USER, RecordStore, private_location, record_path

ReplayMode = Literal["auto", "off", "only"]
REPLAY_MODES: tuple[ReplayMode, ...] = ("auto", "off", "only")


@dataclass(frozen=True)
class RecordSettings:
    """Where the record lives and how it is used, as the options say (``%config GeminiMagics``)."""

    mode: ReplayMode = "auto"
    persist: bool = True
    location: str = "user"  # GeminiMagics.record_location
    notebook: Path | None = None  # the notebook's path, where the kernel knows it
    images: bool = False  # the record keeps the bytes of images cells showed (GeminiMagics.record_images)
    # the notebook's path when the kernel started (its environment): another than ``notebook`` once the
    # notebook was renamed (JupyterLab's first save), which a restarted kernel's environment still says
    started_as: Path | None = None
    # the names the notebook had before, newest first, as a frontend saw it renamed (VS Code's companion: VS
    # Code ends a renamed notebook's kernel, and the kernel of the new name started with the new name)
    formerly: tuple[Path, ...] = ()
    # where the frontend's cell ids name the notebook's file (VS Code's cell URIs), what they start with now
    cells: str | None = None


@dataclass(frozen=True)
class Restored:
    """What opening the record added: the conversations an earlier kernel left (this kernel's own
    of the same name win), and a line to show once (set aside, lost the record)."""

    conversations: dict[str, Conversation] = field(default_factory=dict)
    note: str | None = None


@dataclass
class RecordKeeper:
    """Owned by the session, opened before each turn and command with the settings of the moment."""

    settings: RecordSettings = RecordSettings()
    store: RecordStore | None = None
    record: NotebookRecord | None = None
    restored: list[str] = field(default_factory=list)  # conversations restored from the record
    # the record's ledger as loaded: what earlier kernels were billed, forgotten conversations and failed turns too
    spent_before: list[Spent] = field(default_factory=list)
    pending: str | None = None  # a line from an open between cells (a rename), shown by the next magic

    @property
    def mode(self) -> ReplayMode:
        return self.settings.mode

    def open(self, settings: RecordSettings, existing: Collection[str]) -> Restored:
        """The record at the place the settings name, loaded once per kernel and place: the
        conversations it adds to ``existing`` (nothing once loaded). The record follows its notebook:
        renamed or moved, the notebook takes its record along; a copy of it leaves the record alone."""
        before, self.settings = self.settings, settings
        note, self.pending = self.pending, None
        moved = False  # the record was taken over from the notebook's former name
        path = record_path(settings.location, settings.notebook) if settings.persist else None
        if path is None:
            self.store = self.record = None
        elif self.store is None or self.store.named != path:
            old = before.notebook if before.location == settings.location else None
            if self.record is not None and self.store is not None and _renamed(old, settings):
                note = self._follow(path, old) or note
            else:
                self.store, self.record = RecordStore(path, private=private_location(settings.location)), None
                taken, moved = self._take_over(settings)
                note = taken or note
        if self.store is None or self.record is not None:
            return Restored(note=note)
        record, load_note = self.store.load()
        note = load_note or note
        if record is not None and moved:
            record.notebook = str(settings.notebook)
            if settings.cells is not None:  # VS Code: its cells had URIs of the old name
                record = with_cells_of(record, settings.cells)
        self.record = record or NotebookRecord(notebook="", created=time.time())
        self.spent_before += self.record.billed
        added = {name: rec.conversation for name, rec in self.record.conversations.items() if name not in existing}
        self.restored += list(added)
        return Restored(added, note)

    def _follow(self, path: Path, old: Path | None) -> str | None:
        """This kernel's notebook has another path now: its record moves along, or (the old file still
        there: saved as a copy) stays, and this notebook gets its own."""
        assert self.store is not None
        notebook = self.settings.notebook
        if old is not None and old.exists():
            self.store, self.record = RecordStore(path, private=private_location(self.settings.location)), None
            return messages.RECORD_COPY.render(path=notebook, original=old)
        aside = self.store.move(path)
        assert self.record is not None
        self.record.notebook = str(notebook)
        more = messages.RECORD_FOLLOWED_ASIDE.render(aside=aside.name) if aside else ""
        return messages.RECORD_FOLLOWED.render(path=notebook, aside=more)

    def _take_over(self, settings: RecordSettings) -> tuple[str | None, bool]:
        """A new place with no record, for a notebook renamed since its kernel started (the environment of a
        restarted kernel still names the old file) or before it (VS Code, whose companion saw the rename): the
        record at the old file's place, if that file is gone, moves here; if it is still there this notebook
        is a copy, and the record stays with it. Its line, and whether the record moved here."""
        store = self.store
        if store is None or store.path.exists():
            return None, False
        for start in (settings.started_as, *settings.formerly):
            old = record_path(settings.location, start) if start not in (None, settings.notebook) else None
            if old is None or old == store.path or not old.exists():
                continue
            if start is not None and start.exists():
                return messages.RECORD_COPY.render(path=settings.notebook, original=start), False
            RecordStore(old, private=store.private).move(store.path)
            return messages.RECORD_FOLLOWED.render(path=settings.notebook, aside=""), True
        return None, False

    def held(self, note: str | None) -> None:
        """A line from an open between cells, for the next magic to show."""
        self.pending = note or self.pending

    def replay(
        self, name: str, key: TurnKey, rerun: bool, same_results: Callable[[Turn], bool] = lambda turn: True
    ) -> tuple[Conversation, Turn, TurnMeta] | None:
        """The recorded turn this cell shows again, or None: the cell goes live (after a branch).
        ``same_results``: whether the functions a recorded turn called would answer the same now."""
        rec = self.record.conversations.get(name) if self.record else None
        turn = replay_match(rec, key) if rec is not None and self.mode != "off" and not rerun else None
        if turn is not None and turn.tool_rounds and not same_results(turn):
            turn = None
        if turn is not None and rec is not None:
            replayed(rec)
            return rec.conversation, turn, rec.meta[turn.index]
        if self.mode == "only":
            position = (rec.cursor if rec else 0) + 1
            why = (
                messages.REPLAY_ONLY_RERUN.render()
                if rerun
                else messages.REPLAY_ONLY_NO_MATCH.render(position=position, name=name)
            )
            raise UserError(messages.REPLAY_ONLY, why=why)
        if rec is None or rec.cursor >= rec.replayable:
            return None  # nothing recorded by an earlier kernel is left to replay
        if self.mode == "off":
            continue_after_record(rec)
        else:
            branch(rec)
        return None

    def position(self, name: str, magic_cell: str | None) -> None:
        """Before a cell resolves its document: the conversation as it was at this cell's replay
        position; a magic cell the record does not hold continues after its last turn."""
        rec = self.record.conversations.get(name) if self.record and self.mode != "off" else None
        if rec is None:
            return
        if seek(rec, magic_cell):
            document_at_cursor(rec)
        elif self.mode == "auto":
            continue_after_record(rec)

    def stop(self, name: str) -> None:
        """The conversation was reset in this kernel: its recorded turns are not replayed any more."""
        rec = self.record.conversations.get(name) if self.record else None
        if rec is not None:
            stop(rec)

    def committed(
        self, conv: Conversation, key: TurnKey, spent: Spent, cache: dict[str, Any] | None = None
    ) -> str | None:
        """A live turn succeeded: record it, its bill in the ledger (and the conversation's explicit cache, so
        a kernel killed before deleting it leaves the next one its name) and write the file; a line if it
        could not be written."""
        if self.store is None or self.record is None:
            return None
        self.record.billed.append(spent)
        rec = self.record.conversations.get(conv.name)
        if rec is None or rec.conversation is not conv:  # new, or started over with --new
            rec = RecordedConversation(conv, created=time.time())
            self.record.conversations[conv.name] = rec
        turn = conv.history[-1]
        rec.cache = cache
        rec.meta[turn.index] = TurnMeta(key, time.time(), state_after(conv, rec.told))
        self.record.notebook = str(self.settings.notebook or "")
        return self.save()

    def failed(self, spent: Spent) -> str | None:
        """A turn failed after Gemini billed some of its requests: the bill goes into the ledger (the turn does
        not go into its conversation); a line if the file could not be written."""
        if self.store is None or self.record is None:
            return None
        self.record.billed.append(spent)
        return self.save()

    def durable(self) -> bool:
        """The record on disk is what this kernel holds (its last write went through and is flushed)."""
        if self.store is None:
            return False
        self.store.wait()
        return self.store.saved and not self.store.lost

    def recorded_cache(self, conv: Conversation) -> dict[str, Any] | None:
        """The explicit cache the record names for this restored conversation, if any."""
        rec = self.record.conversations.get(conv.name) if self.record else None
        return rec.cache if rec is not None and rec.conversation is conv else None

    def save(self) -> str | None:
        if self.store is None or self.record is None:
            return None
        try:
            self.record.images = self.settings.images
            return self.store.save(self.record)
        except OSError as exc:
            return messages.RECORD_NOT_WRITTEN.render(path=self.store.path, error=exc)

    def outcome_changed(self, conv: Conversation) -> str | None:
        """Apply, Discard or Undo changed a recorded conversation: write it."""
        rec = self.record.conversations.get(conv.name) if self.record else None
        return self.save() if rec is not None and rec.conversation is conv else None

    def forget(self, names: list[str] | None) -> list[str]:
        """Delete conversations from the record (all of it when ``names`` is None)."""
        if self.store is None or self.record is None:
            return []
        gone = (
            list(self.record.conversations) if names is None else [n for n in names if n in self.record.conversations]
        )
        for name in gone:
            del self.record.conversations[name]
        if names is None:  # the whole record, its ledger too
            self.record.billed.clear()
            self.store.delete()
        elif gone:
            self.save()
        return gone

    def status(self) -> str:
        if self.store is None:
            return (messages.RECORD_NONE if self.settings.persist else messages.RECORD_OFF).render()
        more = messages.RECORD_READ_ONLY.render() if self.store.read_only else ""
        if self.record is None:
            more += messages.RECORD_NOT_READ.render()
        # the notebook the record is filed for (its own word once written), which may not be this kernel's
        notebook = (self.record.notebook if self.record else "") or str(self.settings.notebook or "")
        notebook = notebook or messages.RECORD_NO_NOTEBOOK.render()
        lines = [messages.RECORD_AT.render(notebook=notebook, path=self.store.path, mode=self.mode, more=more)]
        recorded = self.record.conversations if self.record is not None else {}
        for name in self.restored:
            rec = recorded.get(name)
            if rec is not None:
                live = ""
                if rec.continued:
                    live = messages.RECORD_LIVE_AFTER.render(turn=rec.loaded)
                elif rec.replayable == rec.cursor < rec.loaded:
                    live = messages.RECORD_LIVE_FROM.render(turn=rec.cursor + 1)
                lines.append(
                    messages.RECORD_RESTORED.render(name=name, loaded=rec.loaded, replayed=rec.cursor, live=live)
                )
        return "\n".join(lines)


def _renamed(old: Path | None, settings: RecordSettings) -> bool:
    """The same kind of place (the private folder or beside the notebook), for a notebook of another path."""
    return old is not None and settings.notebook not in (None, old) and settings.location in (USER, NOTEBOOK)
