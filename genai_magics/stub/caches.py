"""Explicit context caches: the store of the caches made, the real API's messages, default
lifetime and time formats."""

from __future__ import annotations

import datetime as _dt
import json
import re
import threading
from collections.abc import Callable
from typing import Any

from . import images
from .model import texts, tokens
from .replies import Reply, error
from .request_record import RequestRecord
from .tools import contents_declared

CACHE_MISSING = "CachedContent not found (or permission denied)"


CACHE_CONFLICT = (
    "CachedContent can not be used with GenerateContent request setting system_instruction, "
    "tools or tool_config.\n\nProposed fix: move those values to CachedContent from "
    "GenerateContent request."
)


DEFAULT_CACHE_TTL_S = 3600.0  # the real API's default when a cache is made without a TTL


def duration(value: Any) -> float | None:
    """``"300s"`` / ``"1.5s"`` -> seconds; None if it is not a protobuf Duration."""
    if isinstance(value, str) and re.fullmatch(r"\d+(?:\.\d+)?s", value.strip()):
        return float(value.strip()[:-1])
    return None


def timestamp(seconds: float) -> str:
    return _dt.datetime.fromtimestamp(seconds, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_timestamp(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return _dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class CacheStore:
    """The explicit caches the stand-in made (deleted and expired ones kept, marked), on its clock."""

    def __init__(self, now: Callable[[], float], minimum: Callable[[str], int]):
        self._now = now
        self._minimum = minimum  # a model's smallest cache, in tokens
        self._lock = threading.RLock()
        self._caches: dict[str, dict[str, Any]] = {}
        self._next = 1
        self.missing_status = 403  # what a cache it does not know answers (403 or 404)

    def reset(self) -> None:
        with self._lock:
            self._caches.clear()
            self._next = 1
            self.missing_status = 403

    def listing(self) -> list[dict[str, Any]]:
        """Every cache made, oldest first: name, model, its system instruction, tokens, created, ended (delete or
        expiry), state."""
        with self._lock:
            now = self._now()
            out = []
            for c in self._caches.values():
                state = c["state"] if c["state"] != "live" or c["expire"] > now else "expired"
                ended = c["ended"] if c["ended"] is not None else (c["expire"] if state == "expired" else None)
                out.append(
                    {
                        "name": c["name"],
                        "model": c["model"],
                        "system": c["system"],
                        "tokens": c["tokens"],
                        "state": state,
                        "created": c["created"],
                        "ended": ended,
                        "expire": c["expire"],
                        "token_seconds": c["tokens"] * ((ended if ended is not None else now) - c["created"]),
                    }
                )
            return out

    def for_request(self, name: Any, model: str) -> dict[str, Any] | Reply:
        """The live cache a generate request of ``model`` names, or the error the real API answers."""
        with self._lock:
            cache = self._live(name) if isinstance(name, str) else None
            if cache is None:
                return self._missing(str(name))
            if cache["model"] != f"models/{model}":
                return error(400, f"Model {model!r} does not match the model of {name} ({cache['model']}). (stub)")
            return cache

    def create(self, body: dict[str, Any], info: RequestRecord) -> Reply:
        model = body.get("model")
        if not isinstance(model, str) or not model.startswith("models/"):
            return error(400, "model must be 'models/{model}'. (stub)")
        try:
            contents, info.images = images.contents_with_images(body.get("contents"), texts)
        except images.BadImage as exc:
            return error(400, str(exc))
        system = "".join(texts(body.get("systemInstruction")))
        # the function declarations the cache holds: read (and billed) with it, as a request reads them
        declared = json.dumps(body["tools"], sort_keys=True) if body.get("tools") else ""
        total = sum(tokens(t) for _, t in contents) + tokens(system) + tokens(declared)
        minimum = self._minimum(model[len("models/") :])
        if total < minimum:
            return error(
                400, f"Cached content is too small. total_token_count={total}, min_total_token_count={minimum}. (stub)"
            )
        now = self._now()
        expire = _expiry(body, now)
        if expire is None:
            return error(400, f"Invalid value at 'cached_content.ttl': {body.get('ttl')!r}. (stub)")
        with self._lock:
            name = f"cachedContents/stub-{self._next:06d}"
            self._next += 1
            self._caches[name] = {
                "name": name,
                "model": model,
                "display_name": body.get("displayName") or "",
                "contents": contents,
                "system": system,
                "tools": contents_declared(body),
                "tools_text": declared,
                "tokens": total,
                "created": now,
                "updated": now,
                "expire": expire,
                "ended": None,
                "state": "live",
            }
            view = _view(self._caches[name])
        info.cache_name, info.input_tokens = name, total
        return Reply(200, view)

    def handle(self, method: str, name: str, body: dict[str, Any] | None, info: RequestRecord) -> Reply:
        """``GET``, ``PATCH`` (only the expiry may change) or ``DELETE`` of one cache."""
        info.cache_name = name
        with self._lock:
            c = self._live(name)
            if c is None:
                return self._missing(name)
            if method == "GET":
                return Reply(200, _view(c))
            if method == "DELETE":
                c["state"], c["ended"] = "deleted", self._now()
                return Reply(200, {})
            now = self._now()
            expire = _expiry(body or {}, now) if ("ttl" in (body or {}) or "expireTime" in (body or {})) else None
            if expire is None:
                return error(400, "Only ttl or expireTime can be updated. (stub)")
            c["expire"], c["updated"] = expire, now
            return Reply(200, _view(c))

    def _live(self, name: str) -> dict[str, Any] | None:
        c = self._caches.get(name)
        if c is None or c["state"] != "live":
            return None
        if c["expire"] <= self._now():
            c["state"], c["ended"] = "expired", c["expire"]
            return None
        return c

    def _missing(self, name: str) -> Reply:
        return error(
            self.missing_status,
            CACHE_MISSING if self.missing_status == 403 else f"CachedContent {name!r} not found. (stub)",
        )


def _view(c: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": c["name"],
        "model": c["model"],
        "displayName": c["display_name"],
        "createTime": timestamp(c["created"]),
        "updateTime": timestamp(c["updated"]),
        "expireTime": timestamp(c["expire"]),
        "usageMetadata": {"totalTokenCount": c["tokens"]},
    }


def _expiry(body: dict[str, Any], now: float) -> float | None:
    if "ttl" in body:
        ttl = duration(body["ttl"])
        return None if ttl is None else now + ttl
    if "expireTime" in body:
        return parse_timestamp(body["expireTime"])
    return now + DEFAULT_CACHE_TTL_S
