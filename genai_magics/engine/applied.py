"""The first line Apply writes into a running cell (VS Code, Colab): the instruction as a comment,
kept out of the code the model holds."""

from __future__ import annotations


def applied_text(instruction: str, source: str) -> str:
    """The running cell after Apply: the instruction kept as a first comment line."""
    first = " ".join(instruction.strip().splitlines()[0].split()) if instruction.strip() else "edit"
    return f"{APPLIED_MARKER}{first}\n{source}"


APPLIED_MARKER = "# gemini_edit: "


def strip_applied_marker(source: str) -> str:
    """The code of a cell that Apply wrote, without the instruction line (for hashing)."""
    if source.startswith(APPLIED_MARKER):
        return source.split("\n", 1)[1] if "\n" in source else ""
    return source
