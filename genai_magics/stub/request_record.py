"""What the stand-in records of each API request, and which route a request takes.

``StubServer.requests`` and ``GET /_stub/requests`` return these records as JSON objects
(``RequestRecord.as_json``), oldest first; tests assert on their fields.
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import unquote

from . import edits as model_edits

MODEL_RE = re.compile(r"^/v1(?:beta|alpha)?/models/([^/:]+):(generateContent|streamGenerateContent|countTokens)$")
INTERACTIONS_RE = re.compile(r"^/v1(?:beta|alpha)?/interactions/?$")
INTERACTION_RE = re.compile(r"^/v1(?:beta|alpha)?/interactions/([^/]+)$")
MODELS_RE = re.compile(r"^/v1(?:beta|alpha)?/models/?$")
CACHES_RE = re.compile(r"^/v1(?:beta|alpha)?/cachedContents/?$")
CACHE_RE = re.compile(r"^/v1(?:beta|alpha)?/(cachedContents/[^/]+)$")

# The kinds whose request must carry a JSON object.
NEEDS_BODY = frozenset({"generate", "stream", "count", "interaction.create", "cache.create", "cache.update"})


@dataclass
class RequestRecord:
    method: str
    path: str
    query: dict[str, str]
    body_bytes: int
    json: Any  # the parsed body (None when it is not JSON)
    has_api_key: bool
    kind: str | None = None  # generate, stream, count, interaction.create/get, models.list, cache.*
    model: str | None = None
    stream: bool = False
    edit: bool = False  # a JSON answer was asked for
    edits_offered: bool = False  # its schema offers the ``edits`` form
    mode: str | None = None
    prompt: str | None = None
    held_document_sha256: str | None = None  # the document the fake model holds after this request
    previous_interaction_id: str | None = None
    interaction_id: str | None = None
    input_tokens: int = 0
    cached_tokens: int = 0
    prefix_tokens: int = 0  # tokens it shares with the previous request of its model, cached or not
    response_tokens: int = 0
    response_text: str | None = None
    images: list[dict[str, Any]] = field(default_factory=list)  # mime_type, sha256, bytes, size, tokens
    current_images: list[dict[str, Any]] = field(default_factory=list)  # those of the current user turn
    cached_content: str | None = None  # the cache a generate request named
    cache_name: str | None = None  # the cache a cache request made or named
    tools_declared: list[str] = field(default_factory=list)  # the functions the request declared
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # the calls the stand-in answered with
    searches: list[str] = field(default_factory=list)  # the Google Search queries it played
    tool_results: list[dict[str, Any]] = field(default_factory=list)  # the results the request sent: id, name, response
    status: int | None = None
    fault: str | None = None
    time: float = field(default_factory=time.time)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)  # a deep copy


def classify(record: RequestRecord) -> bool:
    """Set the record's kind (and model, stream, edit) from its route; False when no route serves it."""
    method, path, body = record.method, record.path, record.json
    b = body if isinstance(body, dict) else {}
    m = MODEL_RE.match(path)
    if m and method == "POST":
        verb = m.group(2)
        record.model = unquote(m.group(1))
        record.kind = {"generateContent": "generate", "streamGenerateContent": "stream", "countTokens": "count"}[verb]
        record.stream = verb == "streamGenerateContent"
        gen = b.get("generationConfig") or b.get("generation_config") or {}
        gen = gen if isinstance(gen, dict) else {}
        schemas = [gen.get(k) for k in ("responseSchema", "responseJsonSchema", "response_schema")]
        record.edit = any(schemas) or gen.get("responseMimeType") == "application/json"
        record.edits_offered = any(model_edits.offers_edits(s) for s in schemas)
    elif INTERACTIONS_RE.match(path) and method == "POST":
        record.kind = "interaction.create"
        record.model = b.get("model")
        record.stream = bool(b.get("stream"))
        fmt = b.get("response_format")
        fmts = fmt if isinstance(fmt, list) else [fmt]
        record.edit = b.get("response_mime_type") == "application/json" or any(
            isinstance(f, dict) and (f.get("mime_type") == "application/json" or "schema" in f) for f in fmts
        )
        record.edits_offered = any(isinstance(f, dict) and model_edits.offers_edits(f.get("schema")) for f in fmts)
    elif INTERACTION_RE.match(path) and method == "GET":
        record.kind = "interaction.get"
    elif MODELS_RE.match(path) and method == "GET":
        record.kind = "models.list"
    elif CACHES_RE.match(path) and method == "POST":
        record.kind = "cache.create"
        record.model = b.get("model")
    elif CACHE_RE.match(path) and method in ("GET", "PATCH", "DELETE"):
        record.kind = {"GET": "cache.get", "PATCH": "cache.update", "DELETE": "cache.delete"}[method]
    else:
        return False
    return True


def name_in(pattern: re.Pattern[str], path: str) -> str:
    """The name a route's pattern captured (the route was chosen by the same pattern)."""
    match = pattern.match(path)
    return match.group(1) if match else ""
