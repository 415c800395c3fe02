"""The SHA-256 the tests compare with the stand-in's records: of text as the engine hashes it, or of bytes."""

from __future__ import annotations

import hashlib

from genai_magics.engine.hashing import sha256_text


def sha(data: str | bytes | None) -> str | None:
    """Hex SHA-256: text as ``engine.hashing.sha256_text`` hashes it, bytes as they are; None stays None
    (a turn with no document)."""
    if data is None:
        return None
    return hashlib.sha256(data).hexdigest() if isinstance(data, bytes) else sha256_text(data)
