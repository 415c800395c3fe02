"""What a cell typed at terminal IPython holds: its code, without the Enter that ran it."""

from __future__ import annotations


def typed_source(raw_cell: str) -> str:
    """The cell's code without its last line when that line is only the indentation IPython's
    auto-indent put there before the Enter that ran it (``def f():⏎    return 1⏎    ⏎``): otherwise a
    2-line function is a 3-line document with a blank context line, and never equals a proposal."""
    head, newline, last = raw_cell.rpartition("\n")
    return head if newline and not last.strip() else raw_cell
