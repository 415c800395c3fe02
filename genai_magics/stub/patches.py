"""Strict application of a ``sourcePatch`` (unified-diff hunks) to the document the model holds."""

from __future__ import annotations

import re

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")


_NO_NEWLINE = "\\ No newline at end of file"


def _lines(text: str) -> list[str]:
    # Only "\n" ends a line, as for GNU patch (not str.splitlines: form feed, U+2028, a lone
    # "\r" are inside a line). Written here, not imported: the stand-in stays independent.
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


def apply_patch(base: str, patch: str) -> str | None:
    """``base`` with unified-diff hunks applied, strictly: None when a line of context or a
    removed line is not where the hunk says, so only an exact patch gives a document."""
    lines = _lines(base)
    out: list[str] = []
    pos = 0
    hunks = _lines(patch)
    if not hunks or not _HUNK.match(hunks[0]):
        return None
    for n, line in enumerate(hunks):
        header = _HUNK.match(line)
        if header:
            start = int(header.group(1)) - (0 if header.group(2) == "0" else 1)
            if start < pos or start > len(lines):
                return None
            out += lines[pos:start]
            pos = start
            continue
        if line.rstrip("\n") == _NO_NEWLINE:
            continue
        tag, body = line[:1], line[1:]
        if n + 1 < len(hunks) and hunks[n + 1].rstrip("\n") == _NO_NEWLINE:
            body = body[:-1] if body.endswith("\n") else body
        if tag in (" ", "-"):
            if pos >= len(lines) or lines[pos] != body:
                return None
            pos += 1
            if tag == " ":
                out.append(body)
        elif tag == "+":
            out.append(body)
        else:
            return None
    return "".join(out + lines[pos:])
