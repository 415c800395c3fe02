"""The agent's calls carried out (``%%gemini_agent``): insert, edit and delete through the live notebook,
``run_cell`` through the ``RunCell`` given (``frontends/cell_runner.py``).

Every change is recorded in the turn's ``TurnChanges`` (Undo reads them) and the turn's view of the
notebook (``TurnView``) holds it at once, so a later call of the same turn finds a cell the turn
inserted or the text it wrote, before the frontend's next snapshot; a cell it deleted is found no
more (an error result the model reads, as for a ref that names nothing). Never touched: the agent's own
cell, a cell holding a ``%%gemini_*`` magic (an error result the model reads). Unless the user approves
each write (``agent_approve = "all"``), no write may add code that steers the assistant or its approvals
(engine/steering.py: ``%gemini_agent --approve none``, ``%config GeminiMagics…``, ``%alias_magic``…),
and ``run_cell`` never runs a cell that calls our magics, whoever wrote it. Without a live
notebook (nbclient, Colab, a terminal, JupyterLab without the extension) nothing is written: the
changes stay in the turn's view and become one ``--notebook`` proposal (the magic shows it), and
``run_cell`` gets the error result ``this frontend cannot run cells``.

An awaited agent cell (``waiting.awaited_call``) waits for the frontend's reply to each change, so a
refused change is an error result; elsewhere the change is sent and kept in the turn's ``LandedCheck``
(frontends/landed.py), which proves it landed once the frontend answers, before the next request.
"""

from __future__ import annotations

import inspect
import secrets
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace

from .. import messages
from ..engine.agent import Change, Deleted, Edited, Inserted, TurnChanges, edited, inserted_type, step_line
from ..engine.cells import Cell, is_genai_magic
from ..engine.diff import unified_diff
from ..engine.errors import UserError
from ..engine.hashing import sha256_text, short
from ..engine.text import clip, counted
from ..engine.tools import ToolCall, ToolResult, error_result
from .code_check import CodeCheck
from .landed import LandedCheck, Reply, Sent
from .live_notebook import LiveNotebook
from .turn_view import TurnView

# Runs a cell (the target and its label) and gives what the model reads (frontends/cell_runner.py).
RunCell = Callable[[Cell, str], "Awaitable[ToolResult] | ToolResult"]
REPLY_TIMEOUT_S = 30.0  # an awaited change's reply; the bridge's own timeout answers before it


def cannot_run(cell: Cell, label: str) -> ToolResult:
    """The ``RunCell`` of a frontend that cannot run cells."""
    return error_result(ToolCall("run_cell", {"ref": cell.id}), messages.AGENT_CANNOT_RUN.render())


@dataclass
class AgentActions:
    """Answers the agent's four calls of one turn (``answer``: what ``send.drive_async`` is given)."""

    live: LiveNotebook | None
    view: TurnView
    own_id: str | None  # the agent's cell
    find: Callable[[str, str], Cell]  # a REF as --cell reads it, over ``view`` (ref, the function's name)
    label: Callable[[Cell], str]
    run: RunCell = cannot_run
    note: Callable[[str], None] = lambda _line: None
    waits: bool = False  # the cell is awaited: each change waits for the frontend's reply
    # asked before each write (agent_approve "all": frontends/cell_runner.py's): yes, no, or either awaited
    approve_write: Callable[[str, str, tuple[str, ...]], Awaitable[bool] | bool] | None = None
    writes_shown: Callable[[], bool] = lambda: False  # each write waits for a click that shows it ("all")
    check: CodeCheck = field(default_factory=CodeCheck)  # what steers the assistant, the risk line
    landed: LandedCheck | None = None  # the changes sent without waiting (a cell that is not awaited)
    # cell id -> the one name this turn gives it (its label when the turn first named it): step lines,
    # approvals, results and the Undo line all say it, though the cell moves or runs as another In[n]
    names: dict[str, str] = field(default_factory=dict)

    @property
    def changes(self) -> TurnChanges:
        return self.view.changes

    def name(self, cell: Cell) -> str:
        """The cell's name in this turn: fixed the first time the turn names it."""
        return self.names.setdefault(cell.id, self.label(cell))

    def answer(self, call: ToolCall) -> ToolResult | Awaitable[ToolResult]:
        try:
            done = getattr(self, f"_{call.name}")(call)
        except (UserError, ValueError) as exc:
            return self._shown(error_result(call, str(exc)))
        if isinstance(done, _Write):
            done = self._written(call, done)
        if inspect.isawaitable(done):
            if not self.waits:  # an approval (or a reply) this cell cannot wait for: never a hang
                getattr(done, "close", lambda: None)()
                return self._shown(error_result(call, messages.AGENT_CANNOT_WAIT.render()))
            return self._awaited(call, done)
        return self._shown(replace(done, call=call))

    async def _awaited(self, call: ToolCall, done: Awaitable[ToolResult]) -> ToolResult:
        return self._shown(replace(await done, call=call))

    def _shown(self, result: ToolResult) -> ToolResult:
        self.note(step_line(result))
        return result

    def _written(self, call: ToolCall, write: _Write) -> ToolResult | Awaitable[ToolResult]:
        """The write made once approved (``approve_write``: ``agent_approve`` "all"), else the refusal's
        error result; an approval to wait for is awaited by ``answer``'s caller."""
        approved: Awaitable[bool] | bool = True
        if self.approve_write is not None:
            approved = self.approve_write(write.description, write.shown, write.risks)
        declined = messages.AGENT_WRITE_DECLINED.render(name=call.name)
        if not inspect.isawaitable(approved):
            return write.make() if approved else error_result(call, declined)
        if not self.waits:  # a click this cell cannot wait for: never a hang
            getattr(approved, "close", lambda: None)()
            return error_result(call, messages.AGENT_CANNOT_WAIT.render())

        async def once_approved() -> ToolResult:
            if not await approved:
                return error_result(call, declined)
            made = write.make()
            return await made if inspect.isawaitable(made) else made

        return once_approved()

    # -- the four calls -------------------------------------------------------------------------
    def _insert_cell(self, call: ToolCall) -> _Write:
        args = call.args
        after = None if args["after"].strip() == "top" else self._target(args["after"], "insert_cell", own_ok=True)
        source, cell_type = args["source"], inserted_type(args)
        if is_genai_magic(source) and source.lstrip().startswith("%%gemini"):
            raise ValueError(messages.AGENT_MAGIC_CELL.render(name="insert_cell", label="the new cell"))
        self._unsteered(call, "the new cell", cell_type, "", source)
        after_id = after.id if after is not None else None
        after_label = self.name(after) if after is not None else "top"

        def make() -> ToolResult | Awaitable[ToolResult]:
            if self.live is None:
                new_id = f"c-{secrets.token_hex(4)}"  # uuid would import platform, sysconfig (~10 ms)
                pending = None
            else:
                pending = Reply()
                new_id = self.live.insert_cell(after_id, source, cell_type, pending.done)
            change = Inserted(new_id, source, cell_type, after_id)
            self.changes.add(change)

            def result() -> ToolResult:
                cell = next(c for c in self.view.cells() if c.id == new_id)
                response = {"id": new_id, "label": self.name(cell), "after": after_label, "sha256": short(cell.sha256)}
                return ToolResult(call, response, "whole")

            return self._confirmed(call, pending, change, result)

        lines = counted(len(source.splitlines()), "line")
        what = f"insert a {cell_type} cell after {after_label} ({lines})"
        return _Write(what, make, source, self._risks(cell_type, source))

    def _edit_cell(self, call: ToolCall) -> _Write:
        cell = self._target(call.args["ref"], "edit_cell")
        after = edited(cell.source, call.args)
        if is_genai_magic(after) and after.lstrip().startswith("%%gemini"):
            raise ValueError(messages.AGENT_MAGIC_CELL.render(name="edit_cell", label=self.name(cell)))
        label = self.name(cell)
        self._unsteered(call, label, cell.cell_type, cell.source, after)

        def make() -> ToolResult | Awaitable[ToolResult]:
            pending = None
            if self.live is not None:
                pending = Reply()
                self.live.set_source(cell.id, after, pending.done)
            change = Edited(cell.id, cell.source, after)
            self.changes.add(change)
            response = {"label": label, "sha256": short(sha256_text(after))}
            return self._confirmed(call, pending, change, lambda: ToolResult(call, response, "whole"))

        diff = unified_diff(cell.source, after, label)
        edits = counted(len(call.args["edits"]), "edit")
        return _Write(f"edit {label} ({edits})", make, diff, self._risks(cell.cell_type, after))

    def _delete_cell(self, call: ToolCall) -> _Write:
        cell = self._target(call.args["ref"], "delete_cell")
        label = self.name(cell)
        # a cell this turn inserted: its removal takes back the turn's own insert, no cell of the user's
        own = any(isinstance(c, Inserted) and c.cell_id == cell.id for c in self.changes.items)
        response: dict[str, object] = {"label": label, "inserted_this_turn": True} if own else {"label": label}
        ids = [c.id for c in self.view.cells()]
        at = ids.index(cell.id)
        held = {"id": cell.id, "cell_type": cell.cell_type, "source": cell.source}  # until the frontend's reply

        def make() -> ToolResult | Awaitable[ToolResult]:
            change = Deleted(held, ids[at - 1] if at else None, tuple(ids[:at]))
            self.changes.add(change)  # before the frontend's reply: the companion's comes within the call
            pending = None
            if self.live is not None:
                pending = Reply()
                current = [change]

                def removed(cell_json: dict) -> None:  # the cell as the frontend held it: outputs too, for Undo
                    kept = Deleted(cell_json, change.after_id, change.above)
                    self.changes.replace(current[0], kept)
                    current[0] = kept

                self.live.delete_cell(cell.id, pending.done, removed)
            return self._confirmed(call, pending, change, lambda: ToolResult(call, dict(response), "whole"))

        return _Write(f"delete {label}", make, cell.source)

    def _run_cell(self, call: ToolCall) -> ToolResult | Awaitable[ToolResult]:
        cell = self._target(call.args["ref"], "run_cell")
        if cell.cell_type != "code":
            raise ValueError(f"run_cell: {self.name(cell)} is a {cell.cell_type} cell: only code cells run")
        steers = self.check.steering(cell.source)
        if steers:
            raise ValueError(messages.AGENT_STEERING_RUN.render(label=self.name(cell), code=clip(steers[0], 80)))
        if self.live is None:
            return cannot_run(cell, self.name(cell))
        return self.run(cell, self.name(cell))

    # -- what every call shares ----------------------------------------------------------------
    def _unsteered(self, call: ToolCall, label: str, cell_type: str, before: str, after: str) -> None:
        """Refused (a ``ValueError`` the model reads): a code cell's write, not shown to the user for approval,
        that adds code steering the assistant or its approvals (engine/steering.py), once more included; the
        steering code the cell held already is the user's and may stay as it is (the code around it may change:
        knowingly, a condition that guards it too)."""
        if cell_type != "code" or self.writes_shown():
            return
        added = Counter(self.check.steering(after)) - Counter(self.check.steering(before))
        if added:
            code = clip(next(iter(added)), 80)
            raise ValueError(messages.AGENT_STEERING_WRITE.render(name=call.name, label=label, code=code))

    def _risks(self, cell_type: str, source: str) -> tuple[str, ...]:
        return self.check.risks(source) if cell_type == "code" else ()

    def _target(self, ref: str, name: str, own_ok: bool = False) -> Cell:
        """The cell a REF names in the turn's view; refused when it is the agent's own or a magic cell."""
        cell = self.find(ref, name)
        if cell.id == self.own_id and not own_ok:
            raise ValueError(messages.AGENT_OWN_CELL.render(name=name, label=self.name(cell)))
        if cell.id != self.own_id and is_genai_magic(cell.source) and not own_ok:
            raise ValueError(messages.AGENT_MAGIC_CELL.render(name=name, label=self.name(cell)))
        return cell

    def _confirmed(
        self, call: ToolCall, pending: Reply | None, change: Change, result: Callable[[], ToolResult]
    ) -> ToolResult | Awaitable[ToolResult]:
        """The result now (no live notebook, or a cell that cannot wait: the change kept to be proven landed),
        or once the frontend replied: a refusal takes the change back out of the turn and is an error result."""
        if pending is None or not self.waits:
            if pending is not None and self.landed is not None:
                self.landed.add(Sent(call.label, change, pending))
            return result()

        async def replied() -> ToolResult:
            error = await _reply_to(pending)
            if error is None:
                return result()
            if change in self.changes.items:
                self.changes.items.remove(change)
            return error_result(call, messages.AGENT_WRITE_FAILED.render(name=call.name, error=error))

        return replied()


@dataclass(frozen=True)
class _Write:
    """A change checked and ready: what its approval shows, and the change made (its result, or awaited)."""

    description: str
    make: Callable[[], ToolResult | Awaitable[ToolResult]]
    shown: str = ""  # what its approval shows: an insert's text, an edit's diff, a deleted cell's text
    risks: tuple[str, ...] = ()  # of the code it writes (frontends/code_check.py)


async def _reply_to(reply: Reply) -> str | None:
    """A frontend's reply to one change, awaited with ``asyncio.sleep`` polling as the approval's wait is (the
    reply comes on the kernel's own loop while the cell awaits)."""
    from . import waiting

    if not await waiting.wait_async(lambda: reply.came, REPLY_TIMEOUT_S):
        return messages.FRONTEND_NO_REPLY.render(timeout=REPLY_TIMEOUT_S, op="agent change")
    return reply.error
