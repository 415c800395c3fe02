"""How hard the property, long-session and retry tests work: fully in CI, less in a maintainer's quick loop.

``CI`` (or ``GENAI_MAGICS_THOROUGH=1``) in the environment runs every test at full strength; without
it the same tests run with fewer hypothesis examples, shorter sessions and shorter real retry waits.
"""

from __future__ import annotations

import os

from genai_magics.gemini.client import ClientSettings

THOROUGH = bool(os.environ.get("CI") or os.environ.get("GENAI_MAGICS_THOROUGH"))

# The SDK's real backoff (tenacity / the interactions client, sleeping for real): the default first
# wait in CI, a tenth of it otherwise.
RETRY_DELAY_S = ClientSettings.retry_delay_s if THOROUGH else 0.1


def examples(thorough: int) -> int:
    """Hypothesis's max_examples: ``thorough`` in CI (or GENAI_MAGICS_THOROUGH=1), an eighth otherwise."""
    return thorough if THOROUGH else max(5, thorough // 8)


def effort(thorough: int, quick: int) -> int:
    """``thorough`` (a session's turns, say) in CI (or GENAI_MAGICS_THOROUGH=1), ``quick`` otherwise."""
    return thorough if THOROUGH else quick
