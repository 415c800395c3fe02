"""The notebook's rules: the project's AGENTS.md files and the notebook's own, as context sent once.

Each file is one ``ContextPiece`` of the ``rules`` field, named by its path from the notebook's
folder (``AGENTS.md``, ``../AGENTS.md``), the notebook's own rules one more (``notebook``): the
project root's first, nearer folders' after, the notebook's last, so the nearer win (as the
AGENTS.md convention says). As pieces they follow the one rule every context piece follows: sent
when the model does not hold that SHA-256 yet (a changed file again, as a change; an unchanged one
never), kept whole in the transcript's head where a cache holds them. They are no part of a turn's
explicit context in its identity: their digest is part of its settings hash (``settings_with``),
as the system instruction is, so a changed AGENTS.md makes the next Run All go live.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from .. import messages
from .context import ContextPiece
from .redaction import redact

# What the system instruction says of them, in a conversation that has rules only: without, the instruction
# (and so a turn's settings hash, and every figure measured without rules) stays as it was
INSTRUCTION = """\
"rules" holds the project's conventions, to follow: each AGENTS.md by its path from the notebook's folder,
the project root's first, nearer ones after and winning where they differ; "notebook": the notebook's own,
winning over all.
"""
RULES_FIELD = "rules"
NOTEBOOK_RULES = "notebook"  # the piece holding the notebook's own rules (its metadata)
FILE_NAME = "AGENTS.md"


@dataclass(frozen=True)
class RuleText:
    """One source of rules as read: its name for the model (a relative path, or ``notebook``) and text."""

    name: str
    text: str


def rule_pieces(texts: Sequence[RuleText], max_chars: int) -> tuple[ContextPiece, ...]:
    """A piece per source, in order, the key masked and each cut at ``max_chars`` with one line saying so."""
    pieces = []
    for source in texts:
        text = redact(source.text)  # masked before the cut: a key across the cut must not half-survive
        if not text.strip():
            continue
        if len(text) > max_chars:
            cut = messages.RULES_CUT.render(name=source.name, chars=len(text), cap=max_chars)
            text = f"{text[:max_chars]}\n{cut}"
        pieces.append(ContextPiece(RULES_FIELD, text, source.name))
    return tuple(pieces)


def is_rule(piece: ContextPiece) -> bool:
    return piece.field == RULES_FIELD


def has_rules(pieces: Sequence[ContextPiece]) -> bool:
    return any(is_rule(p) for p in pieces)


def settings_with(settings: str, pieces: Sequence[ContextPiece]) -> str:
    """A turn's settings hash with its rules in it (unchanged without rules: a record written before still
    replays)."""
    rules = [f"{p.name}\0{p.sha256}" for p in pieces if is_rule(p)]
    if not rules:
        return settings
    return hashlib.sha256("\0".join([settings, *rules]).encode("utf-8")).hexdigest()


def names(pieces: Sequence[ContextPiece]) -> str:
    """``AGENTS.md (2 files), the notebook's``: what a footer or a dry run names."""
    files = sum(p.name != NOTEBOOK_RULES for p in pieces)
    said = []
    if files:
        said.append(FILE_NAME if files == 1 else messages.RULES_FILES.render(name=FILE_NAME, count=files))
    if any(p.name == NOTEBOOK_RULES for p in pieces):
        said.append(messages.RULES_NOTEBOOK.render())
    return ", ".join(said)


def summary(sent: Sequence[ContextPiece], held: Sequence[ContextPiece]) -> str | None:
    """The one footer part about the rules this turn: sent, not re-sent, or some sent again (None: no rules)."""
    sent, held = [p for p in sent if is_rule(p)], [p for p in held if is_rule(p)]
    if not sent and not held:
        return None
    if not sent:
        return messages.RULES_HELD.render(names=names(held))
    if not held:
        return messages.RULES_SENT.render(names=names(sent))
    return messages.RULES_CHANGED.render(names=", ".join(str(p.name) for p in sent), held=len(held))
