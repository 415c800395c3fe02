"""The stand-in's API: one handler a kind of request, each returning the reply and filling in
the request's record; ``handle_api`` routes a request to its handler (its route, key and body
checked, a fault injected applied).

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
"""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any

from . import grounding, images, interactions, sse
from . import tools as stub_tools
from .caches import CACHE_CONFLICT
from .model import answer, own_calls, sha256, texts, tokens
from .replies import Reply, error
from .request_record import CACHE_RE, INTERACTION_RE, NEEDS_BODY, RequestRecord, classify, name_in
from .state import StubState

# The Gemini 4 models, each with the thinking levels it takes (their developer guides): the stand-in
# refuses what the real ones do, a thinking budget (they take a level only), a level the model does not
# take, and an explicit cache (implicit caching only).
LEVEL_ONLY: dict[str, frozenset[str]] = {
    "gemini-4-argon": frozenset({"LOW", "MEDIUM", "HIGH"}),
    "gemini-4-carbon": frozenset({"LOW", "MEDIUM", "HIGH"}),
    "gemini-4-hydrogen": frozenset({"LOW", "MEDIUM", "HIGH", "XHIGH"}),
    "gemini-4-neon": frozenset({"LOW", "MEDIUM", "HIGH", "XHIGH"}),
}


# Gemini's limit, and its answer past it (a 400 INVALID_ARGUMENT with nothing structured beside the text)
INPUT_LIMIT = 1_048_576
OVER_LIMIT = "The input token count ({count}) exceeds the maximum number of tokens allowed ({limit})."


def over_limit(stub: StubState, turns: list[tuple[str, str]], system: str, declared: str) -> Reply | None:
    """Gemini's 400 for a request reading more than the model's input limit (counted as ``answer`` counts
    its input); None when it fits."""
    limit = stub.input_limit
    prompt_tokens = sum(tokens(t) for _, t in turns) + tokens(system) + tokens(declared)
    if limit is None or prompt_tokens <= limit:
        return None
    return error(400, OVER_LIMIT.format(count=prompt_tokens, limit=limit))


def _catalogue(limit: int | None = None) -> list[dict[str, Any]]:
    """What ``GET models`` lists, in the real API's shape (an embedding model cannot converse)."""
    from ..gemini.models import DEFAULT_MODEL  # the stand-in serves the package's default

    def entry(name: str, methods: list[str]) -> dict[str, Any]:
        display = " ".join(word.capitalize() for word in name.split("-"))
        return {
            "name": f"models/{name}",
            "version": "001",
            "displayName": display,
            "description": f"{display} (stub)",
            "inputTokenLimit": limit or INPUT_LIMIT,
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
        *(entry(name, [m for m in chat if m != "createCachedContent"]) for name in LEVEL_ONLY),
        entry("gemini-embedding-001", ["embedContent", "countTextTokens"]),
    ]


def thinking_refused(model: str, thinking: dict[str, Any]) -> Reply | None:
    """A Gemini 4 model's 400 for a thinking config it does not take (JSON names a field either way)."""
    levels = LEVEL_ONLY.get(model)
    if levels is None:
        return None
    if {"thinkingBudget", "thinking_budget"} & set(thinking):
        return error(400, f"thinking_budget is not supported by {model}; use thinking_level. (stub)")
    level = thinking.get("thinkingLevel") or thinking.get("thinking_level")
    if level is not None and str(level).upper() not in levels:
        return error(400, f"thinking_level {level} is not supported by {model}. (stub)")
    return None


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def generate(stub: StubState, body: dict[str, Any], fault: dict[str, Any] | None, info: RequestRecord) -> Reply:
    model = info.model or ""
    refused = thinking_refused(model, (body.get("generationConfig") or {}).get("thinkingConfig") or {})
    if refused is not None:
        return refused
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
        cache = stub.cache_store.for_request(name, model)
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
    refused = over_limit(stub, turns, system, declared)
    if refused is not None:  # before a scripted round is taken: the request is refused unread
        return refused
    calls = stub.tool_round(
        not info.tool_results,
        info.tools_declared,
        stub_tools.contents_calling_off(body),
        lambda: own_calls(turns, info.tool_results, info.tools_declared, info.edit),
        info.tool_results,
    )
    user_texts = [t for r, t in turns if r == "user"]
    text, prompt_tokens, out_tokens = answer(
        turns,
        user_texts[-1] if user_texts else "",
        system,
        fault,
        info,
        None if calls else stub.take_script(info),
        calls,
    )
    prompt_tokens += tokens(declared)
    info.input_tokens = prompt_tokens
    cached = max(explicit, stub.read_prefix(model, [("system", system), ("tools", declared)] + turns, info))
    info.cached_tokens = cached
    usage = {
        "promptTokenCount": prompt_tokens,
        "candidatesTokenCount": out_tokens,
        "totalTokenCount": prompt_tokens + out_tokens,
    }
    if cached:
        usage["cachedContentTokenCount"] = cached
    response_id = f"stub-{sha256(json.dumps(body, sort_keys=True))[:16]}"
    searched = None if calls or not grounding.contents_searches(body) else grounding.query_of(user_texts[-1])
    info.searches = [searched] if searched is not None else []
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
                    {
                        "content": {"role": "model", "parts": [{"text": text}]},
                        "finishReason": "STOP",
                        "index": 0,
                        **({"groundingMetadata": grounding.metadata(searched, text)} if searched is not None else {}),
                    }
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
            if searched is not None:  # the whole of it, on the last chunk, as Gemini sends it
                chunk["candidates"][0]["groundingMetadata"] = grounding.metadata(searched, text)
        events.append(sse.event(chunk))
    return Reply(200, events=events, paced=[tokens(p) for p in pieces])


def count(body: dict[str, Any], info: RequestRecord) -> Reply:
    inner = body.get("generateContentRequest")
    request: dict[str, Any] = inner if isinstance(inner, dict) else body
    total = sum(tokens(t) for c in request.get("contents") or [] for t in texts(c))
    total += tokens("".join(texts(request.get("systemInstruction"))))
    info.input_tokens, info.response_tokens = total, 0
    return Reply(200, {"totalTokens": total})


def create_interaction(
    stub: StubState, body: dict[str, Any], fault: dict[str, Any] | None, info: RequestRecord
) -> Reply:
    previous_id = body.get("previous_interaction_id")
    chain = stub.interaction_store.chain(previous_id) if previous_id else []
    if chain is None:
        return error(
            404,
            f"Interaction {previous_id!r} (previous_interaction_id) was not found; "
            "it expired or was deleted. Start a new conversation without it. (stub)",
        )
    model = body.get("model") or body.get("agent") or "unknown-model"
    refused = thinking_refused(model, body.get("generation_config") or {})
    if refused is not None:
        return refused
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
    declared = json.dumps(body["tools"], sort_keys=True) if body.get("tools") else ""
    refused = over_limit(stub, turns, system, declared)
    if refused is not None:
        return refused
    calls = stub.tool_round(
        not info.tool_results,
        info.tools_declared,
        stub_tools.interaction_calling_off(body),
        lambda: own_calls(turns, info.tool_results, info.tools_declared, info.edit),
        info.tool_results,
    )
    prompts = [t for r, t in turns if r == "user"]
    text, in_tokens, out_tokens = answer(
        turns,
        prompts[-1] if prompts else input_text,
        system,
        fault,
        info,
        None if calls else stub.take_script(info),
        calls,
    )
    in_tokens += tokens(declared)  # the declarations are read with the prompt
    info.input_tokens = in_tokens
    cached = stub.read_prefix(model, [("system", system), ("tools", declared)] + turns, info)
    info.cached_tokens = cached
    usage: dict[str, Any] = {
        "total_input_tokens": in_tokens,
        "total_output_tokens": out_tokens,
        "total_tokens": in_tokens + out_tokens,
    }
    if cached:
        usage["total_cached_tokens"] = cached
    searched = None if calls or not grounding.interaction_searches(body) else grounding.query_of(input_text)
    info.searches = [searched] if searched is not None else []
    if searched is not None:
        usage["grounding_tool_count"] = [{"type": "google_search", "count": 1}]
    ident = stub.interaction_store.new_id()
    now = _now()
    interaction: dict[str, Any] = {
        "id": ident,
        "status": "completed",
        "model": model,
        "steps": [
            {"type": "user_input", "content": [{"type": "text", "text": input_text}]},
            *(grounding.interaction_steps(searched) if searched is not None else []),
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
        stub.interaction_store.store(interaction, input_text, info.images, text, calls, bool(info.tool_results))
    info.previous_interaction_id, info.interaction_id = previous_id, ident
    info.tool_calls = calls or []
    if not info.stream:
        return Reply(200, interaction)
    return interactions.streamed(interaction, text, calls, stub.tool_scripts.arguments, searched)


def list_models(query: dict[str, str], limit: int | None = None) -> Reply:
    """One page of the catalogue; ``pageSize``/``pageToken`` as the real API pages (small
    pages by default, so a client's paging is exercised)."""
    models = _catalogue(limit)
    try:
        start = int(query.get("pageToken") or 0)
        size = int(query.get("pageSize") or 2)
    except ValueError:
        return error(400, "Invalid page token or size. (stub)")
    page: dict[str, Any] = {"models": models[start : start + size]}
    if start + size < len(models):
        page["nextPageToken"] = str(start + size)
    return Reply(200, page)


def _serve(stub: StubState, record: RequestRecord, fault: dict[str, Any] | None) -> Reply:
    """The reply of the handler for the record's kind (its route and body checked)."""
    kind = record.kind
    data: dict[str, Any] = record.json if isinstance(record.json, dict) else {}
    if kind in ("generate", "stream"):
        return generate(stub, data, fault, record)
    if kind == "count":
        return count(data, record)
    if kind == "interaction.create":
        return create_interaction(stub, data, fault, record)
    if kind == "interaction.get":
        return stub.interaction_store.get(name_in(INTERACTION_RE, record.path), record)
    if kind == "models.list":
        return list_models(record.query, stub.input_limit)
    if kind == "cache.create":
        model = str(data.get("model") or "").removeprefix("models/")
        if model in LEVEL_ONLY:
            return error(400, f"Explicit context caching is not supported for models/{model}. (stub)")
        return stub.cache_store.create(data, record)
    return stub.cache_store.handle(record.method, name_in(CACHE_RE, record.path), record.json, record)


def handle_api(
    stub: StubState, method: str, path: str, query: dict[str, str], raw: bytes, has_key: bool
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
        fault = stub.take_fault(record)
        record.fault = fault["fault"] if fault else None
        if fault and fault["fault"] == "http":
            reply = error(fault["status"], fault.get("message"), fault.get("retry_after"))
        else:
            reply = _serve(stub, record, fault)
            if fault and fault["fault"] == "cut_stream" and reply.events is not None:
                reply.cut = True
                reply.events = reply.events[: fault["after_chunks"]]
        record.status = reply.status
        return reply, record, fault
    record.status = reply.status
    return reply, record, None
