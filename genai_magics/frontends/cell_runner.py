"""The agent's ``run_cell``: a cell's code run by the kernel, as if the user pressed Shift+Enter in it.

The kernel runs it itself, on the main thread, inside the running agent cell (a frontend asked to
execute the cell would queue it behind the agent cell: a deadlock). ``shell.run_cell(source,
store_history=True, cell_id=…)`` gives it the next execution count and announces it to the
``pre_run_cell`` hooks as the target cell's run, so the kernel's bookkeeping (the executed cells,
the captured outputs that ``cell_outputs`` reads) files it under that cell. What it shows goes out
through ipykernel's ``session.send`` with the agent cell's parent header: for the duration of the
run every output message of that parent is taken off the wire (wrapping ``send`` on the session
objects), turned into nbformat v4 outputs and set on the target cell through the live notebook
(``set_outputs``); none reaches the agent cell. A cell with top-level ``await`` cannot run inside a
running cell: the model gets an error result.

Approval (``agent_approve``): ``"runs"`` makes every run wait for the user's click (Run, Run all,
Stop), ``"all"`` every write too (``approve_write``), ``"none"`` nothing. What was approved lives in
:class:`Approvals`, set by the widget's clicks only: nothing the model sends or a cell shows reaches
it. A wait happens only where the kernel lets a running cell see a click (an awaited cell on
ipykernel >= 7.4, or jupyter-ui-poll); elsewhere a run needing approval is an error result the model
reads, never a hang. Stop raises KeyboardInterrupt: the turn ends as for the stop button.

The agent cell keeps its own execution count (:class:`OwnCount`): ipykernel numbers a cell's
execute_reply ``shell.execution_count - 1`` once the cell has ended, which after the runs is the last
run's count, and JupyterLab shows the reply's.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from .. import messages
from ..engine.agent import Change, Edited, Inserted, TurnChanges
from ..engine.cells import Cell
from ..engine.context import ContextPiece
from ..engine.outputs import MAX_CELL_CHARS
from ..engine.redaction import redact
from ..engine.text import counted, cut
from ..engine.tools import ToolCall, ToolResult, error_result, whole_response
from . import kernel_compat, waiting
from .code_check import CodeCheck
from .live_notebook import LiveNotebook
from .notebook_view import ExecutedCells
from .waiting import Mechanism

RunCell = Callable[[Cell, str], "Awaitable[ToolResult] | ToolResult"]
# (what the write does, the text it writes or its diff, the risks of the code it writes) -> approved
ApproveWrite = Callable[[str, str, "tuple[str, ...]"], "Awaitable[bool] | bool"]
Approve = Literal["runs", "all", "none"]
APPROVE_MODES: tuple[Approve, ...] = ("runs", "all", "none")
Choice = Literal["once", "all", "stop", "unanswered", "ended"]  # ended: the turn ended while it waited
Kind = Literal["run", "write"]
# the iopub messages a cell's output area is made of; everything else (status, comms) passes through
OUTPUT_TYPES = ("stream", "display_data", "execute_result", "error", "clear_output", "update_display_data")
SHOWN_CHARS = 20_000  # of the code (or a write's text) an approval shows, scrolled; the risk line reads it all
REPLY_TIMEOUT_S = 30.0  # the frontend's reply to set_outputs; the bridge's own timeout answers before it
MAX_RUN_OUTPUTS = 5_000  # outputs an agent's run sets on its cell: far past a screen, bounded for the one message


# -- iopub messages -> nbformat v4 outputs ---------------------------------------------------------
@dataclass
class CellOutputs:
    """A cell's output area built from its iopub messages as a frontend builds it: streams merged,
    ``clear_output(wait=True)`` deferred to the next output, display updates applied in place.

    Every output is kept, as a user's run keeps it, up to ``MAX_RUN_OUTPUTS`` outputs and ``MAX_CELL_CHARS``
    characters a stream (a bound for the message that carries them): past it, the cell says what it left out
    where it left it out, and an error is kept whatever came before it."""

    outputs: list[dict[str, Any]] = field(default_factory=list)
    _clear_pending: bool = False
    _left_out: dict[str, Any] | None = None  # the note standing where outputs were left out (its count)

    def add(self, msg_type: str, content: dict[str, Any]) -> bool:
        """Take one message's content; False for an update of a display this cell does not hold (it
        belongs to another cell's output: let it through to the frontend)."""
        if msg_type == "update_display_data":
            display_id = (content.get("transient") or {}).get("display_id")
            found = [o for o in self.outputs if o.get("_display_id") == display_id]
            for shown in found:
                shown.update(data=dict(content.get("data") or {}), metadata=dict(content.get("metadata") or {}))
            return bool(found) or display_id is None
        if msg_type == "clear_output":
            if content.get("wait"):
                self._clear_pending = True
            else:
                self._clear()
            return True
        if self._clear_pending:
            self._clear()
            self._clear_pending = False
        if msg_type == "stream":
            name, text = content.get("name", "stdout"), str(content.get("text", ""))
            last = self.outputs[-1] if self.outputs else None
            merges = last is not None and last is not self._left_out and last["output_type"] == "stream"
            if merges and last is not None and last["name"] == name:
                _extend_stream(last, text)
                return True
            stream: dict[str, Any] = {"output_type": "stream", "name": name, "text": ""}
            _extend_stream(stream, text)
            self._append(stream)
        elif msg_type == "error":
            self._append(
                {
                    "output_type": "error",
                    "ename": str(content.get("ename", "")),
                    "evalue": str(content.get("evalue", "")),
                    "traceback": [str(line) for line in content.get("traceback") or []],
                }
            )
        elif msg_type in ("display_data", "execute_result"):
            out: dict[str, Any] = {
                "output_type": msg_type,
                "data": dict(content.get("data") or {}),
                "metadata": dict(content.get("metadata") or {}),
            }
            if msg_type == "execute_result":
                out["execution_count"] = content.get("execution_count")
            display_id = (content.get("transient") or {}).get("display_id")
            if display_id is not None:
                out["_display_id"] = display_id
            self._append(out)
        return True

    def _clear(self) -> None:
        self.outputs.clear()
        self._left_out = None  # a cleared area holds no note: the bound counts afresh

    def _append(self, out: dict[str, Any]) -> None:
        if len(self.outputs) < MAX_RUN_OUTPUTS or out["output_type"] == "error":
            self.outputs.append(out)
        elif self._left_out is None:
            self._left_out = {"output_type": "stream", "name": "stderr", "text": "", "_count": 1}
            self.outputs.append(self._left_out)
        else:
            self._left_out["_count"] += 1

    def nbformat(self) -> list[dict[str, Any]]:
        """The outputs as nbformat v4 dicts (the display ids, which nbformat has no field for, left out); what
        was left out said in place."""
        shown = []
        for out in self.outputs:
            kept = {k: v for k, v in out.items() if not k.startswith("_")}
            if out is self._left_out:
                kept["text"] = messages.RUN_OUTPUTS_LEFT_OUT.render(
                    count=counted(out["_count"], "output"), kept=MAX_RUN_OUTPUTS
                )
            elif out.get("_cut"):
                kept["text"] += messages.RUN_CHARS_LEFT_OUT.render(count=counted(out["_cut"], "character"))
            shown.append(kept)
        return shown


def _extend_stream(out: dict[str, Any], text: str) -> None:
    """``text`` added to a stream output, up to ``MAX_CELL_CHARS``; what does not fit is counted (``_cut``)."""
    room = MAX_CELL_CHARS - len(out["text"])
    if len(text) > room:
        out["_cut"] = out.get("_cut", 0) + len(text) - max(room, 0)
        text = cut(text, max(room, 0))
    out["text"] += text


def _message_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(msg_type, content, parent header) of a ``Session.send(stream, msg_or_type, content, parent, …)`` call."""
    msg = args[1] if len(args) > 1 else kwargs.get("msg_or_type")
    if isinstance(msg, dict):
        return str(msg.get("header", {}).get("msg_type", "")), msg.get("content") or {}, msg.get("parent_header") or {}
    content = args[2] if len(args) > 2 else kwargs.get("content")
    parent = args[3] if len(args) > 3 else kwargs.get("parent")
    return str(msg), content if isinstance(content, dict) else {}, parent if isinstance(parent, dict) else {}


def _sessions(shell: Any) -> list[Any]:
    """Every jupyter_client Session the kernel's output doors send through (one, in ipykernel)."""
    holders = (
        getattr(shell, "kernel", None),
        getattr(shell, "display_pub", None),
        getattr(shell, "displayhook", None),
        sys.stdout,
        sys.stderr,
    )
    found: list[Any] = []
    for holder in holders:
        session = getattr(holder, "session", None)
        if session is not None and callable(getattr(session, "send", None)) and all(s is not session for s in found):
            found.append(session)
    return found


@contextmanager
def captured_outputs(shell: Any, parent_id: str | None, into: CellOutputs) -> Iterator[None]:
    """While inside: every output message of the request ``parent_id`` goes into ``into`` and not out.

    The streams are flushed on the way in (what the agent cell printed before stays the agent cell's)
    and on the way out (what the run printed is the run's): ipykernel sends them from its IO thread.
    """
    _flush()
    sessions = _sessions(shell)
    for session in sessions:
        send = session.send

        def tap(*args: Any, _send: Any = send, **kwargs: Any) -> Any:
            msg_type, content, parent = _message_of(args, kwargs)
            if msg_type in OUTPUT_TYPES and parent.get("msg_id") == parent_id and into.add(msg_type, content):
                return None
            return _send(*args, **kwargs)

        session.send = tap
    try:
        yield
    finally:
        try:
            _flush()
        finally:
            for session in sessions:
                session.__dict__.pop("send", None)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed or odd stream: nothing to keep apart
            pass


@contextmanager
def taken_payloads(shell: Any, into: list[dict[str, Any]]) -> Iterator[None]:
    """While inside: the payloads a run writes (``%load``'s set_next_input, the pager of ``obj?``) go into ``into``,
    not into the agent cell's execute_reply (where ``%load`` would replace the agent cell's text)."""
    manager = getattr(shell, "payload_manager", None)
    if manager is None:
        yield
        return
    before = list(manager.read_payload())
    try:
        yield
    finally:
        into.extend(p for p in manager.read_payload() if all(p is not kept for kept in before))
        manager.clear_payload()
        for kept in before:
            manager.write_payload(kept, single=False)


# -- approval ---------------------------------------------------------------------------------------
@dataclass
class Asked:
    """One run or write waiting for the user: what the widget shows, and the click that answers it."""

    kind: Kind
    label: str  # the cell's label (a run) or what the write does
    lines: str  # what it approves: the cell's code, an insert's text, an edit's diff (key masked)
    risks: tuple[str, ...] = ()  # what the code does that deserves a second look (engine/code_risks.py)
    choice: Choice | None = None
    listeners: list[Callable[[Asked], None]] = field(default_factory=list)

    def choose(self, choice: Choice) -> None:
        """A click (or the wait running out); the first answer stands."""
        if self.choice is not None:
            return
        self.choice = choice
        for listener in list(self.listeners):
            listener(self)


@dataclass
class Approvals:
    """One agent turn's approvals. Set only by clicks on the kernel's own widget (``Asked.choose``):
    the model's arguments and what cells show never reach it."""

    mode: Approve = "runs"
    runs_approved: bool = False  # Run all: the rest of this turn's runs
    writes_approved: bool = False  # Write all ("all" mode): the rest of this turn's writes
    asked: list[Asked] = field(default_factory=list)

    def needed(self, kind: Kind) -> bool:
        if kind == "run":
            return self.mode in ("runs", "all") and not self.runs_approved
        return self.mode == "all" and not self.writes_approved

    def ask(self, kind: Kind, label: str, source: str, risks: tuple[str, ...] = ()) -> Asked:
        more = len(source) - SHOWN_CHARS
        shown = source[:SHOWN_CHARS] + (f"\n… {more:,} more characters" if more > 0 else "")
        asked = Asked(kind, label, redact(shown), risks)
        asked.listeners.append(self._answered)
        self.asked.append(asked)
        return asked

    def end(self) -> None:
        """The turn ended (answered, stopped, interrupted, failed): an approval still waiting was not given, and
        no later click can give it (the first answer stands)."""
        for asked in self.asked:
            asked.choose("ended")

    def _answered(self, asked: Asked) -> None:
        if asked.choice == "all":
            if asked.kind == "run":
                self.runs_approved = True
            else:
                self.writes_approved = True


ShowAsked = Callable[[Asked], None]  # puts the widget of an Asked into the agent cell (ui/approval.py)


def approval_wait(awaited: bool) -> Mechanism | None:
    """How this agent cell can wait for a click: ``async`` only when the magic's value is awaited."""
    how = waiting.mechanism()
    if how == "async":
        return "async" if awaited else None
    return how


def _decided(asked: Asked) -> bool:
    """Go on (True), refuse (False), or end the turn (KeyboardInterrupt: Stop)."""
    if asked.choice == "stop":
        raise KeyboardInterrupt
    return asked.choice in ("once", "all")


def _waited(
    approvals: Approvals,
    show: ShowAsked,
    how: Mechanism | None,
    timeout_s: float,
    asked_for: tuple[Kind, str, str, tuple[str, ...]],
) -> bool | Awaitable[bool] | None:
    """True: go on now; an awaitable: the click decides; None: approval needed but cannot be waited for.
    ``asked_for``: what ``Approvals.ask`` shows."""
    if not approvals.needed(asked_for[0]):
        return True
    if how is None:
        return None
    asked = approvals.ask(*asked_for)
    show(asked)
    if how == "poll":
        if not waiting.wait_poll(lambda: asked.choice is not None, timeout_s):
            asked.choose("unanswered")
        return _decided(asked)

    async def clicked() -> bool:
        if not await waiting.wait_async(lambda: asked.choice is not None, timeout_s):
            asked.choose("unanswered")
        return _decided(asked)

    return clicked()


def make_approve_write(approvals: Approvals, show: ShowAsked, how: Mechanism | None, timeout_s: float) -> ApproveWrite:
    """The hook the agent's writes call first (``"all"`` mode): True to write, False to refuse (the model gets an
    error result), or an awaitable of that; Stop raises KeyboardInterrupt."""

    def approve_write(description: str, shown: str, risks: tuple[str, ...]) -> Awaitable[bool] | bool:
        decided = _waited(approvals, show, how, timeout_s, ("write", description, shown, risks))
        return False if decided is None else decided

    return approve_write


# -- the run ----------------------------------------------------------------------------------------
class Capture(Protocol):
    """The kernel's capture of what each cell showed (sources/outputs.py's ``OutputCapture``)."""

    current: str | None  # the cell whose outputs it notes now
    request: str | None  # the request its outputs go out with


Shown = Callable[[str, str], Sequence[ContextPiece]]  # (cell id, label) -> what cell_outputs gives of it
LastError = Callable[[], "str | None"]  # the last exception's trimmed traceback, as the model reads it


class OwnCount:
    """The agent cell's own count in its execute_reply. IPython numbers each run after the agent cell's (counts
    own+1, own+2, ...); when the agent cell itself ends (its ``post_run_cell``, after every count was taken and
    right before ipykernel computes the reply), the counter is set just past the agent cell's count, and set back
    on the kernel's loop, which runs that before it reads the next request: the next cell counts on after the
    last run. Without a loop to set it back on, it is set back at once (the reply keeps the last run's count)."""

    def __init__(self, shell: Any):
        self.shell = shell
        self.own = shell.execution_count - 1  # the agent cell's, taken before its first run
        self.running = False  # a run of the agent's is going on: its post_run_cell is not the agent cell's end
        shell.events.register("post_run_cell", self._ended)

    def _ended(self, result: Any) -> None:
        if self.running:
            return
        self.shell.events.unregister("post_run_cell", self._ended)
        if getattr(result, "execution_count", None) != self.own:  # not stored in the history: no count of its own
            return
        after = self.shell.execution_count
        self.shell.execution_count = self.own + 1
        kernel_compat.call_soon(self.shell, setattr, self.shell, "execution_count", after)


@dataclass(frozen=True)
class Ran:
    """One run of a cell's code: its count, the error it raised (its outputs went to the cell)."""

    execution_count: int | None
    error: str | None  # the trimmed traceback the model reads
    interrupted: bool
    next_input: str | None = None  # what the run's set_next_input (``%load``) did to the notebook


@dataclass
class CellRunner:
    """Runs cells for one agent turn (kernel/agent_run.py's ``turn_run_cell`` builds it for the shell; called, it is
    the turn's ``RunCell``)."""

    shell: Any
    notebook: LiveNotebook | None
    executed: ExecutedCells
    capture: Capture
    shown: Shown
    last_error: LastError
    approvals: Approvals
    show: ShowAsked
    wait: Mechanism | None
    timeout_s: float
    ran: list[str] = field(default_factory=list)  # the labels of the cells run this turn (Undo names them)
    own_count: OwnCount | None = None  # from the turn's first run on
    check: CodeCheck = field(default_factory=CodeCheck)  # the risk line of a run's approval
    while_running: Callable[[bool], None] = lambda _now: None  # told when a run starts (True) and ends
    changes: TurnChanges | None = None  # the turn's changes: a run's set_next_input is one of them (Undo)

    def __call__(self, cell: Cell, label: str) -> Awaitable[ToolResult] | ToolResult:
        """The ``RunCell``: the cell run (after its approval) and what the model reads; an error result when it
        cannot be (the agent's actions put their call on it)."""
        call = ToolCall("run_cell", {"ref": cell.id})
        why = self._cannot_run(cell)
        if why is not None:
            return error_result(call, why)
        asked_for: tuple[Kind, str, str, tuple[str, ...]] = ("run", label, cell.source, self.check.risks(cell.source))
        decided = _waited(self.approvals, self.show, self.wait, self.timeout_s, asked_for)
        if decided is None:
            return error_result(call, messages.AGENT_CANNOT_WAIT.render())
        if isinstance(decided, bool):
            return self._result(call, cell, label) if decided else self._refused(call, label)

        async def after_click(decided: Awaitable[bool]) -> ToolResult:
            if not await decided:
                return self._refused(call, label)
            result = self._result(call, cell, label)
            return await result if inspect.isawaitable(result) else result

        return after_click(decided)

    def _cannot_run(self, cell: Cell) -> str | None:
        if self.notebook is None or not self.notebook.connected:
            return messages.AGENT_CANNOT_RUN.render()
        try:
            transformed = self.shell.transform_cell(cell.source)
            awaits = self.shell.should_run_async(cell.source, transformed_cell=transformed)
        except Exception:  # noqa: BLE001 - the run itself reports what does not compile
            awaits = False
        return messages.RUN_TOP_LEVEL_AWAIT.render() if awaits else None

    def _refused(self, call: ToolCall, label: str) -> ToolResult:
        return error_result(call, messages.RUN_UNANSWERED.render(label=label, seconds=self.timeout_s))

    def _result(self, call: ToolCall, cell: Cell, label: str) -> Awaitable[ToolResult] | ToolResult:
        """What the model reads of the run; where the cell can wait, once the frontend said whether it shows the
        outputs (a refusal is said: never a run reported shown that is not)."""
        replies: list[str | None] = []
        ran = self.run(cell, replies.append)
        if ran.interrupted:
            raise KeyboardInterrupt  # the stop button during the run ends the turn, as during a request
        self.ran.append(label)
        pieces = self.shown(cell.id, label)
        # the turn's one name for the cell (``label``), and the count it ran as (a ref for later calls)
        count = f"In[{ran.execution_count}]" if ran.execution_count is not None else label
        response: dict[str, Any] = {"ran": count, **whole_response(pieces), "label": label}
        if ran.error is not None:
            response["error"] = redact(ran.error)
        if ran.next_input is not None:
            response["next_input"] = ran.next_input
        identity = tuple((p.key, p.sha256) for p in pieces)
        result = ToolResult(call, response, "whole", tuple(pieces), identity)
        if self.wait != "async":
            return result

        async def shown() -> ToolResult:
            await waiting.wait_async(lambda: bool(replies), REPLY_TIMEOUT_S)
            error = replies[0] if replies else None
            if error is None:
                return result
            return replace(result, response={**response, "not_shown": messages.OUTPUTS_NOT_SHOWN.render(error=error)})

        return shown()

    def run(self, cell: Cell, done: Callable[[str | None], None]) -> Ran:
        """The cell's code run in this kernel as the cell's own run; its outputs set on the cell (``done``: the
        frontend's reply)."""
        agent_id, agent_current = self.executed.running_id, (self.capture.current, self.capture.request)
        parent_id = kernel_compat.request_id(self.shell)
        outputs = CellOutputs()
        payloads: list[dict[str, Any]] = []
        if self.own_count is None:
            self.own_count = OwnCount(self.shell)
        self.own_count.running = True
        self.while_running(True)
        try:
            with (
                captured_outputs(self.shell, parent_id, outputs),
                taken_payloads(self.shell, payloads),
                kernel_compat.interruptible(),
            ):
                result = self.shell.run_cell(cell.source, store_history=True, cell_id=cell.id)
        finally:  # the agent cell runs on: what it shows and runs next is its own again
            self.executed.running_id, (self.capture.current, self.capture.request) = agent_id, agent_current
            self.own_count.running = False
            self.while_running(False)
        error = getattr(result, "error_before_exec", None) or getattr(result, "error_in_exec", None)
        trimmed = None
        if error is not None:
            trimmed = self.last_error() or f"{type(error).__name__}: {error}"
        count = getattr(result, "execution_count", None)
        assert self.notebook is not None  # checked before the run
        for payload in payloads:  # the pager (obj?) shows in the cell's outputs, as JupyterLab shows it
            if payload.get("source") == "page" and isinstance(payload.get("data"), dict):
                outputs.add("display_data", {"data": payload["data"], "metadata": {}})
        self.notebook.set_outputs(cell.id, outputs.nbformat(), count, done)
        next_inputs = [p for p in payloads if p.get("source") == "set_next_input" and isinstance(p.get("text"), str)]
        said = self._next_input(cell, next_inputs[-1]) if next_inputs else None
        return Ran(count, trimmed, isinstance(error, KeyboardInterrupt), said)

    def _next_input(self, cell: Cell, payload: dict[str, Any]) -> str:
        """A run's ``set_next_input`` (``%load``: the cell's text replaced; else a new cell below it) made on the
        cell that ran, as a user's run makes it, and kept among the turn's changes (Undo takes it back)."""
        assert self.notebook is not None
        text = payload["text"]
        if payload.get("replace"):
            self.notebook.set_source(cell.id, text, _ignored)
            change: Change = Edited(cell.id, cell.source, text)
            said = messages.RAN_NEXT_INPUT_REPLACED.render(lines=counted(len(text.splitlines()), "line"))
        else:
            new_id = self.notebook.insert_cell(cell.id, text, "code", _ignored)
            change = Inserted(new_id, text, "code", cell.id)
            said = messages.RAN_NEXT_INPUT_INSERTED.render(id=new_id)
        if self.changes is not None:
            self.changes.add(change)
        return said


def _ignored(_error: str | None) -> None:
    """The frontend's reply to a run's next input: the model is told what was asked, the view holds it."""


__all__: Sequence[str] = ["RunCell", "ApproveWrite", "Approvals", "CellOutputs", "CellRunner", "make_approve_write"]
