"""API failures a user can act on, as one clear line each (no traceback by default)."""
from __future__ import annotations

import logging


from ..engine.redaction import redact


class _RedactKeys(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


_REDACT_KEYS = _RedactKeys()


def redact_library_logs() -> None:
    """Keep the key out of the SDK's and httpx's own log lines (a server may echo it back).

    Filters on a logger apply to what that logger emits, so each one gets it;
    called whenever a client is made, after the SDK's modules exist.
    """
    for name in list(logging.root.manager.loggerDict):
        if name.startswith(("google_genai", "google.genai", "httpx", "httpcore")):
            logger = logging.getLogger(name)
            if _REDACT_KEYS not in logger.filters:
                logger.addFilter(_REDACT_KEYS)


def _first_line(text: str, limit: int = 200) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def status_code(exc: BaseException) -> int | None:
    for attr in ("code", "status_code"):
        value = getattr(exc, attr, None)
        if isinstance(value, int):
            return value
    return None


def describe(exc: BaseException, *, attempts: int, timeout_s: float) -> str:
    """One line: what happened and what to do about it."""
    return redact(_describe(exc, attempts=attempts, timeout_s=timeout_s))


def _server_message(exc: BaseException) -> str:
    """The server's own error message (the interactions client keeps the JSON body apart)."""
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"]
    return getattr(exc, "message", None) or str(exc)


def _describe(exc: BaseException, *, attempts: int, timeout_s: float) -> str:
    code = status_code(exc)
    detail = _first_line(redact(_server_message(exc)))  # before clipping: no half key
    name = type(exc).__name__
    if code in (401, 403):
        return f"API key rejected ({code}): set GEMINI_API_KEY (or GOOGLE_API_KEY) to a valid key. {detail}"
    if code == 400:
        return f"Gemini rejected the request (400): {detail} - check the prompt and --model; --dry-run shows the request"
    if code == 404:
        return f"not found (404): check the model name (%config GeminiMagics.model). {detail}"
    if code == 429:
        return f"rate limited (429) after {attempts} attempt(s); wait a minute and run the cell again."
    if code is not None and code >= 500:
        return f"Gemini server error ({code}) after {attempts} attempt(s); run the cell again later."
    if "Timeout" in name or "timed out" in detail.lower():
        return (f"no answer within {timeout_s:g} s (each of {attempts} attempt(s)); "
                "raise %config GeminiMagics.timeout or try again.")
    if "RemoteProtocol" in name or "incomplete" in detail.lower() or "peer closed" in detail.lower():
        return "the answer stream was cut off before it finished; run the cell again."
    if "Connect" in name or "connection refused" in detail.lower():
        return f"cannot reach Gemini ({detail}); check the network or GOOGLE_GEMINI_BASE_URL."
    return f"{name}: {detail}"
