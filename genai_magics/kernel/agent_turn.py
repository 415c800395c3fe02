"""One agent turn wired in this shell: the actions that answer the model's calls (through the live notebook
where there is one), the awaited cell's drive, how a stopped or failed turn ends, and, without a live
notebook, the turn's changes as one --notebook proposal. kernel/magics.py parses the magic and hands the
turn here; kernel/agent_run.py wires its run_cell and approvals to the shell."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

from .. import messages
from ..engine.cells import WHOLE_NOTEBOOK, is_genai_magic
from ..engine.conversation import Conversation, Turn
from ..engine.hashing import sha256_text
from ..engine.notebook_text import notebook_text
from ..frontends import waiting
from ..frontends.agent_actions import AgentActions, TurnView, cannot_run
from ..frontends.bridge import Bridge
from ..frontends.cell_runner import Approvals, Approve
from ..frontends.code_check import shell_check
from ..frontends.frontend import Frontend
from ..frontends.landed import LandedCheck
from ..sources.last_error import CellForFilename
from ..turn.requests import Settings, TurnOutcome
from ..turn.send import Steps, drive_async
from ..turn.session import Session
from ..ui.proposal_display import Place, Proposed, show_proposal
from .agent_run import agent_failure, end_agent_turn, turn_approve_write, turn_run_cell, turn_undone
from .shell_state import ShellState

Shown = Callable[[TurnOutcome], "Awaitable[None] | None"]  # the answer shown: its footer, a proposal's buttons


def agent_actions(
    shell: Any,
    session: Session,
    frontend: Frontend,
    settings: Settings,
    display: Any,
    conversation: str,
    cell_for_filename: CellForFilename,
    apply_wait: float,
) -> AgentActions:
    """What answers this agent turn's calls: through the live notebook where there is one, waiting for
    its replies (and approvals) only where the cell is awaited (frontends/waiting.py); elsewhere each change
    is proven landed once the frontend answers (frontends/landed.py). A cell runs by this kernel, through
    the live notebook, after the approval that ``agent_approve`` asks for (kernel/agent_run.py); without a
    live notebook, none runs."""
    live = frontend.live
    if isinstance(live, Bridge):
        live.one_undo_step()  # the turn's writes: one step of JupyterLab's notebook undo
    view = TurnView(frontend.view)
    documents = session.documents
    awaited = waiting.will_be_awaited()
    approvals = Approvals(cast(Approve, settings.agent_approve))  # one per turn: Run all covers its runs
    run = (
        cannot_run
        if live is None
        else turn_run_cell(
            shell, live, session, settings, cell_for_filename, approvals, awaited, apply_wait, view.changes
        )
    )
    return AgentActions(
        live=live,
        view=view,
        own_id=session.executed.running_id,
        find=lambda ref, name: documents.find_cell(view, ref, name),
        label=lambda cell: documents.label(view, cell),
        run=run,
        note=display.note,
        waits=awaited,
        approve_write=turn_approve_write(approvals, awaited, apply_wait, live) if live is not None else None,
        writes_shown=lambda: live is not None and approvals.needed("write"),
        check=shell_check(shell),
        landed=LandedCheck(live, conversation) if live is not None and not awaited else None,
    )


@dataclass
class AgentTurn:
    """An agent turn under way: its actions, the frontend its reads see (the turn's own changes included) and
    what its end shows in the agent cell."""

    state: ShellState
    actions: AgentActions
    frontend: Frontend
    conversation: str
    prompt: str
    display: Any
    place: Callable[[], Place]

    async def awaited(self, steps: Steps, shown: Shown, debug: bool) -> None:
        """The awaited agent cell: the turn driven with its calls' answers awaited (``send.drive_async``)."""
        try:
            outcome = await drive_async(steps, self.actions.answer)
        except Exception as exc:  # a UserError (STOPPED included), or a bug of ours: one line
            unfinished = self.failed(exc, debug)
            if unfinished is not None:
                await unfinished
            return
        answer = shown(outcome)
        self.answered(outcome)
        if answer is not None:
            await answer

    def answered(self, outcome: TurnOutcome) -> None:
        """The turn answered: its approvals end, its Undo is offered (and marks the answered turn undone)."""
        end_agent_turn(self.state, self.actions, turn_undone(self.state.session, outcome))

    def failed(self, exc: Exception, debug: bool) -> Awaitable[None] | None:
        """Rule: an agent turn stopped or failed (its one line shown) loses nothing it wrote: through the live
        notebook its writes stay, undoable as one; without one, the writes made so far are one --notebook
        proposal (Copy), as a finished turn's are."""
        self.display.failed(agent_failure(exc, self.actions), debug)
        end_agent_turn(self.state, self.actions)
        if self.actions.live is not None or not self.actions.changes:
            return None
        conversations = self.state.session.conversations
        conv = conversations.get(self.conversation) or Conversation(self.conversation)  # none if it was the first
        return self.proposal(conv, conv.history[-1].index + 1 if conv.history else 1)

    def proposal(self, conv: Conversation, index: int) -> Awaitable[None] | None:
        """No live notebook: the turn's changes (``index`` of ``conv``) as one --notebook proposal (Copy), its
        diff and buttons."""
        actions, own = self.actions, self.actions.own_id

        def text(cells) -> str:
            return notebook_text(c for c in cells if c.id != own and not is_genai_magic(c.source))

        base, proposal = text(actions.view.base.cells()), text(actions.view.cells())
        self.display.note(messages.AGENT_PROPOSAL.render(count=len(actions.changes.items)))
        proposed_turn = Turn(
            index,
            "edit",
            self.prompt,
            conv.state_mode,
            document_key=WHOLE_NOTEBOOK,
            document_label="the notebook",
            base_source=base,
            base_sha256=sha256_text(base),
            proposal_source=proposal,
            proposal_sha256=sha256_text(proposal),
            outcome="proposed",
        )
        proposed = Proposed(conv, proposed_turn, None, self.prompt, False)
        return show_proposal(proposed, self.frontend, self.place(), lambda: None)
