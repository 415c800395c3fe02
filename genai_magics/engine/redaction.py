"""Keeping the API key out of everything the package shows, sends or keeps."""
from __future__ import annotations

import os


def redact(text: str) -> str:
    """The text with any API key from the environment replaced by ***."""
    for var in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        key = os.environ.get(var)
        if key and len(key) >= 4:
            text = text.replace(key, "***")
    return text
