"""The stand-in model's ``edits`` form: answering with find/replace pairs, and holding what they give.

Like a real model following the system instruction, it answers an edit request
with ``edits`` when the request's schema offers them and the document is not
small (``EDITS_MIN_LINES``); each ``find`` is the changed lines plus as many
lines around them as make it occur exactly once. A model turn's edits are
applied strictly to what the turns before it hold, so a transcript that renders
the wrong base shows as a document the model does not hold. Standard library only.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

EDITS_MIN_LINES = 30  # a shorter document is answered whole, as the system instruction asks
BAD_FIND = "# stand-in: this text is in no document\n"  # the bad_edits fault's find


def _once(text: str, piece: str) -> bool:
    at = text.find(piece)
    return bool(piece) and at >= 0 and text.find(piece, at + 1) < 0


def apply(text: str, edits: Any) -> str | None:
    """``text`` with the edits applied in order, strictly; None when one does not apply or is malformed."""
    if not isinstance(edits, list):
        return None
    for edit in edits:
        if (
            not isinstance(edit, dict)
            or not isinstance(edit.get("find"), str)
            or not isinstance(edit.get("replace"), str)
        ):
            return None
        if not _once(text, edit["find"]):
            return None
        at = text.find(edit["find"])
        text = text[:at] + edit["replace"] + text[at + len(edit["find"]) :]
    return text


def make_edits(base: str, target: str) -> list[dict[str, str]] | None:
    """Edits that turn ``base`` into ``target``: one per changed run of lines, bottom first, each
    ``find`` grown by lines around the change until it occurs once in the text it applies to.
    None when the base is empty (nothing to find)."""
    if not base:
        return None
    old = base.splitlines(keepends=True)
    new = target.splitlines(keepends=True)
    changes = [op for op in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes() if op[0] != "equal"]
    lines = list(old)
    edits: list[dict[str, str]] = []
    for _, i1, i2, j1, j2 in reversed(changes):  # bottom first: the lines above keep their numbers
        text = "".join(lines)
        before = after = 0
        while True:
            find = "".join(lines[i1 - before : i2 + after])
            if _once(text, find) or (before >= i1 and after >= len(lines) - i2):
                break
            if before < i1 and (before <= after or after >= len(lines) - i2):
                before += 1
            else:
                after += 1
        replaced = lines[i1 - before : i1] + new[j1:j2] + lines[i2 : i2 + after]
        edits.append({"find": find, "replace": "".join(replaced)})
        lines[i1 - before : i2 + after] = replaced
    return edits


def offers_edits(schema: Any) -> bool:
    """Whether a response schema (JSON Schema or the SDK's Schema form) has an ``edits`` property."""
    return isinstance(schema, dict) and isinstance(schema.get("properties"), dict) and "edits" in schema["properties"]


def answer(whole: str, document: str | None, offered: bool, bad: bool) -> str:
    """The edit answer in the form the request asks for: ``whole`` is the answer as proposedSource."""
    data = json.loads(whole)
    if bad:
        return json.dumps(
            {"explanation": "stand-in bad_edits fault", "edits": [{"find": BAD_FIND, "replace": ""}]},
            ensure_ascii=False,
        )
    if not offered or document is None or len(document.splitlines()) < EDITS_MIN_LINES:
        return whole
    edits = make_edits(document, data["proposedSource"])
    if edits is None:
        return whole
    return json.dumps({"explanation": data["explanation"], "edits": edits}, ensure_ascii=False)


def held(turn: dict[str, Any], base: str | None) -> str | None:
    """The source a model turn with ``edits`` holds: the edits on ``base``, what the turns before hold.

    None when they do not apply (an answer the kernel refused and asked again for).
    """
    return None if base is None else apply(base, turn.get("edits"))
