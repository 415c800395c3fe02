"""Each agent change proven landed where the turn could not wait for the frontend's reply.

An agent cell that is not awaited (more than the magic in it, or ipykernel < 7.4) sends each change and
goes on: the kernel reads the frontend's replies and its next view only once the cell has ended. The
changes it sent are kept here (``LandedCheck``) with their replies; each reply, when it comes, is checked
(an error reply against the frontend's view: a change that shows there landed all the same), and before
the next request of the turn's conversation every change still unanswered is checked against the
frontend's view then. A change that did not land is one line in the agent cell (ui/landed_line.py) and an
error the model reads in that next request (``agentChangesNotMade``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .. import messages
from ..engine.agent import Change, Edited, Inserted
from ..engine.cells import Cell
from ..engine.context import ContextPiece
from .live_notebook import LiveNotebook

NOT_MADE_FIELD = "agentChangesNotMade"  # the user payload's field: the earlier turn's changes that did not land


class Reply:
    """A frontend's reply to one change (``Done``): whether it came, its error; listeners told when it comes."""

    def __init__(self) -> None:
        self.came = False
        self.error: str | None = None
        self.listeners: list[Callable[[], None]] = []

    def done(self, error: str | None) -> None:
        self.came, self.error = True, error
        for listener in list(self.listeners):
            listener()


def landed(change: Change, cells: Sequence[Cell]) -> bool:
    """Whether the frontend's view shows ``change`` made."""
    by_id = {cell.id: cell for cell in cells}
    if isinstance(change, Inserted):
        return change.cell_id in by_id
    if isinstance(change, Edited):
        return change.cell_id in by_id and by_id[change.cell_id].source == change.after
    return change.cell.get("id") not in by_id


@dataclass
class Sent:
    """One change a turn sent without waiting: the call as its step line names it, the change, its reply."""

    call: str
    change: Change
    reply: Reply


@dataclass
class LandedCheck:
    """The changes of one agent turn sent without waiting, until each is proven landed or said not to be."""

    notebook: LiveNotebook
    conversation: str
    sent: list[Sent] = field(default_factory=list)
    not_made: list[str] = field(default_factory=list)  # a line per change that did not land
    checked: int = 0  # changes checked so far
    listeners: list[Callable[[LandedCheck], None]] = field(default_factory=list)

    def add(self, sent: Sent) -> None:
        self.sent.append(sent)
        sent.reply.listeners.append(lambda: self.settle(final=False))

    def settle(self, final: bool) -> None:
        """Check each change whose reply came (``final``: every change, before the next request: one still
        unanswered is checked against the frontend's view as it is)."""
        waiting = [s for s in self.sent if not s.reply.came and not final]
        if len(waiting) == len(self.sent):
            return
        done, self.sent = [s for s in self.sent if s not in waiting], waiting
        cells = self.notebook.cells()
        for sent in done:
            said_ok = sent.reply.came and sent.reply.error is None
            if not said_ok and not landed(sent.change, cells):
                error = sent.reply.error or messages.AGENT_NOT_IN_VIEW.render()
                self.not_made.append(messages.AGENT_NOT_LANDED.render(call=sent.call, error=error))
            self.checked += 1
        for listener in list(self.listeners):
            listener(self)

    def told(self) -> ContextPiece | None:
        """Before the next request of the conversation: every change checked, and what the model reads of the ones
        that did not land (None: every one landed)."""
        self.settle(final=True)
        return ContextPiece(NOT_MADE_FIELD, "\n".join(self.not_made)) if self.not_made else None
