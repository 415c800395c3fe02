"""The IPython face of genai_magics: the magics' flags in, session calls out.

Not yet thin: besides that it chooses each run's frontend, stages Apply where a cell cannot
wait and shows proposals. The --error/--vars/--interpolate context comes from
``sources/explicit.py``; the %gemini subcommands are the table in ``line_commands.py``.
"""

from __future__ import annotations

import argparse
import inspect
import os
import signal
import sys
import threading
import traceback
from collections.abc import Awaitable, Callable
from contextlib import contextmanager
from typing import Any

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from traitlets import Bool, Dict, Enum, Float, Int, Unicode

from .engine.cells import WHOLE_NOTEBOOK
from .engine.conversation import STATE_MODES, Mode
from .engine.errors import UserError
from .engine.redaction import redact, remember_keys
from .frontends import frontend as frontends
from .frontends.cell_writer import EDITED_BEFORE_RERUN, strip_applied_marker
from .frontends.companion import Companion
from .frontends.frontend import Kind
from .frontends.notebook_edit import NotebookWriter
from .frontends.notebook_view import MergedView, notebook_path_from
from .frontends.terminal import typed_source
from .gemini.models import DEFAULT_MODEL
from .gemini.transport import ClientSettings
from .line_commands import COMMANDS, HELP, Call
from .line_syntax import split_prompt
from .persistence.replay import REPLAY_MODES
from .session import Session, Settings, TurnRequest
from .sources.explicit import explicit_context
from .ui import report
from .ui.display import NotebookDisplay, TerminalDisplay
from .ui.proposal import ProposalController, Status


def _turn_arguments(magic: str, form: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The flags shared by %%gemini_ask and %%gemini_edit, and the help of ``form``
    ("cell": the prompt is the cell body; "line": the words after the flags)."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        decorators = [
            magic_arguments(),
            argument(
                "--cell",
                metavar="REF",
                help="the document: an execution count (5 or In[5]), a cell id, or -1 for the most recent code cell",
            ),
            argument("--notebook", action="store_true", help="the whole notebook is the document"),
            argument(
                "-c",
                "--conversation",
                default="default",
                metavar="NAME",
                help="which conversation to continue (default: 'default')",
            ),
            argument("--new", action="store_true", help="start this conversation over"),
            argument("--model", metavar="MODEL", help="model for this turn (default: %%config GeminiMagics.model)"),
            argument(
                "--state",
                choices=STATE_MODES,
                metavar="MODE",
                help="where the conversation lives: contents (kept by the kernel) or interactions (kept by the server)",
            ),
            argument(
                "--no-context", action="store_true", help="send no other cells (and for an ask, no document either)"
            ),
            argument(
                "--dry-run",
                action="store_true",
                help="show the exact request; send nothing, change nothing, no key needed",
            ),
            argument(
                "--interpolate",
                action="store_true",
                help="expand {name} and $name from the user namespace in the prompt "
                "(and send a summary of each {name} variable)",
            ),
            argument(
                "--error",
                action="store_true",
                help="send the session's last exception (trimmed traceback); "
                "an empty prompt asks to explain and fix it",
            ),
            argument(
                "--vars",
                metavar="NAMES",
                help="send compact summaries of these variables, e.g. df,model (each only when it changed)",
            ),
            argument(
                "--rerun", action="store_true", help="ask Gemini again although this turn is in the notebook's record"
            ),
            argument(
                "--no-outputs",
                action="store_true",
                help="leave out what the document cell showed (its printed text, tables and images)",
            ),
            argument(
                "--outputs",
                metavar="CELLS",
                help="also send what these cells showed, e.g. 3,In[5] (the same REF as --cell, comma-separated)",
            ),
            argument("words", nargs="*", help=argparse.SUPPRESS if form == "cell" else "the prompt"),
        ]
        for decorator in reversed(decorators):
            func = decorator(func)
        parser = func.parser  # type: ignore[attr-defined]  # set by magic_arguments()
        parser.allow_abbrev = False  # a mistyped flag is an error, not a guess
        # argparse's own layout: IPython's formatter writes reST ('::', '<{a,b}>') that
        # %%gemini_edit? would show raw.
        parser.formatter_class = argparse.RawDescriptionHelpFormatter
        parser.description = inspect.cleandoc(parser.description or "")
        # argparse %-formats the usage: '%%' is one '%'.
        parser.usage = (
            f"%%%%{magic} [options]\n       the prompt: the lines below, in the cell body"
            if form == "cell"
            else f"%%{magic} [options] prompt words"
        )
        func.__doc__ = parser.format_help()
        return func

    return decorate


def _documented(doc: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A docstring made from a table (magic_arguments reads it for the magic's help)."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        func.__doc__ = doc
        return func

    return decorate


def _takes_value(magic) -> frozenset[str]:
    """The magic's flags that read a value (``--cell REF``), as its parser declares them."""
    return frozenset(o for a in magic.parser._actions for o in a.option_strings if a.nargs != 0)


@contextmanager
def _interruptible():
    """The stop button raises KeyboardInterrupt in the blocking request, also in an async
    (%%gemini_edit) cell, where ipykernel's own SIGINT handler waits for the coroutine to yield."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)


@magics_class
class GeminiMagics(Magics):
    """Stateful Gemini conversations about your notebook's cells."""

    shell: InteractiveShell  # IPython sets it when it registers the magics

    model = Unicode(DEFAULT_MODEL, help="Gemini model used when --model is not given").tag(config=True)
    state = Enum(list(STATE_MODES), default_value="contents", help="default state mode for new conversations").tag(
        config=True
    )
    max_document_bytes = Int(1_000_000, help="largest document (cell or notebook) sent, in bytes").tag(config=True)
    secondary_context_chars = Int(20_000, help="cap on the other cells sent as context, in characters").tag(config=True)
    max_chain_versions = Int(
        8,
        help="interactions mode: start a new server chain when it holds more full "
        "versions of the code than this (0: never)",
    ).tag(config=True)
    patches = Bool(
        True,
        help="send a small change made by hand as a patch against the version the model "
        "holds, instead of the whole document again (False: always the whole document)",
    ).tag(config=True)
    temperature = Float(
        None, allow_none=True, help="sampling temperature sent with every turn (None: the model's default)"
    ).tag(config=True)
    retry_attempts = Int(5, help="attempts for 429 and 5xx answers (the SDK's HttpRetryOptions)").tag(config=True)
    timeout = Float(120.0, help="seconds to wait for an answer").tag(config=True)
    debug = Bool(False, help="show full tracebacks for unexpected errors").tag(config=True)
    max_var_chars = Int(2_000, help="cap on each variable summary sent with --vars, in characters").tag(config=True)
    persist = Bool(True, help="keep each notebook's conversations in a record that outlives the kernel").tag(
        config=True
    )
    replay = Enum(
        list(REPLAY_MODES),
        default_value="auto",
        help="after a restart, show a recorded turn instead of asking again: auto, off, or only (never ask)",
    ).tag(config=True)
    record_location = Unicode(
        "user",
        help="where the record lives: 'user' (private, the Jupyter data dir), "
        "'notebook' (beside the .ipynb, to share or commit) or a file path",
    ).tag(config=True)
    apply_wait = Float(
        300.0, help="seconds a magic cell waits for Apply/Discard where only the running cell can be written (VS Code)"
    ).tag(config=True)
    max_prompt_bytes = Int(100_000, help="largest prompt accepted, in bytes (the cell body or the one-line words)").tag(
        config=True
    )
    cache = Enum(
        ["auto", "off"],
        default_value="auto",
        help="contents mode: keep the conversation's stable head (system instruction, document, "
        "context) in an explicit Gemini context cache when it is over the model's cache minimum and "
        "pays off; off: never",
    ).tag(config=True)
    cache_ttl = Float(600.0, help="seconds an explicit cache lives unless used (each use extends it)").tag(config=True)
    prices = Dict(
        help="prices per model overriding or adding to the table (US$ per 1M tokens): "
        '{"model": {"input": .., "cached_input": .., "output": .., "storage_hour": .., '
        '"cache_minimum": tokens}}'
    ).tag(config=True)

    record_images = Bool(
        False,
        help="the record keeps the images cells showed, not only their hashes and sizes "
        "(a contents conversation restored after a restart then need not send them again)",
    ).tag(config=True)
    max_output_chars = Int(4_000, help="cap on the text a cell showed, sent per cell, in characters").tag(config=True)
    max_images = Int(4, help="most images (cell outputs) sent in one turn; the others go with a later turn").tag(
        config=True
    )
    max_image_bytes = Int(
        1_000_000,
        help="largest image sent, in bytes: a larger one is downscaled (with Pillow) or, without Pillow, not sent",
    ).tag(config=True)

    def __init__(self, shell=None, kept=None, **kwargs):
        super().__init__(shell=shell, **kwargs)
        remember_keys()
        # ``kept``: what a %reload_ext carries over, so conversations and their buttons survive it
        self.session = kept.session if kept is not None else Session()
        self.staged: dict = kept.staged if kept is not None else {}  # magic cell id -> StagedApply
        self.latest: dict = kept.latest if kept is not None else {}  # conversation -> newest ProposalController
        self.bridge = None  # set by load_ipython_extension when the live bridge is available
        self.transformers: list[tuple[list, Callable]] = []  # (shell list, transformer) this load added
        # VS Code's companion extension, if this notebook's window has it (kept: old buttons write through it)
        self.companion = kept.companion if kept is not None else Companion(shell)
        self.session.view = self._view
        self.session.frontend_target = None

    @property
    def _terminal(self) -> bool:
        """Terminal IPython: no widgets, no rich outputs; the next prompt can be pre-filled."""
        # Not imported, the terminal shell cannot be this one; IPython.embed()'s shell is one (a subclass).
        terminal = sys.modules.get("IPython.terminal.interactiveshell")
        return terminal is not None and isinstance(self.shell, terminal.TerminalInteractiveShell)

    # -- what the kernel knows -------------------------------------------------
    def _view(self):
        """The freshest notebook view now (a click comes after the run that chose its frontend)."""
        return self._frontend().view

    def _live(self):
        """The bridge, if a live frontend is connected; else VS Code's companion, if it is there."""
        if self.bridge is not None and self.bridge.connected:
            return self.bridge
        return self.companion if self.companion.connected else None

    def _stale(self) -> bool:
        """The live view has not caught up with the cell that is running (a late snapshot)."""
        live, running = self._live(), self.session.record.running_id
        cell = self.session.record.by_id.get(running or "")
        return bool(live and cell and not live.is_fresh_for(cell.id, cell.source))

    def _frontend(self) -> frontends.Frontend:
        """What this run's frontend can do, decided once from what the kernel knows now."""
        ns = self.shell.user_ns if self.shell is not None else {}
        return frontends.choose(
            terminal=self._terminal,
            bridge=self._live(),
            bridge_fresh=not self._stale(),
            record=self.session.record,
            file_view=MergedView(self.session.record, notebook_path_from(os.environ, ns)),
            staged=self.staged,
            set_next_input=lambda text: self.shell.set_next_input(text, replace=True),
            apply_wait=self.apply_wait,
        )

    def pre_run_cell(self, info) -> None:
        remember_keys()  # a cell may set a new key: the one before it stays secret too
        cell_id = getattr(info, "cell_id", None)
        if cell_id is None and not info.store_history:
            # A frontend's own helper code (VS Code's variable viewer sends these), not a user's cell.
            self.session.record.running_id = None
            self.session.outputs.start(None)
            return
        # IPython has already counted this cell when it announces it (post_run_cell confirms).
        count = self.shell.execution_count - 1 if info.store_history else None
        source = typed_source(info.raw_cell) if self._terminal else info.raw_cell
        self.session.record.record(cell_id, source, count)
        self.companion.follow(cell_id)
        self.session.outputs.start(self.session.record.running_id)

    def post_run_cell(self, result) -> None:
        running = self.session.record.running_id
        if running and result.execution_count is not None:
            self.session.record.set_count(running, result.execution_count)

    def _replay(self):
        """The session's record, pointed at this notebook with the current settings; its pending lines shown."""
        ns = self.shell.user_ns if self.shell is not None else {}
        replay = self.session.replay
        replay.configure(self.replay, self.persist, self.record_location, notebook_path_from(os.environ, ns))
        replay.images = self.record_images
        replay.restore(self.session.conversations)
        self.session.adopt_recorded_caches(self._settings().client)
        while replay.notes:
            NotebookDisplay.error(replay.notes.pop(0))
        return replay

    def at_exit(self) -> None:
        self.session.at_exit(self._settings())

    def _saved(self, controller) -> None:
        """Apply, Discard or Undo happened: the record says so too."""
        note = self.session.replay.outcome_changed(controller.conversation)
        if note:
            NotebookDisplay.error(note)

    def _settings(self) -> Settings:
        return Settings(
            model=self.model,
            state=self.state,
            max_document_bytes=self.max_document_bytes,
            secondary_context_chars=self.secondary_context_chars,
            max_chain_versions=self.max_chain_versions,
            patches=self.patches,
            temperature=self.temperature,
            client=ClientSettings(retry_attempts=self.retry_attempts, timeout_s=self.timeout),
            cache=self.cache,
            cache_ttl_s=self.cache_ttl,
            prices=dict(self.prices),
            max_output_chars=self.max_output_chars,
            max_images=self.max_images,
            max_image_bytes=self.max_image_bytes,
        )

    def _storage_costs(self) -> list[tuple[str, float, float | None]]:
        """(model, token-hours, dollars or None) of explicit cache storage so far."""
        from .gemini.pricing import price_for, storage_cost

        out = []
        for model, hours in self.session.caches.storage_token_hours().items():
            try:
                price = price_for(model.removeprefix("models/"), self.prices)
            except ValueError:
                price = None
            out.append((model.removeprefix("models/"), hours, storage_cost(price, hours) if price else None))
        return out

    def _write_staged(self) -> bool:
        """A staged Apply for this very cell, as it was when staged: write it now, send nothing.

        Committed first: a proposal discarded, reset or made stale since the click is never written.
        """
        running = self.session.record.running_id or ""
        staged = self.staged.pop(running, None)
        if staged is None:
            return False
        cell = self.session.record.by_id.get(running)
        if cell is None or cell.source != staged.cell_source:
            staged.done(EDITED_BEFORE_RERUN)  # a new instruction is a new request
            return False
        if not staged.done(None):
            return False  # the widget says why (discarded, reset, a newer one applied)
        self.shell.set_next_input(staged.text, replace=True)
        self.session.record.set_source(running, staged.text)
        print("genai_magics: the staged proposal replaces this cell now; no request was sent.")
        return True

    def _current_source(self, cell_id: str):
        """A cell's code now (without the instruction line Apply adds in running-cell frontends)."""
        view = self._view()
        for cell in view.cells():
            if cell.id == cell_id:
                return strip_applied_marker(cell.source)
        if view is self.bridge or view is self.companion:
            return None  # the live notebook no longer has it
        cell = self.session.record.by_id.get(cell_id)
        return strip_applied_marker(cell.source) if cell else None

    # -- the magics ----------------------------------------------------------
    @no_var_expand  # {name} and $name are expanded only with --interpolate
    @_turn_arguments("gemini_ask", "cell")
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
    @_turn_arguments("gemini_ask", "line")
    @line_magic("gemini_ask")  # type: ignore[arg-type]  # IPython types a named marker as taking Never
    def gemini_ask_line(self, line):
        """Ask Gemini about the current code in one line: the words after the flags are
        the prompt (%gemini_ask --error alone asks to explain the last error)."""
        return self._turn("ask", self.gemini_ask_line, line, None)

    @no_var_expand
    @_turn_arguments("gemini_edit", "cell")
    @cell_magic("gemini_edit")  # type: ignore[arg-type]  # IPython types a named marker as taking Never
    def gemini_edit(self, line, cell):
        """Ask Gemini to change the current code; the cell body is the instruction.

        The proposal is shown as a diff with Apply / Discard buttons (Undo after
        Apply). What Apply does depends on the frontend; the widget says so.
        """
        return self._turn("edit", self.gemini_edit, line, cell)

    @no_var_expand
    @_turn_arguments("gemini_edit", "line")
    @line_magic("gemini_edit")  # type: ignore[arg-type]  # IPython types a named marker as taking Never
    def gemini_edit_line(self, line):
        """Ask Gemini to change the current code in one line: the words after the flags
        are the instruction (%gemini_edit --error alone asks to fix the last error)."""
        return self._turn("edit", self.gemini_edit_line, line, None)

    def _turn(self, mode: Mode, magic, line: str, cell: str | None) -> Awaitable[None] | None:
        """Run one turn; what IPython gets back is None, or an awaitable while a proposal waits for its click."""
        if self._write_staged():
            return None
        # a flag's name after the first word of the prompt is prompt text (also on a %% line)
        line, words = split_prompt(line, _takes_value(magic))
        try:
            args = parse_argstring(magic, line)
        except UsageError as exc:
            NotebookDisplay.error(f"{exc} (see {'%%' if cell is not None else '%'}gemini_{mode}?)")
            return None
        settings = self._settings()
        display = TerminalDisplay(mode) if self._terminal else NotebookDisplay(mode)
        body = "\n".join(part for part in (words, " ".join(args.words), cell or "") if part)
        size = len(body.encode("utf-8", "surrogatepass"))
        if size > self.max_prompt_bytes:
            display.error(
                f"the prompt is {size:,} bytes, over the cap of {self.max_prompt_bytes:,}; nothing was sent "
                "(%config GeminiMagics.max_prompt_bytes; put big text in a cell and use --cell or --vars)"
            )
            return None
        frontend = self._frontend()
        self.session.frontend_target = frontend.default_target
        try:
            asked = explicit_context(
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
        request = TurnRequest(
            mode=mode,
            prompt=asked.prompt,
            conversation=args.conversation,
            cell=args.cell,
            notebook=args.notebook,
            new=args.new,
            model=args.model,
            state=args.state,
            no_context=args.no_context,
            dry_run=args.dry_run,
            extra_pieces=asked.pieces,
            preferred_target=asked.failing_cell,
            rerun=args.rerun,
            outputs=not args.no_outputs,
            output_cells=tuple(ref.strip() for ref in (args.outputs or "").split(",") if ref.strip()),
        )
        if self._stale():
            display.note(
                "the live notebook view has not caught up with this cell; "
                "using the kernel's record of executed cells for this turn"
            )
        try:
            self._replay()
            if not args.dry_run:
                display.start(f"asking {request.model or settings.model}")
            with _interruptible():
                outcome = self.session.run(request, settings, display)
        except UserError as exc:
            display.clear_progress()
            if self.debug and exc.__cause__ is not None:  # an API failure: its traceback on request
                print(redact("".join(traceback.format_exception(exc.__cause__))), end="", file=sys.stderr)
            display.error(str(exc))
            return None
        except Exception as exc:  # a bug of ours: one line unless debugging
            display.clear_progress()
            if self.debug:
                print(redact(traceback.format_exc()), end="", file=sys.stderr)
            display.error(redact(f"unexpected {type(exc).__name__}: {exc} (%gemini debug on shows the traceback)"))
            return None
        if outcome.request is not None and outcome.plan is not None:  # a dry run
            display.request(outcome.request, outcome.plan.state_mode, outcome.cache_plan)
            return None
        turn = outcome.turn
        assert turn is not None  # only a dry run has no turn
        display.finish(turn.response or ("_(proposal below)_" if mode == "edit" else "_(empty answer)_"))
        if outcome.replayed is not None:
            footer = report.replay_footer(turn, outcome.replayed.at)
        else:
            assert outcome.plan is not None  # a turn that was sent has its plan
            footer = report.footer(turn, outcome.plan, outcome.model)
        if mode == "edit" and turn.proposal_source is not None:
            return self._show_proposal(frontend, outcome, asked.prompt, lambda: display.footer(footer))
        display.footer(footer)
        return None

    def _cell_for_filename(self, filename: str):
        """A traceback frame's file -> the cell it was compiled from (id, label)."""
        from .sources.last_error import execution_count_of

        number = execution_count_of(self.shell, filename)
        cell = self.session.record.by_execution_count(number) if number is not None else None
        return (cell.id, cell.label) if cell else (None, None)

    def _show_proposal(self, frontend: frontends.Frontend, outcome, instruction: str, footer) -> Awaitable[None] | None:
        """Show the diff and buttons; where only the running cell can be written, wait here."""
        from IPython.display import display

        whole = outcome.target is None  # --notebook: the notebook's cells, not one of them
        cell_id = str(WHOLE_NOTEBOOK) if outcome.target is None else outcome.target.id
        turn = outcome.turn
        if outcome.replayed:
            frontend = frontend.without_waiting(self.staged)
        writer = frontend.writer(instruction, (turn.base_source or "", turn.proposal_source or "") if whole else None)
        controller = ProposalController(
            conversation=outcome.conversation,
            turn=outcome.turn,
            cell_id=cell_id,
            writer=writer,
            # a --notebook edit through the bridge: the document is the cells it manages, not one cell
            current_source=writer.current_source if isinstance(writer, NotebookWriter) else self._current_source,
        )
        if outcome.replayed:
            replayed = report.replayed_proposal(outcome.turn, self._current_source(cell_id))
            if outcome.turn.outcome == "proposed":  # still open: say what Apply does here
                replayed += " " + writer.describe_apply()
            controller.status = Status(replayed)
        controller.listeners.append(self._saved)
        self.latest[outcome.conversation.name] = controller
        if frontend.kind is Kind.TERMINAL:
            footer()
            print(controller.diff or "(no change)")
            self.shell.set_next_input(outcome.turn.proposal_source)
            print(f"genai_magics: {controller.message}")
            return None
        from .ui.widgets import ProposalWidget

        display(ProposalWidget(controller))
        footer()
        return frontend.wait_for_choice(controller, instruction, self.staged)

    @magic_arguments()
    @argument(
        "command",
        nargs="?",
        default="status",
        choices=list(COMMANDS),
        help="what to do (default: status)",
    )
    @argument("value", nargs="?", help="model name, state mode, conversation to reset, or on/off for debug")
    @argument(
        "-c", "--conversation", default=None, metavar="NAME", help="conversation for history/tokens (default: all)"
    )
    @argument("--all", action="store_true", help="with reset or forget: every conversation")
    @line_magic
    @_documented(HELP)
    def gemini(self, line):
        try:
            args = parse_argstring(self.gemini, line)
        except UsageError as exc:
            NotebookDisplay.error(f"{exc} (see %gemini?)")
            return
        try:
            replay = self._replay()
        except Exception as exc:  # an unusable record location must not break the other commands
            NotebookDisplay.error(redact(f"conversation record: {type(exc).__name__}: {exc}"))
            replay = self.session.replay
        convs = self.session.conversations
        chosen = (
            [convs[args.conversation]]
            if args.conversation in convs
            else ([] if args.conversation else list(convs.values()))
        )
        if args.conversation and not chosen:
            NotebookDisplay.error(f"no conversation named {args.conversation!r}")
            return
        COMMANDS[args.command].run(Call(self, args, replay, chosen))
