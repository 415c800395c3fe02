"""The Gemini stand-in, exercised with the real google-genai SDK over real HTTP."""

from __future__ import annotations

import functools
import json
import math
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from google import genai
from google.genai import errors, types
from helpers.hashing import sha
from helpers.kernel import point_sdk_at

from genai_magics.gemini.models import DEFAULT_MODEL
from genai_magics.stub import StubServer, tokens

ROOT = Path(__file__).resolve().parents[2]
KEY = "stub-test-key-SECRET-7f3a9c"
MODEL = DEFAULT_MODEL
SCHEMA = {
    "type": "object",
    "properties": {"explanation": {"type": "string"}, "proposedSource": {"type": "string"}},
    "required": ["explanation", "proposedSource"],
}


def turn(obj: dict) -> str:
    return json.dumps(obj, separators=(",", ":"))


def user(obj) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=obj if isinstance(obj, str) else turn(obj))])


def model(obj) -> types.Content:
    return types.Content(role="model", parts=[types.Part(text=turn(obj))])


@pytest.fixture
def sdk_stub(stub, monkeypatch):
    """The session's stand-in (conftest), reset, with this process's SDK pointed at it."""
    stub.reset()
    point_sdk_at(monkeypatch, stub.url, KEY)
    yield stub
    stub.reset()


def make_client(timeout_ms: int | None = None) -> genai.Client:
    return genai.Client(
        http_options=types.HttpOptions(timeout=timeout_ms, retry_options=types.HttpRetryOptions(attempts=1))
    )


@pytest.fixture
def client(sdk_stub):
    """One client for the module's tests: each costs ~45 ms to build (the SDK loads the CA bundle twice)."""
    return _shared_client(sdk_stub.url)


@functools.cache
def _shared_client(url: str) -> genai.Client:
    return make_client()  # the sdk_stub fixture has pointed the environment at ``url``


def http(url: str, method: str = "GET", body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


# -- contents mode -------------------------------------------------------------


def test_ask_stream_text_and_usage(client, sdk_stub):
    source = "import math\nprint(math.pi)\n"
    contents = [user({"mode": "ask", "prompt": "What does this print?", "currentSource": source})]
    chunks = list(
        client.models.generate_content_stream(
            model=MODEL, contents=contents, config=types.GenerateContentConfig(system_instruction="be brief")
        )
    )
    assert len(chunks) >= 3
    text = "".join(c.text or "" for c in chunks)
    assert (
        text == f"Stub answer to: What does this print?\n\nThe document I hold has 2 lines (sha256 {sha(source)[:12]})."
    )
    usage = chunks[-1].usage_metadata
    prompt_tokens = tokens(contents[0].parts[0].text) + tokens("be brief")
    assert usage.prompt_token_count == prompt_tokens
    assert usage.candidates_token_count == math.ceil(len(text.encode()) / 4)
    assert usage.total_token_count == prompt_tokens + usage.candidates_token_count
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
    assert chunks[-1].model_version == MODEL

    (rec,) = sdk_stub.requests
    assert rec["kind"] == "stream" and rec["stream"] and rec["method"] == "POST"
    assert rec["path"] == f"/v1/models/{MODEL}:streamGenerateContent" and rec["query"] == {"alt": "sse"}
    assert rec["model"] == MODEL and rec["has_api_key"] is True
    assert rec["json"]["contents"][0]["role"] == "user"
    assert rec["json"]["systemInstruction"]["parts"][0]["text"] == "be brief"
    assert isinstance(rec["body_bytes"], int) and rec["body_bytes"] > len(source)
    assert rec["input_tokens"] == prompt_tokens and rec["response_tokens"] == usage.candidates_token_count
    assert rec["mode"] == "ask" and rec["held_document_sha256"] == sha(source)


def test_plain_text_turn_and_no_document(client, sdk_stub):
    reply = client.models.generate_content(model=MODEL, contents="hello there")
    assert reply.text == "Stub answer to: hello there\n\nI hold no document."
    assert reply.usage_metadata.prompt_token_count == tokens("hello there")


def test_edit_from_current_source(client, sdk_stub):
    source = "x = 1\nprint(x)\n"
    config = types.GenerateContentConfig(response_mime_type="application/json", response_schema=SCHEMA)
    chunks = list(
        client.models.generate_content_stream(
            model=MODEL,
            contents=[user({"mode": "edit", "prompt": "Add a docstring\nplease", "currentSource": source})],
            config=config,
        )
    )
    assert len(chunks) >= 3
    reply = json.loads("".join(c.text or "" for c in chunks))
    assert reply["proposedSource"] == "# stub edit: Add a docstring\n" + source
    assert reply["explanation"]
    rec = sdk_stub.requests[-1]
    assert rec["edit"] is True and rec["mode"] == "edit"
    # reproducible
    again = client.models.generate_content(
        model=MODEL,
        contents=[user({"mode": "edit", "prompt": "Add a docstring\nplease", "currentSource": source})],
        config=config,
    )
    assert json.loads(again.text) == reply


def test_edit_from_latest_valid_proposal_in_history(client, sdk_stub):
    base = "a = 1\n"
    p1 = "# stub edit: one\na = 1\n"
    p2 = "# stub edit: two\n# stub edit: one\na = 1\n"
    config = types.GenerateContentConfig(response_mime_type="application/json", response_json_schema=SCHEMA)
    history = [
        user({"mode": "edit", "prompt": "one", "supersededSourceSha256": sha(base)}),
        model({"kind": "code_proposal", "explanation": "e1", "proposedSource": p1}),
        user({"mode": "edit", "prompt": "two", "sourceSynchronized": True}),
        model({"kind": "code_proposal", "explanation": "e2", "proposedSource": p2, "outcome": "discarded"}),
    ]
    reply = client.models.generate_content(
        model=MODEL,
        contents=history + [user({"mode": "edit", "prompt": "three", "sourceSynchronized": True})],
        config=config,
    )
    assert json.loads(reply.text)["proposedSource"] == "# stub edit: three\n" + p1
    # without the discard, the newest proposal is the document
    history[3] = model({"kind": "code_proposal", "explanation": "e2", "proposedSource": p2, "outcome": "applied"})
    reply = client.models.generate_content(
        model=MODEL,
        contents=history + [user({"mode": "edit", "prompt": "three", "sourceSynchronized": True})],
        config=config,
    )
    assert json.loads(reply.text)["proposedSource"] == "# stub edit: three\n" + p2
    # a hand edit in the current turn wins over every proposal
    reply = client.models.generate_content(
        model=MODEL,
        contents=history + [user({"mode": "edit", "prompt": "three", "currentSource": "b = 2\n"})],
        config=config,
    )
    assert json.loads(reply.text)["proposedSource"] == "# stub edit: three\nb = 2\n"
    assert sdk_stub.requests[-1]["json"]["generationConfig"]["responseJsonSchema"] == SCHEMA


def test_edit_of_percent_notebook_keeps_cell_header(client, sdk_stub):
    doc = "# %% id=abc\nx = 1\n\n# %% id=def\ny = 2\n"
    reply = client.models.generate_content(
        model=MODEL,
        contents=[user({"mode": "edit", "prompt": "go", "currentSource": doc})],
        config=types.GenerateContentConfig(response_mime_type="application/json", response_schema=SCHEMA),
    )
    assert json.loads(reply.text)["proposedSource"] == "# %% id=abc\n# stub edit: go\nx = 1\n\n# %% id=def\ny = 2\n"


def test_a_long_prompt_is_echoed_up_to_its_last_whole_word(client, sdk_stub):
    prompt = "Add input validation and raise ValueError with a helpful message."  # 65 characters
    reply = client.models.generate_content(
        model=MODEL,
        contents=[user({"mode": "edit", "prompt": prompt, "currentSource": "x = 1\n"})],
        config=types.GenerateContentConfig(response_mime_type="application/json", response_schema=SCHEMA),
    )
    edit = json.loads(reply.text)
    echo = "Add input validation and raise ValueError with a helpful…"
    assert edit["proposedSource"] == f"# stub edit: {echo}\nx = 1\n"
    assert edit["explanation"].startswith(f"Stub edit for: {echo} Added")


def test_a_prompt_that_ends_a_sentence_is_echoed_with_one_full_stop(client, sdk_stub):
    reply = client.models.generate_content(
        model=MODEL,
        contents=[user({"mode": "edit", "prompt": "Reject bad input.", "currentSource": "x = 1\n"})],
        config=types.GenerateContentConfig(response_mime_type="application/json", response_schema=SCHEMA),
    )
    assert json.loads(reply.text)["explanation"].startswith("Stub edit for: Reject bad input. Added")


def test_count_tokens(client, sdk_stub):
    text = "hello wörld, count me"
    result = client.models.count_tokens(model=MODEL, contents=text)
    assert result.total_tokens == math.ceil(len(text.encode("utf-8")) / 4)
    assert sdk_stub.requests[-1]["kind"] == "count"
    assert sdk_stub.requests[-1]["path"] == f"/v1/models/{MODEL}:countTokens"


def test_many_sequential_requests_on_one_client(client, sdk_stub):
    for i in range(15):
        if i % 2:
            assert "".join(c.text for c in client.models.generate_content_stream(model=MODEL, contents=f"q{i}"))
        else:
            assert client.models.generate_content(model=MODEL, contents=f"q{i}").text
    assert len(sdk_stub.requests) == 15


# -- interactions ----------------------------------------------------------------


def test_interactions_create_chain_get(client, sdk_stub):
    source = "def f():\n    return 1\n"
    first_input = turn({"mode": "ask", "prompt": "explain", "currentSource": source})
    first = client.interactions.create(model=MODEL, input=first_input, system_instruction="sys", store=True)
    assert first.id == "int_000001" and first.status == "completed"
    assert (
        first.output_text == f"Stub answer to: explain\n\nThe document I hold has 2 lines (sha256 {sha(source)[:12]})."
    )
    assert first.usage.total_input_tokens == tokens(first_input) + tokens("sys")
    assert first.usage.total_output_tokens == tokens(first.output_text)

    # streamed edit, chained: the document comes from walking the chain
    fmt = {"type": "text", "mime_type": "application/json", "schema": SCHEMA}
    second_input = turn({"mode": "edit", "prompt": "rename f to g", "sourceSynchronized": True})
    events = list(
        client.interactions.create(
            model=MODEL,
            input=second_input,
            system_instruction="sys",
            previous_interaction_id=first.id,
            response_format=fmt,
            stream=True,
        )
    )
    kinds = [e.event_type for e in events]
    assert kinds[0] == "interaction.created" and kinds[-1] == "interaction.completed"
    assert kinds.count("step.delta") >= 3 and "step.start" in kinds and "step.stop" in kinds
    text = "".join(e.delta.text for e in events if e.event_type == "step.delta")
    proposal = json.loads(text)["proposedSource"]
    assert proposal == "# stub edit: rename f to g\n" + source
    done = events[-1].interaction
    second_id = done.id
    assert done.status == "completed" and done.previous_interaction_id == first.id
    assert done.usage.total_input_tokens == (
        tokens(first_input) + tokens(first.output_text) + tokens(second_input) + tokens("sys")
    )
    assert done.usage.total_output_tokens == tokens(text)

    # third turn: the proposal was discarded -> the held document is the original again
    third_input = turn(
        {
            "mode": "edit",
            "prompt": "add typing",
            "sourceSynchronized": True,
            "proposalOutcomes": {sha(proposal)[:12]: "discarded"},
        }
    )
    third = client.interactions.create(
        model=MODEL, input=third_input, previous_interaction_id=second_id, response_format=fmt
    )
    assert json.loads(third.output_text)["proposedSource"] == "# stub edit: add typing\n" + source
    # applied -> the proposal is the held document
    fourth = client.interactions.create(
        model=MODEL,
        input=turn(
            {
                "mode": "edit",
                "prompt": "again",
                "sourceSynchronized": True,
                "proposalOutcomes": {sha(proposal)[:12]: "applied"},
            }
        ),
        previous_interaction_id=second_id,
        response_format=fmt,
    )
    assert json.loads(fourth.output_text)["proposedSource"] == "# stub edit: again\n" + proposal

    got = client.interactions.get(second_id)
    assert got.id == second_id and got.output_text == text
    assert got.previous_interaction_id == first.id

    recs = sdk_stub.requests
    assert [r["kind"] for r in recs] == ["interaction.create"] * 4 + ["interaction.get"]
    assert recs[0]["json"]["input"] == first_input and recs[0]["json"]["store"] is True
    assert recs[1]["stream"] is True and recs[1]["json"]["stream"] is True and recs[1]["edit"] is True
    assert recs[1]["previous_interaction_id"] == first.id
    assert recs[4]["path"] == f"/v1/interactions/{second_id}" and recs[4]["query"] == {"stream": "false"}


def test_interactions_unknown_or_deleted_previous_is_404(client, sdk_stub):
    with pytest.raises(Exception) as info:
        client.interactions.create(model=MODEL, input="hi", previous_interaction_id="int_999999")
    assert getattr(info.value, "status_code", None) == 404
    assert "int_999999" in str(info.value)

    first = client.interactions.create(model=MODEL, input="hi")
    status, body = http(f"{sdk_stub.url}/_stub/interactions/{first.id}", "DELETE")
    assert status == 200 and body["ok"] is True
    with pytest.raises(Exception) as info:
        client.interactions.create(model=MODEL, input="again", previous_interaction_id=first.id)
    assert getattr(info.value, "status_code", None) == 404
    with pytest.raises(Exception) as info:
        client.interactions.get(first.id)
    assert getattr(info.value, "status_code", None) == 404
    # store=False is not kept
    lone = client.interactions.create(model=MODEL, input="x", store=False)
    assert lone.output_text and lone.id not in sdk_stub.interactions
    assert sdk_stub.forget_interaction("nope") is False


def test_missing_api_key_is_401(sdk_stub):
    status, body = http(
        f"{sdk_stub.url}/v1/models/{MODEL}:generateContent",
        "POST",
        {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
    )
    assert status == 401 and body["error"]["status"] == "UNAUTHENTICATED" and body["error"]["code"] == 401
    status, _ = http(f"{sdk_stub.url}/v1/interactions", "POST", {"model": MODEL, "input": "hi"})
    assert status == 401
    assert [r["has_api_key"] for r in sdk_stub.requests] == [False, False]
    assert sdk_stub.requests[0]["body_bytes"] == len(
        json.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}).encode()
    )
    status, _ = http(
        f"{sdk_stub.url}/v1/models/{MODEL}:generateContent",
        "POST",
        {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
        {"x-goog-api-key": "k"},
    )
    assert status == 200


# -- faults ----------------------------------------------------------------------


def test_inject_http_429_then_success(client, sdk_stub):
    sdk_stub.inject("http", status=429, times=1, match="generate", retry_after=1)
    with pytest.raises(errors.ClientError) as info:
        client.models.generate_content(model=MODEL, contents="hi")
    assert info.value.code == 429 and info.value.status == "RESOURCE_EXHAUSTED"
    assert client.models.generate_content(model=MODEL, contents="hi").text
    assert [r["status"] for r in sdk_stub.requests] == [429, 200]
    assert sdk_stub.requests[0]["fault"] == "http"


def test_inject_http_over_control_api_matches_interactions(client, sdk_stub):
    status, _ = http(
        f"{sdk_stub.url}/_stub/inject", "POST", {"fault": "http", "status": 503, "times": 2, "match": "interactions"}
    )
    assert status == 200
    assert client.models.generate_content(model=MODEL, contents="not matched").text
    for _ in range(2):
        with pytest.raises(Exception) as info:
            client.interactions.create(model=MODEL, input="hi")
        assert getattr(info.value, "status_code", None) == 503
    assert client.interactions.create(model=MODEL, input="hi").output_text
    with pytest.raises(errors.ServerError):
        sdk_stub.inject("http", status=500)
        client.models.generate_content(model=MODEL, contents="x")
    status, body = http(f"{sdk_stub.url}/_stub/inject", "POST", {"fault": "bogus"})
    assert status == 400


def test_inject_cut_stream_raises(client, sdk_stub):
    sdk_stub.inject("cut_stream")
    received = []
    with pytest.raises(Exception, match="incomplete chunked read"):  # httpx RemoteProtocolError
        for chunk in client.models.generate_content_stream(model=MODEL, contents="hi"):
            received.append(chunk.text)
    assert received  # some chunks arrived before the cut
    assert "".join(c.text for c in client.models.generate_content_stream(model=MODEL, contents="hi"))

    sdk_stub.inject("cut_stream", match="interactions", after_chunks=3)
    events = []
    with pytest.raises(Exception, match="incomplete chunked read"):  # interactions APIConnectionError
        for event in client.interactions.create(model=MODEL, input="hi", stream=True):
            events.append(event.event_type)
    assert events and "interaction.completed" not in events


def test_inject_invalid_json(client, sdk_stub):
    sdk_stub.inject("invalid_json")
    config = types.GenerateContentConfig(response_mime_type="application/json", response_schema=SCHEMA)
    # an ask does not consume the injection
    assert client.models.generate_content(model=MODEL, contents="ask first").text.startswith("Stub answer")
    text = "".join(
        c.text or ""
        for c in client.models.generate_content_stream(
            model=MODEL, contents=[user({"mode": "edit", "prompt": "p", "currentSource": "x=1"})], config=config
        )
    )
    with pytest.raises(ValueError):
        json.loads(text)
    text = client.models.generate_content(
        model=MODEL, contents=[user({"mode": "edit", "prompt": "p", "currentSource": "x=1"})], config=config
    ).text
    assert json.loads(text)["proposedSource"] == "# stub edit: p\nx=1"


def test_inject_delay_hits_client_timeout(sdk_stub):
    sdk_stub.inject("delay", seconds=3)
    slow = make_client(timeout_ms=400)
    started = time.monotonic()
    with pytest.raises(Exception, match="(?i)timed? ?out"):
        slow.models.generate_content(model=MODEL, contents="hi")
    assert time.monotonic() - started < 2.5
    assert slow.models.generate_content(model=MODEL, contents="hi").text


def test_inject_validation(sdk_stub):
    with pytest.raises(ValueError):
        sdk_stub.inject("nope")
    with pytest.raises(ValueError):
        sdk_stub.inject("http", match="nowhere")
    with pytest.raises(ValueError):
        StubServer(host="0.0.0.0")


# -- out of process --------------------------------------------------------------


def test_control_api_from_separate_process(monkeypatch):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.Popen(
        [sys.executable, "-m", "genai_magics.stub", "--port", "0"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:")
        url = line.split("=", 1)[1]
        monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
        monkeypatch.setenv("GEMINI_API_KEY", KEY)
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", url)
        client = make_client()
        assert client.models.generate_content(model=MODEL, contents="remote").text.startswith("Stub answer")
        created = client.interactions.create(model=MODEL, input="remote too")
        status, records = http(f"{url}/_stub/requests")
        assert status == 200
        assert [r["kind"] for r in records] == ["generate", "interaction.create"]
        assert all(r["has_api_key"] for r in records)
        assert KEY not in json.dumps(records)
        assert http(f"{url}/_stub/inject", "POST", {"fault": "http", "status": 429, "match": None})[0] == 200
        with pytest.raises(errors.ClientError):
            client.models.generate_content(model=MODEL, contents="x")
        assert http(f"{url}/_stub/reset", "POST", {})[0] == 200
        assert http(f"{url}/_stub/requests")[1] == []
        with pytest.raises(Exception, match="Error code: 404"):  # reset forgot the stored interactions
            client.interactions.get(created.id)
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert KEY not in out + err


def test_key_never_recorded(client, sdk_stub):
    client.models.generate_content(model=MODEL, contents="hi")
    client.interactions.create(model=MODEL, input="hi")
    client.models.count_tokens(model=MODEL, contents="hi")
    assert KEY not in json.dumps(sdk_stub.requests)
    assert KEY not in json.dumps(sdk_stub.interactions)
    assert all(
        set(r)
        >= {
            "method",
            "path",
            "query",
            "body_bytes",
            "json",
            "kind",
            "model",
            "has_api_key",
            "stream",
            "response_tokens",
            "input_tokens",
        }
        for r in sdk_stub.requests
    )
    # control requests are not recorded
    http(f"{sdk_stub.url}/_stub/requests")
    assert len(sdk_stub.requests) == 3


# -- context caching -------------------------------------------------------------

CACHE_MODEL = "gemini-3.8-flash"
DOC = "def f(x):\n    return x * 2\n" * 400  # ~11 kB: over the stand-in's 2,048-token minimum
SYSTEM = "You are a careful reviewer."


def control(stub, path: str, body=None, method: str = "POST"):
    status, reply = http(stub.url + path, method, body)
    assert status == 200, reply
    return reply


def head() -> list[types.Content]:
    return [types.Content(role="user", parts=[types.Part(text=json.dumps({"currentSource": DOC}))])]


def make_cache(client, ttl: str = "600s") -> types.CachedContent:
    return client.caches.create(
        model=CACHE_MODEL,
        config=types.CreateCachedContentConfig(
            contents=head(), system_instruction=SYSTEM, ttl=ttl, display_name="genai_magics test"
        ),
    )


def ask(client, prompt: str, cache: str | None = None, **config):
    if cache:
        config["cached_content"] = cache
    return client.models.generate_content(
        model=CACHE_MODEL,
        contents=json.dumps({"mode": "ask", "prompt": prompt}),
        config=types.GenerateContentConfig(**config),
    )


def test_create_get_use_patch_delete_with_the_sdk(sdk_stub, client):
    cache = make_cache(client)
    expected = tokens(json.dumps({"currentSource": DOC})) + tokens(SYSTEM)
    assert cache.name.startswith("cachedContents/") and cache.model == f"models/{CACHE_MODEL}"
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
    kinds = [(r["kind"], r["method"], r["path"].split("/", 2)[2]) for r in sdk_stub.requests]  # without /v1…/
    assert kinds == [
        ("cache.create", "POST", "cachedContents"),
        ("cache.get", "GET", cache.name),
        ("generate", "POST", f"models/{CACHE_MODEL}:generateContent"),
        ("cache.update", "PATCH", cache.name),
        ("cache.delete", "DELETE", cache.name),
    ]
    assert sdk_stub.requests[3]["json"]["ttl"] == "1200s"
    (made,) = sdk_stub.caches
    assert made["state"] == "deleted" and made["tokens"] == expected and made["token_seconds"] > 0


@pytest.mark.parametrize(
    "config",
    [
        {"system_instruction": "again"},
        {"tools": [types.Tool(function_declarations=[types.FunctionDeclaration(name="f", description="d")])]},
        {"tool_config": types.ToolConfig(function_calling_config=types.FunctionCallingConfig(mode="AUTO"))},
    ],
)
def test_system_instruction_tools_or_tool_config_beside_a_cache_is_a_400(sdk_stub, client, config):
    cache = make_cache(client)
    with pytest.raises(errors.ClientError) as info:
        ask(client, "q", cache.name, **config)
    assert info.value.code == 400
    assert (
        "CachedContent can not be used with GenerateContent request setting system_instruction, tools or "
        "tool_config" in str(info.value)
    )


def test_unknown_deleted_and_expired_caches_are_403_or_404(sdk_stub, client):
    cache = make_cache(client, ttl="60s")
    sdk_stub.advance(61)
    for call in (
        lambda: ask(client, "q", cache.name),
        lambda: client.caches.get(name=cache.name),
        lambda: client.caches.update(name=cache.name, config={"ttl": "60s"}),
        lambda: client.caches.delete(name=cache.name),
        lambda: ask(client, "q", "cachedContents/never-made"),
    ):
        with pytest.raises(errors.ClientError) as info:
            call()
        assert info.value.code == 403 and info.value.status == "PERMISSION_DENIED"
        assert "CachedContent not found (or permission denied)" in str(info.value)
    assert sdk_stub.caches[0]["state"] == "expired"
    assert control(sdk_stub, "/_stub/caching", {"missing_status": 404})["missing_status"] == 404
    with pytest.raises(errors.ClientError) as info:
        ask(client, "q", cache.name)
    assert info.value.code == 404


def test_patching_the_ttl_keeps_a_cache_alive_on_the_stand_in_clock(sdk_stub, client):
    cache = make_cache(client, ttl="60s")
    control(sdk_stub, "/_stub/clock", {"advance": 50})
    client.caches.update(name=cache.name, config={"ttl": "60s"})
    control(sdk_stub, "/_stub/clock", {"advance": 50})
    assert ask(client, "still there?", cache.name).usage_metadata.cached_content_token_count > 0
    assert [c["state"] for c in control(sdk_stub, "/_stub/caches", method="GET")] == ["live"]


def test_a_cache_under_the_model_minimum_is_refused(sdk_stub, client):
    with pytest.raises(errors.ClientError) as info:
        client.caches.create(
            model=CACHE_MODEL,
            config={"contents": [types.Content(role="user", parts=[types.Part(text="short")])], "ttl": "60s"},
        )
    assert info.value.code == 400 and "too small" in str(info.value)


def alternating(*texts: str) -> list[types.Content]:
    return [
        types.Content(role="user" if i % 2 == 0 else "model", parts=[types.Part(text=t)]) for i, t in enumerate(texts)
    ]


def test_implicit_caching_is_off_by_default_and_deterministic_when_on(sdk_stub, client):
    doc = json.dumps({"currentSource": DOC})
    first = client.models.generate_content(model=CACHE_MODEL, contents=alternating(doc + "q1"))
    second = client.models.generate_content(model=CACHE_MODEL, contents=alternating(doc + "q2"))
    assert first.usage_metadata.cached_content_token_count is None
    assert second.usage_metadata.cached_content_token_count is None

    control(sdk_stub, "/_stub/caching", {"implicit": True})
    client.models.generate_content(model=CACHE_MODEL, contents=alternating(doc, "answer", "q1"))
    hit = client.models.generate_content(model=CACHE_MODEL, contents=alternating(doc, "answer", "q1", "a1", "q2"))
    # the whole previous request is a prefix of this one
    assert hit.usage_metadata.cached_content_token_count == tokens(doc) + tokens("answer") + tokens("q1")
    other_model = client.models.generate_content(model="gemini-2.5-pro", contents=alternating(doc, "answer", "q9"))
    assert other_model.usage_metadata.cached_content_token_count is None  # earlier requests were another model's

    # a prefix under the model's minimum does not count; the minimum is per model and settable
    client.models.generate_content(model=CACHE_MODEL, contents=alternating("x" * 400, "a"))
    small = client.models.generate_content(model=CACHE_MODEL, contents=alternating("x" * 400, "b"))
    assert small.usage_metadata.cached_content_token_count is None
    control(sdk_stub, "/_stub/caching", {"implicit_minimum": {CACHE_MODEL: 50}})
    again = client.models.generate_content(model=CACHE_MODEL, contents=alternating("x" * 400, "c"))
    assert again.usage_metadata.cached_content_token_count == 100

    # beyond the TTL an earlier request is forgotten
    sdk_stub.advance(301)
    late = client.models.generate_content(model=CACHE_MODEL, contents=alternating(doc, "answer", "q1", "a1", "q3"))
    assert late.usage_metadata.cached_content_token_count is None


def test_interactions_report_implicit_cached_tokens(sdk_stub, client):
    control(sdk_stub, "/_stub/caching", {"implicit": True})
    first = client.interactions.create(
        model=CACHE_MODEL,
        input=json.dumps({"mode": "ask", "prompt": "a", "currentSource": DOC}),
        system_instruction=SYSTEM,
        store=True,
    )
    assert not first.usage.total_cached_tokens
    second = client.interactions.create(
        model=CACHE_MODEL,
        input='{"mode":"ask","prompt":"b"}',
        system_instruction=SYSTEM,
        store=True,
        previous_interaction_id=first.id,
    )
    # the first request (system instruction and first input) is a prefix of the chain the second one reads
    assert second.usage.total_cached_tokens == sdk_stub.requests[0]["input_tokens"]
    assert second.usage.total_cached_tokens < second.usage.total_input_tokens


def test_every_request_records_the_prefix_it_shares_with_the_previous_one(sdk_stub, client):
    doc = json.dumps({"currentSource": DOC})
    client.models.generate_content(model=CACHE_MODEL, contents=alternating(doc, "answer", "q1"))
    client.models.generate_content(model=CACHE_MODEL, contents=alternating(doc, "answer", "q1", "a1", "q2"))
    client.models.generate_content(model=CACHE_MODEL, contents=alternating("other", "answer"))
    first, second, third = (r["prefix_tokens"] for r in sdk_stub.requests)
    assert (first, second, third) == (0, tokens(doc) + tokens("answer") + tokens("q1"), 0)
    assert all(r["cached_tokens"] == 0 for r in sdk_stub.requests)  # implicit caching off: nothing billed as cached


def test_the_command_form_runs_a_command_on_the_stand_in_with_its_exit_status():
    """`genai-magics-stub jupyter lab` in small: the command's SDK reaches the stand-in with a placeholder
    key, no other key or Vertex AI setting reaches it, and the command's exit status is the stand-in's."""
    script = (
        "import os\n"
        "from google import genai\n"
        "client = genai.Client()\n"
        f"print(client.models.generate_content(model={MODEL!r}, contents='hello').text)\n"
        "others = [n for n in os.environ if n.startswith('GOOGLE_') and n != 'GOOGLE_GEMINI_BASE_URL']\n"
        "print(os.environ['GEMINI_API_KEY'], others)\n"
        "raise SystemExit(3)\n"
    )
    env = {**os.environ, "GOOGLE_API_KEY": KEY, "GOOGLE_GENAI_USE_VERTEXAI": "true", "GEMINI_API_KEY": KEY}
    run = subprocess.run(
        [sys.executable, "-m", "genai_magics.stub", "--", sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 3, run.stderr
    url, answer, *_, keys = run.stdout.strip().splitlines()
    assert url.startswith("GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:")
    assert answer == "Stub answer to: hello"
    assert keys == "stand-in []" and KEY not in run.stdout + run.stderr


def test_the_command_form_says_in_one_line_when_the_command_is_not_there():
    run = subprocess.run(
        [sys.executable, "-m", "genai_magics.stub", "no-such-command-here"], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 127
    assert run.stderr == "genai_magics.stub: no-such-command-here: No such file or directory\n"


def test_every_control_route_of_the_table_is_documented_and_answers():
    from genai_magics.stub import control

    for method, route in control.ROUTES:
        assert f"{method} {control.PREFIX}{route}" in (control.__doc__ or ""), (method, route)
    with StubServer() as sdk_stub:
        for method, route in control.ROUTES:
            status, _ = control.answer(
                sdk_stub, method, control.PREFIX + route.rstrip("/") + ("/x" if route.endswith("/") else ""), {}
            )
            assert status in (200, 400, 404), (method, route, status)
        assert control.answer(sdk_stub, "GET", "/_stub/nothing", {})[0] == 404
        assert control.answer(sdk_stub, "POST", "/_stub/inject", {"nope": 1}) == (
            400,
            {"error": "unknown keys ['nope']"},
        )
