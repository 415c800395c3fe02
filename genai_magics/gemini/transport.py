"""Talking to Gemini: one small class per state mode behind one interface, that only shapes the wire.

A transport builds a request's body (``request``) and sends one request (``exchange``); what a turn
does with the answer (function calls, retries, caches, the budget) is the send stage's
(``turn/send.py``), written once above both transports, as httpx's redirects live in its client,
not in each transport.

google.genai is imported only when a client is made (``client.py``; also caching.py's cache
creation and warm_up.py's offline rehearsal, after %load_ext), never at import, so
``%load_ext genai_magics`` stays fast and a dry run needs no key. Its private parts are
reached only through sdk_compat.py.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..engine.agent import AGENT_FUNCTIONS, AGENT_INSTRUCTION, agent_declarations
from ..engine.contents import Contents, Rendered, Squeeze, render
from ..engine.conversation import Turn, TurnPlan, Usage
from ..engine.grounding import Grounding, from_interaction, from_metadata
from ..engine.outputs import interaction_inputs
from ..engine.payloads import EDIT_RESPONSE_SCHEMA, SYSTEM_INSTRUCTION, WHOLE_RESPONSE_SCHEMA, to_text
from ..engine.rules import INSTRUCTION as RULES_INSTRUCTION
from ..engine.tools import (
    FADED_INSTRUCTION,
    TOOLS_INSTRUCTION,
    ToolCall,
    ToolRound,
    contents_round,
    declarations,
    interaction_result,
)
from .filler import padding
from .models import traits

# One request as it streams: its text chunks as they come, then (the generator's return value) the reply.
Exchange = Generator[str, None, "Reply"]


@dataclass(frozen=True)
class CachedHead:
    """An explicit cache holding the system instruction and the first ``length`` contents of the request (the
    transcript split for a cache, then the turn's rounds of calls: a cache folded mid-turn holds some)."""

    name: str
    length: int


class Split:
    """No explicit cache, the contents split as one would hold them: the prefix the conversation's cached
    requests read, which implicit caching holds (``caching.ContextCaches.head``)."""


SPLIT = Split()
Head = CachedHead | Split | None  # what a contents-mode request reads its head from


@dataclass(frozen=True)
class EditRetry:
    """The second request of an edit whose edits did not apply: that answer, then the ask for the whole text."""

    answer: str  # the first answer, as the model sent it
    payload: dict[str, Any]  # the user turn asking again (payloads.retry_payload)
    interaction_id: str | None = None  # interactions: the first answer's interaction, which the retry continues
    rounds: tuple[ToolRound, ...] = ()  # contents: the function calls answered before the first answer


@dataclass(frozen=True)
class Reply:
    """One request's answer: its text, the function calls it asks for, and what the next request needs."""

    text: str
    calls: tuple[ToolCall, ...]
    usage: Usage
    interaction_id: str | None = None  # interactions: the interaction the next request continues
    # contents: the model's content exactly as received (a call's thought signature intact), sent back
    model_content: dict[str, Any] | None = None
    grounding: Grounding | None = None  # --search: the searches run and the sources cited


def edit_schema(retry: EditRetry | None) -> dict[str, Any]:
    """The schema an edit's answer follows, shared by every body: the SDK gets its own copy (``_sdk_body``)."""
    return EDIT_RESPONSE_SCHEMA if retry is None else WHOLE_RESPONSE_SCHEMA


@functools.lru_cache(maxsize=16)
def _shared_declarations(tools: tuple[str, ...]) -> tuple[dict[str, Any], ...]:
    """The declarations of ``tools`` made once and shared by every body (a turn builds two or three), never
    changed: the SDK gets its own copy (``_sdk_body``)."""
    return (*declarations(tools), *agent_declarations(tools))


class Transport(Protocol):
    honours_retry_after: bool  # the client waits as a 429's Retry-After says (what the notice tells)
    client: Any
    model: str
    tools: tuple[str, ...]  # the functions offered
    search: bool  # Gemini's google_search and url_context offered beside them (--search)
    squeeze: Squeeze | None  # contents mode: the transcript compacted to fit the model's input limit (send stage)

    def settings(self, mode: str, retry: EditRetry | None = None) -> dict[str, Any]:
        """The settings sent with a turn of ``mode`` besides its inputs, model and chain."""

    def request(
        self,
        plan: TurnPlan,
        history: Sequence[Turn],
        cache: Head = None,
        retry: EditRetry | None = None,
        rounds: Sequence[ToolRound] = (),
        last: Reply | None = None,
        at_limit: bool = False,
    ) -> dict[str, Any]:
        """The body of one request of the turn: its first (what ``--dry-run`` shows), or after the function
        calls of ``rounds`` (this send's, answered in order; ``last`` the reply that asked for the latest),
        the next; ``at_limit``: the model may call no more functions."""

    def exchange(self, body: dict[str, Any]) -> Exchange:
        """One request on the wire: yields its text chunks as they stream, returns its reply (the transport
        calls nothing of the layers above it: the send stage shows the chunks)."""

    def instruction(self) -> str:
        """The system instruction (with the functions' paragraph when functions are offered)."""

    def declared(self) -> list[dict[str, Any]]:
        """The function declarations this transport offers, in their fixed order."""


def body_bytes(body: dict[str, Any]) -> int:
    # counted after the answer came: it must never fail (the plan stage checks the text before sending).
    # A body is built fresh, never circular: not checking saves ~20% of the count, done twice a turn.
    return len(json.dumps(body, ensure_ascii=False, check_circular=False).encode("utf-8", "surrogatepass"))


def body_bytes_at_most(body: dict[str, Any]) -> int:
    """An upper bound of ``body_bytes`` from the lengths of the body's strings, never their characters: a
    character is at most six bytes of JSON (a ``\\u001f`` escape), and each string, key, list and dict adds
    at most its quotes, brackets and separators. Twice as fast as serialising (the 200-cell notebook's
    request: 0.05 ms against 0.09 ms): a request far under the input limit, most, is known to fit by it."""
    total, stack = 0, [body]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            total += 6 * len(value) + 2
        elif isinstance(value, dict):  # '{', '}', and each key quoted with ': ' after it and ', ' between
            total += 2 + 6 * sum(map(len, value)) + 6 * len(value)
            stack += value.values()
        elif isinstance(value, list):
            total += 2 + 2 * len(value)
            stack += value
        else:  # a number, true, false or null, as it is written
            total += len(json.dumps(value))
    return total


@functools.lru_cache(maxsize=32)
def request_settings(
    state_mode: str,
    mode: str,
    temperature: float | None,
    model: str = "",
    tools: tuple[str, ...] = (),
    search: bool = False,
    rules: bool = False,
) -> str:
    """The sha256 of the settings a transport sends with a turn besides its inputs and model
    (``settings()`` below, the same dict the request is built from): a recorded turn asked
    under other settings is not the same turn (persistence replays only the same). Made of
    constants and these arguments: computed once for each."""
    transport = TRANSPORTS[state_mode](None, model, temperature, tools, search, rules)
    text = json.dumps(transport.settings(mode), sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class _Transport:
    # Only the interactions client waits as Retry-After says; generate_content's
    # HttpRetryOptions backs off exponentially whatever the header says.
    honours_retry_after = False

    def __init__(
        self,
        client: Any,
        model: str,
        temperature: float | None = None,
        tools: tuple[str, ...] = (),
        search: bool = False,
        rules: bool = False,
    ):
        self.client = client  # None for a dry run: request() needs no client
        self.model = model
        self.temperature = temperature
        self.tools = tools  # the functions offered (an empty tuple: none, no declarations sent)
        self.search = search  # Gemini's built-in google_search and url_context offered too
        self.rules = rules  # the conversation has the notebook's rules: the instruction says what they are
        self.squeeze: Squeeze | None = None

    def instruction(self) -> str:
        head = SYSTEM_INSTRUCTION + (RULES_INSTRUCTION if self.rules else "")
        if not self.tools:
            return head
        # named, not declared: the declarations are parsed anew for each request's settings, not for a yes/no
        acting = f"{AGENT_INSTRUCTION}\n" if any(name in AGENT_FUNCTIONS for name in self.tools) else ""
        return f"{head}{TOOLS_INSTRUCTION}\n{FADED_INSTRUCTION}\n{acting}"

    def declared(self) -> list[dict[str, Any]]:
        return declarations(self.tools) + agent_declarations(self.tools)


class ContentsTransport(_Transport):
    """App-managed state: the kernel sends the compacted transcript every request."""

    _memo: tuple[TurnPlan, tuple[tuple[int, str], ...], Squeeze | None, Rendered] | None = None

    def _rendered(self, plan: TurnPlan, history: Sequence[Turn]) -> Rendered:
        """The transcript rendered once a turn: the cache step and every request (a retry too) read the same."""
        outcomes = tuple((t.index, t.outcome) for t in history)  # a click in between renders again
        memo = self._memo
        if memo is None or memo[0] is not plan or memo[1] != outcomes or memo[2] != self.squeeze:
            self._memo = memo = (plan, outcomes, self.squeeze, render(history, plan, self.squeeze))
        return memo[3]

    def head(self, plan: TurnPlan, history: Sequence[Turn]) -> tuple[Contents, int]:
        """The contents as an explicit cache would split them, and the length of their stable head."""
        rendered = self._rendered(plan, history)
        return rendered.split, rendered.head

    def settings(self, mode: str, retry: EditRetry | None = None) -> dict[str, Any]:
        """Everything the config carries besides the cache: what shapes the answer."""
        config: dict[str, Any] = {"system_instruction": self.instruction()}
        tools: list[dict[str, Any]] = []
        if self.tools:  # the declarations belong to the stable head: the same list, in the same order, every turn
            tools.append({"function_declarations": list(_shared_declarations(self.tools))})
            config["automatic_function_calling"] = {"disable": True}  # the kernel runs the calls, not the SDK
        if self.search:  # Gemini runs these itself; beside functions it must say so in the answer's parts
            tools += [{"google_search": {}}, {"url_context": {}}]
            if self.tools:  # ai.google.dev/gemini-api/docs/tool-combination (Gemini 3 models, preview)
                config["tool_config"] = {"include_server_side_tool_invocations": True}
        if tools:
            config["tools"] = tools
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
        cache: Head = None,
        retry: EditRetry | None = None,
        rounds: Sequence[ToolRound] = (),
        last: Reply | None = None,
        at_limit: bool = False,
    ) -> dict[str, Any]:
        """The transcript, each round's call and its answer (a retry's earlier rounds first), an edit's
        retry last. At the limit of calls, no cache (a request naming one may carry no tool_config) and
        calling off."""
        config = self.settings(plan.mode, retry)
        rendered = self._rendered(plan, history)
        if at_limit:
            cache = None
            if self.tools:
                config["tool_config"] = {**config.get("tool_config", {}), "function_calling_config": {"mode": "NONE"}}
        earlier = retry.rounds if retry is not None else ()
        called = [c for r in (*earlier, *rounds) for c in contents_round(r)]
        if isinstance(cache, CachedHead):  # it holds the system instruction and tools: the API refuses them
            del config["system_instruction"]  # beside cached_content
            config.pop("tools", None)
            config["cached_content"] = cache.name
            contents = [*rendered.split, *called][cache.length :]  # a cache folded mid-turn holds rounds too
        else:
            contents = [*(rendered.split if isinstance(cache, Split) else rendered.whole), *called]
        if retry is not None:
            contents += [
                {"role": "model", "parts": [{"text": retry.answer}]},
                {"role": "user", "parts": [{"text": to_text(retry.payload)}]},
            ]
        return {"model": self.model, "contents": contents, "config": config}

    def _sdk_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """The body as the SDK takes it: with its own declarations and response schema. The SDK rewrites the
        schemas it is given in place (it adds ``property_ordering``); a body's are shared by every body, and
        the settings' hash, a recorded turn's identity, must not depend on whether a request went out before."""
        config = dict(body["config"])
        if "tools" in config:
            config["tools"] = [
                {"function_declarations": self.declared()} if "function_declarations" in t else t
                for t in config["tools"]
            ]
        if "response_schema" in config:
            config["response_schema"] = copy.deepcopy(config["response_schema"])
        return {**body, "config": config}

    def exchange(self, body: dict[str, Any]) -> Exchange:
        """One request streamed: its text, the model's parts exactly as received, its usage."""
        texts: list[str] = []
        parts: list[dict[str, Any]] = []
        usage = None
        grounding = None
        for chunk in self.client.models.generate_content_stream(**self._sdk_body(body)):
            candidates = chunk.candidates or []
            content = candidates[0].content if candidates else None
            meta = candidates[0].grounding_metadata if candidates else None
            if meta is not None:  # the last chunk carries the whole of it
                grounding = from_metadata(meta.model_dump(mode="json", by_alias=True, exclude_none=True))
            for part in (content.parts or []) if content is not None else []:
                parts.append(part.model_dump(mode="json", by_alias=True, exclude_none=True))
                if part.text and not part.thought:
                    texts.append(part.text)
                    yield part.text
            if chunk.usage_metadata is not None:
                usage = chunk.usage_metadata
        calls = tuple(_call_of(p["functionCall"]) for p in parts if isinstance(p.get("functionCall"), dict))
        return Reply(
            "".join(texts),
            calls,
            Usage(
                input_tokens=getattr(usage, "prompt_token_count", None),
                output_tokens=getattr(usage, "candidates_token_count", None),
                request_bytes=body_bytes(body),
                cached_tokens=getattr(usage, "cached_content_token_count", None),
                thinking_tokens=getattr(usage, "thoughts_token_count", None),
                searches=grounding.searches if grounding else 0,
            ),
            model_content={"role": "model", "parts": parts},
            grounding=grounding,
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
        cache: Head = None,
        retry: EditRetry | None = None,
        rounds: Sequence[ToolRound] = (),
        last: Reply | None = None,
        at_limit: bool = False,
    ) -> dict[str, Any]:
        """The turn's input on the chain, or after a round of calls a function_result input per call on
        the interaction that asked for them. No explicit cache here (``cache`` is always None: see
        gemini/caching.py); system_instruction, the generation config and the response format belong
        to one interaction: they are sent again on every request."""
        if rounds and last is not None:
            given: Any = [interaction_result(r) for r in rounds[-1].results]
            previous = last.interaction_id
        elif retry is not None:
            given, previous = to_text(retry.payload), retry.interaction_id
        else:
            given, previous = _input(plan), plan.previous_interaction_id
        body: dict[str, Any] = {"model": self.model, "input": given, **self.settings(plan.mode, retry, plan.chain_pad)}
        if previous:
            body["previous_interaction_id"] = previous
        if at_limit and self.tools:
            body["generation_config"] = {**body.get("generation_config", {}), "tool_choice": "none"}
        return body

    def settings(self, mode: str, retry: EditRetry | None = None, pad: int = 0) -> dict[str, Any]:
        """What the body carries besides the input and the chain: what shapes the answer (``pad``: the chain's
        filler after the instruction, ``TurnPlan.chain_pad``)."""
        settings: dict[str, Any] = {"system_instruction": self.instruction() + padding(pad), "store": True}
        if self.tools:  # the same declarations in the same order on every interaction
            settings["tools"] = [{"type": "function", **d} for d in _shared_declarations(self.tools)]
        if self.search:  # beside functions too (ai.google.dev/gemini-api/docs/interactions/tool-combination)
            settings["tools"] = [*settings.get("tools", []), {"type": "google_search"}, {"type": "url_context"}]
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

    def _sdk_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """The body with its own declarations and response schema, as ``ContentsTransport._sdk_body``."""
        body = dict(body)
        if "tools" in body:  # the functions first, as ``settings`` puts them
            functions = [{"type": "function", **d} for d in self.declared()]
            body["tools"] = [*functions, *(t for t in body["tools"] if t.get("type") != "function")]
        if "response_format" in body:
            body["response_format"] = {
                **body["response_format"],
                "schema": copy.deepcopy(body["response_format"]["schema"]),
            }
        return body

    def exchange(self, body: dict[str, Any]) -> Exchange:
        """One interaction streamed: its text, its function calls (each whole in ``step.start``, or its
        arguments in ``arguments_delta`` pieces), its id and usage."""
        parts: list[str] = []
        steps: dict[int, dict[str, Any]] = {}  # a function_call step by index: name, id, arguments so far
        interaction_id = None
        usage = None
        queries: list[str] = []  # the google_search_call steps' (each is billed)
        citations: list[dict[str, Any]] = []  # the text's url_citation annotations
        for event in self.client.interactions.create(**self._sdk_body(body), stream=True):
            kind = getattr(event, "event_type", None)
            if kind == "step.start":
                step = _plain(getattr(event, "step", None))
                if step.get("type") == "function_call":
                    steps[getattr(event, "index", len(steps))] = {**step, "pieces": []}
                elif step.get("type") == "google_search_call":
                    queries += (step.get("arguments") or {}).get("queries") or []
            elif kind == "step.delta":
                delta = _plain(getattr(event, "delta", None))
                text = delta.get("text") if delta.get("type") == "text" else None
                if text:
                    parts.append(text)
                    yield text
                elif delta.get("type") == "arguments_delta" and getattr(event, "index", None) in steps:
                    steps[event.index]["pieces"].append(delta.get("arguments") or "")
                elif delta.get("type") == "text_annotation_delta":
                    citations += [a for a in delta.get("annotations") or () if a.get("type") == "url_citation"]
            elif kind in ("interaction.created", "interaction.completed"):
                interaction = getattr(event, "interaction", None)
                interaction_id = getattr(interaction, "id", None) or interaction_id
                usage = getattr(interaction, "usage", None) or usage
            elif kind == "error":
                raise RuntimeError(f"the interaction failed: {getattr(event, 'error', event)}")
        grounding = from_interaction(queries, citations, "".join(parts))
        return Reply(
            "".join(parts),
            tuple(_step_call(steps[i]) for i in sorted(steps)),
            Usage(
                input_tokens=getattr(usage, "total_input_tokens", None),
                output_tokens=getattr(usage, "total_output_tokens", None),
                request_bytes=body_bytes(body),
                cached_tokens=getattr(usage, "total_cached_tokens", None),
                thinking_tokens=getattr(usage, "total_thought_tokens", None),
                searches=len(queries),
            ),
            interaction_id=interaction_id,
            grounding=grounding,
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


TRANSPORTS: dict[str, Callable[[Any, str, float | None, tuple[str, ...], bool, bool], Transport]] = {
    "contents": ContentsTransport,
    "interactions": InteractionsTransport,
}
