"""Talking to Gemini: one small class per state mode behind one interface.

google.genai is imported only when a client is made (here; also caching.py's cache
creation and warm_up.py's offline rehearsal, after %load_ext), never at import, so
``%load_ext genai_magics`` stays fast and a dry run needs no key. Its private parts are
reached only through sdk_compat.py.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .. import messages
from ..engine.contents import Contents, Rendered, render
from ..engine.conversation import Turn, TurnPlan, Usage, added
from ..engine.outputs import interaction_inputs
from ..engine.payloads import EDIT_RESPONSE_SCHEMA, SYSTEM_INSTRUCTION, WHOLE_RESPONSE_SCHEMA, to_text
from ..engine.text import cut
from ..engine.tools import (
    MAX_TOOL_CALLS,
    TOOLS_INSTRUCTION,
    ToolCall,
    ToolResult,
    ToolRound,
    bad_call,
    contents_round,
    declarations,
    error_result,
    interaction_result,
)
from .errors import failure_kinds
from .models import traits
from .sdk_compat import on_retry_wait

OnChunk = Callable[[str], None]


@dataclass(frozen=True)
class TurnResult:
    text: str
    usage: Usage  # summed over every request of the turn (``usage.requests`` of them)
    interaction_id: str | None = None
    rounds: tuple[ToolRound, ...] = ()  # the function calls answered on the way, one round a request


def _no_request_check(body: dict[str, Any], earlier: Usage | None) -> None:
    """Every request of a turn passes its turn's check first (with what the earlier ones used); by default none."""


@dataclass(frozen=True)
class TurnTools:
    """How a turn answers the model's function calls, and the check every request of it passes first.

    ``answer`` runs one call (read-only) and shows its line; ``before_request`` runs before each
    request a send makes (its body, and the usage of the send's earlier requests, None for the first):
    one place to stop a turn between requests (the budget).
    """

    answer: Callable[[ToolCall], ToolResult] | None = None  # None: no function is offered
    max_calls: int = MAX_TOOL_CALLS
    on_limit: Callable[[int], None] = field(default=lambda calls: None)
    before_request: Callable[[dict[str, Any], Usage | None], None] = _no_request_check

    def run(self, call: ToolCall, offered: Sequence[str]) -> ToolResult:
        """A call to a function not offered, or with garbage arguments, is an error result; else ``answer``."""
        why = bad_call(call, offered if self.answer is not None else ())
        return self.answer(call) if why is None and self.answer is not None else error_result(call, why or "")


NO_TOOLS = TurnTools()
LIMIT_REACHED = "the limit of function calls for this turn is reached: answer now with what you know"


def _calls_answered(tools: TurnTools, calls: Sequence[ToolCall], offered: Sequence[str], made: int) -> list[ToolResult]:
    """Each call answered in order; past ``max_calls`` a call gets the limit's error result."""
    results = []
    for call in calls:
        if made < tools.max_calls:
            results.append(tools.run(call, offered))
            made += 1
        else:
            results.append(error_result(call, LIMIT_REACHED))
    return results


def _added(total: Usage | None, usage: Usage) -> Usage:
    return usage if total is None else added(total, usage)


@dataclass(frozen=True)
class CachedHead:
    """An explicit cache holding the system instruction and the first ``length`` contents of the request."""

    name: str
    length: int


@dataclass(frozen=True)
class EditRetry:
    """The second request of an edit whose edits did not apply: that answer, then the ask for the whole text."""

    answer: str  # the first answer, as the model sent it
    payload: dict[str, Any]  # the user turn asking again (payloads.retry_payload)
    interaction_id: str | None = None  # interactions: the first answer's interaction, which the retry continues
    rounds: tuple[ToolRound, ...] = ()  # contents: the function calls answered before the first answer


def edit_schema(retry: EditRetry | None) -> dict[str, Any]:
    """A new copy each time: the SDK rewrites a schema in place (it adds ``property_ordering``), and the
    settings' hash, a recorded turn's identity, must not depend on whether a request went out before."""
    return copy.deepcopy(EDIT_RESPONSE_SCHEMA if retry is None else WHOLE_RESPONSE_SCHEMA)


@dataclass(frozen=True)
class ClientSettings:
    retry_attempts: int = 5
    timeout_s: float = 120.0
    # The first retry's wait (later ones double, up to MAX_DELAY_S), plus up to as much again
    # of jitter: google-genai's own defaults (1 s and 1 s). Tests shorten it to keep real waits short.
    retry_delay_s: float = 1.0


class Transport(Protocol):
    honours_retry_after: bool  # the client waits as a 429's Retry-After says (what the notice tells)
    client: Any
    model: str
    tools: tuple[str, ...]  # the functions offered

    def settings(self, mode: str, retry: EditRetry | None = None) -> dict[str, Any]:
        """The settings sent with a turn of ``mode`` besides its inputs, model and chain."""

    def request(
        self,
        plan: TurnPlan,
        history: Sequence[Turn],
        cache: CachedHead | None = None,
        retry: EditRetry | None = None,
    ) -> dict[str, Any]:
        """The exact request body this turn sends first (what ``--dry-run`` shows)."""

    def instruction(self) -> str:
        """The system instruction (with the functions' paragraph when functions are offered)."""

    def declared(self) -> list[dict[str, Any]]:
        """The function declarations this transport offers, in their fixed order."""

    def send(
        self,
        plan: TurnPlan,
        history: Sequence[Turn],
        on_chunk: OnChunk,
        cache: CachedHead | None = None,
        retry: EditRetry | None = None,
        tools: TurnTools = NO_TOOLS,
    ) -> TurnResult:
        """Send the turn, streaming text chunks to ``on_chunk``, answering function calls until it answers."""


def body_bytes(body: dict[str, Any]) -> int:
    # counted after the answer came: it must never fail (session.py checks the text before sending)
    return len(json.dumps(body, ensure_ascii=False).encode("utf-8", "surrogatepass"))


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


@functools.lru_cache(maxsize=32)
def request_settings(
    state_mode: str, mode: str, temperature: float | None, model: str = "", tools: tuple[str, ...] = ()
) -> str:
    """The sha256 of the settings a transport sends with a turn besides its inputs and model
    (``settings()`` below, the same dict the request is built from): a recorded turn asked
    under other settings is not the same turn (persistence replays only the same). Made of
    constants and these arguments: computed once for each."""
    text = json.dumps(TRANSPORTS[state_mode](None, model, temperature, tools).settings(mode), sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class _Transport:
    # Only the interactions client waits as Retry-After says; generate_content's
    # HttpRetryOptions backs off exponentially whatever the header says.
    honours_retry_after = False

    def __init__(self, client: Any, model: str, temperature: float | None = None, tools: tuple[str, ...] = ()):
        self.client = client  # None for a dry run: request() needs no client
        self.model = model
        self.temperature = temperature
        self.tools = tools  # the functions offered (an empty tuple: none, no declarations sent)

    def instruction(self) -> str:
        return f"{SYSTEM_INSTRUCTION}{TOOLS_INSTRUCTION}\n" if self.tools else SYSTEM_INSTRUCTION

    def declared(self) -> list[dict[str, Any]]:
        return declarations(self.tools)


class ContentsTransport(_Transport):
    """App-managed state: the kernel sends the compacted transcript every turn."""

    _memo: tuple[TurnPlan, tuple[tuple[int, str], ...], Rendered] | None = None

    def _rendered(self, plan: TurnPlan, history: Sequence[Turn]) -> Rendered:
        """The transcript rendered once a turn: the cache step and the request (and a retry) read the same."""
        outcomes = tuple((t.index, t.outcome) for t in history)  # a click in between renders again
        if self._memo is None or self._memo[0] is not plan or self._memo[1] != outcomes:
            self._memo = (plan, outcomes, render(history, plan))
        return self._memo[2]

    def head(self, plan: TurnPlan, history: Sequence[Turn]) -> tuple[Contents, int]:
        """The contents as an explicit cache would split them, and the length of their stable head."""
        rendered = self._rendered(plan, history)
        return rendered.split, rendered.head

    def settings(self, mode: str, retry: EditRetry | None = None) -> dict[str, Any]:
        """Everything the config carries besides the cache: what shapes the answer."""
        config: dict[str, Any] = {"system_instruction": self.instruction()}
        if self.tools:  # the declarations belong to the stable head: the same list, in the same order, every turn
            config["tools"] = [{"function_declarations": self.declared()}]
            config["automatic_function_calling"] = {"disable": True}  # the kernel runs the calls, not the SDK
        if self.temperature is not None:
            config["temperature"] = self.temperature
        level = traits(self.model).thinking_level
        if level is not None:
            config["thinking_config"] = {"thinking_level": level}
        if mode == "edit":
            config["response_mime_type"] = "application/json"
            config["response_schema"] = edit_schema(retry)
        return config

    def request(
        self,
        plan: TurnPlan,
        history: Sequence[Turn],
        cache: CachedHead | None = None,
        retry: EditRetry | None = None,
    ) -> dict[str, Any]:
        return self._body(plan, history, cache, retry, retry.rounds if retry is not None else (), False)

    def _body(
        self,
        plan: TurnPlan,
        history: Sequence[Turn],
        cache: CachedHead | None,
        retry: EditRetry | None,
        rounds: Sequence[ToolRound],
        at_limit: bool,
    ) -> dict[str, Any]:
        """A request of the turn: the transcript, each round's call and its answer, an edit's retry last.
        At the limit of calls, no cache (a request naming one may carry no tool_config) and calling off."""
        config = self.settings(plan.mode, retry)
        rendered = self._rendered(plan, history)
        if at_limit:
            cache = None
            if self.tools:
                config["tool_config"] = {"function_calling_config": {"mode": "NONE"}}
        if cache is None:
            contents = list(rendered.whole)
        else:  # the cache holds the system instruction and tools: the API refuses them beside cached_content
            del config["system_instruction"]
            config.pop("tools", None)
            config["cached_content"] = cache.name
            contents = rendered.split[cache.length :]
        contents += [c for r in rounds for c in contents_round(r)]
        if retry is not None:
            contents += [
                {"role": "model", "parts": [{"text": retry.answer}]},
                {"role": "user", "parts": [{"text": to_text(retry.payload)}]},
            ]
        return {"model": self.model, "contents": contents, "config": config}

    def send(
        self,
        plan: TurnPlan,
        history: Sequence[Turn],
        on_chunk: OnChunk,
        cache: CachedHead | None = None,
        retry: EditRetry | None = None,
        tools: TurnTools = NO_TOOLS,
    ) -> TurnResult:
        earlier = retry.rounds if retry is not None else ()
        body = self.request(plan, history, cache, retry)
        total: Usage | None = None
        rounds: list[ToolRound] = []
        made = 0
        while True:
            tools.before_request(body, total)
            text, parts, usage = self._streamed(body, on_chunk)
            total = _added(total, usage)
            calls = [_call_of(p["functionCall"]) for p in parts if isinstance(p.get("functionCall"), dict)]
            if not calls or made >= tools.max_calls:  # at the limit the model was asked to answer without tools
                return TurnResult(text=text, usage=total, rounds=tuple(rounds))
            results = _calls_answered(tools, calls, self.tools, made)
            made += len(calls)
            rounds.append(ToolRound(tuple(results), {"role": "model", "parts": parts}))
            if made >= tools.max_calls:
                tools.on_limit(tools.max_calls)
            body = self._body(plan, history, cache, retry, (*earlier, *rounds), made >= tools.max_calls)

    def _streamed(self, body: dict[str, Any], on_chunk: OnChunk) -> tuple[str, list[dict[str, Any]], Usage]:
        """One request streamed: its text, the model's parts exactly as received (a function call's
        thought signature intact), and its usage."""
        texts: list[str] = []
        parts: list[dict[str, Any]] = []
        usage = None
        for chunk in self.client.models.generate_content_stream(**body):
            candidates = chunk.candidates or []
            content = candidates[0].content if candidates else None
            for part in (content.parts or []) if content is not None else []:
                parts.append(part.model_dump(mode="json", by_alias=True, exclude_none=True))
                if part.text and not part.thought:
                    texts.append(part.text)
                    on_chunk(part.text)
            if chunk.usage_metadata is not None:
                usage = chunk.usage_metadata
        return (
            "".join(texts),
            parts,
            Usage(
                input_tokens=getattr(usage, "prompt_token_count", None),
                output_tokens=getattr(usage, "candidates_token_count", None),
                request_bytes=body_bytes(body),
                cached_tokens=getattr(usage, "cached_content_token_count", None),
                thinking_tokens=getattr(usage, "thoughts_token_count", None),
            ),
        )


def _call_of(call: dict[str, Any]) -> ToolCall:
    return ToolCall(str(call.get("name") or ""), call.get("args", {}), call.get("id"))


class InteractionsTransport(_Transport):
    """Server-managed state: only the new input, chained by previous_interaction_id."""

    honours_retry_after = True

    def request(
        self,
        plan: TurnPlan,
        history: Sequence[Turn],
        cache: CachedHead | None = None,
        retry: EditRetry | None = None,
    ) -> dict[str, Any]:
        # No explicit cache here (cache is always None): see gemini/caching.py.
        # system_instruction, the generation config and the response format belong
        # to one interaction: they are sent again on every turn.
        body: dict[str, Any] = {
            "model": self.model,
            "input": _input(plan) if retry is None else to_text(retry.payload),
            **self.settings(plan.mode, retry),
        }
        previous = plan.previous_interaction_id if retry is None else retry.interaction_id
        if previous:
            body["previous_interaction_id"] = previous
        return body

    def settings(self, mode: str, retry: EditRetry | None = None) -> dict[str, Any]:
        """What the body carries besides the input and the chain: what shapes the answer."""
        settings: dict[str, Any] = {"system_instruction": self.instruction(), "store": True}
        if self.tools:  # the same declarations in the same order on every interaction
            settings["tools"] = [{"type": "function", **d} for d in self.declared()]
        generation: dict[str, Any] = {}
        if self.temperature is not None:
            generation["temperature"] = self.temperature
        level = traits(self.model).thinking_level
        if level is not None:
            generation["thinking_level"] = level
        if generation:
            settings["generation_config"] = generation
        if mode == "edit":
            settings["response_format"] = {
                "type": "text",
                "mime_type": "application/json",
                "schema": edit_schema(retry),
            }
        return settings

    def send(
        self,
        plan: TurnPlan,
        history: Sequence[Turn],
        on_chunk: OnChunk,
        cache: CachedHead | None = None,
        retry: EditRetry | None = None,
        tools: TurnTools = NO_TOOLS,
    ) -> TurnResult:
        body = self.request(plan, history, retry=retry)
        total: Usage | None = None
        rounds: list[ToolRound] = []
        made = 0
        while True:
            tools.before_request(body, total)
            text, calls, interaction_id, usage = self._streamed(body, on_chunk)
            total = _added(total, usage)
            if not calls or made >= tools.max_calls:
                return TurnResult(text=text, interaction_id=interaction_id, usage=total, rounds=tuple(rounds))
            results = _calls_answered(tools, calls, self.tools, made)
            made += len(calls)
            rounds.append(ToolRound(tuple(results)))
            if made >= tools.max_calls:
                tools.on_limit(tools.max_calls)
            body = self._answered(plan.mode, retry, results, interaction_id, made >= tools.max_calls)

    def _answered(
        self,
        mode: str,
        retry: EditRetry | None,
        results: Sequence[ToolResult],
        interaction_id: str | None,
        at_limit: bool,
    ) -> dict[str, Any]:
        """The next interaction: a function_result input per call, on the interaction that asked for them."""
        body: dict[str, Any] = {
            "model": self.model,
            "input": [interaction_result(r) for r in results],
            **self.settings(mode, retry),
        }
        if interaction_id:
            body["previous_interaction_id"] = interaction_id
        if at_limit and self.tools:
            body["generation_config"] = {**body.get("generation_config", {}), "tool_choice": "none"}
        return body

    def _streamed(self, body: dict[str, Any], on_chunk: OnChunk) -> tuple[str, list[ToolCall], str | None, Usage]:
        """One interaction streamed: its text, its function calls (each whole in ``step.start``, or its
        arguments in ``arguments_delta`` pieces), its id and usage."""
        parts: list[str] = []
        steps: dict[int, dict[str, Any]] = {}  # a function_call step by index: name, id, arguments so far
        interaction_id = None
        usage = None
        for event in self.client.interactions.create(**body, stream=True):
            kind = getattr(event, "event_type", None)
            if kind == "step.start":
                step = _plain(getattr(event, "step", None))
                if step.get("type") == "function_call":
                    steps[getattr(event, "index", len(steps))] = {**step, "pieces": []}
            elif kind == "step.delta":
                delta = _plain(getattr(event, "delta", None))
                text = delta.get("text") if delta.get("type") == "text" else None
                if text:
                    parts.append(text)
                    on_chunk(text)
                elif delta.get("type") == "arguments_delta" and getattr(event, "index", None) in steps:
                    steps[event.index]["pieces"].append(delta.get("arguments") or "")
            elif kind in ("interaction.created", "interaction.completed"):
                interaction = getattr(event, "interaction", None)
                interaction_id = getattr(interaction, "id", None) or interaction_id
                usage = getattr(interaction, "usage", None) or usage
            elif kind == "error":
                raise RuntimeError(f"the interaction failed: {getattr(event, 'error', event)}")
        calls = [_step_call(steps[i]) for i in sorted(steps)]
        return (
            "".join(parts),
            calls,
            interaction_id,
            Usage(
                input_tokens=getattr(usage, "total_input_tokens", None),
                output_tokens=getattr(usage, "total_output_tokens", None),
                request_bytes=body_bytes(body),
                cached_tokens=getattr(usage, "total_cached_tokens", None),
                thinking_tokens=getattr(usage, "total_thought_tokens", None),
            ),
        )


def _plain(value: Any) -> dict[str, Any]:
    """An SDK event part as a plain dict (an unknown step or delta keeps what came in ``raw``)."""
    if value is None:
        return {}
    raw = getattr(value, "raw", None)
    if isinstance(raw, dict):
        return raw
    dump = getattr(value, "model_dump", None)
    return dump(mode="json", exclude_none=True) if callable(dump) else {}


def _step_call(step: dict[str, Any]) -> ToolCall:
    """A streamed function_call step as one call: its arguments whole, or joined from their pieces
    (pieces that do not join into JSON are kept as text: the call then gets an error result)."""
    args: Any = step.get("arguments") or {}
    if step["pieces"]:
        joined = "".join(step["pieces"])
        try:
            args = json.loads(joined)
        except ValueError:
            args = joined
    return ToolCall(str(step.get("name") or ""), args, step.get("id"))


def _input(plan: TurnPlan) -> str | list[dict[str, Any]]:
    """The turn's JSON text; with images, a list: the text, then one image input per image."""
    images = interaction_inputs(plan.pieces)
    text = to_text(plan.payload)
    return [{"type": "text", "text": text}, *images] if images else text


TRANSPORTS: dict[str, Callable[[Any, str, float | None, tuple[str, ...]], Transport]] = {
    "contents": ContentsTransport,
    "interactions": InteractionsTransport,
}
