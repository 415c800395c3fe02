"""Server-sent events: how a streamed answer is cut into pieces and framed."""

from __future__ import annotations

import json
import math
from typing import Any


def chunks(text: str, minimum: int = 3, size: int = 48, most: int = 32) -> list[str]:
    """Split text (by characters, never inside a UTF-8 sequence) into >= ``minimum`` pieces of about
    ``size`` characters, and no more than ``most`` pieces: a long answer streams in bigger pieces,
    as Gemini's do (and the SDK parses each event of an interaction into new pydantic types)."""
    n = max(minimum, min(most, math.ceil(len(text) / size)))
    step = max(1, math.ceil(len(text) / n))
    parts = [text[i : i + step] for i in range(0, len(text), step)] or [""]
    while len(parts) < minimum:
        parts.append("")
    return parts


def event(obj: Any, name: str | None = None) -> bytes:
    """One server-sent event (``event: name`` line when named) carrying ``obj`` as JSON."""
    data = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {data}\r\n\r\n".encode()
