"""The interactions the stand-in stored (``store`` not false), their chains, and how a created one streams."""

from __future__ import annotations

import copy
import json
import threading
from typing import Any

from . import grounding, sse
from .model import tokens
from .replies import Reply, error
from .request_record import RequestRecord

# What the store keeps beside the interaction the API returns (the fake model's turns).
_PRIVATE = ("input_text", "input_images", "output_text", "tool_calls", "tool_input")


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

    def store(
        self,
        interaction: dict[str, Any],
        input_text: str,
        input_images: list[Any],
        output_text: str,
        tool_calls: list[dict[str, Any]] | None = None,
        tool_input: bool = False,
    ) -> None:
        with self._lock:
            self._stored[interaction["id"]] = {
                **copy.deepcopy(interaction),
                "input_text": input_text,
                "input_images": input_images,
                "output_text": output_text,
                "tool_calls": copy.deepcopy(tool_calls or []),  # the calls the next interaction must answer
                "tool_input": tool_input,  # its input answered calls
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


def streamed(
    interaction: dict[str, Any],
    text: str,
    calls: list[dict[str, Any]] | None = None,
    arguments: str = "whole",
    searched: str | None = None,
) -> Reply:
    """A created interaction as server-sent events: created, the model's step in pieces (or one step per
    function call: its arguments whole in ``step.start``, or in ``arguments_delta`` pieces), completed;
    ``searched``: the query of a Google Search run first (its two steps, then the text's citations)."""
    head = {k: interaction[k] for k in ("id", "model", "created", "updated")}
    events = [
        sse.event(
            {"event_type": "interaction.created", "interaction": {**head, "status": "in_progress"}},
            "interaction.created",
        ),
    ]
    paced = [0]
    if calls:
        for i, call in enumerate(calls):
            whole = arguments == "whole"
            step = {
                "type": "function_call",
                "id": call["id"],
                "name": call["name"],
                "arguments": call["args"] if whole else {},
            }
            events.append(sse.event({"event_type": "step.start", "index": i, "step": step}, "step.start"))
            paced.append(0)
            pieces = [] if whole else sse.chunks(json.dumps(call["args"]), size=4)
            for piece in pieces:
                delta = {"type": "arguments_delta", "arguments": piece}
                events.append(sse.event({"event_type": "step.delta", "index": i, "delta": delta}, "step.delta"))
                paced.append(tokens(piece))
            events.append(sse.event({"event_type": "step.stop", "index": i}, "step.stop"))
            paced.append(0)
    else:
        searches = grounding.interaction_steps(searched) if searched is not None else []
        for i, step in enumerate(searches):
            events.append(sse.event({"event_type": "step.start", "index": i, "step": step}, "step.start"))
            events.append(sse.event({"event_type": "step.stop", "index": i}, "step.stop"))
            paced += [0, 0]
        at = len(searches)
        events.append(
            sse.event({"event_type": "step.start", "index": at, "step": {"type": "model_output"}}, "step.start")
        )
        pieces = sse.chunks(text)
        for piece in pieces:
            events.append(
                sse.event(
                    {"event_type": "step.delta", "index": at, "delta": {"type": "text", "text": piece}}, "step.delta"
                )
            )
        if searched is not None:
            cited = {"type": "text_annotation_delta", "annotations": grounding.citations(searched, text)}
            events.append(sse.event({"event_type": "step.delta", "index": at, "delta": cited}, "step.delta"))
            paced.append(0)
        events.append(sse.event({"event_type": "step.stop", "index": at}, "step.stop"))
        paced += [0, *(tokens(p) for p in pieces)]
    done = {k: v for k, v in interaction.items() if k != "steps"}
    events.append(sse.event({"event_type": "interaction.completed", "interaction": done}, "interaction.completed"))
    return Reply(200, events=events, paced=paced)
