"""Reading what went over the wire from the stand-in's records."""

from __future__ import annotations

import json
from typing import Any


def api_requests(stub) -> list[dict[str, Any]]:
    return [r for r in stub.requests if r["kind"] in ("stream", "generate", "interaction.create")]


def current_payload(record: dict[str, Any]) -> dict[str, Any]:
    """The user turn this request adds (contents: the last user content; interactions: input)."""
    body = record["json"]
    if record["kind"] == "interaction.create":
        return json.loads(body["input"])
    return json.loads(body["contents"][-1]["parts"][0]["text"])


def transcript(record: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(role, payload) for every content of a contents-mode request."""
    return [(c["role"], json.loads(c["parts"][0]["text"])) for c in record["json"]["contents"]]
