"""Unified diffs: of a document against a proposal (shown), and of a hand edit (sent as a patch)."""

from __future__ import annotations

from collections.abc import Iterable

NO_NEWLINE = "\\ No newline at end of file\n"
# the diff header's words for the two texts: before Apply, and once the cell holds the proposal
PROPOSED = ("current", "proposed")
APPLIED = ("before Apply", "applied")
PATCH_CONTEXT_LINES = 2  # enough for a model to place a hunk, few enough to keep the patch small


def lines_of(text: str) -> list[str]:
    """The text's lines with their ends, where only ``\n`` ends a line (as ``diff`` and ``patch``
    see them): ``str.splitlines`` also breaks at form feed, U+2028, U+2029, U+0085 and a lone
    ``\r``, which would give hunks with context lines that are not lines of the cell."""
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def _marked(lines: Iterable[str]) -> str:
    # as ``diff -u``: a last line without a newline is marked, so a change of only the
    # trailing newline shows as a difference, not as two identical lines
    return "".join(line if line.endswith("\n") else line + "\n" + NO_NEWLINE for line in lines)


def unified_diff(base: str, proposal: str, label: str, sides: tuple[str, str] = PROPOSED) -> str:
    """As ``diff -u``, headed with the document's label and ``sides`` (what each text is now).

    A cell never ends in a newline, so where both texts end alike their last lines are not marked
    (``diff -u`` would end every cell's diff in ``\\ No newline at end of file``); where only one
    of them ends in a newline the mark shows that change."""
    import difflib  # on first use (an edit's diff): %load_ext imports none of it

    lines = difflib.unified_diff(
        lines_of(base), lines_of(proposal), fromfile=f"{label} ({sides[0]})", tofile=f"{label} ({sides[1]})"
    )
    if base.endswith("\n") != proposal.endswith("\n"):
        return _marked(lines)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def source_patch(base: str, source: str) -> str:
    """The hunks of a unified diff that turn ``base`` into ``source``, without file headers."""
    import difflib

    lines = difflib.unified_diff(lines_of(base), lines_of(source), n=PATCH_CONTEXT_LINES)
    return _marked(line for i, line in enumerate(lines) if i >= 2)  # the first two are the ---/+++ headers
