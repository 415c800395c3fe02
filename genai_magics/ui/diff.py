"""A diff as HTML that shows a proposal as text, never as markup, every invisible or bidirectional
character marked (engine/invisible.py): the diff a person reads is the text that is applied."""

from __future__ import annotations

import html

from .. import messages
from ..engine.diff import lines_of
from ..engine.invisible import marked_html, marked_text

MAX_DIFF_HTML = 200_000  # bytes of HTML shown; a bigger diff is summarized (the Copy button has the text)
MAX_DIFF_TEXT = MAX_DIFF_HTML  # characters of the text/plain form (a saved notebook, nbconvert): the same cap
_STYLES = {"+": "color:#116329;background:#dafbe1", "-": "color:#82071e;background:#ffebe9", "@": "color:#0550ae"}


def _summary(diff: str, cap: int) -> str:
    lines = lines_of(diff)
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    return messages.DIFF_TOO_LARGE.render(added=added, removed=removed, chars=len(diff), cap=cap)


def diff_html(diff: str, cap: int = MAX_DIFF_HTML) -> str:
    """The diff as escaped HTML, at most about ``cap`` bytes: a proposal is text, never markup."""
    rows, size = [], 0
    for line in (line.removesuffix("\n") for line in lines_of(diff)):  # only \n ends a diff line
        style = "font-weight:bold" if line.startswith(("+++", "---")) else _STYLES.get(line[:1], "")
        row = f'<span style="{style}">{marked_html(line) or "&nbsp;"}</span>'
        size += len(row) + 1
        if size > cap:
            body = html.escape(_summary(diff, cap))
            break
        rows.append(row)
    else:
        body = "\n".join(rows) if rows else "(no change)"
    return f'<pre style="font-size:12px;line-height:1.35;margin:0">{body}</pre>'


def diff_text(diff: str, cap: int = MAX_DIFF_TEXT) -> str:
    """The diff as plain text, or the same one-line summary as the HTML when it is over ``cap``."""
    text = marked_text(diff.rstrip()) or "(no change)"
    return text if len(text) <= cap else _summary(diff, cap)
