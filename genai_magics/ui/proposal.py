"""What Apply, Discard and Undo do to one proposal: no widgets here.

A click first asks the engine whether it may proceed, then the cell writer
changes the cell, and only when the write succeeded is the transition
committed - so a failed write never leaves the sync state wrong. What the
widget shows is a typed :class:`Status`; nothing reads its text back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from .. import messages
from ..engine.cells import WholeNotebook
from ..engine.conversation import Conversation, TransitionRefused, Turn
from ..engine.diff import APPLIED, PROPOSED, unified_diff
from ..engine.notebook_text import notebook_diff
from ..engine.redaction import redact
from ..frontends.cell_writer import CellWriter

Listener = Callable[["ProposalController"], None]
ButtonAction = Literal["apply", "discard", "undo"]


@dataclass(frozen=True)
class Status:
    """What the widget shows under the diff."""

    text: str
    needs_force: ButtonAction | None = None  # the cell changed since the proposal: offer '<action> anyway'
    pending: bool = False  # a write that completes later (staged Apply)


@dataclass
class ProposalController:
    conversation: Conversation
    turn: Turn
    cell_id: str
    writer: CellWriter
    current_source: Callable[[str], str | None]  # a cell's code as the kernel sees it now
    ran_source: Callable[[str], str | None] = lambda _cell_id: None  # the code the kernel ran last in a cell
    status: Status = Status("")
    listeners: list[Listener] = field(default_factory=list)
    writing: bool = False  # a write was sent and its reply has not come back (a second click waits)
    # what 'Apply anyway' overwrote (a hand edit, another conversation's Apply): Undo puts that back
    overwritten: str | None = None

    def __post_init__(self) -> None:
        self.status = Status(messages.NO_CHANGE.render() if self.no_change else self.writer.describe_apply())

    @property
    def message(self) -> str:
        return self.status.text

    @property
    def no_change(self) -> bool:
        """The proposal is byte-identical to the document it was made for."""
        return self.turn.proposal_source == (self.turn.base_source or "")

    @property
    def diff_sides(self) -> tuple[str, str]:
        """What the diff's header calls its two texts: once applied, the old one is no longer current."""
        return APPLIED if self.turn.outcome == "applied" else PROPOSED

    @property
    def diff(self) -> str:
        base, proposal = self.turn.base_source or "", self.turn.proposal_source or ""
        if isinstance(self.turn.document_key, WholeNotebook):
            diff = notebook_diff(base, proposal, self.diff_sides)
        else:
            diff = unified_diff(base, proposal, self.turn.document_label or "cell", self.diff_sides)
        return redact(diff)  # a cell that holds the key shows it masked, never in the output

    @property
    def decided(self) -> bool:
        """The user chose: applied or discarded (what a waiting cell waits for)."""
        return self.turn.outcome in ("applied", "discarded") or self.status.pending

    def replace_writer(self, writer: CellWriter, message: str) -> None:
        self.writer = writer
        self._say(Status(message))

    def enabled(self, action: ButtonAction) -> bool:
        if action == "apply" and self.no_change:
            return False
        return self.conversation.refusal(action, self.turn) is None

    def _say(self, status: Status) -> None:
        self.status = status
        for listener in list(self.listeners):  # a listener may remove itself (a line command's outcome)
            listener(self)

    def _run(
        self,
        action: ButtonAction,
        source: str | None,
        commit: Callable[[Turn], Turn],
        done: Callable[[], str],
        expect: str | None,
        force: bool,
    ) -> None:
        if self.writing:  # a double click: the first click's edits are still being made
            return
        reason = self.conversation.refusal(action, self.turn)
        if reason:
            self._say(Status(messages.REFUSED.render(action=action.capitalize(), reason=reason)))
            return
        if action == "apply" and self.no_change:
            self._say(Status(messages.NO_CHANGE.render()))
            return
        current = self.current_source(self.cell_id)
        if source is not None and current is None and self.writer.target_must_exist:
            self._say(Status(messages.CELL_GONE.render(action=action.capitalize())))
            return
        if expect is not None and current is not None and current != expect and not force:
            what = "a cell of the notebook" if isinstance(self.turn.document_key, WholeNotebook) else "the cell"
            self._say(
                Status(
                    messages.CHANGED_SINCE.render(action=action.capitalize(), what=what, verb=action),
                    needs_force=action,
                )
            )
            return
        replaced = current if force and action == "apply" and current is not None and current != expect else None
        if source is None:  # nothing to write (discard)
            commit(self.turn)
            self._say(Status(done()))
            return

        calls: list[str | None] = []

        def finished(error: str | None) -> bool:
            """The write's outcome; whether the transition was committed."""
            calls.append(error)
            self.writing = False
            if error:
                self._say(Status(messages.WRITE_FAILED.render(action=action.capitalize(), error=error)))
                return False
            try:
                commit(self.turn)
            except TransitionRefused as exc:  # a concurrent click got there first, or a discard/reset since
                self._say(Status(messages.REFUSED.render(action=action.capitalize(), reason=exc)))
                return False
            if action == "apply":
                self.overwritten = replaced
            holder = self.writer.holder(self.cell_id)
            if holder != self.cell_id and self.conversation.document_key == self.cell_id:
                self.conversation.document_key = holder  # the code lives in that cell now
            self.cell_id = holder
            self._say(Status(done()))
            return True

        self.writing = True
        try:
            pending = self.writer.write(self.cell_id, source, finished)
        except BaseException:
            self.writing = False
            raise
        if pending and not calls:  # the write completes later (staged): other clicks stay possible
            self.writing = False
            self._say(Status(pending, pending=True))

    def apply(self, force: bool = False) -> None:
        self._run(
            "apply",
            self.turn.proposal_source,
            self.conversation.apply,
            lambda: self._done("Applied", "the proposal", self.turn.proposal_source),
            self.turn.base_source,
            force,
        )

    def discard(self) -> None:
        self._run(
            "discard",
            None,
            self.conversation.discard,
            messages.DISCARDED.render,
            None,
            False,
        )

    def undo(self, force: bool = False) -> None:
        source, what = (
            (self.turn.base_source, "the code from before the proposal")
            if self.overwritten is None
            else (self.overwritten, "the code from before 'Apply anyway'")
        )
        self._run(
            "undo",
            source,
            self.conversation.undo,
            lambda: self._done("Undone", what, source),
            self.turn.proposal_source,
            force,
        )

    def _done(self, verb: str, what: str, written: str | None) -> str:
        ran = written is not None and self.ran_source(self.cell_id) == written
        return self.writer.describe_done(verb, what, self.turn.document_label or "the cell", ran)
