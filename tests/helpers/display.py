"""A turn display (``turn.requests.TurnDisplay``) that keeps what it was shown."""

from __future__ import annotations

import time


class RecordingDisplay:
    def __init__(self, on_note=None):
        self.chunks: list[str] = []
        self.documents: list[tuple[str | None, str]] = []  # (label, source) named at the top of a turn
        self.notes: list[str] = []
        self.errors: list[str] = []  # lines shown as errors (a record set aside, say)
        self.note_times: list[float] = []  # time.monotonic() of each note
        self._on_note = on_note  # also called with each note (a benchmark's shared log)

    def document(self, label: str | None, source: str) -> None:
        self.documents.append((label, source))

    def chunk(self, text: str) -> None:
        self.chunks.append(text)

    def note(self, text: str) -> None:
        self.notes.append(text)
        self.note_times.append(time.monotonic())
        if self._on_note is not None:
            self._on_note(text)

    def error(self, text: str) -> None:
        self.errors.append(text)
