"""The one-line magics as IPython reads them: a question may end with ``?``.

IPython turns any line ending in ``?`` into a help lookup (its ``HelpEnd``
token transformer) before a magic sees it, so ``%gemini_ask what does parse
do?`` would print "Object `do` not found". A cleanup transformer (these run
before the token transformers) writes lines starting with ``%gemini_ask`` /
``%gemini_edit`` as the magic call IPython would have made itself, and
touches nothing else (``%%`` cells, ``%gemini_ask?`` help, other lines).
"""

from __future__ import annotations

import re

_LINE = re.compile(r"^([ \t]*)%(gemini_ask|gemini_edit)(?=[ \t])(.*?)(\r?\n)?$")


def _call(match: re.Match) -> str:
    indent, name, rest, end = match.groups()
    return f"{indent}get_ipython().run_line_magic({name!r}, {rest.strip()!r}){end or ''}"


def one_line_questions(lines: list[str]) -> list[str]:
    """IPython cleanup transformer: a one-line gemini magic keeps a trailing ``?``."""
    if not lines or lines[0].lstrip().startswith("%%"):
        return lines  # a cell magic's body is its own business
    out = []
    for line in lines:
        m = _LINE.match(line)
        # only a line that ends in '?' needs this; a continued line ('\') is left to IPython
        if m and m.group(3).rstrip().endswith("?") and not m.group(3).rstrip().endswith("\\"):
            out.append(_call(m))
        else:
            out.append(line)
    return out
