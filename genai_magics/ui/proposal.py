"""What Apply, Discard and Undo do to one proposal: no widgets here.

A click first asks the engine whether it may proceed, then the cell writer
changes the cell, and only when the write succeeded is the transition
committed - so a failed write never leaves the sync state wrong.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..frontends.cell_writer import CellWriter
from ..frontends.notebook_edit import notebook_diff
from ..engine.diff import unified_diff
from ..engine.redaction import redact
from ..engine.conversation import Conversation, TransitionRefused, Turn

Listener = Callable[["ProposalController"], None]


@dataclass
class ProposalController:
    conversation: Conversation
    turn: Turn
    cell_id: str
    writer: CellWriter
    current_source: Callable[[str], str | None]  # a cell's code as the kernel sees it now
    message: str = ""
    pending: str | None = None  # a write that completes later (staged Apply)
    listeners: list[Listener] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.message = self.writer.describe_apply()

    @property
    def diff(self) -> str:
        base, proposal = self.turn.base_source or "", self.turn.proposal_source or ""
        if self.turn.document_key == "notebook":
            diff = notebook_diff(base, proposal)
        else:
            diff = unified_diff(base, proposal, self.turn.document_label or "cell")
        return redact(diff)  # a cell that holds the key shows it masked, never in the output

    @property
    def decided(self) -> bool:
        """The user chose: applied or discarded (what a waiting cell waits for)."""
        return self.turn.outcome in ("applied", "discarded") or self.pending is not None

    def replace_writer(self, writer: CellWriter, message: str) -> None:
        self.writer = writer
        self._say(message)

    def enabled(self, action: str) -> bool:
        return self.conversation.refusal(action, self.turn) is None

    def _say(self, message: str) -> None:
        self.message = message
        for listener in self.listeners:
            listener(self)

    def _run(self, action: str, source: str | None, commit: Callable[[Turn], Turn], done_text: str,
             expect: str | None, force: bool) -> None:
        reason = self.conversation.refusal(action, self.turn)
        if reason:
            self._say(f"{action.capitalize()}: {reason}.")
            return
        current = self.current_source(self.cell_id)
        if source is not None and current is None and self.writer.kind == "live" and self.cell_id != "notebook":
            self._say(f"{action.capitalize()} not done: the cell this proposal is for is no longer "
                      "in the notebook (deleted?). Nothing changed.")
            return
        if expect is not None and current is not None and current != expect and not force:
            self._say(
                f"{action.capitalize()} not done: the cell changed since this proposal was made. "
                f"Use '{action} anyway' to overwrite it."
            )
            return
        if source is None:  # nothing to write (discard)
            commit(self.turn)
            self._say(done_text)
            return

        calls: list[str | None] = []

        def finished(error: str | None) -> None:
            calls.append(error)
            self.pending = None
            if error:
                self._say(f"{action.capitalize()} failed: {error}. Nothing changed.")
                return
            try:
                commit(self.turn)
            except TransitionRefused as exc:  # a concurrent click got there first
                self._say(f"{action.capitalize()}: {exc}.")
                return
            # Where Apply writes the running magic cell, that cell holds the code from now on.
            self.cell_id = getattr(self.writer, "magic_cell_id", self.cell_id)
            self._say(done_text)

        pending = self.writer.write(self.cell_id, source, finished)
        if pending and not calls:  # the write completes later (staged)
            self.pending = pending
            self._say(pending)

    def apply(self, force: bool = False) -> None:
        self._run("apply", self.turn.proposal_source, self.conversation.apply,
                  self._done("Applied", "the proposal"), self.turn.base_source, force)

    def discard(self) -> None:
        self._run("discard", None, self.conversation.discard,
                  "Discarded: the cell keeps its code; the model is told it was discarded.", None, False)

    def undo(self, force: bool = False) -> None:
        self._run("undo", self.turn.base_source, self.conversation.undo,
                  self._done("Undone", "the code from before the proposal"), self.turn.proposal_source, force)

    def _done(self, verb: str, what: str) -> str:
        label = self.turn.document_label or "the cell"
        if self.writer.kind == "live":
            return f"{verb}: {what} is now in {label} (Ctrl+Z in the cell reverts it too)."
        if self.writer.kind == "copy":
            return f"{verb} for the conversation: paste {what} into {label} yourself (this frontend cannot edit cells)."
        if verb == "Applied":
            return "Applied: this cell is replaced by the proposal (your instruction kept as its first line)."
        return f"{verb} for the conversation: {label} still holds the code from before; this cell keeps the applied code."
