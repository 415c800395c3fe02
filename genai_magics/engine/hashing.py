"""SHA-256 of text: the one notion of "the same document" the protocol uses."""

from __future__ import annotations

import hashlib


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def short(sha: str | None) -> str:
    """First 12 hex digits, for labels shown to people and the model."""
    return (sha or "")[:12]
