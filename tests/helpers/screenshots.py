"""The README's pictures (docs/images/): a proposal with its diff and buttons, taken by a browser test
(JupyterLab) and a VS Code test (the companion) when ``GENAI_MAGICS_SCREENSHOTS`` names a folder
(``scripts/screenshots.sh`` sets it); without it they take none.

Both show the README's own example: the model's proposal is scripted on the stand-in (what a model
would answer), so the picture shows a real diff rather than the stand-in's one comment line.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

FOLDER = "GENAI_MAGICS_SCREENSHOTS"
CODE = "def parse(s):\n    return int(s)"
INSTRUCTION = "Add input validation and raise ValueError with a helpful message."
PROPOSAL = (
    "def parse(s):\n"
    "    if not isinstance(s, str) or not s.strip():\n"
    '        raise ValueError(f"parse() needs a non-empty string, got {s!r}")\n'
    "    try:\n"
    "        return int(s)\n"
    "    except ValueError:\n"
    '        raise ValueError(f"not an integer: {s!r}") from None'
)


def save(page: Any, name: str) -> Path | None:
    """The page as ``<folder>/<name>.png`` when ``GENAI_MAGICS_SCREENSHOTS`` is set."""
    folder = os.environ.get(FOLDER)
    if not folder:
        return None
    path = Path(folder) / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path))
    return path
