"""A document over the explicit cache's minimum, for the tests that need one cached."""

from __future__ import annotations

MODEL = "gemini-3.7-flash"  # the table's 4,096-token cache minimum applies
# ~26 kB of code: ~6,500 tokens, over the cache minimum
BIG = "".join(
    f"def step_{i}(values, limit={i}):\n    return [v * {i} for v in values if v < limit]\n\n" for i in range(320)
)
