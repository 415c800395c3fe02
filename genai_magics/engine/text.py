"""Text cut and measured the same way everywhere: one truncation, one token estimate.

Every cut masks the API key first: a cut inside a key leaves a head that is no longer the
key, so masking after the cut would let that head out.
"""

from __future__ import annotations

from .redaction import redact, redaction_keys

ELLIPSIS = "…"


def cut(text: str, limit: int) -> str:
    """``text``'s first ``limit`` characters (no marker), every API key masked first when it is cut (a text
    that fits is not cut, and is masked where it goes, as a whole)."""
    return text if len(text) <= limit else redact(text)[: max(limit, 0)]


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, the cut marked with an ellipsis; every API key masked
    first when it is cut."""
    if limit <= 0:
        return ""
    if len(text) <= limit:
        return text
    text = redact(text)
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


def key_room() -> int:
    """How far past a cut a key that starts before it can reach: a slice taken before masking (a huge
    string's head, say) keeps this much more, so the key is whole when it is masked."""
    return max(map(len, redaction_keys()), default=0)


def sendable(text: str) -> str:
    """``text`` with each lone surrogate (an undecodable byte of a file name, say) written as its
    escape ``\\udcff``: a description of a value must be text the API can take."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def one_line(text: str, limit: int) -> str:
    """``text`` with its whitespace runs (newlines included) as single spaces, clipped."""
    return clip(" ".join(str(text).split()), limit)


def estimate_tokens(text: str) -> int:
    """About four bytes a token (the stand-in counts exactly this): for decisions and the 'saved' figure."""
    return (len(text.encode("utf-8", "surrogatepass")) + 3) // 4


def common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of two texts: a binary search on slices (C speed on 70 kB)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def counted(count: int, word: str, plural: str | None = None) -> str:
    """``count`` and the word, singular for one: ``1 line``, ``2 lines``, ``1,200 cells``."""
    return f"{count:,} {word if count == 1 else plural or word + 's'}"


def first_line_of(text: str, limit: int) -> str:
    """The first non-blank line of ``text``, stripped and clipped to ``limit`` characters ("" for none)."""
    line = next((stripped for raw in text.splitlines() if (stripped := raw.strip())), "")
    return clip(line, limit)
