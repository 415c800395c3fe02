"""What the stand-in answers an API request with: a status, a body or events, headers."""

from __future__ import annotations

from typing import Any

STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


DEFAULT_MESSAGES = {
    400: "Request contains an invalid argument.",
    401: "API key not valid. Please pass a valid API key. (stub)",
    403: "The caller does not have permission. (stub)",
    404: "Requested entity was not found. (stub)",
    429: "Resource has been exhausted (e.g. check quota). (stub)",
    500: "An internal error has occurred. (stub)",
    503: "The model is overloaded. Please try again later. (stub)",
}


class Reply:
    """What one API request is answered with, computed before anything is sent."""

    def __init__(
        self,
        status: int = 200,
        body: Any = None,
        events: list[bytes] | None = None,
        headers: dict[str, str] | None = None,
        cut: bool = False,
        paced: list[int] | None = None,
    ):
        self.status = status
        self.body = body
        self.events = events
        self.headers = headers or {}
        self.cut = cut
        self.paced = paced or []  # output tokens each event carries (``token_rate`` streams them in time)


def error(status: int, message: str | None = None, retry_after: Any = None) -> Reply:
    headers = {}
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    body = {
        "error": {
            "code": status,
            "message": message or DEFAULT_MESSAGES.get(status, "Stub error."),
            "status": STATUS_NAMES.get(status, "UNKNOWN"),
        }
    }
    return Reply(status, body, headers=headers)
