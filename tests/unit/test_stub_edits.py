"""The stand-in's edits form over the real SDK: when it answers with edits, scripted and bad edits, pacing."""

from __future__ import annotations

import json
import time
import urllib.request

import pytest
from helpers.kernel import point_sdk_at

from genai_magics.engine.payloads import EDIT_RESPONSE_SCHEMA, WHOLE_RESPONSE_SCHEMA, to_text
from genai_magics.stub.edits import BAD_FIND, EDITS_MIN_LINES, apply
from genai_magics.stub.model import edit_source, tokens

BIG = "".join(f"x_{i} = {i}\n" for i in range(EDITS_MIN_LINES))


@pytest.fixture
def client(stub, monkeypatch):
    from google import genai

    stub.reset()
    point_sdk_at(monkeypatch, stub.url)
    return genai.Client()


def edit(client, source: str, schema=EDIT_RESPONSE_SCHEMA) -> dict:
    turn = to_text({"mode": "edit", "prompt": "Add a header.", "currentSource": source})
    config = {"response_mime_type": "application/json", "response_schema": schema}
    text = "".join(c.text or "" for c in client.models.generate_content_stream(model="m", contents=turn, config=config))
    return json.loads(text)


def control(stub, route: str, body: dict) -> dict:
    request = urllib.request.Request(
        f"{stub.url}/_stub/{route}", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request) as reply:
        return json.loads(reply.read())


def test_edits_only_when_offered_and_the_document_is_not_small(client):
    assert "edits" in edit(client, BIG)
    assert apply(BIG, edit(client, BIG)["edits"]) == edit_source("Add a header.", BIG)
    assert "proposedSource" in edit(client, BIG, WHOLE_RESPONSE_SCHEMA)  # not offered: the whole text
    assert "proposedSource" in edit(client, BIG[: BIG.index("x_3")])  # a small document: the whole text


def test_scripted_and_bad_edits(client, stub):
    scripted = [{"find": "x_1 = 1\n", "replace": "x_1 = 10\n"}]
    control(stub, "script_edit", {"edits": scripted})
    assert edit(client, BIG)["edits"] == scripted
    stub.inject("bad_edits", match="edit")
    bad = edit(client, BIG)["edits"]
    assert bad[0]["find"] == BAD_FIND and apply(BIG, bad) is None
    assert apply(BIG, edit(client, BIG)["edits"]) is not None  # the fault was once


def test_pace_streams_output_at_the_token_rate(client, stub):
    whole = json.dumps(edit(client, "x = 1\n"))
    assert control(stub, "pace", {"token_rate": 400}) == {"token_rate": 400.0}
    start = time.monotonic()
    edit(client, "x = 1\n")
    assert time.monotonic() - start >= 0.9 * tokens(whole) / 400  # at most this fast; never faster
    control(stub, "pace", {"token_rate": 0})
