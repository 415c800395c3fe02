"""A local stand-in for the Gemini API, for tests, the demo and benchmarks only.

The real ``google-genai`` SDK talks to it over real HTTP on 127.0.0.1 when
``GOOGLE_GEMINI_BASE_URL`` points here.  Replies are deterministic functions of
the request, so tests can assert on them.  Standard library only.

Served routes (what the SDK calls):

* ``POST /v1/models/{model}:generateContent``
* ``POST /v1/models/{model}:streamGenerateContent?alt=sse``
* ``POST /v1/models/{model}:countTokens``
* ``POST /v1/interactions`` (``"stream": true`` answers server-sent events)
* ``GET  /v1/interactions/{id}``
* ``GET  /v1/models`` (``client.models.list()``: the package's default model and three others)
* image parts (``inlineData``; interactions ``{"type": "image"}``) are decoded, recorded by sha256
  and counted as input tokens (``stub/images.py``)
* ``POST /v1/cachedContents``; ``GET``, ``PATCH`` (ttl / expireTime), ``DELETE``
  ``/v1/cachedContents/{id}``: explicit context caches that expire on the
  stand-in's clock

Caching, as the real API reports it: a request naming ``cachedContent`` reads the
cache's system instruction and contents before its own, counts them in
``promptTokenCount`` and reports them as ``cachedContentTokenCount``; beside a
``systemInstruction``, ``tools`` or ``toolConfig`` it is refused with a 400; a
cache the stand-in does not know (never made, deleted, expired) is a 403
``PERMISSION_DENIED`` (or a 404, ``cache_missing_status``). Implicit caching is a
deterministic model, off by default: a request's longest prefix (system
instruction, then turns; a part of a turn counted in whole 4-byte tokens)
identical to an earlier request of the same model within ``implicit_ttl_s``,
counted when it reaches the model's minimum (``implicit_minimum``), is reported as
cached tokens (``cachedContentTokenCount``; interactions ``usage.total_cached_tokens``).
Every request's record also says how many of its tokens repeat a prefix of the
previous request of the same model (``prefix_tokens``), whether or not anything is cached.

Control routes (never recorded): ``stub/control.py``, one handler a route in a table.

The API key is only ever checked for presence; its value is never stored.
"""

from __future__ import annotations

import datetime as _dt
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from . import control, faults, images, interactions, sse
from . import tools as stub_tools
from .caches import CACHE_CONFLICT, CacheStore
from .faults import FAULTS, MATCHES
from .implicit import IMPLICIT_TTL_S, common_tokens, implicit_minimum
from .interactions import InteractionStore
from .model import answer, sha256, texts, tokens
from .replies import Reply, error
from .request_record import CACHE_RE, INTERACTION_RE, NEEDS_BODY, RequestRecord, classify, name_in

__all__ = ["StubServer"]

LOOPBACK_HOSTS = ("127.0.0.1", "localhost")
# Refuses what the real one does (its developer guide): a thinking budget (it takes thinking_level
# only) and an explicit cache (implicit caching only).
LEVEL_ONLY = "gemini-4-argon"


def _catalogue() -> list[dict[str, Any]]:
    """What ``GET models`` lists, in the real API's shape (an embedding model cannot converse)."""
    from ..gemini.models import DEFAULT_MODEL  # the stand-in serves the package's default

    def entry(name: str, methods: list[str]) -> dict[str, Any]:
        display = " ".join(word.capitalize() for word in name.split("-"))
        return {
            "name": f"models/{name}",
            "version": "001",
            "displayName": display,
            "description": f"{display} (stub)",
            "inputTokenLimit": 1048576,
            "outputTokenLimit": 65536,
            "supportedGenerationMethods": methods,
            "temperature": 1,
            "maxTemperature": 2,
            "topP": 0.95,
            "topK": 64,
            "thinking": True,
        }

    chat = ["generateContent", "countTokens", "createCachedContent", "batchGenerateContent"]
    return [
        entry(DEFAULT_MODEL, chat),
        entry("gemini-3.1-pro-preview", chat),
        entry(LEVEL_ONLY, [m for m in chat if m != "createCachedContent"]),
        entry("gemini-embedding-001", ["embedContent", "countTextTokens"]),
    ]


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class StubServer:
    """An in-process Gemini stand-in; ``start()`` serves it from a background thread.

    >>> with StubServer() as stub:          # doctest: +SKIP
    ...     os.environ["GOOGLE_GEMINI_BASE_URL"] = stub.url
    """

    def __init__(
        self,
        port: int = 0,
        host: str = "127.0.0.1",
        chunk_delay: float = 0.0,
        implicit_caching: bool = False,
        token_rate: float = 0.0,
    ):
        if host not in LOOPBACK_HOSTS:
            raise ValueError(f"the stub binds to the loopback interface only, not {host!r}")
        self.host = "127.0.0.1"
        self.chunk_delay = float(chunk_delay)
        self.token_rate = float(token_rate)  # output tokens a second a stream is paced at (0: as fast as it can)
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._records: list[RequestRecord] = []
        self._injections: list[dict[str, Any]] = []
        self._scripted: list[str | list[Any]] = []  # proposals (or edits) the next edits answer, oldest first
        self._tool_scripts = stub_tools.ToolScripts()  # function calls the next turns make
        self._interactions = InteractionStore()
        self._caches = CacheStore(self.now, self._minimum)
        self._clock_offset = 0.0
        self.implicit_default = implicit_caching  # what reset() goes back to
        self.implicit_caching = implicit_caching
        self.implicit_ttl_s = IMPLICIT_TTL_S
        self.implicit_minimums: dict[str, int] = {}
        self._prefixes: list[tuple[str, float, list[tuple[str, str]]]] = []  # (model, time, sequence)
        self._previous: dict[str, list[tuple[str, str]]] = {}  # model -> the sequence its last request read
        self._httpd = _QuietServer((self.host, port), _make_handler(self), bind_and_activate=True)
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> StubServer:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.1},
                name=f"genai-stub-{self.port}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes injected delays
        if self._thread is not None:
            self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- inspection and control -------------------------------------------------
    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.as_json() for r in self._records]

    def clear(self) -> None:
        """Forget the recorded requests."""
        with self._lock:
            self._records.clear()

    def reset(self) -> None:
        """Forget records, pending injections, stored interactions and caches; caching settings and pace to defaults."""
        with self._lock:
            self._records.clear()
            self._injections.clear()
            self._scripted.clear()
            self._tool_scripts.reset()
            self._interactions.reset()
            self._caches.reset()
            self._clock_offset = 0.0
            self.implicit_caching = self.implicit_default
            self.implicit_ttl_s = IMPLICIT_TTL_S
            self.implicit_minimums = {}
            self.token_rate = 0.0
            self._prefixes.clear()
            self._previous.clear()

    # -- the clock and caching ------------------------------------------------------
    def now(self) -> float:
        """The stand-in's clock: wall time plus what ``advance`` added (cache expiry runs on it)."""
        return time.time() + self._clock_offset

    def advance(self, seconds: float) -> float:
        """Move the stand-in's clock forward (expire caches without waiting); returns the new time."""
        with self._lock:
            self._clock_offset += float(seconds)
            return self.now()

    def configure_caching(
        self,
        *,
        implicit: bool | None = None,
        missing_status: int | None = None,
        implicit_ttl_s: float | None = None,
        implicit_minimum: dict[str, int] | None = None,
    ) -> dict[str, Any]:
        if missing_status not in (None, 403, 404):
            raise ValueError("missing_status must be 403 or 404")
        with self._lock:
            if implicit is not None:
                self.implicit_caching = bool(implicit)
            if missing_status is not None:
                self._caches.missing_status = int(missing_status)
            if implicit_ttl_s is not None:
                self.implicit_ttl_s = float(implicit_ttl_s)
            if implicit_minimum is not None:
                self.implicit_minimums.update({str(k): int(v) for k, v in implicit_minimum.items()})
            return {
                "implicit": self.implicit_caching,
                "missing_status": self._caches.missing_status,
                "implicit_ttl_s": self.implicit_ttl_s,
                "implicit_minimum": dict(self.implicit_minimums),
            }

    @property
    def caches(self) -> list[dict[str, Any]]:
        """Every cache made, oldest first: name, model, tokens, created, ended (delete or expiry), state."""
        return self._caches.listing()

    def _minimum(self, model: str) -> int:
        return self.implicit_minimums.get(model, implicit_minimum(model))

    def _read(self, model: str, sequence: list[tuple[str, str]], info: RequestRecord) -> int:
        """What a request reads: records ``prefix_tokens`` (the prefix it shares with the previous request
        of the same model, cached or not) and returns its implicitly cached tokens."""
        with self._lock:
            info.prefix_tokens = common_tokens(self._previous.get(model, []), sequence)
            self._previous[model] = sequence
        return self._implicit_cached(model, sequence)

    def _implicit_cached(self, model: str, sequence: list[tuple[str, str]]) -> int:
        """The deterministic implicit-caching model; records this request's sequence for later ones."""
        if not self.implicit_caching:  # earlier requests are remembered only while the model is on
            return 0
        with self._lock:
            now = self.now()
            self._prefixes = [p for p in self._prefixes if now - p[1] <= self.implicit_ttl_s]
            best = max((common_tokens(seq, sequence) for m, _, seq in self._prefixes if m == model), default=0)
            self._prefixes.append((model, now, sequence))
        return best if best >= self._minimum(model) else 0

    def inject(
        self,
        fault: str = "http",
        *,
        status: int = 429,
        times: int = 1,
        match: str | None = None,
        retry_after: Any = None,
        seconds: float = 5.0,
        message: str | None = None,
        after_chunks: int = 1,
    ) -> dict[str, Any]:
        """Make the next ``times`` matching API requests misbehave; returns the injection.

        fault: ``http`` (error reply ``status``), ``cut_stream`` (close the socket
        after ``after_chunks`` SSE events), ``invalid_json`` (an edit reply that is
        not JSON), ``delay`` (sleep ``seconds`` before answering), ``bad_edits`` (an edit reply
        whose ``edits`` do not apply: a find that is in no document).
        match: None/"any", "generate" (generateContent, streamed or not),
        "stream" (any SSE reply), "count", "interactions" (create or get),
        "interaction.create", "interaction.get", "edit", "ask".
        """
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; expected one of {FAULTS}")
        if match not in MATCHES:
            raise ValueError(f"unknown match {match!r}; expected one of {MATCHES}")
        injection = {
            "fault": fault,
            "status": int(status),
            "times": max(1, int(times)),
            "match": match,
            "retry_after": retry_after,
            "seconds": float(seconds),
            "message": message,
            "after_chunks": max(0, int(after_chunks)),
        }
        with self._lock:
            self._injections.append(injection)
        return dict(injection)

    def script_edit(self, proposed_source: str | list[Any]) -> None:
        """Make the next edit request answer exactly ``proposed_source`` (once; scripts queue up);
        a list is answered as the ``edits`` form, exactly as given."""
        with self._lock:
            self._scripted.append(proposed_source)

    def script_tools(self, rounds: list[list[dict[str, Any]]], arguments: str = "whole") -> None:
        """Make the next turn that declares functions call these, a round a request (scripts queue up);
        ``arguments``: interactions streams each call whole in ``step.start`` or in ``arguments_delta`` pieces."""
        if arguments not in ("whole", "delta"):
            raise ValueError("arguments must be 'whole' or 'delta'")
        with self._lock:
            self._tool_scripts.waiting.append({"rounds": rounds, "arguments": arguments})

    def _tool_round(self, new_turn: bool, declared: list[str], calling_off: bool) -> list[dict[str, Any]] | None:
        if not declared:
            return None
        with self._lock:
            return self._tool_scripts.round(new_turn, calling_off)

    def _take_script(self, info: RequestRecord) -> str | list[Any] | None:
        with self._lock:
            return self._scripted.pop(0) if info.edit and self._scripted else None

    def forget_interaction(self, interaction_id: str) -> bool:
        return self._interactions.forget(interaction_id)

    @property
    def interactions(self) -> dict[str, dict[str, Any]]:
        return self._interactions.snapshot()

    # -- request handling (called by the handler) --------------------------------
    def _take_fault(self, info: RequestRecord) -> dict[str, Any] | None:
        with self._lock:
            for inj in self._injections:
                if not faults.applies(inj, info):
                    continue
                inj["times"] -= 1
                if inj["times"] <= 0:
                    self._injections.remove(inj)
                return dict(inj)
        return None

    def _record(self, record: RequestRecord) -> None:
        with self._lock:
            self._records.append(record)

    def _sleep(self, seconds: float) -> None:
        self._stopping.wait(seconds)

    # Each handler returns the reply and fills in its request's record.
    def _handle_generate(self, body: dict[str, Any], fault: dict[str, Any] | None, info: RequestRecord) -> Reply:
        model = info.model or ""
        thinking = (body.get("generationConfig") or {}).get("thinkingConfig") or {}
        if model == LEVEL_ONLY and {"thinkingBudget", "thinking_budget"} & set(thinking):  # JSON takes either
            return error(400, f"thinking_budget is not supported by {model}; use thinking_level. (stub)")
        try:
            turns, info.images = images.contents_with_images(body.get("contents"), texts)
        except images.BadImage as exc:
            return error(400, str(exc))
        info.current_images = images.current_images(body.get("contents"), info.images)
        system = "".join(texts(body.get("systemInstruction") or body.get("system_instruction")))
        explicit = 0
        cache_tools: list[str] = []
        # the function declarations are read (and billed) as part of the prompt, after the system instruction
        declared = json.dumps(body["tools"], sort_keys=True) if body.get("tools") else ""
        name = body.get("cachedContent")
        if name is not None:
            info.cached_content = name
            if any(k in body for k in ("systemInstruction", "system_instruction", "tools", "toolConfig")):
                return error(400, CACHE_CONFLICT)
            cache = self._caches.for_request(name, model)
            if isinstance(cache, Reply):
                return cache
            turns = list(cache["contents"]) + turns
            system, explicit, cache_tools = cache["system"], cache["tokens"], cache.get("tools", [])
            declared = cache.get("tools_text", "")
        contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
        problem = stub_tools.contents_problem(contents)
        if problem:
            return error(400, problem)
        # a cache holds the declarations (the API refuses tools beside cachedContent)
        info.tools_declared = stub_tools.contents_declared(body) or list(cache_tools)
        info.tool_results = stub_tools.contents_results(contents)
        calls = self._tool_round(not info.tool_results, info.tools_declared, stub_tools.contents_calling_off(body))
        user_texts = [t for r, t in turns if r == "user"]
        text, prompt_tokens, out_tokens = answer(
            turns,
            user_texts[-1] if user_texts else "",
            system,
            fault,
            info,
            None if calls else self._take_script(info),
            calls,
        )
        prompt_tokens += tokens(declared)
        info.input_tokens = prompt_tokens
        cached = max(explicit, self._read(model, [("system", system), ("tools", declared)] + turns, info))
        info.cached_tokens = cached
        usage = {
            "promptTokenCount": prompt_tokens,
            "candidatesTokenCount": out_tokens,
            "totalTokenCount": prompt_tokens + out_tokens,
        }
        if cached:
            usage["cachedContentTokenCount"] = cached
        response_id = f"stub-{sha256(json.dumps(body, sort_keys=True))[:16]}"
        if calls:
            parts = stub_tools.contents_parts(calls)
            info.tool_calls = calls
            whole = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            reply = {"candidates": [whole], "usageMetadata": usage, "modelVersion": model, "responseId": response_id}
            if not info.stream:
                return Reply(200, reply)
            return Reply(200, events=[sse.event(reply)], paced=[out_tokens])
        if not info.stream:
            return Reply(
                200,
                {
                    "candidates": [
                        {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}
                    ],
                    "usageMetadata": usage,
                    "modelVersion": model,
                    "responseId": response_id,
                },
            )
        pieces = sse.chunks(text)
        events = []
        for i, piece in enumerate(pieces):
            chunk: dict[str, Any] = {
                "candidates": [{"content": {"role": "model", "parts": [{"text": piece}]}, "index": 0}],
                "modelVersion": model,
                "responseId": response_id,
            }
            if i == len(pieces) - 1:
                chunk["candidates"][0]["finishReason"] = "STOP"
                chunk["usageMetadata"] = usage
            events.append(sse.event(chunk))
        return Reply(200, events=events, paced=[tokens(p) for p in pieces])

    def _handle_count(self, body: dict[str, Any], info: RequestRecord) -> Reply:
        inner = body.get("generateContentRequest")
        request: dict[str, Any] = inner if isinstance(inner, dict) else body
        total = sum(tokens(t) for c in request.get("contents") or [] for t in texts(c))
        total += tokens("".join(texts(request.get("systemInstruction"))))
        info.input_tokens, info.response_tokens = total, 0
        return Reply(200, {"totalTokens": total})

    def _handle_create(self, body: dict[str, Any], fault: dict[str, Any] | None, info: RequestRecord) -> Reply:
        previous_id = body.get("previous_interaction_id")
        chain = self._interactions.chain(previous_id) if previous_id else []
        if chain is None:
            return error(
                404,
                f"Interaction {previous_id!r} (previous_interaction_id) was not found; "
                "it expired or was deleted. Start a new conversation without it. (stub)",
            )
        model = body.get("model") or body.get("agent") or "unknown-model"
        info.tools_declared = stub_tools.interaction_declared(body)
        info.tool_results = stub_tools.interaction_results(body.get("input"))
        if info.tool_results and not (chain and chain[-1].get("tool_calls")):
            return error(400, "function_result inputs answer no function call of the previous interaction. (stub)")
        if info.tool_results:
            asked = [(c["id"], c["name"]) for c in chain[-1]["tool_calls"]]
            given = [(r["id"], r["name"]) for r in info.tool_results]
            if asked != given:
                return error(400, f"function_result call_id/name do not match the calls: {asked} != {given}. (stub)")
        input_text = "".join(texts(body.get("input")))
        try:
            info.images = info.current_images = images.input_images(body.get("input"))
        except images.BadImage as exc:
            return error(400, str(exc))
        raw_system = body.get("system_instruction")
        system = raw_system if isinstance(raw_system, str) else "".join(texts(raw_system))
        turns: list[tuple[str, str]] = []
        for stored in chain:
            turns.append(("tool" if stored.get("tool_input") else "user", stored["input_text"]))
            turns += images.entries(stored.get("input_images", []))
            turns.append(("model", stored["output_text"]))
        turns.append(("tool" if info.tool_results else "user", input_text))
        turns += images.entries(info.images)
        calls = self._tool_round(not info.tool_results, info.tools_declared, stub_tools.interaction_calling_off(body))
        prompts = [t for r, t in turns if r == "user"]
        text, in_tokens, out_tokens = answer(
            turns,
            prompts[-1] if prompts else input_text,
            system,
            fault,
            info,
            None if calls else self._take_script(info),
            calls,
        )
        declared = json.dumps(body["tools"], sort_keys=True) if body.get("tools") else ""
        in_tokens += tokens(declared)  # the declarations are read with the prompt
        info.input_tokens = in_tokens
        cached = self._read(model, [("system", system), ("tools", declared)] + turns, info)
        info.cached_tokens = cached
        usage = {
            "total_input_tokens": in_tokens,
            "total_output_tokens": out_tokens,
            "total_tokens": in_tokens + out_tokens,
        }
        if cached:
            usage["total_cached_tokens"] = cached
        ident = self._interactions.new_id()
        now = _now()
        interaction: dict[str, Any] = {
            "id": ident,
            "status": "completed",
            "model": model,
            "steps": [
                {"type": "user_input", "content": [{"type": "text", "text": input_text}]},
                *(
                    stub_tools.interaction_steps(calls)
                    if calls
                    else [{"type": "model_output", "content": [{"type": "text", "text": text}]}]
                ),
            ],
            "usage": usage,
            "created": now,
            "updated": now,
        }
        if previous_id:
            interaction["previous_interaction_id"] = previous_id
        if body.get("store", True) is not False:
            self._interactions.store(interaction, input_text, info.images, text, calls, bool(info.tool_results))
        info.previous_interaction_id, info.interaction_id = previous_id, ident
        info.tool_calls = calls or []
        if not info.stream:
            return Reply(200, interaction)
        return interactions.streamed(interaction, text, calls, self._tool_scripts.arguments)

    def _handle_models(self, query: dict[str, str]) -> Reply:
        """One page of the catalogue; ``pageSize``/``pageToken`` as the real API pages (small
        pages by default, so a client's paging is exercised)."""
        models = _catalogue()
        try:
            start = int(query.get("pageToken") or 0)
            size = int(query.get("pageSize") or 2)
        except ValueError:
            return error(400, "Invalid page token or size. (stub)")
        page: dict[str, Any] = {"models": models[start : start + size]}
        if start + size < len(models):
            page["nextPageToken"] = str(start + size)
        return Reply(200, page)

    def _serve(self, record: RequestRecord, fault: dict[str, Any] | None) -> Reply:
        """The reply of the handler for the record's kind (its route and body checked)."""
        kind = record.kind
        data: dict[str, Any] = record.json if isinstance(record.json, dict) else {}
        if kind in ("generate", "stream"):
            return self._handle_generate(data, fault, record)
        if kind == "count":
            return self._handle_count(data, record)
        if kind == "interaction.create":
            return self._handle_create(data, fault, record)
        if kind == "interaction.get":
            return self._interactions.get(name_in(INTERACTION_RE, record.path), record)
        if kind == "models.list":
            return self._handle_models(record.query)
        if kind == "cache.create":
            if data.get("model") == f"models/{LEVEL_ONLY}":
                return error(400, f"Explicit context caching is not supported for models/{LEVEL_ONLY}. (stub)")
            return self._caches.create(data, record)
        return self._caches.handle(record.method, name_in(CACHE_RE, record.path), record.json, record)

    def handle_api(
        self, method: str, path: str, query: dict[str, str], raw: bytes, has_key: bool
    ) -> tuple[Reply, RequestRecord, dict[str, Any] | None]:
        """Route one API request; returns the reply, the record and the fault applied."""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        record = RequestRecord(method, path, query, len(raw), body, has_key)
        if not classify(record):
            reply = error(404, f"The stub serves no {method} {path}.")
        elif not has_key:
            reply = error(
                401,
                "Method doesn't allow unregistered callers (callers without established "
                "identity). Please use API Key or other form of API consumer identity to "
                "call this API. (stub)",
            )
        elif record.kind in NEEDS_BODY and not isinstance(body, dict):
            reply = error(400, "Invalid JSON payload received. (stub)")
        else:
            fault = self._take_fault(record)
            record.fault = fault["fault"] if fault else None
            if fault and fault["fault"] == "http":
                reply = error(fault["status"], fault.get("message"), fault.get("retry_after"))
            else:
                reply = self._serve(record, fault)
                if fault and fault["fault"] == "cut_stream" and reply.events is not None:
                    reply.cut = True
                    reply.events = reply.events[: fault["after_chunks"]]
            record.status = reply.status
            return reply, record, fault
        record.status = reply.status
        return reply, record, None


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up (a cancelled stream, a closed keep-alive) is not an error here.
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


def _make_handler(stub: StubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "genai-magics-stub/1"
        # Headers and body (and each streamed event) are separate writes: with Nagle's algorithm
        # each small write after the first waits for the client's delayed ACK, ~40 ms a response.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet by default
            pass

        # -- plumbing -----------------------------------------------------------
        def _read_body(self) -> bytes:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                return self.rfile.read(length)
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                data = bytearray()
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        return bytes(data)
                    data += self.rfile.read(size)
                    self.rfile.readline()
            return b""

        def _send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()

        def _send_events(self, reply: Reply) -> None:
            self.send_response(reply.status)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            if reply.cut:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.flush()
            for i, event in enumerate(reply.events or []):
                if i and stub.chunk_delay:
                    stub._sleep(stub.chunk_delay)
                if stub.token_rate and i < len(reply.paced):  # the model writes at a fixed speed
                    stub._sleep(reply.paced[i] / stub.token_rate)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                self.wfile.flush()
            if reply.cut:
                # Mid-stream failure: no terminating chunk, the socket just closes.
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _dispatch(self, method: str) -> None:
            try:
                self._dispatch_inner(method)
            except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
                self.close_connection = True

        def _dispatch_inner(self, method: str) -> None:
            split = urlsplit(self.path)
            path = split.path
            query = dict(parse_qsl(split.query, keep_blank_values=True))
            raw = self._read_body()
            if path.startswith(control.PREFIX):
                self._control(method, path, raw)
                return
            has_key = bool((self.headers.get("x-goog-api-key") or "").strip())
            reply, record, fault = stub.handle_api(method, path, query, raw, has_key)
            stub._record(record)
            if fault and fault["fault"] == "delay":
                stub._sleep(fault["seconds"])
            if reply.events is not None:
                self._send_events(reply)
            else:
                self._send_json(reply.status, reply.body, reply.headers)

        def _control(self, method: str, path: str, raw: bytes) -> None:
            try:
                body = json.loads(raw) if raw else {}
            except ValueError:
                self._send_json(400, {"error": "body is not JSON"})
                return
            self._send_json(*control.answer(stub, method, path, body))

        def do_GET(self) -> None:
            self._dispatch("GET")

        def do_POST(self) -> None:
            self._dispatch("POST")

        def do_DELETE(self) -> None:
            self._dispatch("DELETE")

        def do_PUT(self) -> None:
            self._dispatch("PUT")

        def do_PATCH(self) -> None:
            self._dispatch("PATCH")

    return Handler
