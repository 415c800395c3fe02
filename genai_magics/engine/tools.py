"""The read-only functions the model may call, and the wire shapes of their calls and results.

Pure: the declarations (JSON-schema parameters, always in the same order, so the stable
head of a request never moves), the checks of a call's arguments, the "sent once" rule
and the shapes a call and its result take in both state modes (docs/protocol.md). The
functions themselves read the kernel (``sources/tools.py``).

Each result is made of context pieces with their hashes, the same pieces ``--vars``,
``--outputs`` and ``--error`` send (``inspect_variable(df)`` is the piece ``variables:df``),
so the one rule covers both: a piece the model holds unchanged is answered with a short
``{"unchanged": true, ...}``, a changed one goes whole, and a ``--vars df`` after
``inspect_variable(df)`` sends nothing new.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .context import ContextPiece, LabelledPiece
from .hashing import sha256_text, short
from .outputs import ImagePiece, images_of, inline_parts, interaction_inputs, payload_entry
from .redaction import redact, redact_json
from .text import clip

TOOL_NAMES = ("list_variables", "inspect_variable", "read_cell", "cell_outputs", "last_error", "search_cells")
MAX_TOOL_CALLS = 8  # per turn, by default (GeminiMagics.max_tool_calls)
RESULT_CHARS = 20_000  # a result's text, after masking
UNCHANGED_CHARS = 300  # an "unchanged" result is shorter than this
CALL_SECONDS = 5.0  # a call's bound in time (sources/bounds.py): past it, an error result

# Every word below is read (and billed) by every request that offers the functions, at full price until the head
# is cached (docs/token-economy.md, "The head, weighed"): each says what the model needs to call it right, once.
_REF = {"type": "string", "description": "a cell: execution count (5 or In[5]), id or id prefix, or -1 (latest run)"}
_DECLARATIONS: dict[str, dict[str, Any]] = {
    "list_variables": {
        "description": "The user's variables: name, type, shape or length, size.",
        "parameters": {"type": "object", "properties": {}},
    },
    "inspect_variable": {
        "description": "One variable summarized: type, shape, columns and dtypes, head.",
        "parameters": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    },
    "read_cell": {
        "description": "A cell's source and label.",
        "parameters": {"type": "object", "properties": {"ref": _REF}, "required": ["ref"]},
    },
    "cell_outputs": {
        "description": "What a cell showed: text, images as image parts.",
        "parameters": {"type": "object", "properties": {"ref": _REF}, "required": ["ref"]},
    },
    "last_error": {
        "description": "The last exception the user saw, traceback trimmed to notebook cells.",
        "parameters": {"type": "object", "properties": {}},
    },
    "search_cells": {
        "description": "Cells whose source matches pattern (case-insensitive; a regular expression if it "
        "compiles, else text): label and matching lines.",
        "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]},
    },
}
# The one argument each function takes (None: none), for the checks and the line in the cell.
ARGUMENT = {name: next(iter(d["parameters"].get("required", [])), None) for name, d in _DECLARATIONS.items()}
# The argument naming the cell each of the agent's functions acts on (engine/agent.py declares them), for
# the line in the cell: ``edit_cell(c-9f2)``, and ``insert_cell(after=c1)`` (the new cell goes after it).
ACTS_ON = {"insert_cell": "after", "edit_cell": "ref", "delete_cell": "ref", "run_cell": "ref"}

# What the system instruction adds when functions are offered.
FETCHED_LINE = "fetched: "  # starts the last line of an earlier question whose results faded
TOOLS_INSTRUCTION = (
    'The functions offered read the notebook. A result you hold that did not change comes back as {"unchanged": '
    "true, ...}: use your copy. Answer once you know enough."
)
# an earlier question whose results faded (contents mode), or in a new interactions chain's "earlierTurns"
FADED_INSTRUCTION = f'Plain-text questions end "{FETCHED_LINE}<calls fetching again what they read>".'


def frozen(table: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Each declaration of ``table`` with its name, as JSON text: ``thawed`` makes new dicts of it."""
    return {name: json.dumps({"name": name, **d}) for name, d in table.items()}


def thawed(table: Mapping[str, str], order: Sequence[str], enabled: Iterable[str]) -> list[dict[str, Any]]:
    """The declarations of the enabled names in ``order``: new dicts each time (the SDK rewrites the schemas it
    is given in place; the settings' hash, a replay's identity, must not move). Parsing JSON is ~10x faster
    than ``copy.deepcopy``: each body the SDK takes, and each cache made, copies them."""
    chosen = set(enabled)
    return [json.loads(table[name]) for name in order if name in chosen]


_FROZEN = frozen(_DECLARATIONS)


def declarations(enabled: Iterable[str]) -> list[dict[str, Any]]:
    """The function declarations of the enabled names, always in ``TOOL_NAMES`` order, new dicts each time."""
    return thawed(_FROZEN, TOOL_NAMES, enabled)


def unknown_tools(names: Iterable[str]) -> list[str]:
    return [n for n in names if n not in TOOL_NAMES]


@dataclass(frozen=True)
class ToolCall:
    """One function call as the model sent it (``args`` may be anything: it is checked, not trusted), every
    API key in its arguments masked from the start: the call runs, is shown, recorded and sent back masked."""

    name: str
    args: Any
    id: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "args", redact_json(self.args))

    @property
    def argument(self) -> str:
        """The call's argument as the line in the cell shows it (``df`` of ``inspect_variable(df)``, the cell
        an agent function acts on)."""
        wanted = ARGUMENT.get(self.name) or ACTS_ON.get(self.name)
        value = self.args.get(wanted) if isinstance(self.args, dict) and wanted else None
        return clip(value, 60) if isinstance(value, str) else ""

    @property
    def label(self) -> str:
        """How the cell's lines name the call: ``inspect_variable(df)``, ``edit_cell(c-9f2)``,
        ``insert_cell(after=c1)``."""
        named = "after=" if ACTS_ON.get(self.name) == "after" and self.argument else ""
        return f"{clip(self.name, 60)}({named}{self.argument})"


def bad_call(call: ToolCall, offered: Sequence[str]) -> str | None:
    """Why the call cannot run (a function not offered, garbage arguments), as the model reads it; None: it can."""
    if call.name not in offered:
        return f"no function {call.name!r} is offered here; the functions are: {', '.join(offered) or 'none'}"
    argument = ARGUMENT[call.name]
    wanted = () if argument is None else (argument,)
    return argument_problem(call.name, call.args, wanted, wanted)


def argument_problem(name: str, args: Any, allowed: Iterable[str], strings: Iterable[str]) -> str | None:
    """What is wrong with a call's arguments as sent, as the model reads it: not a JSON object, one beyond
    ``allowed``, one of ``strings`` missing or not a string; None: nothing (engine/agent.py checks its four too)."""
    if not isinstance(args, dict):
        return f"{name}: the arguments must be a JSON object"
    extra = sorted(set(args) - set(allowed))
    if extra:
        return f"{name}: unexpected argument(s) {', '.join(map(str, extra))}"
    for wanted in strings:
        if not isinstance(args.get(wanted), str):
            return f"{name}: {wanted!r} is required and must be a string"
    return None


Status = Literal["whole", "unchanged", "error"]


@dataclass(frozen=True)
class ToolResult:
    """A call's answer: ``response`` is the JSON object the model gets (masked and capped)."""

    call: ToolCall
    response: dict[str, Any]
    status: Status
    pieces: tuple[ContextPiece, ...] = ()  # sent whole: the model holds them from now on
    # (key, sha256) of everything the call found, whether sent whole or not: the result is the
    # same result again (a replay) exactly when these are
    identity: tuple[tuple[str, str], ...] = ()

    @property
    def chars(self) -> int:
        return len(_json(self.response))

    @property
    def images(self) -> list[ImagePiece]:
        return images_of(self.pieces)


# compared and hashed by identity: it holds JSON (dicts) as the model sent it, never changed after; the
# record's memo keys a turn on its values
@dataclass(frozen=True, eq=False)
class ToolRound:
    """One request's calls and their results; ``model_content`` is the model's content exactly as
    received (contents mode: its parts, thought signatures included), None in interactions mode."""

    results: tuple[ToolResult, ...]
    model_content: dict[str, Any] | None = None

    def __post_init__(self) -> None:  # the calls in it masked as ToolCall masks them
        object.__setattr__(self, "model_content", redact_json(self.model_content))


@dataclass
class Holdings:
    """What the model holds while a turn runs: piece key -> (sha256, the turn that sent it)."""

    turn: int  # this turn's index
    held: dict[str, tuple[str, int]] = field(default_factory=dict)

    def answer(self, call: ToolCall, found: Sequence[ContextPiece]) -> ToolResult:
        """The result of a call that found ``found``: ``unchanged`` when the model holds every piece as it is."""
        identity = tuple((p.key, p.sha256) for p in found)
        sent = [self.held.get(p.key) for p in found]
        if found and all(s is not None and s[0] == p.sha256 for s, p in zip(sent, found, strict=True)):
            when = max(s[1] for s in sent if s is not None)
            return ToolResult(call, unchanged_response(found, when, self.turn), "unchanged", (), identity)
        for piece in found:
            self.held[piece.key] = (piece.sha256, self.turn)
        return ToolResult(call, whole_response(found), "whole", tuple(found), identity)


def holdings(
    turn: int, held: Mapping[str, str], sent_in: Mapping[str, int], pieces: Iterable[ContextPiece]
) -> Holdings:
    """The holdings at a turn's start: the hashes the model holds (``held``), the turn each was sent in,
    and the pieces this turn's own request carries."""
    out = Holdings(turn, {k: (sha, sent_in.get(k, 0)) for k, sha in held.items()})
    for piece in pieces:
        out.held[piece.key] = (piece.sha256, turn)
    return out


def sent_turns(history: Sequence[Any]) -> dict[str, int]:
    """piece key -> the latest turn whose request or tool results carried it whole."""
    when: dict[str, int] = {}
    for turn in history:
        for piece in (*turn.pieces, *tool_pieces(turn.tool_rounds)):
            when[piece.key] = turn.index
    return when


def tool_pieces(rounds: Iterable[ToolRound]) -> list[ContextPiece]:
    """The pieces a turn's tool results sent whole, in order."""
    return [p for r in rounds for res in r.results for p in res.pieces]


def error_result(call: ToolCall, message: str) -> ToolResult:
    text = clip(redact(message), UNCHANGED_CHARS - 20)
    return ToolResult(call, {"error": text}, "error", (), (("error", sha256_text(text)),))


def fetch_again(result: ToolResult) -> str:
    """The call that fetches a result again: a read-only call's own; an agent call (engine/agent.py) is never
    suggested again: what it left is read, a run's outputs by ``cell_outputs`` of its cell, a write's cell by
    ``read_cell`` (an insert's: the new cell's id)."""
    call = result.call
    if call.name not in ACTS_ON:
        return call.label
    cell = result.response.get("id") if call.name == "insert_cell" else call.argument
    reader = "cell_outputs" if call.name == "run_cell" else "read_cell"
    return f"{reader}({clip(str(cell or ''), 60)})"


def faded_result(result: ToolResult) -> ToolResult:
    """contents mode: a result of an earlier turn whose calls stay in the transcript (an agent turn's), which
    the model can fetch again: its hash and the call that fetches it (the requests of its own turn had it
    whole: the answer rests on it)."""
    marker = {"sha256": result.response.get("sha256", ""), "fetch again": fetch_again(result)}
    return ToolResult(result.call, marker, result.status, (), result.identity)


# Why a result is not in the request that answers its call (the request would pass the model's input limit).
LEFT_OUT = "left out: with this result the request passes your input limit; answer now with what you know"


def results_left_out(rounds: Sequence[ToolRound]) -> list[ToolRound] | None:
    """The rounds as one request carries them when their results would take it past the model's input limit:
    each result that carries something fetched (a cell, its outputs, a search's finds) a short error saying
    so and naming the call that fetches it again; a write's short result, the calls, and the model's
    content with its thought signatures, as they were. None when no result carries anything fetched (the
    request would be the same). The turn keeps its results whole."""
    if not any(r.status == "whole" and r.pieces for round_ in rounds for r in round_.results):
        return None
    return [
        ToolRound(
            tuple(
                ToolResult(r.call, {"error": LEFT_OUT, "fetch again": fetch_again(r)}, "error", (), r.identity)
                if r.status == "whole" and r.pieces
                else r
                for r in round_.results
            ),
            round_.model_content,
        )
        for round_ in rounds
    ]


def read_only(rounds: Iterable[ToolRound]) -> bool:
    """Every call of the rounds is one of the read-only functions (``TOOL_NAMES``): nothing in the notebook
    changed by them, so naming them is all an earlier turn needs to keep."""
    return all(r.call.name in TOOL_NAMES for round_ in rounds for r in round_.results)


def fetched(rounds: Iterable[ToolRound]) -> list[str]:
    """The calls that fetch again what the rounds returned whole (an error or ``unchanged`` result is not)."""
    return [fetch_again(r) for round_ in rounds for r in round_.results if r.pieces]


def faded_keys(history: Sequence[Any]) -> set[str]:
    """The pieces the contents-mode transcript no longer holds whole once its turns' results faded: those
    whose latest whole copy came in a function result (a piece a flag sent later stays held)."""
    fetched: dict[str, bool] = {}  # key -> its latest whole copy came in a function result
    for turn in history:
        for piece in turn.pieces:
            fetched[piece.key] = False
        for piece in tool_pieces(turn.tool_rounds):
            fetched[piece.key] = True
    return {key for key, by_result in fetched.items() if by_result}


def whole_response(found: Sequence[ContextPiece]) -> dict[str, Any]:
    """The text pieces' text (masked, then capped: a cut never leaves part of a key), the label of the cells
    it is about (shown, not hashed) and the images named."""
    texts = [p for p in found if not isinstance(p, ImagePiece)]
    text = "\n\n".join(p.text for p in texts)
    response: dict[str, Any] = {"sha256": short(sha256_text("".join(p.sha256 for p in found)))}
    labels = [p.label for p in texts if isinstance(p, LabelledPiece) and p.label]
    if labels:
        response["label"] = labels[0]
    response["text"] = clip(redact(text), RESULT_CHARS)
    images = [payload_entry(p) for p in found if isinstance(p, ImagePiece)]
    if images:
        response["images"] = images
    return response


def unchanged_response(found: Sequence[ContextPiece], when: int, turn: int) -> dict[str, Any]:
    sent = "earlier in this turn" if when == turn else f"in turn {when}" if when else "earlier"
    return {
        "unchanged": True,
        "sha256": short(sha256_text("".join(p.sha256 for p in found))),
        "sent": sent,
        "note": "you hold this result already and it did not change",
    }


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def result_text(result: ToolResult) -> str:
    """The result as one JSON text (what the interactions ``function_result`` carries as text)."""
    return _json(result.response)


# -- the wire ----------------------------------------------------------------------------------
def contents_response_part(result: ToolResult) -> dict[str, Any]:
    """contents mode: a ``functionResponse`` part, same id and name as the call; images as its inline-data parts."""
    response: dict[str, Any] = {"name": result.call.name, "response": result.response}
    if result.call.id:
        response["id"] = result.call.id
    images = inline_parts(result.pieces)
    if images:
        response["parts"] = images
    return {"functionResponse": response}


def contents_round(round_: ToolRound) -> list[dict[str, Any]]:
    """contents mode: the model's content as received, then one user content answering every call."""
    model = round_.model_content or {"role": "model", "parts": []}
    return [model, {"role": "user", "parts": [contents_response_part(r) for r in round_.results]}]


def interaction_result(result: ToolResult) -> dict[str, Any]:
    """interactions mode: a ``function_result`` input (call_id, name); with images, the text then image items."""
    images = interaction_inputs(result.pieces)
    value: str | list[dict[str, Any]] = (
        [{"type": "text", "text": result_text(result)}, *images] if images else result_text(result)
    )
    step: dict[str, Any] = {"type": "function_result", "call_id": result.call.id or "", "name": result.call.name}
    step["result"] = value
    if result.status == "error":
        step["is_error"] = True
    return step


# -- the record ----------------------------------------------------------------------------------
def round_to_dict(round_: ToolRound, piece_dict: Any) -> dict[str, Any]:
    """One round as the record keeps it; ``piece_dict`` writes a piece as the record writes every piece."""
    return {
        "model_content": round_.model_content,
        "results": [
            {
                "id": r.call.id,
                "name": r.call.name,
                "args": r.call.args,
                "response": r.response,
                "status": r.status,
                "pieces": [piece_dict(p) for p in r.pieces],
                "identity": [list(i) for i in r.identity],
            }
            for r in round_.results
        ],
    }


def round_from_dict(d: Mapping[str, Any], piece: Any) -> ToolRound:
    return ToolRound(
        tuple(
            ToolResult(
                ToolCall(r["name"], r["args"], r.get("id")),
                r["response"],
                r["status"],
                tuple(piece(p) for p in r["pieces"]),
                tuple((k, s) for k, s in r["identity"]),
            )
            for r in d["results"]
        ),
        d.get("model_content"),
    )
