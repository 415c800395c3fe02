"""An edit answer as ``edits``: find/replace pairs on the version the model holds (docs/protocol.md).

Each ``find`` must occur exactly once in the text as the edits before it left
it, so a pair names one place without line numbers the model would have to
count. ``apply_edits`` is strict: an edit that matches nowhere or twice refuses
the whole answer, and the kernel never builds a proposal from a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True)
class Edit:
    find: str
    replace: str

    def to_json(self) -> dict[str, str]:
        return {"find": self.find, "replace": self.replace}


Edits = tuple[Edit, ...]


@dataclass(frozen=True)
class EditRefused:
    """Why an answer's edits build no proposal: edit ``index`` (1-based) of ``count``."""

    index: int
    count: int
    reason: Literal["not found", "found more than once", "empty find"]

    def describe(self) -> str:
        return f"edit {self.index} of {self.count}: its find text was {self.reason}"


def apply_edits(text: str, edits: Edits) -> str | EditRefused:
    """``text`` with each edit applied in order to the result of the one before, or why not."""
    for n, edit in enumerate(edits, 1):
        if not edit.find:
            return EditRefused(n, len(edits), "empty find")
        at = text.find(edit.find)
        if at < 0:
            return EditRefused(n, len(edits), "not found")
        if text.find(edit.find, at + 1) >= 0:  # overlapping matches count too: the place must be one
            return EditRefused(n, len(edits), "found more than once")
        text = text[:at] + edit.replace + text[at + len(edit.find) :]
    return text


def parse_edits(value: Any) -> Edits | None:
    """The ``edits`` of an answer, or None when it is not a list of ``{find, replace}`` strings."""
    if not isinstance(value, list):
        return None
    out: list[Edit] = []
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("find"), str):
            return None
        if not isinstance(item.get("replace"), str):
            return None
        out.append(Edit(item["find"], item["replace"]))
    return tuple(out)


def edits_chars(edits: Edits) -> int:
    """How much text the edits carry (what the transcript pays to keep them)."""
    return sum(len(e.find) + len(e.replace) for e in edits)


_FIND = re.compile(r'"find"\s*:')
_CELL_ID = re.compile(r"# %%[^\n\"]*? id=([A-Za-z0-9_-]+)")


def progress(partial: str) -> str | None:
    """What a streaming edit answer shows so far, read from its partial JSON; None before either form starts.

    ``"edits"``: how many edits have begun and, in a ``--notebook`` answer, the
    last cell one names; ``"proposedSource"``: that the whole text is coming.
    """
    if '"edits"' in partial:
        count = len(_FIND.findall(partial))
        cells = _CELL_ID.findall(partial)
        where = f", the last in cell {cells[-1]}" if cells else ""
        return f"{count} edit{'' if count == 1 else 's'} so far{where}"
    if '"proposedSource"' in partial:
        return "the whole text"
    return None
