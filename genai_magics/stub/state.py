"""The stand-in's state and its controls: what it recorded, the faults and scripts waiting,
the stored interactions and caches, its clock and the implicit-caching model.

``server.StubServer`` serves it over HTTP; the API handlers (``api.py``) read and fill it
through the methods under "for the API handlers". Thread-safe: requests arrive on the HTTP
server's threads while a test steers it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from . import faults
from . import tools as stub_tools
from .caches import CacheStore
from .faults import FAULTS, MATCHES
from .implicit import IMPLICIT_TTL_S, common_tokens, implicit_minimum
from .interactions import InteractionStore
from .request_record import RequestRecord


class StubState:
    """Everything the stand-in holds between requests; ``server.StubServer`` adds the HTTP server."""

    def __init__(self, chunk_delay: float = 0.0, implicit_caching: bool = False, token_rate: float = 0.0):
        self.chunk_delay = float(chunk_delay)
        self.token_rate = float(token_rate)  # output tokens a second a stream is paced at (0: as fast as it can)
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._records: list[RequestRecord] = []
        self._injections: list[dict[str, Any]] = []
        self._scripted: list[str | list[Any]] = []  # proposals (or edits) the next edits answer, oldest first
        self.tool_scripts = stub_tools.ToolScripts()  # function calls the next turns make
        self.interaction_store = InteractionStore()
        self.cache_store = CacheStore(self.now, self._minimum)
        self._clock_offset = 0.0
        self.implicit_default = implicit_caching  # what reset() goes back to
        self.implicit_caching = implicit_caching
        self.implicit_ttl_s = IMPLICIT_TTL_S
        self.implicit_minimums: dict[str, int] = {}
        self._prefixes: list[tuple[str, float, list[tuple[str, str]]]] = []  # (model, time, sequence)
        self._previous: dict[str, list[tuple[str, str]]] = {}  # model -> the sequence its last request read
        self.input_limit: int | None = None  # every model's input limit in tokens (None: Gemini's, never reached)

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
            self.tool_scripts.reset()
            self.interaction_store.reset()
            self.cache_store.reset()
            self._clock_offset = 0.0
            self.implicit_caching = self.implicit_default
            self.implicit_ttl_s = IMPLICIT_TTL_S
            self.implicit_minimums = {}
            self.token_rate = 0.0
            self.input_limit = None
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
                self.cache_store.missing_status = int(missing_status)
            if implicit_ttl_s is not None:
                self.implicit_ttl_s = float(implicit_ttl_s)
            if implicit_minimum is not None:
                self.implicit_minimums.update({str(k): int(v) for k, v in implicit_minimum.items()})
            return {
                "implicit": self.implicit_caching,
                "missing_status": self.cache_store.missing_status,
                "implicit_ttl_s": self.implicit_ttl_s,
                "implicit_minimum": dict(self.implicit_minimums),
            }

    def limit_input(self, tokens: int | None) -> dict[str, Any]:
        """Give every model an input limit of ``tokens`` (None: back to Gemini's 1,048,576, never reached
        here): a request reading more is answered Gemini's 400, and ``GET models`` lists it."""
        with self._lock:
            self.input_limit = None if tokens is None else int(tokens)
            return {"input_tokens": self.input_limit}

    @property
    def caches(self) -> list[dict[str, Any]]:
        """Every cache made, oldest first: name, model, system instruction, tokens, created, ended, state."""
        return self.cache_store.listing()

    def _minimum(self, model: str) -> int:
        return self.implicit_minimums.get(model, implicit_minimum(model))

    def read_prefix(self, model: str, sequence: list[tuple[str, str]], info: RequestRecord) -> int:
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
            self.tool_scripts.waiting.append({"rounds": rounds, "arguments": arguments})

    def tool_round(
        self,
        new_turn: bool,
        declared: list[str],
        calling_off: bool,
        own: Callable[[], list[dict[str, Any]] | None],
        results: list[dict[str, Any]] | None = None,
    ) -> list[dict[str, Any]] | None:
        """The calls this request answers with: the running script's round, else, in a turn no script
        runs, the calls the model makes on its own (``own``: ``model.own_calls``); None: it answers in text.
        ``results``: the function responses the request carries."""
        if not declared:
            return None
        with self._lock:
            calls = self.tool_scripts.round(new_turn, calling_off, results)
            if calls is not None or self.tool_scripts.running is not None or calling_off:
                return calls
            mine = own()
            return self.tool_scripts.numbered(mine) if mine else None

    def take_script(self, info: RequestRecord) -> str | list[Any] | None:
        with self._lock:
            return self._scripted.pop(0) if info.edit and self._scripted else None

    def forget_interaction(self, interaction_id: str) -> bool:
        return self.interaction_store.forget(interaction_id)

    @property
    def interactions(self) -> dict[str, dict[str, Any]]:
        return self.interaction_store.snapshot()

    # -- for the API handlers (api.py) and the HTTP handler ------------------------
    def take_fault(self, info: RequestRecord) -> dict[str, Any] | None:
        with self._lock:
            for inj in self._injections:
                if not faults.applies(inj, info):
                    continue
                inj["times"] -= 1
                if inj["times"] <= 0:
                    self._injections.remove(inj)
                return dict(inj)
        return None

    def add_record(self, record: RequestRecord) -> None:
        with self._lock:
            self._records.append(record)

    def pause(self, seconds: float) -> None:
        self._stopping.wait(seconds)
