"""API failures a user can act on, as one clear line each (no traceback by default)."""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass

from .. import messages
from ..engine.errors import UserError
from ..engine.redaction import redact
from ..engine.text import one_line
from .sdk_compat import interactions_status_error


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


@dataclass(frozen=True)
class _Kinds:
    """The SDK's failure types, from the modules already loaded (a failure means they are)."""

    status: tuple[type, ...]  # carry an HTTP status: google.genai.errors.APIError (.code), interactions' (.status_code)
    timeout: tuple[type, ...]
    connect: tuple[type, ...]
    cut: tuple[type, ...]  # the stream ended before the answer did


def failure_kinds() -> _Kinds:
    status: list[type] = []
    genai_errors = sys.modules.get("google.genai.errors")
    if genai_errors is not None:
        status.append(genai_errors.APIError)
    # The interactions client raises its own hierarchy (google-genai >= 3.3), wrapping httpx's errors.
    interactions = interactions_status_error()
    if interactions is not None:
        status.append(interactions)
    # The SDK's HTTP library: httpx2 since google-genai 3.6, httpx before (either may be in use).
    http = [sys.modules[name] for name in ("httpx2", "httpx") if name in sys.modules]
    return _Kinds(
        status=tuple(status),
        timeout=tuple(m.TimeoutException for m in http),
        connect=tuple(m.ConnectError for m in http),
        cut=tuple(m.RemoteProtocolError for m in http),
    )


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    """The exception and what it wraps (the interactions client wraps httpx's errors)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def status_code(exc: BaseException) -> int | None:
    """The HTTP status of an API failure, or None for anything else."""
    kinds = failure_kinds()
    for error in _chain(exc):
        if kinds.status and isinstance(error, kinds.status):
            code = getattr(error, "code", None)
            code = code if isinstance(code, int) else getattr(error, "status_code", None)
            return code if isinstance(code, int) else None
    return None


# Gemini's answer to a request past the model's input limit: a 400 INVALID_ARGUMENT like any bad request,
# with no structured field of its own (no reason, no details entry), so its text is the only thing that
# tells it apart. This is the one check here that reads a message; it reads only the limit's number.
_OVER_LIMIT = re.compile(r"input token count \((\d+)\) exceeds the maximum number of tokens allowed \((\d+)\)")


def over_input_limit(exc: BaseException) -> tuple[int, int] | None:
    """(the request's input tokens, the model's input limit) when the failure is Gemini refusing a request
    past the limit, else None."""
    if status_code(exc) != 400:
        return None
    found = _OVER_LIMIT.search(_server_message(exc))
    return (int(found.group(1)), int(found.group(2))) if found else None


def describe(exc: BaseException, *, attempts: int, timeout_s: float) -> UserError:
    """The failure as one line of the catalogue: what happened and what to do about it (its
    fields redacted: no key in them)."""
    found = _describe(exc, attempts=attempts, timeout_s=timeout_s)
    fields = {k: redact(v) if isinstance(v, str) else v for k, v in found.fields.items()}
    return UserError(found.message, **fields)


def _server_message(exc: BaseException) -> str:
    """The server's own error message (the interactions client keeps the JSON body apart)."""
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"]
    return getattr(exc, "message", None) or str(exc)


def _transport(exc: BaseException, kinds: _Kinds) -> tuple[str, BaseException] | None:
    """("timeout" | "connect" | "cut", the httpx error) when the failure had no HTTP answer."""
    for error in _chain(exc):
        named: tuple[tuple[str, tuple[type[BaseException], ...]], ...] = (
            ("timeout", kinds.timeout),
            ("connect", kinds.connect),
            ("cut", kinds.cut),
        )
        for kind, types in named:
            if types and isinstance(error, types):
                return kind, error
    return None


def _describe(exc: BaseException, *, attempts: int, timeout_s: float) -> UserError:
    code = status_code(exc)
    detail = one_line(redact(_server_message(exc)), 200)  # before clipping: no half key
    if code in (401, 403):
        return UserError(messages.KEY_REJECTED, code=code, detail=detail)
    over = over_input_limit(exc)
    if over is not None:
        return UserError(messages.INPUT_LIMIT, limit=over[1])
    if code == 400:
        return UserError(messages.REQUEST_REJECTED, detail=detail)
    if code == 404:
        return UserError(messages.NOT_FOUND, detail=detail)
    if code == 429:
        return UserError(messages.RATE_LIMITED, attempts=attempts)
    if code is not None and code >= 500:
        return UserError(messages.SERVER_ERROR, code=code, attempts=attempts)
    transport = _transport(exc, failure_kinds())
    if transport is not None:
        kind, error = transport
        if kind == "timeout":
            return UserError(messages.TIMED_OUT, timeout_s=timeout_s, attempts=attempts)
        if kind == "cut":
            return UserError(messages.STREAM_CUT)
        return UserError(messages.UNREACHABLE, error=one_line(redact(str(error)), 200))
    if code is not None:
        return UserError(messages.OTHER_STATUS, code=code, detail=detail)
    return UserError(messages.OTHER_FAILURE, kind=type(exc).__name__, detail=detail)
