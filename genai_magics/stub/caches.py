"""Explicit context caches: the real API's messages, default lifetime and time formats."""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any

CACHE_MISSING = "CachedContent not found (or permission denied)"


CACHE_CONFLICT = (
    "CachedContent can not be used with GenerateContent request setting system_instruction, "
    "tools or tool_config.\n\nProposed fix: move those values to CachedContent from "
    "GenerateContent request."
)


DEFAULT_CACHE_TTL_S = 3600.0  # the real API's default when a cache is made without a TTL


def duration(value: Any) -> float | None:
    """``"300s"`` / ``"1.5s"`` -> seconds; None if it is not a protobuf Duration."""
    if isinstance(value, str) and re.fullmatch(r"\d+(?:\.\d+)?s", value.strip()):
        return float(value.strip()[:-1])
    return None


def timestamp(seconds: float) -> str:
    return _dt.datetime.fromtimestamp(seconds, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_timestamp(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return _dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
