"""Characters a reader cannot see, marked so the code a person reads is the code that runs ("Trojan Source").

Bidirectional controls (U+202A-202E, U+2066-2069, U+200E/200F, U+061C) reorder what is shown; zero-width
and other format characters (U+200B-200D, U+2060, U+FEFF, the tag characters U+E0000-E007F) and the
invisible fillers show nothing at all. Each is marked as VS Code's editor highlights it: by its code point,
so an approval or a diff never shows text that differs from what is written. Tab, newline and carriage
return are what they look like; every other control, format or non-ASCII space character is marked.
"""

from __future__ import annotations

import html
import unicodedata
from collections.abc import Callable

# invisible although not of the format or control categories (Hangul fillers, the combining grapheme joiner)
_FILLERS = frozenset("\u115f\u1160\u3164\uffa0\u034f\u180e")
_PLAIN = frozenset("\t\n\r ")
MARK_STYLE = "color:#9a3412;background:#ffedd5;border:1px solid #fb923c;border-radius:2px;font-size:10px"


def hidden(ch: str) -> bool:
    """``ch`` shows nothing (or reorders what is around it) where a person reads it."""
    if ch in _PLAIN:
        return False
    return ch in _FILLERS or unicodedata.category(ch) in ("Cf", "Cc", "Zs", "Zl", "Zp")


# the ASCII characters ``hidden`` marks (the controls but tab, newline and carriage return): a text of ASCII
# without any is left as it is after one pass in C, not a call per character (a diff's lines, a proposal)
_ASCII_HIDDEN = frozenset(ch for ch in map(chr, range(128)) if hidden(ch))


def code_point(ch: str) -> str:
    return f"U+{ord(ch):04X}"


def _marked(text: str, plain: Callable[[str], str], mark: Callable[[str], str]) -> str:
    if text.isascii() and _ASCII_HIDDEN.isdisjoint(text):
        return plain(text)
    out: list[str] = []
    start = 0
    for at, ch in enumerate(text):
        if hidden(ch):
            out += [plain(text[start:at]), mark(ch)]
            start = at + 1
    out.append(plain(text[start:]))
    return "".join(out)


def marked_text(text: str) -> str:
    """``text`` with each hidden character written as ``⟪U+202E⟫`` (the plain-text form of an approval or diff)."""
    return _marked(text, lambda s: s, lambda ch: f"⟪{code_point(ch)}⟫")


def marked_html(text: str) -> str:
    """``text`` escaped as HTML, each hidden character a visible badge naming its code point."""
    return _marked(text, html.escape, lambda ch: f'<span style="{MARK_STYLE}">{code_point(ch)}</span>')


def hidden_count(text: str) -> int:
    return sum(1 for ch in text if hidden(ch))
