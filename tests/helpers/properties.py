"""How hard the property and long-session tests work: fully in CI, less in a maintainer's quick loop."""

from __future__ import annotations

import os

THOROUGH = bool(os.environ.get("CI") or os.environ.get("GENAI_MAGICS_THOROUGH"))


def examples(thorough: int) -> int:
    """Hypothesis's max_examples: ``thorough`` in CI (or GENAI_MAGICS_THOROUGH=1), an eighth otherwise."""
    return thorough if THOROUGH else max(5, thorough // 8)
