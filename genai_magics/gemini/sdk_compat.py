"""Every hook into google-genai's private parts, in one place, each behind a version or feature check.

As frontends/kernel_compat.py does for ipykernel: the rest of the package uses the SDK's public API
only. Read from google-genai 3.3-3.6; on another major version a hook is left out (each says what is
lost then) instead of failing a turn.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

SUPPORTED_MAJOR = 3


def sdk_major() -> int | None:
    """google-genai's major version, once it is imported (None before, or if unreadable)."""
    genai = sys.modules.get("google.genai")
    try:
        return int(str(getattr(genai, "__version__", "")).split(".")[0])
    except ValueError:
        return None


def interactions_status_error() -> type | None:
    """The interactions client's HTTP failure class (its own hierarchy, in a private module since 3.3)."""
    module = sys.modules.get("google.genai._interactions_errors")
    cls = getattr(module, "APIStatusError", None)
    return cls if isinstance(cls, type) else None


def on_retry_wait(client, hook: Callable[[BaseException, float], None]) -> bool:
    """Call ``hook(exception, wait_s)`` before each wait of the client's own retries.

    google-genai retries with tenacity objects it builds once per client (``_api_client._retry`` and
    ``_async_retry``); their ``before_sleep`` (the SDK's log line) is kept and ours runs after it, with
    the exception itself, so it is told apart by type. False when this SDK has no such objects: the
    retries still happen, only the notices of failures without an HTTP answer are missing.
    """
    if sdk_major() != SUPPORTED_MAJOR:
        return False
    api = getattr(client, "_api_client", None)
    hooked = False
    for name in ("_retry", "_async_retry"):
        retrying = getattr(api, name, None)
        if retrying is None or not hasattr(retrying, "before_sleep"):
            continue
        retrying.before_sleep = _then(retrying.before_sleep, hook)
        hooked = True
    return hooked


def _then(sdk_before_sleep, hook: Callable[[BaseException, float], None]):
    def before_sleep(state) -> None:
        if sdk_before_sleep is not None:
            sdk_before_sleep(state)
        outcome, action = state.outcome, state.next_action
        error = outcome.exception() if outcome is not None and outcome.failed else None
        if error is not None:
            hook(error, float(getattr(action, "sleep", 0.0) or 0.0))

    return before_sleep
