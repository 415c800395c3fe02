"""The record's JSON texts kept from one write to the next, for the store that writes it.

``engine/record.py`` makes a turn's text from the turn alone (``TextMaker``); a store that
writes after every turn keeps them here, so a write costs the new turn, not the whole
conversation again (a 500-turn record on a 2,000-line cell: ~130 ms whole, ~1.5 ms a turn).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..engine.conversation import Turn
from ..engine.payloads import compact_json
from ..engine.record import TurnText, turn_text
from ..engine.replay import TurnMeta


@dataclass
class Bounded:
    """Texts kept, bounded by the characters they hold: emptied when over."""

    max_chars: int = 32_000_000
    entries: dict[Any, tuple[Any, Any]] = field(default_factory=dict)
    chars: int = 0

    def get(self, key: Any) -> Any:
        hit = self.entries.get(key)
        return hit[1] if hit is not None else None

    def put(self, key: Any, keep: Any, made: Any, size: int) -> None:
        """``keep``: an object whose id is in ``key``, kept alive while the entry is."""
        if self.chars + size > self.max_chars:
            self.entries.clear()
            self.chars = 0
        self.entries[key] = (keep, made)
        self.chars += size


@dataclass
class KeptTexts:
    """A ``TextMaker`` that keeps what it made: a turn's text is made again only when the turn changed
    (an outcome, a usage) or its meta did; a version of the code once for every turn that names it (a long
    session on a large cell names ~200 KB of code a turn)."""

    turns: Bounded = field(default_factory=Bounded)
    sources: Bounded = field(default_factory=Bounded)

    def turn(self, t: Turn, meta: TurnMeta | None, images: bool) -> TurnText:
        # Keyed on the turn's values, not the object: a conversation's copy (a snapshot, a branch) holds the
        # same texts; and on the meta's state by id, kept alive with the entry.
        key = (tuple(t.__dict__.values()), images, None if meta is None else (meta.key, meta.at, id(meta.after)))
        hit = self.turns.get(key)
        if hit is None:
            hit = turn_text(t, meta, images)
            self.turns.put(key, meta and meta.after, hit, len(hit[0]))
        return hit

    def source(self, sha: str, source: str) -> str:
        hit = self.sources.get(sha)
        if hit is None:
            hit = compact_json(source)
            self.sources.put(sha, None, hit, len(hit))
        return hit
