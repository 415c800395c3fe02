"""The SDK client of a kernel: its retry settings, and the notices that say why a cell still waits.

The SDK's ``HttpRetryOptions`` does the retrying; ``RetryNotices`` only watches the responses (httpx
event hooks) and counts the bytes each request put on the wire. google.genai is imported only when a
client is made, never at import.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .. import messages
from ..engine.text import cut
from .errors import failure_kinds
from .sdk_compat import on_retry_wait


@dataclass(frozen=True)
class ClientSettings:
    retry_attempts: int = 5
    timeout_s: float = 120.0
    # The first retry's wait (later ones double, up to MAX_DELAY_S), plus up to as much again
    # of jitter: google-genai's own defaults (1 s and 1 s). Tests shorten it to keep real waits short.
    retry_delay_s: float = 1.0


RETRY_STATUS = (408, 429, 500, 502, 503, 504)
MAX_DELAY_S, EXP_BASE = 30.0, 2.0


class RetryNotices:
    """Turns each retriable HTTP answer into a 'retrying' line while a turn runs.

    The SDK's HttpRetryOptions does the retrying; this only watches responses
    (an httpx event hook) so the user sees why the cell is still waiting.
    """

    def __init__(self, attempts: int, timeout_s: float):
        self.attempts = attempts
        self.timeout_s = timeout_s
        self.say: Callable[[str], None] | None = None
        self.honours_retry_after = False  # whether the running turn's client waits as Retry-After says
        self.retry_delay_s = ClientSettings.retry_delay_s  # the client's first wait: make_client sets it
        self.failures = 0
        self.request_bytes = 0  # the body of the turn's latest request (its last attempt), as it went on the wire
        self.earlier_bytes = 0  # the bodies of the turn's requests before it

    @property
    def turn_bytes(self) -> int:
        return self.earlier_bytes + self.request_bytes

    def on_request(self, request) -> None:
        """httpx request hook: what really goes over the wire (the SDK's own JSON) to the model; a retry
        of a request replaces it, a cache's creation is not a request to the model."""
        path = request.url.path
        if path.endswith((":generateContent", ":streamGenerateContent")) or path.rstrip("/").endswith("/interactions"):
            self.request_bytes = len(request.content)

    def next_request(self) -> None:
        """The turn sends another request (an answer to function calls, an edit's retry)."""
        self.earlier_bytes += self.request_bytes
        self.request_bytes = 0

    def start(self, say: Callable[[str], None] | None, honours_retry_after: bool = False) -> None:
        """Announce retries to ``say`` while a turn runs; None stops announcing."""
        self.say = say
        self.honours_retry_after = honours_retry_after
        if say is not None:  # a new turn; when it is over, keep what it measured
            self.failures = self.request_bytes = self.earlier_bytes = 0

    def retry_wait(self, error: BaseException, wait: float) -> None:
        """The SDK's retrying waits after ``error``: a failure without an HTTP answer is announced here
        (HTTP answers are announced by the response hook)."""
        kinds = failure_kinds()
        if isinstance(error, kinds.status):
            return
        detail = cut(" ".join(str(error).split()), 120).rstrip(".") or type(error).__name__
        self.transport_failure(isinstance(error, kinds.timeout), detail, wait)

    def transport_failure(self, timed_out: bool, error: str, wait: float) -> None:
        """A retry after a failure without an HTTP answer (connection refused, reset, timeout)."""
        self.failures += 1
        if self.say is None or self.failures >= self.attempts:
            return
        why = (
            messages.NO_ANSWER_WITHIN.render(timeout_s=self.timeout_s)
            if timed_out
            else messages.CANNOT_REACH.render(error=error)
        )
        self._retrying(why, wait)

    def __call__(self, response) -> None:
        if response.status_code not in RETRY_STATUS or self.say is None:
            return
        self.failures += 1
        if self.failures >= self.attempts:
            return  # the last attempt: the failure itself is reported
        header = response.headers.get("retry-after") if self.honours_retry_after else None
        try:
            wait = float(header) if header else None
        except ValueError:
            wait = None
        if wait is None:
            wait = min(MAX_DELAY_S, self.retry_delay_s * EXP_BASE ** (self.failures - 1))
        what = messages.RATE_LIMITED_NOW if response.status_code == 429 else messages.SERVER_ERROR_NOW
        self._retrying(what.render(code=response.status_code), wait)

    def _retrying(self, why: str, wait: float) -> None:
        if self.say is not None:
            self.say(
                messages.RETRYING.render(
                    why=why, wait=_seconds(wait), attempt=self.failures + 1, attempts=self.attempts
                )
            )


def _seconds(wait: float) -> str:
    """Whole seconds, as a user's waits are; a shortened (test) wait keeps one significant digit."""
    return f"{wait:.0f}" if wait >= 1 else f"{wait:.1g}"


def make_client(settings: ClientSettings, notices: RetryNotices):
    """A google-genai client; the SDK reads the key and base URL from the environment."""
    from google import genai
    from google.genai import types

    from .errors import redact_library_logs

    redact_library_logs()
    retry = types.HttpRetryOptions(
        attempts=max(1, settings.retry_attempts),
        initial_delay=settings.retry_delay_s,
        max_delay=MAX_DELAY_S,
        exp_base=EXP_BASE,
        jitter=settings.retry_delay_s,
        http_status_codes=list(RETRY_STATUS),
    )
    notices.retry_delay_s = settings.retry_delay_s  # so the notices announce the waits this client takes
    client = genai.Client(
        http_options=types.HttpOptions(
            retry_options=retry,
            timeout=int(settings.timeout_s * 1000),
            client_args={"event_hooks": {"request": [notices.on_request], "response": [notices]}},
        )
    )
    on_retry_wait(client, notices.retry_wait)
    return client
