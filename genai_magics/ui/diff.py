"""A diff as HTML that shows a proposal as text, never as markup."""
from __future__ import annotations

import html


def diff_html(diff: str) -> str:
    """The diff as escaped HTML: a proposal is text, never markup."""
    styles = {"+": "color:#116329;background:#dafbe1", "-": "color:#82071e;background:#ffebe9", "@": "color:#0550ae"}
    rows = []
    for line in diff.splitlines():
        style = styles.get(line[:1], "")
        if line.startswith(("+++", "---")):
            style = "font-weight:bold"
        rows.append(f'<span style="{style}">{html.escape(line) or "&nbsp;"}</span>')
    body = "\n".join(rows) if rows else "(no change)"
    return f'<pre style="font-size:12px;line-height:1.35;margin:0">{body}</pre>'
