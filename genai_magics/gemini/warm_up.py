"""A first turn as quick as the others: the SDK's slow first steps, done offline beforehand.

Importing google.genai takes ~0.5 s, and its request and response types are
pydantic models built on first use (``defer_build``): ~0.1 s more in the first
contents-mode request, ~2 s in the first interactions-mode one. ``rehearse``
sends one ask and one edit through the real SDK and the package's own
transports to an in-memory httpx transport that answers in the API's shape:
nothing leaves the process and no key is used, but every lazy step of the real
path has run. Called from a background thread after ``%load_ext``.
"""

from __future__ import annotations

import json

from ..engine.cells import Document
from ..engine.conversation import Conversation, StateMode
from ..engine.tools import TOOL_NAMES
from .transport import TRANSPORTS

_TEXT = json.dumps({"explanation": "", "proposedSource": ""})


def _sse(*events: tuple[str | None, dict]) -> bytes:
    return b"".join(
        (f"event: {name}\n" if name else "").encode() + b"data: " + json.dumps(data).encode() + b"\r\n\r\n"
        for name, data in events
    )


def _contents_reply() -> bytes:
    return _sse(
        (
            None,
            {
                "candidates": [
                    {"content": {"role": "model", "parts": [{"text": _TEXT}]}, "finishReason": "STOP", "index": 0}
                ],
                "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
            },
        )
    )


def _interactions_reply() -> bytes:
    done = {
        "id": "rehearsal",
        "status": "completed",
        "usage": {"total_input_tokens": 1, "total_output_tokens": 1, "total_tokens": 2},
    }
    return _sse(
        (
            "interaction.created",
            {"event_type": "interaction.created", "interaction": {"id": "rehearsal", "status": "in_progress"}},
        ),
        ("step.start", {"event_type": "step.start", "index": 0, "step": {"type": "model_output"}}),
        ("step.delta", {"event_type": "step.delta", "index": 0, "delta": {"type": "text", "text": _TEXT}}),
        ("step.stop", {"event_type": "step.stop", "index": 0}),
        ("interaction.completed", {"event_type": "interaction.completed", "interaction": done}),
    )


def rehearse(state_mode: StateMode, model: str) -> None:
    """One offline ask and edit in ``state_mode`` through the real SDK (see the module doc)."""
    from google import genai
    from google.genai import types

    try:  # the SDK's own HTTP library: httpx2 since google-genai 3.6, httpx before
        import httpx2 as httpx
    except ImportError:
        import httpx  # type: ignore[no-redef]

    body = _interactions_reply() if state_mode == "interactions" else _contents_reply()

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    with httpx.Client(transport=httpx.MockTransport(answer)) as http:
        client = genai.Client(
            vertexai=False,
            api_key="offline-rehearsal",
            http_options=types.HttpOptions(base_url="http://rehearsal.invalid", httpx_client=http),
        )
        transport = TRANSPORTS[state_mode](
            client, model, None, TOOL_NAMES, False, False
        )  # the declarations' conversion too
        document = Document(key="rehearsal", label="rehearsal", source="x = 1\n")
        for mode in ("ask", "edit"):
            conversation = Conversation(name="rehearsal", state_mode=state_mode)
            plan = conversation.plan_turn(mode, "rehearsal", document, [], state_mode, 0)
            for _chunk in transport.exchange(transport.request(plan, conversation.history)):
                pass
