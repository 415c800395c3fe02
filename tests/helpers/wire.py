"""Reading what went over the wire from the stand-in's records."""

from __future__ import annotations

import json
from typing import Any

from genai_magics.engine.context import SECONDARY_FIELD
from genai_magics.engine.outputs import OUTPUTS_FIELD
from genai_magics.engine.payloads import superseded_field
from genai_magics.engine.tools import FETCHED_LINE

# The fields of a user turn's JSON as the engine plans it (docs/protocol.md; no lastError or variables
# in the tests that check against it) ...
USER_KEYS = frozenset(
    {
        "mode",
        "prompt",
        "currentSource",
        "sourcePatch",
        "sourceSynchronized",
        "document",
        SECONDARY_FIELD,
        "proposalOutcomes",
        "earlierTurns",
        OUTPUTS_FIELD,
    }
)
# ... and as a contents-mode transcript carries it once later versions superseded its document or context
# (and once the turn's function results faded: the calls that fetch them again)
TRANSCRIPT_USER_KEYS = USER_KEYS | {
    "fetched",
    "supersededSourceSha256",
    superseded_field(SECONDARY_FIELD),
    superseded_field(OUTPUTS_FIELD),
}


def api_requests(stub) -> list[dict[str, Any]]:
    return [r for r in stub.requests if r["kind"] in ("stream", "generate", "interaction.create")]


def current_payload(record: dict[str, Any]) -> dict[str, Any]:
    """The user turn this request adds (contents: the last user content; interactions: input)."""
    body = record["json"]
    if record["kind"] == "interaction.create":
        given = body["input"]  # with images: one user_input step, its content the text and then the images
        return json.loads(given if isinstance(given, str) else given[0]["content"][0]["text"])
    return json.loads(body["contents"][-1]["parts"][0]["text"])


def payload_of(role: str, text: str) -> dict[str, Any]:
    """A contents-mode text as its payload: the JSON, or the two plain forms read back (an earlier answer is
    the model's Markdown; an earlier question whose results faded is its prompt, then the "fetched: " line)."""
    if text.startswith("{"):
        return json.loads(text)
    if role == "model":
        return {"kind": "answer", "explanation": text}
    prompt, _, calls = text.rpartition("\n" + FETCHED_LINE)
    assert prompt, f"a user text that is neither JSON nor a faded question: {text!r}"
    return {"mode": "ask", "prompt": prompt, "fetched": calls.split(", ")}


def digest_entry(entry: dict[str, Any] | list[str]) -> dict[str, Any]:
    """An ``earlierTurns`` entry as an object: an ask's ``[question, reply]`` pair read back (the question as
    contents mode's faded form, with its "fetched: " line where the turn fetched something)."""
    if isinstance(entry, dict):
        return entry
    question, reply = entry
    asked = payload_of("user", question) if "\n" + FETCHED_LINE in question else {"mode": "ask", "prompt": question}
    return {**asked, "reply": reply}


def earlier_turns(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """A new chain's ``earlierTurns``, each entry as an object (``digest_entry``)."""
    return [digest_entry(e) for e in payload["earlierTurns"]]


def transcript(record: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(role, payload) for every content of a contents-mode request."""
    return [(c["role"], payload_of(c["role"], c["parts"][0]["text"])) for c in record["json"]["contents"]]


def calling_off(record: dict[str, Any]) -> bool:
    """The request turned function calling off (contents: toolConfig mode NONE; interactions: tool_choice none)."""
    from genai_magics.stub.tools import contents_calling_off, interaction_calling_off

    off = interaction_calling_off if record["kind"] == "interaction.create" else contents_calling_off
    return off(record["json"])
