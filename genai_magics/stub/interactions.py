"""The interactions the stand-in stored (``store`` not false), their chains, and how a created one streams."""

from __future__ import annotations

import copy
import threading
from typing import Any

from . import sse
from .model import tokens
from .replies import Reply, error
from .request_record import RequestRecord

# What the store keeps beside the interaction the API returns (the fake model's turns).
_PRIVATE = ("input_text", "input_images", "output_text")


class InteractionStore:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._stored: dict[str, dict[str, Any]] = {}
        self._next = 1

    def reset(self) -> None:
        with self._lock:
            self._stored.clear()
            self._next = 1

    def snapshot(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return copy.deepcopy(self._stored)

    def new_id(self) -> str:
        with self._lock:
            ident = f"int_{self._next:06d}"
            self._next += 1
            return ident

    def chain(self, previous_id: str | None) -> list[dict[str, Any]] | None:
        """Stored interactions from the oldest to ``previous_id``; None if one is missing."""
        chain: list[dict[str, Any]] = []
        seen: set[str] = set()
        with self._lock:
            while previous_id:
                if previous_id in seen:
                    break
                seen.add(previous_id)
                stored = self._stored.get(previous_id)
                if stored is None:
                    return None
                chain.append(stored)
                previous_id = stored.get("previous_interaction_id")
        chain.reverse()
        return chain

    def store(self, interaction: dict[str, Any], input_text: str, input_images: list[Any], output_text: str) -> None:
        with self._lock:
            self._stored[interaction["id"]] = {
                **copy.deepcopy(interaction),
                "input_text": input_text,
                "input_images": input_images,
                "output_text": output_text,
            }

    def forget(self, ident: str) -> bool:
        with self._lock:
            return self._stored.pop(ident, None) is not None

    def get(self, ident: str, info: RequestRecord) -> Reply:
        """``GET interactions/{id}``: the interaction as the API returns it."""
        with self._lock:
            stored = copy.deepcopy(self._stored.get(ident))
        info.interaction_id = ident
        if stored is None:
            return error(404, f"Interaction {ident!r} was not found. (stub)")
        for key in _PRIVATE:
            stored.pop(key, None)
        return Reply(200, stored)


def streamed(interaction: dict[str, Any], text: str) -> Reply:
    """A created interaction as server-sent events: created, the model's step in pieces, completed."""
    head = {k: interaction[k] for k in ("id", "model", "created", "updated")}
    events = [
        sse.event(
            {"event_type": "interaction.created", "interaction": {**head, "status": "in_progress"}},
            "interaction.created",
        ),
        sse.event({"event_type": "step.start", "index": 0, "step": {"type": "model_output"}}, "step.start"),
    ]
    pieces = sse.chunks(text)
    for piece in pieces:
        events.append(
            sse.event({"event_type": "step.delta", "index": 0, "delta": {"type": "text", "text": piece}}, "step.delta")
        )
    events.append(sse.event({"event_type": "step.stop", "index": 0}, "step.stop"))
    done = {k: v for k, v in interaction.items() if k != "steps"}
    events.append(sse.event({"event_type": "interaction.completed", "interaction": done}, "interaction.completed"))
    return Reply(200, events=events, paced=[0, 0, *(tokens(p) for p in pieces)])
