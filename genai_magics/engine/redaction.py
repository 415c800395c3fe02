"""Keeping the API key out of everything the package shows, sends or keeps."""

from __future__ import annotations

import os
from typing import Any

KEY_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_API_KEY")  # where the SDK reads a key (its _api_client)
MASK = "***"
# Every key this process has seen in those variables: after a key rotation a cell or the
# record may still hold the old one, and it is as secret as the new one. A key inside a
# longer one comes after the longer.
_seen: tuple[str, ...] = ()
_held: tuple[str | None, ...] = ()  # what those variables held at the last look: unchanged, nothing is new


def remember_keys() -> None:
    """Note the keys the environment holds now (at load, before every cell, at every redaction: ~8 a turn)."""
    global _seen, _held
    held = tuple(map(os.environ.get, KEY_VARIABLES))
    if held == _held:
        return
    _held = held
    new = {k for k in held if k and len(k) >= 4}.difference(_seen)
    if new:
        _seen = tuple(sorted((*_seen, *new), key=len, reverse=True))


def redaction_keys() -> tuple[str, ...]:
    """Every key redacted now: what a text redacted earlier depends on (a memo of one keys on it)."""
    remember_keys()
    return _seen


def redact(text: str) -> str:
    """The text with every API key this session has seen replaced by ***."""
    for key in redaction_keys():
        text = text.replace(key, MASK)
    return text


def redact_json(value: Any) -> Any:
    """A JSON value (a function call's arguments, say) with every string in it redacted; the rest as it is."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_json(v) for v in value]
    if isinstance(value, dict):
        return {redact_json(k) if isinstance(k, str) else k: redact_json(v) for k, v in value.items()}
    return value


def _masked(text: str, keys: list[str]) -> tuple[str, list[tuple[int, str]]]:
    """``text`` as :func:`redact` shows it, and where each mask stands in it (and for which key)."""
    out: list[str] = []
    where: list[tuple[int, str]] = []
    i = length = 0
    while i < len(text):
        key = next((k for k in keys if text.startswith(k, i)), None)
        if key is None:
            out.append(text[i])
            i += 1
            length += 1
        else:
            where.append((length, key))
            out.append(MASK)
            i += len(key)
            length += len(MASK)
    return "".join(out), where


def _unmask_line(masked: str, where: list[tuple[int, str]], proposal: str) -> str:
    """Put each key back where the proposal kept the base's mask in place (same surrounding text)."""
    import difflib  # on first use (a proposal with a mask in it): %load_ext imports none of it

    matcher = difflib.SequenceMatcher(None, masked, proposal, autojunk=False)
    blocks = matcher.get_matching_blocks()
    edits = []
    for pos, key in where:
        for a, b, size in blocks:
            if a <= pos and pos + len(MASK) <= a + size:
                edits.append((b + pos - a, key))
                break
    for at, key in sorted(edits, reverse=True):
        proposal = proposal[:at] + key + proposal[at + len(MASK) :]
    return proposal


def unmask(base: str, proposal: str) -> tuple[str, bool]:
    """The proposal with the API key put back where the model got it masked and kept it in place.

    The model saw ``base`` with every key as ``***``; a proposal repeating a
    line with that mask must not write ``***`` over the user's key. Each mask
    in the proposal that lines up with a masked key of the base (the same line,
    or the same text around it in a changed line) becomes that key again; a
    ``***`` the model wrote anywhere else stays. Returns the text and whether
    every key of the base that the proposal still masks found its place
    (False: a key line was changed around its mask, so the cell must be left
    as it is).
    """
    keys = [k for k in redaction_keys() if k in base]
    if not keys or MASK not in proposal:
        return proposal, True
    base_lines = base.split("\n")
    masked_lines = [_masked(line, keys) for line in base_lines]
    prop_lines = proposal.split("\n")
    out = list(prop_lines)
    import difflib

    matcher = difflib.SequenceMatcher(None, [m for m, _ in masked_lines], prop_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out[j1:j2] = base_lines[i1:i2]
        elif tag == "replace" and i2 - i1 == j2 - j1:
            for k in range(i2 - i1):
                masked, where = masked_lines[i1 + k]
                if where:
                    out[j1 + k] = _unmask_line(masked, where, prop_lines[j1 + k])
    text = "\n".join(out)
    lost = sum(text.count(k) for k in keys) < sum(base.count(k) for k in keys)
    return text, not (lost and text.count(MASK) > base.count(MASK))
