"""The agent's four functions (``%%gemini_agent``): their declarations, the checks of a call, the
changes a turn made (for Undo and the fallback proposal) and the line each step shows.

Pure: the functions act on the notebook through the frontend (``frontends/agent_actions.py``);
here is only what a call means. They are offered beside the six read-only ones (engine/tools.py),
by the agent magic only; their wire shapes are the read-only ones' (docs/protocol.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import messages
from .cells import Cell, CellType, cell_type_of
from .edits import Edits, apply_edits, parse_edits
from .outputs import SHOWED_NOTHING
from .payloads import EDIT_RESPONSE_SCHEMA
from .text import counted, first_line_of
from .tools import ACTS_ON, ToolResult, argument_problem, frozen, thawed

AGENT_FUNCTIONS = tuple(ACTS_ON)  # insert_cell, edit_cell, delete_cell, run_cell, in this order
TOP = "top"  # insert_cell's ``after`` for the first place in the notebook
RAN_START_CHARS = 60  # of a run's first printed line (and its error's last), in its step line
MAX_AGENT_STEPS = 20  # calls an agent turn answers at most, by default (GeminiMagics.max_agent_steps)

# read with every request of an agent turn, as engine/tools.py's are: each word says what a call needs
_REF = {
    "type": "string",
    "description": "a cell: execution count (5 or In[5]), id (insert_cell's too) or id prefix, or -1 (latest run)",
}
_DECLARATIONS: dict[str, dict[str, Any]] = {
    "insert_cell": {
        "description": "Insert a cell below another; returns its id (for later calls) and label.",
        "parameters": {
            "type": "object",
            "properties": {
                "after": {"type": "string", "description": f'the cell above (a ref), or "{TOP}"'},
                "source": {"type": "string"},
                "cell_type": {"type": "string", "enum": ["code", "markdown", "raw"], "description": "default code"},
            },
            "required": ["after", "source"],
        },
    },
    "edit_cell": {
        "description": "Change a cell's text by find/replace pairs in order; each find must occur exactly once "
        "in the text the edits before it left (else nothing is written).",
        "parameters": {
            "type": "object",
            "properties": {
                "ref": _REF,
                "edits": EDIT_RESPONSE_SCHEMA["properties"]["edits"],  # as an edit answer's (copied per call)
            },
            "required": ["ref", "edits"],
        },
    },
    "delete_cell": {
        "description": "Delete a cell.",
        "parameters": {"type": "object", "properties": {"ref": _REF}, "required": ["ref"]},
    },
    "run_cell": {
        "description": "Run a code cell as Shift+Enter would (once the user approves); returns what it showed: "
        "text, its error with the traceback trimmed, images.",
        "parameters": {"type": "object", "properties": {"ref": _REF}, "required": ["ref"]},
    },
}
_ARGUMENTS = {name: tuple(d["parameters"]["properties"]) for name, d in _DECLARATIONS.items()}
_FROZEN = frozen(_DECLARATIONS)

# What the system instruction adds when the agent's functions are offered.
AGENT_INSTRUCTION = (
    "In this turn you may also act on the notebook: insert_cell, edit_cell, delete_cell and run_cell. "
    "Do what the user asked, no more: run a cell to check your work, read its result, fix and run again "
    "until it works, then answer with what you did. Never touch the cell that asked you."
)


def agent_declarations(enabled: Iterable[str]) -> list[dict[str, Any]]:
    """The agent functions' declarations among ``enabled``, in ``AGENT_FUNCTIONS`` order (new dicts each time)."""
    return thawed(_FROZEN, AGENT_FUNCTIONS, enabled)


def bad_agent_call(call: Any) -> str | None:
    """Why an agent call cannot be carried out as sent (its arguments), as the model reads it; None: it can."""
    name, args = call.name, call.args
    strings = [w for w in _DECLARATIONS[name]["parameters"]["required"] if w != "edits"]
    why = argument_problem(name, args, _ARGUMENTS[name], strings)
    if why is not None:
        return why
    if name == "insert_cell" and args.get("cell_type", "code") not in ("code", "markdown", "raw"):
        return "insert_cell: 'cell_type' must be code, markdown or raw"
    if name == "edit_cell" and not parse_edits(args.get("edits")):
        return "edit_cell: 'edits' must be a non-empty list of {find, replace} strings"
    return None


def inserted_type(args: dict[str, Any]) -> CellType:
    return cell_type_of(args.get("cell_type", "code"))


def edited(source: str, args: dict[str, Any]) -> str:
    """The cell's text with the call's edits applied strictly (engine/edits.py); a ``ValueError`` saying
    which edit refused (nothing is written then)."""
    edits: Edits = parse_edits(args["edits"]) or ()
    out = apply_edits(source, edits)
    if isinstance(out, str):
        return out
    raise ValueError(messages.AGENT_EDIT_REFUSED.render(why=out.describe()))


# -- what a turn changed (Undo reads it; without a live notebook it is the turn's proposal) ----------
@dataclass(frozen=True)
class Inserted:
    cell_id: str
    source: str = ""
    cell_type: CellType = "code"
    after_id: str | None = None  # None: at the top


@dataclass(frozen=True)
class Edited:
    cell_id: str
    before: str
    after: str


@dataclass(frozen=True)
class Deleted:
    cell: dict[str, Any]  # nbformat JSON as the frontend held it (outputs included, where it says)
    after_id: str | None  # the cell it was below (None: the top)
    above: tuple[str, ...] = ()  # every cell above it then, top first (its old index is their count)


def put_back_after(change: Deleted, ids: Sequence[str]) -> str | None:
    """Where Undo puts a deleted cell back in a notebook of ``ids`` (None: the top): below the nearest cell that
    was above it and is still there (the one it followed may be gone: deleted by hand, or by a later turn),
    else at its old index."""
    above = change.above or (() if change.after_id is None else (change.after_id,))
    present = set(ids)
    nearest = next((cell_id for cell_id in reversed(above) if cell_id in present), None)
    if nearest is not None:
        return nearest
    at = min(len(above), len(ids))
    return ids[at - 1] if at else None


Change = Inserted | Edited | Deleted


@dataclass
class TurnChanges:
    """The changes of one agent turn, in the order they were made."""

    items: list[Change] = field(default_factory=list)

    def add(self, change: Change) -> None:
        self.items.append(change)

    def replace(self, old: Change, new: Change) -> None:
        """``new`` where ``old`` was (a deleted cell as the frontend's reply gave it)."""
        self.items[self.items.index(old)] = new

    def __bool__(self) -> bool:
        return bool(self.items)

    def applied(self, cells: Sequence[Cell]) -> list[Cell]:
        """``cells`` with the turn's changes made, in order: the notebook as the turn left it (a change the
        cells hold already, from a newer snapshot, is made once)."""
        out = list(cells)
        for change in self.items:
            ids = [c.id for c in out]
            if isinstance(change, Inserted):
                if change.cell_id in ids:
                    continue
                at = ids.index(change.after_id) + 1 if change.after_id in ids else 0
                out.insert(at, Cell(change.cell_id, change.source, change.cell_type))
            elif isinstance(change, Edited):
                if change.cell_id in ids:
                    old = out[ids.index(change.cell_id)]
                    out[ids.index(change.cell_id)] = Cell(old.id, change.after, old.cell_type, old.execution_count)
            elif change.cell.get("id") in ids:
                out.pop(ids.index(change.cell["id"]))
        return out


# -- the line each step shows in the agent cell, live and replayed -----------------------------------
def step_line(result: ToolResult) -> str:
    """A carried-out agent call's line (an error result's is the read-only calls' ``TOOL_FAILED``); a cell is
    named by the response's ``label``, the one name the turn gives it (an older record's insert: its id)."""
    call, response = result.call, result.response
    if result.status == "error":
        return messages.TOOL_FAILED.render(call=call.label, error=response["error"])
    label = str(response.get("label") or response.get("id") or "")
    if call.name == "insert_cell":
        lines = counted(len(str(call.args.get("source", "")).splitlines()), "line")
        return messages.AGENT_INSERTED.render(label=label, after=response.get("after", ""), lines=lines)
    if call.name == "edit_cell":
        return messages.AGENT_EDITED.render(label=label, count=counted(len(call.args.get("edits", [])), "edit"))
    if call.name == "delete_cell":
        removed = messages.AGENT_REMOVED_OWN if response.get("inserted_this_turn") else messages.AGENT_DELETED
        return removed.render(label=label)
    return ran_line(result)


def ran_line(result: ToolResult) -> str:
    """A run's line: the cell's name (and the count it ran as, where that is another name), the start of what it
    printed, its size, and the last line of the error it raised."""
    response = result.response
    ran = str(response.get("ran") or "")
    label = str(response.get("label") or ran)
    if ran and ran != label:
        label = f"{label} as {ran}"
    text = str(response.get("text") or "")
    start = first_line_of(text, RAN_START_CHARS) if text != SHOWED_NOTHING else ""
    start = f'"{start}"' if start else messages.RAN_PRINTED_NOTHING.render()
    error = first_line_of("\n".join(reversed(str(response.get("error") or "").splitlines())), RAN_START_CHARS)
    if error:
        return messages.AGENT_RAN_RAISED.render(label=label, start=start, chars=result.chars, error=error)
    return messages.AGENT_RAN.render(label=label, start=start, chars=result.chars)


def wrote(rounds: Iterable[Any]) -> bool:
    """Whether an agent turn's calls changed a cell (an insert, edit or delete carried out)."""
    return any(r.call.name != "run_cell" and r.status != "error" for r in agent_results(rounds))


def agent_results(rounds: Iterable[Any]) -> list[ToolResult]:
    """The agent calls' results of a turn's rounds, in order (a replay shows their lines)."""
    return [r for round_ in rounds for r in round_.results if r.call.name in AGENT_FUNCTIONS]
