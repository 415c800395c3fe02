"""The footer line under a turn's answer, found by its catalogue message (``messages.FOOTER_TURN``)."""

from __future__ import annotations

from genai_magics import messages


def footer_line(text: str, **known: object) -> str:
    """The first line of ``text`` that starts as a turn's footer (with the ``known`` fields: ``turn=1``)."""
    head = messages.FOOTER_TURN.pattern(prefixed=False, **known)
    return next(line for line in text.splitlines() if head.match(line))
