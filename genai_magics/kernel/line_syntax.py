"""The one-line magics as IPython reads them: a question may end with ``?``.

IPython turns any line ending in ``?`` into a help lookup (its ``HelpEnd``
token transformer) before a magic sees it, so ``%gemini_ask what does parse
do?`` would print "Object `do` not found". A cleanup transformer (these run
before the token transformers) writes lines starting with ``%gemini_ask``, ``%gemini_agent`` /
``%gemini_edit`` as the magic call IPython would have made itself, and
touches nothing else (``%%`` cells, ``%gemini_ask?`` help, other lines).
"""

from __future__ import annotations

import re

_LINE = re.compile(r"^([ \t]*)%(gemini_ask|gemini_edit|gemini_agent)(?=[ \t])(.*?)(\r?\n)?$")


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


# A word of the line: quoted parts keep their spaces (as IPython's arg_split reads a flag's value).
_WORD = re.compile(r"""(?:[^\s"']+|"[^"]*"|'[^']*')+""")


def split_prompt(line: str, takes_value: frozenset[str]) -> tuple[str, str]:
    """(the flags, the prompt) of a one-line magic: flags count only before the first word of
    the prompt, so ``explain when I should use --new`` is all prompt. ``takes_value``: the
    flags that read the next word as their value (``--cell -1``); ``--`` ends the flags."""
    value_next = False
    for m in _WORD.finditer(line):
        word = m.group()
        if value_next:
            value_next = False
        elif word == "--":
            return line[: m.start()], line[m.end() :].strip()
        elif word.startswith("-") and len(word) > 1:
            value_next = "=" not in word and word in takes_value
        else:
            return line[: m.start()], line[m.start() :].strip()
    return line, ""
