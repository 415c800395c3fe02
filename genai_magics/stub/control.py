"""The stand-in's control routes (``/_stub/...``, never recorded): one handler a route, in a table.

Tests, the demo and benchmarks steer the stand-in through them; ``answer`` finds the route and
returns the status and JSON to send.

The routes: ``GET /_stub/requests``, ``POST /_stub/reset``, ``POST /_stub/clear`` (the records only),
``POST /_stub/inject``, ``POST /_stub/script_edit`` (``{"proposedSource": ...}`` or
``{"edits": [...]}``: the next edit answers exactly that), ``POST /_stub/script_tools``
(``{"rounds": [[{"name", "args"}], ...], "arguments": "whole"|"delta"}``: the next turn declaring
functions calls them, a round a request: ``stub/tools.py``), ``POST /_stub/pace``
(``{"token_rate": n}``: stream output at n tokens a second; 0, the default, is as fast as it
can), ``GET /_stub/interactions``, ``DELETE /_stub/interactions/{id}``, ``GET /_stub/caches``
(every cache made, with its lifetime), ``POST /_stub/clock`` (``{"advance": s}``),
``POST /_stub/caching`` (``{"implicit": bool, "missing_status": 403|404,
"implicit_ttl_s": s, "implicit_minimum": {model: tokens}}``), ``POST /_stub/limit``
(``{"input_tokens": n}``: every model's input limit; null: Gemini's).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import unquote

PREFIX = "/_stub/"


class Steered(Protocol):
    """What the control routes use of the stand-in (``server.StubServer``)."""

    token_rate: float

    @property
    def requests(self) -> list[dict[str, Any]]: ...
    @property
    def caches(self) -> list[dict[str, Any]]: ...
    @property
    def interactions(self) -> dict[str, dict[str, Any]]: ...
    def reset(self) -> None: ...
    def clear(self) -> None: ...
    @property
    def inject(self) -> Callable[..., dict[str, Any]]: ...  # the faults' keyword fields
    def script_edit(self, proposed_source: str | list[Any]) -> None: ...
    def script_tools(self, rounds: list[list[dict[str, Any]]], arguments: str = "whole") -> None: ...
    def advance(self, seconds: float) -> float: ...
    @property
    def configure_caching(self) -> Callable[..., dict[str, Any]]: ...  # the caching model's keyword fields
    def forget_interaction(self, interaction_id: str) -> bool: ...
    def limit_input(self, tokens: int | None) -> dict[str, Any]: ...


class Refused(Exception):
    """A control request the stand-in cannot take: answered 400 with this text."""


Reply = tuple[int, Any]
Handler = Callable[[Steered, Any, str], Reply]  # (stand-in, JSON body, the path after the route) -> reply

OK: Reply = (200, {"ok": True})
INJECT_KEYS = {"fault", "status", "times", "match", "retry_after", "seconds", "message", "after_chunks"}
CACHING_KEYS = {"implicit", "missing_status", "implicit_ttl_s", "implicit_minimum"}


def _object(body: Any, allowed: set[str], what: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise Refused(f"expected {what}")
    unknown = set(body) - allowed
    if unknown:
        raise Refused(f"unknown keys {sorted(unknown)}")
    return body


def _reset(stub: Steered, body: Any, tail: str) -> Reply:
    stub.reset()
    return OK


def _clear(stub: Steered, body: Any, tail: str) -> Reply:
    stub.clear()
    return OK


def _inject(stub: Steered, body: Any, tail: str) -> Reply:
    fields = _object(body, INJECT_KEYS, "a JSON object")
    injection = stub.inject(**{k: v for k, v in fields.items() if v is not None or k == "match"})
    return 200, {"ok": True, "injection": injection}


def _script_edit(stub: Steered, body: Any, tail: str) -> Reply:
    scripted = body.get("proposedSource", body.get("edits")) if isinstance(body, dict) else None
    if not isinstance(scripted, (str, list)):
        raise Refused('expected {"proposedSource": "..."} or {"edits": [...]}')
    stub.script_edit(scripted)
    return OK


def _script_tools(stub: Steered, body: Any, tail: str) -> Reply:
    rounds = body.get("rounds") if isinstance(body, dict) else None
    if not isinstance(rounds, list) or not all(isinstance(r, list) for r in rounds):
        raise Refused('expected {"rounds": [[{"name": ..., "args": {...}}], ...]}')
    stub.script_tools(rounds, body.get("arguments", "whole"))
    return OK


def _pace(stub: Steered, body: Any, tail: str) -> Reply:
    stub.token_rate = max(0.0, float((body or {}).get("token_rate", 0)))
    return 200, {"token_rate": stub.token_rate}


def _clock(stub: Steered, body: Any, tail: str) -> Reply:
    return 200, {"now": stub.advance(float((body or {}).get("advance", 0)))}


def _caching(stub: Steered, body: Any, tail: str) -> Reply:
    if not isinstance(body, dict) or set(body) - CACHING_KEYS:
        raise Refused(f"expected an object with keys among {sorted(CACHING_KEYS)}")
    return 200, stub.configure_caching(**body)


def _limit(stub: Steered, body: Any, tail: str) -> Reply:
    fields = _object(body, {"input_tokens"}, '{"input_tokens": n or null}')
    return 200, stub.limit_input(fields.get("input_tokens"))


def _forget_interaction(stub: Steered, body: Any, tail: str) -> Reply:
    ident = unquote(tail)
    found = stub.forget_interaction(ident)
    return (200 if found else 404), {"ok": found, "id": ident}


# (method, route after /_stub/) -> handler; a route ending in "/" takes the rest of the path
ROUTES: dict[tuple[str, str], Handler] = {
    ("GET", "requests"): lambda stub, body, tail: (200, stub.requests),
    ("POST", "reset"): _reset,
    ("POST", "clear"): _clear,
    ("POST", "inject"): _inject,
    ("POST", "script_edit"): _script_edit,
    ("POST", "script_tools"): _script_tools,
    ("POST", "pace"): _pace,
    ("GET", "caches"): lambda stub, body, tail: (200, stub.caches),
    ("POST", "clock"): _clock,
    ("POST", "caching"): _caching,
    ("POST", "limit"): _limit,
    ("GET", "interactions"): lambda stub, body, tail: (200, sorted(stub.interactions)),
    ("DELETE", "interactions/"): _forget_interaction,
}


def answer(stub: Steered, method: str, path: str, body: Any) -> Reply:
    """The reply to a control request: its route's, a 400 for one it refuses, a 404 for no route."""
    route = path[len(PREFIX) :]
    for (verb, name), handler in ROUTES.items():
        exact = route == name and not name.endswith("/")
        if verb == method and (exact or (name.endswith("/") and route.startswith(name))):
            try:
                return handler(stub, body, route[len(name) :])
            except (Refused, TypeError, ValueError, AttributeError) as exc:
                return 400, {"error": str(exc)}
    return 404, {"error": f"no control route {method} {path}"}
