"""Unified diffs of a document against a proposal."""

from __future__ import annotations

import difflib

NO_NEWLINE = "\\ No newline at end of file\n"


def unified_diff(base: str, proposal: str, label: str) -> str:
    """As ``diff -u``: a last line without a newline is marked, so a change of only the
    trailing newline shows as a difference, not as two identical lines."""
    lines = difflib.unified_diff(
        base.splitlines(keepends=True),
        proposal.splitlines(keepends=True),
        fromfile=f"{label} (current)",
        tofile=f"{label} (proposed)",
    )
    return "".join(line if line.endswith("\n") else line + "\n" + NO_NEWLINE for line in lines)
