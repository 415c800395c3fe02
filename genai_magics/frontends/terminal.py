"""Terminal IPython: whether the shell is one, and what a cell typed there holds (its code,
without the Enter that ran it)."""

from __future__ import annotations

import sys
from typing import Any


def is_terminal(shell: Any) -> bool:
    """Terminal IPython: no widgets, no rich outputs; the next prompt can be pre-filled."""
    # Not imported, the terminal shell cannot be this one; IPython.embed()'s shell is one (a subclass).
    terminal = sys.modules.get("IPython.terminal.interactiveshell")
    return terminal is not None and isinstance(shell, terminal.TerminalInteractiveShell)


def typed_source(raw_cell: str) -> str:
    """The cell's code without its last line when that line is only the indentation IPython's
    auto-indent put there before the Enter that ran it (``def f():⏎    return 1⏎    ⏎``): otherwise a
    2-line function is a 3-line document with a blank context line, and never equals a proposal."""
    head, newline, last = raw_cell.rpartition("\n")
    return head if newline and not last.strip() else raw_cell
