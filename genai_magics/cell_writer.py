"""Putting text into a cell: one interface, one implementation per mechanism.

A writer says, before the click, what Apply will do in this frontend, and
reports back when the write is done (or failed) so that the engine commits a
transition only after the cell really changed.
"""
from __future__ import annotations

from typing import Callable, Protocol

Done = Callable[[str | None], None]  # called with an error message, or None on success


class CellWriter(Protocol):
    kind: str  # "live" | "running-cell" | "staged" | "copy"

    def describe_apply(self) -> str:
        """One sentence shown before the click: what Apply will do here."""

    def write(self, cell_id: str, source: str, done: Done) -> None:
        """Put ``source`` into the cell; call ``done`` once, with an error or None."""


class KernelStateWriter:
    """No way to reach the frontend's cell: keep the kernel's view and say so."""

    kind = "copy"

    def __init__(self, set_source: Callable[[str, str], None]):
        self._set_source = set_source

    def describe_apply(self) -> str:
        return (
            "Apply records the proposal as this cell's code for the conversation; "
            "this frontend cannot edit cells, so paste it into the cell yourself (Copy)."
        )

    def write(self, cell_id: str, source: str, done: Done) -> None:
        self._set_source(cell_id, source)
        done(None)
