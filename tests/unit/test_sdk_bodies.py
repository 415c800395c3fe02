"""The bodies a turn builds share their function declarations and an edit's response schema (made once, not
copied for each of a turn's two or three bodies); the SDK, which rewrites the schemas it is given in place,
gets its own copy. The real SDK over real HTTP to the stand-in."""

from __future__ import annotations

import json

import pytest
from google import genai

from genai_magics.engine.agent import AGENT_FUNCTIONS
from genai_magics.engine.payloads import EDIT_RESPONSE_SCHEMA, WHOLE_RESPONSE_SCHEMA
from genai_magics.engine.tools import TOOL_NAMES
from genai_magics.gemini.transport import TRANSPORTS, request_settings

TOOLS = (*TOOL_NAMES, *AGENT_FUNCTIONS)


def shared(transport) -> str:
    """What every body shares, as text: the declarations and both response schemas."""
    settings = transport.settings("edit")
    return json.dumps([settings, EDIT_RESPONSE_SCHEMA, WHOLE_RESPONSE_SCHEMA], sort_keys=True)


@pytest.mark.parametrize("state", ["contents", "interactions"])
def test_a_request_sent_through_the_sdk_leaves_every_later_body_and_the_settings_hash_as_they_were(stub, state):
    stub.reset()
    client = genai.Client(api_key="fake", http_options={"base_url": stub.url})
    transport = TRANSPORTS[state](client, "gemini-2.5-flash", None, TOOLS)
    before, hashed = shared(transport), request_settings(state, "edit", None, "gemini-2.5-flash", TOOLS)
    request_settings.cache_clear()  # computed again below from the bodies' shared parts
    text = json.dumps({"mode": "edit", "prompt": "Rename x.", "currentSource": "x = 1\n"})
    if state == "contents":
        body = {"model": transport.model, "contents": [{"role": "user", "parts": [{"text": text}]}]}
        body["config"] = transport.settings("edit")
    else:
        body = {"model": transport.model, "input": text, **transport.settings("edit")}
    exchange = transport.exchange(body)
    with pytest.raises(StopIteration) as done:
        while True:
            next(exchange)
    assert done.value.value.text, "the stand-in answered"
    assert [r["status"] for r in stub.requests if r["kind"] in ("stream", "interaction.create")] == [200]
    assert shared(transport) == before
    assert request_settings(state, "edit", None, "gemini-2.5-flash", TOOLS) == hashed
