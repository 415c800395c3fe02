"""The stages of a turn (``Session.run``), each run alone: resolve and plan decide what a turn
sends without a client, a server or a send."""

from __future__ import annotations

import json

import pytest
from helpers.display import RecordingDisplay

from genai_magics import messages
from genai_magics.engine.errors import UserError
from genai_magics.turn import pipeline
from genai_magics.turn.requests import Settings, TurnRequest
from genai_magics.turn.session import Session

CELL = "def area(r):\n    return 3.14159 * r * r\n"
SETTINGS = Settings(model="gemini-test-model", state="contents")


def session_with_cell() -> Session:
    session = Session()
    session.executed.add("c1", CELL, 1)
    session.executed.add("m1", "%%gemini_ask\nwhy pi?", 2)  # the running magic cell
    return session


def test_plan_stage_alone_decides_the_payload_and_sends_nothing():
    session, display = session_with_cell(), RecordingDisplay()
    resolved = pipeline.resolve(session, TurnRequest(mode="ask", prompt="  why pi?  "), SETTINGS, display)
    assert resolved.req.prompt == "why pi?"
    assert resolved.doc is not None and resolved.doc.source == CELL
    assert resolved.key is not None  # a sent turn has an identity for replay
    assert display.documents == [(resolved.doc.label, CELL)]

    planned = pipeline.plan(session, resolved, SETTINGS, display)
    assert planned.plan.send_source and planned.plan.payload["currentSource"] == CELL
    assert planned.plan.payload["prompt"] == "why pi?"
    assert not session.clients._clients  # no client was made: nothing could be sent
    assert "default" not in session.conversations  # a planned turn starts no conversation


def test_dry_run_stages_have_no_identity_and_are_never_replayed():
    session, display = session_with_cell(), RecordingDisplay()
    resolved = pipeline.resolve(
        session, TurnRequest(mode="edit", prompt="use math.pi", dry_run=True), SETTINGS, display
    )
    assert resolved.key is None
    assert pipeline.replayed(session, resolved) is None
    outcome = pipeline.dry_run(session, pipeline.plan(session, resolved, SETTINGS, display), SETTINGS)
    assert outcome.turn is None and outcome.request is not None
    sent = json.loads(outcome.request["contents"][-1]["parts"][0]["text"])  # the user turn as it would go
    assert sent["currentSource"] == CELL and sent["mode"] == "edit"
    assert not session.clients._clients


def test_resolve_stage_refuses_an_empty_prompt():
    with pytest.raises(UserError) as failure:
        pipeline.resolve(session_with_cell(), TurnRequest(mode="ask", prompt="   "), SETTINGS, RecordingDisplay())
    assert failure.value.message is messages.PROMPT_EMPTY
