"""The stand-in's context caching, driven by the real google-genai SDK over HTTP."""
from __future__ import annotations

import json
import urllib.request

import pytest
from google import genai
from google.genai import errors, types

from genai_magics.stub import tokens

KEY = "stub-cache-key-SECRET-51c2"
MODEL = "gemini-3.8-flash"
DOC = "def f(x):\n    return x * 2\n" * 400  # ~11 kB: over the stand-in's 2,048-token minimum
SYSTEM = "You are a careful reviewer."


@pytest.fixture
def stub(stub, monkeypatch):
    stub.reset()
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", stub.url)
    yield stub
    stub.reset()


@pytest.fixture
def client(stub):
    return genai.Client(http_options=types.HttpOptions(retry_options=types.HttpRetryOptions(attempts=1)))


def control(stub, path: str, body=None, method: str = "POST"):
    req = urllib.request.Request(stub.url + path, method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def head() -> list[types.Content]:
    return [types.Content(role="user", parts=[types.Part(text=json.dumps({"currentSource": DOC}))])]


def make_cache(client, ttl: str = "600s") -> types.CachedContent:
    return client.caches.create(model=MODEL, config=types.CreateCachedContentConfig(
        contents=head(), system_instruction=SYSTEM, ttl=ttl, display_name="genai_magics test"))


def ask(client, prompt: str, cache: str | None = None, **config):
    if cache:
        config["cached_content"] = cache
    return client.models.generate_content(model=MODEL, contents=json.dumps({"mode": "ask", "prompt": prompt}),
                                          config=types.GenerateContentConfig(**config))


def test_create_get_use_patch_delete_with_the_sdk(stub, client):
    cache = make_cache(client)
    expected = tokens(json.dumps({"currentSource": DOC})) + tokens(SYSTEM)
    assert cache.name.startswith("cachedContents/") and cache.model == f"models/{MODEL}"
    assert cache.usage_metadata.total_token_count == expected
    assert 599 <= (cache.expire_time - cache.create_time).total_seconds() <= 601

    got = client.caches.get(name=cache.name)
    assert got.name == cache.name and got.expire_time == cache.expire_time

    reply = ask(client, "what does f do?", cache.name)
    usage = reply.usage_metadata
    assert usage.cached_content_token_count == expected
    assert usage.prompt_token_count == expected + tokens(json.dumps({"mode": "ask", "prompt": "what does f do?"}))
    assert "The document I hold has 800 lines" in reply.text  # the cache's contents are read

    later = client.caches.update(name=cache.name, config=types.UpdateCachedContentConfig(ttl="1200s"))
    assert (later.expire_time - cache.expire_time).total_seconds() > 500

    client.caches.delete(name=cache.name)
    kinds = [(r["kind"], r["method"], r["path"].split("/", 2)[2]) for r in stub.requests]  # without /v1…/
    assert kinds == [("cache.create", "POST", "cachedContents"),
                     ("cache.get", "GET", cache.name),
                     ("generate", "POST", f"models/{MODEL}:generateContent"),
                     ("cache.update", "PATCH", cache.name),
                     ("cache.delete", "DELETE", cache.name)]
    assert stub.requests[3]["json"]["ttl"] == "1200s"
    (made,) = stub.caches
    assert made["state"] == "deleted" and made["tokens"] == expected and made["token_seconds"] > 0


@pytest.mark.parametrize("config", [{"system_instruction": "again"},
                                    {"tools": [types.Tool(function_declarations=[types.FunctionDeclaration(
                                        name="f", description="d")])]},
                                    {"tool_config": types.ToolConfig(function_calling_config=types.FunctionCallingConfig(
                                        mode="AUTO"))}])
def test_system_instruction_tools_or_tool_config_beside_a_cache_is_a_400(stub, client, config):
    cache = make_cache(client)
    with pytest.raises(errors.ClientError) as info:
        ask(client, "q", cache.name, **config)
    assert info.value.code == 400
    assert "CachedContent can not be used with GenerateContent request setting system_instruction, tools or " \
           "tool_config" in str(info.value)


def test_unknown_deleted_and_expired_caches_are_403_or_404(stub, client):
    cache = make_cache(client, ttl="60s")
    stub.advance(61)
    for call in (lambda: ask(client, "q", cache.name), lambda: client.caches.get(name=cache.name),
                 lambda: client.caches.update(name=cache.name, config={"ttl": "60s"}),
                 lambda: client.caches.delete(name=cache.name),
                 lambda: ask(client, "q", "cachedContents/never-made")):
        with pytest.raises(errors.ClientError) as info:
            call()
        assert info.value.code == 403 and info.value.status == "PERMISSION_DENIED"
        assert "CachedContent not found (or permission denied)" in str(info.value)
    assert stub.caches[0]["state"] == "expired"
    assert control(stub, "/_stub/caching", {"missing_status": 404})["missing_status"] == 404
    with pytest.raises(errors.ClientError) as info:
        ask(client, "q", cache.name)
    assert info.value.code == 404


def test_patching_the_ttl_keeps_a_cache_alive_on_the_stand_in_clock(stub, client):
    cache = make_cache(client, ttl="60s")
    control(stub, "/_stub/clock", {"advance": 50})
    client.caches.update(name=cache.name, config={"ttl": "60s"})
    control(stub, "/_stub/clock", {"advance": 50})
    assert ask(client, "still there?", cache.name).usage_metadata.cached_content_token_count > 0
    assert [c["state"] for c in control(stub, "/_stub/caches", method="GET")] == ["live"]


def test_a_cache_under_the_model_minimum_is_refused(stub, client):
    with pytest.raises(errors.ClientError) as info:
        client.caches.create(model=MODEL, config={"contents": [types.Content(role="user", parts=[
            types.Part(text="short")])], "ttl": "60s"})
    assert info.value.code == 400 and "too small" in str(info.value)


def contents(*texts: str) -> list[types.Content]:
    return [types.Content(role="user" if i % 2 == 0 else "model", parts=[types.Part(text=t)])
            for i, t in enumerate(texts)]


def test_implicit_caching_is_off_by_default_and_deterministic_when_on(stub, client):
    doc = json.dumps({"currentSource": DOC})
    first = client.models.generate_content(model=MODEL, contents=contents(doc + "q1"))
    second = client.models.generate_content(model=MODEL, contents=contents(doc + "q2"))
    assert first.usage_metadata.cached_content_token_count is None
    assert second.usage_metadata.cached_content_token_count is None

    control(stub, "/_stub/caching", {"implicit": True})
    client.models.generate_content(model=MODEL, contents=contents(doc, "answer", "q1"))
    hit = client.models.generate_content(model=MODEL, contents=contents(doc, "answer", "q1", "a1", "q2"))
    # the whole previous request is a prefix of this one
    assert hit.usage_metadata.cached_content_token_count == tokens(doc) + tokens("answer") + tokens("q1")
    other_model = client.models.generate_content(model="gemini-2.5-pro", contents=contents(doc, "answer", "q9"))
    assert other_model.usage_metadata.cached_content_token_count is None  # earlier requests were another model's

    # a prefix under the model's minimum does not count; the minimum is per model and settable
    client.models.generate_content(model=MODEL, contents=contents("x" * 400, "a"))
    small = client.models.generate_content(model=MODEL, contents=contents("x" * 400, "b"))
    assert small.usage_metadata.cached_content_token_count is None
    control(stub, "/_stub/caching", {"implicit_minimum": {MODEL: 50}})
    again = client.models.generate_content(model=MODEL, contents=contents("x" * 400, "c"))
    assert again.usage_metadata.cached_content_token_count == 100

    # beyond the TTL an earlier request is forgotten
    stub.advance(301)
    late = client.models.generate_content(model=MODEL, contents=contents(doc, "answer", "q1", "a1", "q3"))
    assert late.usage_metadata.cached_content_token_count is None


def test_interactions_report_implicit_cached_tokens(stub, client):
    control(stub, "/_stub/caching", {"implicit": True})
    first = client.interactions.create(model=MODEL, input=json.dumps({"mode": "ask", "prompt": "a",
                                                                      "currentSource": DOC}),
                                       system_instruction=SYSTEM, store=True)
    assert not first.usage.total_cached_tokens
    second = client.interactions.create(model=MODEL, input='{"mode":"ask","prompt":"b"}',
                                        system_instruction=SYSTEM, store=True,
                                        previous_interaction_id=first.id)
    # the first request (system instruction and first input) is a prefix of the chain the second one reads
    assert second.usage.total_cached_tokens == stub.requests[0]["input_tokens"]
    assert second.usage.total_cached_tokens < second.usage.total_input_tokens
