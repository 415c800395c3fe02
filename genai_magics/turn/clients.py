"""The SDK clients of a kernel: one per settings and credentials, built one at a time, the first
built in the background after %load_ext (the warm-up)."""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass, field
from typing import Any

from .. import messages
from ..engine.background import BackgroundThread
from ..engine.errors import UserError
from ..gemini.client import ClientSettings, RetryNotices, make_client
from ..gemini.errors import describe
from ..gemini.warm_up import rehearse
from .requests import Settings

# What the SDK reads from the environment when a client is made.
CLIENT_ENV = (
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_GENAI_API_VERSION",
)


def _no_key() -> bool:
    """The Gemini Developer API takes its key from GEMINI_API_KEY or GOOGLE_API_KEY; Vertex AI
    (GOOGLE_GENAI_USE_VERTEXAI) uses Google Cloud credentials instead (the SDK's rule)."""
    vertex = os.environ.get("GOOGLE_GENAI_USE_VERTEXAI", "").strip().lower() in ("1", "true")
    return not vertex and not (os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY"))


@dataclass
class Clients:
    _clients: dict[str, tuple[Any, RetryNotices]] = field(default_factory=dict)
    # One client is built at a time: a turn that arrives during the warm-up waits for it.
    _client_lock: threading.Lock = field(default_factory=threading.Lock)

    def client(self, settings: ClientSettings) -> tuple[Any, RetryNotices]:
        """One SDK client per settings and credentials: a new key or base URL takes effect at once."""
        env = tuple(os.environ.get(name, "") for name in CLIENT_ENV)
        key = hashlib.sha256(repr((settings, env)).encode()).hexdigest()  # no key text kept here
        if _no_key():
            raise UserError(messages.NO_API_KEY)
        with self._client_lock:
            if key not in self._clients:
                notices = RetryNotices(settings.retry_attempts, settings.timeout_s)
                try:
                    self._clients[key] = (make_client(settings, notices), notices)
                except ValueError as exc:  # the SDK's settings checks (Vertex AI project, options)
                    raise describe(exc, attempts=0, timeout_s=settings.timeout_s) from None
            return self._clients[key]

    def warm_up(self, settings: Settings) -> threading.Thread:
        """Import the SDK, run its lazy first steps offline and build the client, in the
        background, so the first turn's request leaves as fast as the others'. The first turn
        waits for the client lock rather than importing in parallel; a failure here (no key
        yet) is left for that turn to report."""

        def build() -> None:
            with self._client_lock:
                try:
                    rehearse(settings.state, settings.model)
                except Exception:  # noqa: BLE001 - only a head start: the turn itself does the same work
                    pass
            try:
                self.client(settings.client)
            except UserError:
                pass

        thread = BackgroundThread(build, "warm-up")
        thread.start()
        return thread
