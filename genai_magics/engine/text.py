"""Text cut and measured the same way everywhere: one truncation, one token estimate."""

from __future__ import annotations

ELLIPSIS = "…"


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, the cut marked with an ellipsis."""
    if limit <= 0:
        return ""
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


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
