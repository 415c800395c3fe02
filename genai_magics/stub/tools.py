"""The stand-in model calling functions: scripted, as its edits are (``POST /_stub/script_tools``).

A script is a list of rounds, each a list of calls (``{"name", "args"}``); the next request that
declares functions (a new turn) answers the first round's calls, each later request of that turn
(answering calls) the next round, and once the rounds are done the model answers as it always does,
naming the results it read. Calling off (contents ``toolConfig`` mode ``NONE``; interactions
``tool_choice`` ``none``) ends the script at once. As Gemini 3 does, the first call of a round
carries a thought signature, and a request that sends a round back without it, or answers a call
with another id or name, is refused with a 400. An agent's script (``%%gemini_agent``) names a cell
the turn inserted by ``{{id}}`` in a call's string arguments: the stand-in puts there the ``id`` of
the latest function response that carried one (``insert_cell``'s), as a model reads it from the result.
Standard library only.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

MISSING_SIGNATURE = (
    "Function call is missing a thought_signature in functionCall parts. This is required for tools to "
    "work correctly, and missing thought_signature may lead to degraded model performance. (stub)"
)


def signature(call_id: str) -> str:
    """The thought signature the stand-in puts on a round's first call (base64, as the API sends bytes)."""
    return base64.b64encode(f"stub-signature:{call_id}".encode()).decode("ascii")


@dataclass
class ToolScripts:
    """The scripts waiting, the one running, and how its streamed calls come (interactions)."""

    waiting: list[dict[str, Any]] = field(default_factory=list)  # {"rounds": [...], "arguments": "whole"|"delta"}
    running: dict[str, Any] | None = None
    done: int = 0  # rounds of the running script answered
    next_id: int = 1
    last_cell: str = ""  # the latest ``id`` a function response of the running script carried ({{id}})

    def reset(self) -> None:
        self.waiting.clear()
        self.running, self.done, self.next_id = None, 0, 1

    def round(
        self, new_turn: bool, calling_off: bool, results: list[dict[str, Any]] | None = None
    ) -> list[dict[str, Any]] | None:
        """The calls this request answers with, or None: the model answers in text. ``results``: the function
        responses the request carries (an ``id`` among them fills ``{{id}}``)."""
        if new_turn:
            self.running, self.done = (self.waiting.pop(0) if self.waiting else None), 0
            self.last_cell = ""
        for result in results or []:
            response = result.get("response")
            if isinstance(response, dict) and isinstance(response.get("id"), str):
                self.last_cell = response["id"]
        if self.running is None or calling_off or self.done >= len(self.running["rounds"]):
            self.running = None if calling_off else self.running
            return None
        calls = self.numbered(self.running["rounds"][self.done])
        self.done += 1
        return calls

    def numbered(self, round_: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A round's calls with their ids (``call_0001``...), as the model sends them."""
        calls = []
        for call in round_:
            args = _filled(call.get("args", {}), self.last_cell)
            calls.append({"id": f"call_{self.next_id:04d}", "name": call["name"], "args": args})
            self.next_id += 1
        return calls

    @property
    def arguments(self) -> str:
        return self.running["arguments"] if self.running else "whole"


def _filled(value: Any, cell_id: str) -> Any:
    """``value`` with ``{{id}}`` in its strings replaced by ``cell_id``."""
    if isinstance(value, str):
        return value.replace("{{id}}", cell_id)
    if isinstance(value, list):
        return [_filled(v, cell_id) for v in value]
    if isinstance(value, dict):
        return {k: _filled(v, cell_id) for k, v in value.items()}
    return value


# -- reading requests ---------------------------------------------------------------------------
def contents_declared(body: dict[str, Any]) -> list[str]:
    names: list[str] = []
    for tool in body.get("tools") or []:
        for d in tool.get("functionDeclarations") or [] if isinstance(tool, dict) else []:
            names.append(d.get("name"))
    return names


def contents_calling_off(body: dict[str, Any]) -> bool:
    config = (body.get("toolConfig") or {}).get("functionCallingConfig") or {}
    return config.get("mode") == "NONE"


def _function_parts(content: Any, key: str) -> list[dict[str, Any]]:
    parts = content.get("parts") or [] if isinstance(content, dict) else []
    return [p for p in parts if isinstance(p, dict) and isinstance(p.get(key), dict)]


def is_function_content(content: Any) -> bool:
    """A user content answering calls (every part a functionResponse)."""
    parts = content.get("parts") or [] if isinstance(content, dict) else []
    return bool(parts) and len(_function_parts(content, "functionResponse")) == len(parts)


def contents_problem(contents: list[Any]) -> str | None:
    """Why the API would refuse these contents' function rounds (a lost signature, an unanswered call)."""
    for i, content in enumerate(contents):
        calls = _function_parts(content, "functionCall")
        if not calls:
            continue
        first = calls[0]
        if first.get("thoughtSignature") != signature(str(first["functionCall"].get("id"))):
            return MISSING_SIGNATURE
        answered = _function_parts(contents[i + 1], "functionResponse") if i + 1 < len(contents) else None
        if answered is None:
            continue  # the request ends with the model's calls: nothing to answer yet
        asked = [(c["functionCall"].get("id"), c["functionCall"].get("name")) for c in calls]
        given = [(r["functionResponse"].get("id"), r["functionResponse"].get("name")) for r in answered]
        if asked != given:
            return f"The function response parts must match the function call parts: {asked} != {given}. (stub)"
    return None


def contents_results(contents: list[Any]) -> list[dict[str, Any]]:
    """The function responses of the request's last content, as the record keeps them."""
    last = contents[-1] if contents else None
    if not is_function_content(last):
        return []
    out = []
    for part in _function_parts(last, "functionResponse"):
        r = part["functionResponse"]
        out.append(
            {
                "id": r.get("id"),
                "name": r.get("name"),
                "response": r.get("response"),
                "images": len(r.get("parts") or []),
            }
        )
    return out


def interaction_declared(body: dict[str, Any]) -> list[str]:
    return [str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict) and t.get("type") == "function"]


def interaction_calling_off(body: dict[str, Any]) -> bool:
    return (body.get("generation_config") or {}).get("tool_choice") == "none"


def interaction_results(value: Any) -> list[dict[str, Any]]:
    """The function_result inputs of an interaction, as the record keeps them."""
    out = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, dict) and item.get("type") == "function_result":
            result = item.get("result")
            text = (
                result
                if isinstance(result, str)
                else "".join(r.get("text", "") for r in result or [] if isinstance(r, dict) and r.get("type") == "text")
            )
            images = 0 if isinstance(result, str) else sum(1 for r in result or [] if r.get("type") == "image")
            try:
                response = json.loads(text)
            except ValueError:
                response = text
            out.append({"id": item.get("call_id"), "name": item.get("name"), "response": response, "images": images})
    return out


def read_note(results: list[dict[str, Any]]) -> str:
    """What the final answer says it read: each result by name, whole, unchanged or an error."""
    if not results:
        return ""
    said = []
    for r in results:
        response = r["response"] if isinstance(r["response"], dict) else {}
        how = "unchanged" if response.get("unchanged") else "error" if "error" in response else "whole"
        said.append(f"{r['name']} ({how})")
    return "\n\nFunction results read: " + ", ".join(said) + "."


# -- answering ---------------------------------------------------------------------------------
def contents_parts(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The model's parts calling ``calls``: the first with its thought signature."""
    parts = []
    for i, call in enumerate(calls):
        part: dict[str, Any] = {"functionCall": call}
        if i == 0:
            part["thoughtSignature"] = signature(call["id"])
        parts.append(part)
    return parts


def interaction_steps(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "function_call", "id": c["id"], "name": c["name"], "arguments": c["args"]} for c in calls]
