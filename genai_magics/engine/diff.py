"""Unified diffs of a document against a proposal."""
from __future__ import annotations

import difflib

def unified_diff(base: str, proposal: str, label: str) -> str:
    lines = difflib.unified_diff(
        base.splitlines(keepends=True), proposal.splitlines(keepends=True),
        fromfile=f"{label} (current)", tofile=f"{label} (proposed)",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
