"""The IPython face of genai_magics: the magics' flags in, session calls out.

The flags are ``magic_flags.py``; what the kernel keeps per shell, ``shell_state.py``; the frontend of a turn,
``frontends/frontend.py`` (``for_run``); a staged Apply written on the magic cell's next run,
``frontends/cell_writer.py``; the proposal shown, ``ui/proposal_display.py``; the --error/--vars/--interpolate
context, ``sources/explicit.py``; the %gemini subcommands, ``line_commands.py``; an agent turn's, ``agent_turn.py``.
"""

from __future__ import annotations

import copy
import functools
from argparse import Namespace
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from .. import messages
from ..engine.agent import agent_results, step_line
from ..engine.conversation import Mode
from ..engine.errors import UserError
from ..engine.grounding import sources_markdown
from ..engine.redaction import redact, remember_keys
from ..frontends import frontend as frontends
from ..frontends import kernel_compat
from ..frontends.bridge import Bridge
from ..frontends.cell_writer import write_staged
from ..frontends.notebook_view import path_of_cell_uri
from ..frontends.terminal import is_terminal, typed_source
from ..sources.explicit import ExplicitContext, explicit_context
from ..sources.tools import ShellReader
from ..turn import pipeline
from ..turn.requests import Settings, TurnOutcome
from ..turn.send import Steps, drive
from ..turn.session import Session
from ..ui import report
from ..ui.display import NotebookDisplay, TerminalDisplay
from ..ui.proposal import ProposalController
from ..ui.proposal_display import Place, Proposed, show_proposal
from .landed_told import told_not_landed
from .line_commands import COMMANDS, HELP, Call, chosen
from .line_syntax import split_prompt
from .magic_flags import documented, plain_help, takes_value, turn_arguments, turn_request, with_defaults
from .options import GeminiOptions
from .shell_state import ShellState, state_of

if TYPE_CHECKING:  # the agent's modules are imported by its first turn (or a landed check), not at %load_ext
    from .agent_turn import AgentTurn, Shown


@functools.lru_cache(maxsize=64)
def _parse(magic, line: str) -> Namespace:
    return parse_argstring(magic, line)


def _parsed(magic, line: str) -> Namespace:
    """The flags of a magic line, parsed once per line (argparse and shlex: ~0.1 ms a turn); a copy each time,
    so nothing a turn does to it reaches the next. A line that does not parse raises every time. Keyed on the
    function, not the bound method: no magics instance is kept alive by it."""
    return copy.copy(_parse(getattr(magic, "__func__", magic), line))


@magics_class
class GeminiMagics(GeminiOptions):
    """Stateful Gemini conversations about your notebook's cells."""

    shell: InteractiveShell  # IPython sets it when it registers the magics

    def __init__(self, shell=None, shell_state: ShellState | None = None, **kwargs):
        super().__init__(shell=shell, **kwargs)
        remember_keys()
        # what a %reload_ext carries over (conversations, staged Applies, old buttons' writers)
        self.shell_state = shell_state if shell_state is not None else state_of(shell)
        self.transformers: list[tuple[list, Callable]] = []  # (shell list, transformer) this load added

    @property
    def session(self) -> Session:
        return self.shell_state.session

    @property
    def latest(self) -> dict[str, ProposalController]:
        return self.shell_state.latest

    @property
    def bridge(self) -> Bridge | None:
        return self.shell_state.bridge

    # -- what the kernel knows -------------------------------------------------
    def _frontend(self) -> frontends.Frontend:
        """What this run's (or click's) frontend can do, decided once from what the kernel knows now."""
        return frontends.for_run(self._kernel_side(self._notebook_path()))

    def _kernel_side(self, notebook_path: Path | None) -> frontends.KernelSide:
        return frontends.KernelSide(
            terminal=is_terminal(self.shell),
            bridge=self.shell_state.bridge,
            companion=self.shell_state.companion,
            executed=self.session.executed,
            notebook_path=notebook_path,
            staged=self.shell_state.staged,
            set_next_input=lambda text: self.shell.set_next_input(text, replace=True),
            apply_wait=self.apply_wait,
        )

    def pre_run_cell(self, info) -> None:
        remember_keys()  # a cell may set a new key: the one before it stays secret too
        cell_id = getattr(info, "cell_id", None)
        if cell_id is None and not info.store_history:
            # A frontend's own helper code (VS Code's variable viewer sends these), not a user's cell.
            self.session.executed.running_id = None
            self.session.outputs.start(None)
            return
        # IPython has already counted this cell when it announces it (post_run_cell confirms).
        count = self.shell.execution_count - 1 if info.store_history else None
        source = typed_source(info.raw_cell) if is_terminal(self.shell) else info.raw_cell
        self.session.executed.add(cell_id, source, count)
        self.shell_state.companion.follow(cell_id)
        bridge = self.shell_state.bridge
        self.path_reported(path_of_cell_uri(cell_id))  # VS Code: the cell's URI names the notebook's file
        if bridge is not None:  # JupyterLab, Notebook 7: the execute request's metadata names it
            self.path_reported(bridge.announced_path(kernel_compat.request_metadata(self.shell)))
        self.session.outputs.start(self.session.executed.running_id)

    def post_run_cell(self, result) -> None:
        running = self.session.executed.running_id
        if running and result.execution_count is not None:
            self.session.executed.set_count(running, result.execution_count)

    def _located(self, start: Path | None) -> Path | None:
        return self.shell_state.location.path(start)

    def _renamed_from(self, path: Path | None) -> tuple[tuple[Path, ...], str | None]:
        companion = self.shell_state.companion  # VS Code ends a renamed notebook's kernel: its window saw it
        return companion.former_paths(path), companion.notebook

    def path_reported(self, path: str | None) -> None:
        """A frontend named the notebook's file: renamed or moved since, its record follows it now (so a
        kernel restarted before the next turn finds it there); a line about it waits for the next magic."""
        if self.shell_state.location.report(path) and self.session.keeper.store is not None:
            self.session.keeper.held(self.session.open_record(self._settings()))

    def _open_record(self) -> None:
        """The session's record opened at the place the options name now; a line it has shown once."""
        note = self.session.open_record(self._settings())
        if note:
            NotebookDisplay.error(note)

    def at_exit(self) -> None:
        self.session.at_exit(self._settings())

    def _saved(self, controller) -> None:
        """Apply, Discard or Undo happened: the record says so too."""
        note = self.session.keeper.outcome_changed(controller.conversation)
        if note:
            NotebookDisplay.error(note)

    # -- the magics ----------------------------------------------------------
    @no_var_expand  # {name} and $name are expanded only with --interpolate
    @turn_arguments("gemini_ask", "cell")
    @cell_magic("gemini_ask")  # type: ignore[arg-type]  # IPython types a named marker as taking Never
    def gemini_ask(self, line, cell):
        """Ask Gemini about the current code; the cell body is the prompt.

        Follow-ups continue the same conversation: the document (by default the
        code cell above, or the most recently run one) is sent once and again
        only when its SHA-256 shows it changed; the other cells go along as
        read-only context when they changed.
        """
        return self._turn("ask", self.gemini_ask, line, cell)

    @no_var_expand
    @turn_arguments("gemini_ask", "line")
    @line_magic("gemini_ask")  # type: ignore[arg-type]  # IPython types a named marker as taking Never
    def gemini_ask_line(self, line):
        """Ask Gemini about the current code in one line: the words after the flags are
        the prompt (%gemini_ask --error alone asks to explain the last error)."""
        return self._turn("ask", self.gemini_ask_line, line, None)

    @no_var_expand
    @turn_arguments("gemini_edit", "cell")
    @cell_magic("gemini_edit")  # type: ignore[arg-type]  # IPython types a named marker as taking Never
    def gemini_edit(self, line, cell):
        """Ask Gemini to change the current code; the cell body is the instruction.

        The proposal is shown as a diff with Apply / Discard buttons (Undo after
        Apply). What Apply does depends on the frontend; the widget says so.
        """
        return self._turn("edit", self.gemini_edit, line, cell)

    @no_var_expand
    @turn_arguments("gemini_edit", "line")
    @line_magic("gemini_edit")  # type: ignore[arg-type]  # IPython types a named marker as taking Never
    def gemini_edit_line(self, line):
        """Ask Gemini to change the current code in one line: the words after the flags
        are the instruction (%gemini_edit --error alone asks to fix the last error)."""
        return self._turn("edit", self.gemini_edit_line, line, None)

    @no_var_expand
    @turn_arguments("gemini_agent", "cell")
    @cell_magic("gemini_agent")  # type: ignore[arg-type]  # IPython types a named marker as taking Never
    def gemini_agent(self, line, cell):
        """Ask Gemini to do a task in the notebook; the cell body is the task.

        The model reads the notebook with the read-only functions and acts with four more:
        insert_cell, edit_cell, delete_cell and run_cell (a run waits for your Run, see
        agent_approve), one line per step in this cell, then its answer and the footer.
        It never touches this cell nor another %%gemini_* cell. Without a live notebook
        the changes are one --notebook proposal (Copy) and no cell runs.
        """
        return self._turn("ask", self.gemini_agent, line, cell, agent=True)

    @no_var_expand
    @turn_arguments("gemini_agent", "line")
    @line_magic("gemini_agent")  # type: ignore[arg-type]  # IPython types a named marker as taking Never
    def gemini_agent_line(self, line):
        """Ask Gemini to do a task in the notebook in one line: the words after the flags are the task."""
        return self._turn("ask", self.gemini_agent_line, line, None, agent=True)

    def _turn(self, mode: Mode, magic, line: str, cell: str | None, agent: bool = False) -> Awaitable[None] | None:
        """Run one turn; what IPython gets back is None, or an awaitable while a proposal waits for its click
        (an awaited agent cell: the awaitable drives the whole turn)."""
        name = "gemini_agent" if agent else f"gemini_{mode}"
        if self._not_started(name):
            return None
        args, words = self._arguments(magic, line, cell, name)
        if args is None:
            return None
        args, settings = self._turn_settings(args, agent)
        display = TerminalDisplay(mode) if is_terminal(self.shell) else NotebookDisplay(mode)
        asked = self._asked(args, words, cell, display)
        if asked is None:
            return None
        frontend = self._turn_frontend(display, settings.record.notebook)
        request = told_not_landed(self.shell_state, turn_request(mode, args, asked, agent))
        reader = ShellReader(self.shell, self._cell_for_filename)
        agent_turn = None
        if agent:
            agent_turn = self._agent_turn(frontend, settings, display, request.conversation, asked.prompt)
            frontend = agent_turn.frontend  # the turn's reads see its own changes
        if not args.dry_run:
            display.start(f"asking {request.model or settings.model}")
        steps = pipeline.steps(self.session, request, settings, display, frontend, reader)
        shown = functools.partial(
            self._shown, mode, frontend=frontend, instruction=asked.prompt, display=display, agent=agent_turn
        )
        return self._driven(steps, display, shown, agent_turn)

    def _turn_settings(self, args: Namespace, agent: bool) -> tuple[Namespace, Settings]:
        """The options as this turn's settings; an agent turn's flags take their defaults, --approve its own."""
        settings = self._settings()
        if not agent:
            return args, settings
        args = with_defaults(args)
        return args, replace(settings, agent_approve=args.approve or settings.agent_approve)

    def _agent_turn(
        self, frontend: frontends.Frontend, settings: Settings, display, conversation: str, prompt: str
    ) -> AgentTurn:
        """An agent turn's actions wired to this shell (kernel/agent_turn.py), its frontend's view the turn's
        own; with ``agent_approve = "none"`` through a live notebook, a line says nothing will ask."""
        from .agent_turn import AgentTurn, agent_actions

        shell, session, find = self.shell, self.session, self._cell_for_filename
        actions = agent_actions(shell, session, frontend, settings, display, conversation, find, self.apply_wait)
        if settings.agent_approve == "none" and actions.live is not None:
            display.note(messages.AGENT_APPROVE_NONE.render())  # said every turn: nothing will ask
        frontend = replace(frontend, view=actions.view)
        return AgentTurn(self.shell_state, actions, frontend, conversation, prompt, display, self._place)

    def _not_started(self, magic: str) -> bool:
        """Rule: a magic whose turn does not start says why in one line: called from a cell the agent runs
        (whatever way its code reached it), or its cell's staged Apply written instead. A request that starts
        is the one that tells an agent turn's Undo the notebook's own undo took its turn back."""
        if self._inside_agent_run(magic):
            return True
        record = self.session.executed
        if write_staged(self.shell_state.staged, record, lambda text: self.shell.set_next_input(text, replace=True)):
            print(messages.PREFIX + messages.STAGED_WRITTEN.render())
            return True
        for undo in self.shell_state.agent_undos:
            undo.notice_taken_back()
        return False

    def _arguments(self, magic, line: str, cell: str | None, name: str) -> tuple[Namespace | None, str]:
        """The magic line's flags, and the prompt's words before them (a flag's name after the first word of the
        prompt is prompt text, also on a %% line); None and one line when the flags do not parse."""
        line, words = split_prompt(line, takes_value(magic))
        try:
            return _parsed(magic, line), words
        except UsageError as exc:
            NotebookDisplay.error(messages.USAGE.render(error=exc, magic=f"{'%' if cell is not None else ''}{name}"))
            return None, words

    def _asked(self, args: Namespace, words: str, cell: str | None, display) -> ExplicitContext | None:
        """The prompt (the line's words, then the cell) with the context its flags ask for by name; None and one
        line when it is over ``max_prompt_bytes`` or --error finds no exception."""
        body = "\n".join(part for part in (words, " ".join(args.words), cell or "") if part)
        size = len(body.encode("utf-8", "surrogatepass"))
        if size > self.max_prompt_bytes:
            display.error(messages.PROMPT_OVER_CAP.render(size=size, cap=self.max_prompt_bytes))
            return None
        try:
            return explicit_context(
                self.shell,
                body,
                error=args.error,
                variables=args.vars,
                interpolate=args.interpolate,
                max_var_chars=self.max_var_chars,
                cell_for_filename=self._cell_for_filename,
            )
        except UserError as exc:
            display.error(str(exc))
            return None

    def _turn_frontend(self, display, notebook: Path | None) -> frontends.Frontend:
        """The one frontend of this turn (``notebook``: its settings' file); a line when its view is behind."""
        frontend = frontends.for_run(self._kernel_side(notebook))
        if frontend.stale:
            display.note(messages.VIEW_BEHIND.render())
        return frontend

    def _driven(self, steps: Steps, display, shown: Shown, agent_turn: AgentTurn | None) -> Awaitable[None] | None:
        """Rule: an awaited agent cell is driven by the awaitable IPython gets (its calls' answers awaited); any
        other turn on this thread (the stop button interrupts it). A failure is one line unless debugging; an
        agent turn's loses nothing it wrote (``AgentTurn.failed``)."""
        if agent_turn is not None and agent_turn.actions.waits:
            return agent_turn.awaited(steps, shown, self.debug)
        try:
            with kernel_compat.interruptible():
                outcome = drive(steps, agent_turn.actions.answer if agent_turn is not None else None)  # type: ignore[arg-type]
        except Exception as exc:  # a UserError, or a bug of ours
            if agent_turn is not None:
                return agent_turn.failed(exc, self.debug)
            display.failed(exc, self.debug)
            return None
        answer = shown(outcome)
        if agent_turn is not None:
            agent_turn.answered(outcome)
        return answer

    def _inside_agent_run(self, magic: str) -> bool:
        """A cell the agent runs called this magic (whatever way its code reached it): refused with one line."""
        if not self.shell_state.agent_running:
            return False
        NotebookDisplay.error(messages.MAGIC_IN_AGENT_RUN.render(magic=magic))
        return True

    def _shown(
        self, mode: Mode, outcome: TurnOutcome, frontend, instruction: str, display, agent: AgentTurn | None = None
    ) -> Awaitable[None] | None:
        """The answer (or the dry run's request) and its footer; an edit's proposal with its buttons; an agent
        turn's changes without a live notebook as one proposal."""
        if outcome.request is not None and outcome.plan is not None:  # a dry run
            display.request(outcome.request, outcome.plan.state_mode, outcome.cache_plan)
            return None
        turn = outcome.turn
        assert turn is not None  # only a dry run has no turn
        actions = agent.actions if agent is not None else None
        if actions is not None and outcome.replayed is not None:  # its steps as they were: nothing made again
            for result in agent_results(turn.tool_rounds):
                display.note(step_line(result))
            if turn.outcome == "undone":
                display.note(messages.AGENT_REPLAYED_UNDONE.render())
        empty = messages.PROPOSAL_BELOW if mode == "edit" else messages.EMPTY_ANSWER
        display.finish(turn.response or empty.render())
        if turn.grounding:  # live or replayed: the sources the answer cites, as recorded
            display.sources(sources_markdown(turn.grounding))
        if outcome.replayed is not None:
            footer = report.replay_footer(turn, outcome.replayed.at)
        else:
            assert outcome.plan is not None  # a turn that was sent has its plan
            footer = report.footer(turn, outcome.plan, outcome.model)
        if agent is not None and agent.actions.live is None and agent.actions.changes and outcome.replayed is None:
            display.footer(footer)
            return agent.proposal(outcome.conversation, turn.index)
        if mode != "edit" or turn.proposal_source is None:
            display.footer(footer)
            return None
        proposed = Proposed(outcome.conversation, turn, outcome.target, instruction, outcome.replayed is not None)
        return show_proposal(proposed, frontend, self._place(), lambda: display.footer(footer))

    def _place(self) -> Place:
        return Place(
            staged=self.shell_state.staged,
            latest=self.shell_state.latest,
            current_source=lambda cell_id: self._frontend().current_source(cell_id),  # at the click: the view then
            saved=self._saved,
            prefill=self.shell.set_next_input,
            ran_source=self.session.executed.ran.get,
        )

    def _cell_for_filename(self, filename: str):
        """A traceback frame's file -> the cell it was compiled from (id, label)."""
        from ..sources.last_error import execution_count_of

        number = execution_count_of(self.shell, filename)
        cell = self.session.executed.by_execution_count(number) if number is not None else None
        return (cell.id, cell.label) if cell else (None, None)

    @plain_help("%%gemini [COMMAND] [VALUE] [-c NAME] [--all]")
    @magic_arguments()
    @argument(
        "command",
        nargs="?",
        default="status",
        choices=list(COMMANDS),
        metavar="COMMAND",
        help="what to do, one of the commands above (default: status)",
    )
    @argument(
        "value",
        nargs="?",
        metavar="VALUE",
        help="model name (model, prices), state mode, conversation to reset, on/off for debug, or the "
        'notebook\'s rules (rules: "TEXT" in quotes, or clear)',
    )
    @argument(
        "-c", "--conversation", default=None, metavar="NAME", help="conversation for history/tokens (default: all)"
    )
    @argument("--all", action="store_true", help="with reset or forget: every conversation")
    @line_magic
    @documented(HELP)
    def gemini(self, line):
        if self._inside_agent_run("gemini"):
            return
        try:
            args = parse_argstring(self.gemini, line)
        except UsageError as exc:
            NotebookDisplay.error(messages.USAGE.render(error=exc, magic="gemini"))
            return
        try:
            self._open_record()
        except Exception as exc:  # an unusable record location must not break the other commands
            NotebookDisplay.error(messages.RECORD_UNUSABLE.render(error=redact(f"{type(exc).__name__}: {exc}")))
        keeper = self.session.keeper
        convs = chosen(self.session.conversations, args.conversation)
        if convs is None:
            NotebookDisplay.error(messages.NO_CONVERSATION.render(name=args.conversation))
            return
        COMMANDS[args.command].run(
            Call(self, self.shell_state, args, keeper, convs, self._frontend, self.gemini.__doc__ or "")
        )
