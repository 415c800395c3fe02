"""The magics' options (``%config GeminiMagics.<name>``) and the turn settings they make.

A base class of ``GeminiMagics``: the traits are looked up on the magics object, so
``%config GeminiMagics.model = ...`` and an ``ipython_config.py`` set them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from IPython.core.magic import Magics
from traitlets import Bool, Dict, Enum, Float, Int, List, TraitError, TraitType, Unicode, validate

from .. import messages
from ..engine.agent import MAX_AGENT_STEPS
from ..engine.conversation import STATE_MODES
from ..engine.errors import UserError
from ..engine.tools import MAX_TOOL_CALLS, TOOL_NAMES, unknown_tools
from ..frontends.notebook_view import notebook_path_from
from ..gemini.budget import Caps, check_cap
from ..gemini.client import ClientSettings
from ..gemini.models import DEFAULT_MODEL
from ..gemini.pricing import check_overrides
from ..persistence.keeper import REPLAY_MODES, RecordSettings
from ..turn.requests import Settings


class Dollars(TraitType[float | None, Any]):
    """A US$ cap: None (off, the default) or a number >= 0; anything else is refused in the catalogue's
    one line (``%config`` prints it) and the cap stays as it was."""

    default_value = None
    allow_none = True
    info_text = "US$ (a number >= 0) or None"

    def validate(self, obj: Any, value: Any) -> float | None:
        try:
            return check_cap(self.name or "", value)
        except UserError as exc:
            raise TraitError(_line(exc)) from None


def _line(exc: UserError) -> str:
    """A refused setting as the one line the user reads (``%config`` prints it after ``ERROR:root:``)."""
    return messages.PREFIX + str(exc)


class GeminiOptions(Magics):
    """What ``%config GeminiMagics`` lists (registered only as the magics themselves)."""

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
        '"cache_minimum": tokens}}, each optionally for a period ("from"/"until": YYYY-MM-DD, both days '
        "included), or a list of such periods"
    ).tag(config=True)
    max_turn_cost = Dollars(
        help="US$ a turn may cost (None: no cap): a request whose estimated cost would take the turn past it "
        "is not sent"
    ).tag(config=True)
    max_session_cost = Dollars(
        help="US$ this kernel's turns may cost together (None: no cap): a request whose estimated cost would "
        "take the session past it is not sent"
    ).tag(config=True)

    search = Bool(
        False,
        help="every turn offers Gemini's Google Search and URL context, as --search does: the answer lists its "
        "sources, and each search is billed at the model's rate",
    ).tag(config=True)
    rules = Enum(
        ["on", "off"],
        default_value="on",
        help="the notebook's rules go with every conversation, sent once: the AGENTS.md files from the "
        "notebook's folder up to the project root and the notebook's own (%gemini rules); off: never",
    ).tag(config=True)
    max_rules_chars = Int(20_000, help="cap on each source of rules (a file, the notebook's), in characters").tag(
        config=True
    )

    @validate("prices")
    def _valid_prices(self, proposal: Any) -> Any:
        try:
            check_overrides(proposal["value"])
        except UserError as exc:
            raise TraitError(_line(exc)) from None
        return proposal["value"]

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

    tools = List(
        Unicode(),
        default_value=list(TOOL_NAMES),
        help="the functions the model may call to read the notebook (read-only): "
        + ", ".join(TOOL_NAMES)
        + " (default: all; [] offers none)",
    ).tag(config=True)
    max_tool_calls = Int(
        MAX_TOOL_CALLS, help="function calls a turn answers at most; then the model is asked to answer without"
    ).tag(config=True)

    agent_approve = Enum(
        ["runs", "all", "none"],
        default_value="runs",
        help="%%gemini_agent: what waits for your click: runs (each run_cell; writes are made at once), "
        "all (every change too) or none (nothing waits)",
    ).tag(config=True)
    max_agent_steps = Int(
        MAX_AGENT_STEPS,
        help="%%gemini_agent: function calls (the agent's and the read-only ones) one turn answers at most; "
        "then the model is asked to answer without",
    ).tag(config=True)

    @validate("tools")
    def _known_tools(self, proposal):
        unknown = unknown_tools(proposal["value"])
        if unknown:
            raise TraitError(messages.UNKNOWN_TOOLS.render(names=", ".join(unknown), known=", ".join(TOOL_NAMES)))
        return proposal["value"]

    def _start_path(self) -> Path | None:
        """The notebook's file as the kernel's environment names it (where it was when the kernel started)."""
        return notebook_path_from(os.environ, self.shell.user_ns if self.shell is not None else {})

    def _notebook_path(self) -> Path | None:
        """The notebook's file now."""
        return self._located(self._start_path())

    def _located(self, start: Path | None) -> Path | None:
        """The notebook's file now, from where it was when the kernel started (``GeminiMagics``: as a live
        frontend named it last)."""
        return start

    def _renamed_from(self, path: Path | None) -> tuple[tuple[Path, ...], str | None]:
        """The names the notebook at ``path`` had before, as a frontend saw it renamed, and what the frontend's
        cell ids start with now where they name the file (``GeminiMagics``: VS Code's)."""
        return (), None

    def _settings(self) -> Settings:
        start = self._start_path()
        notebook = self._located(start)
        formerly, cells = self._renamed_from(notebook)
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
            tools=tuple(n for n in TOOL_NAMES if n in self.tools) if self.max_tool_calls > 0 else (),
            max_tool_calls=self.max_tool_calls,
            max_agent_steps=self.max_agent_steps,
            agent_approve=self.agent_approve,
            max_var_chars=self.max_var_chars,
            record=RecordSettings(
                self.replay,
                self.persist,
                self.record_location,
                notebook,
                self.record_images,
                start,
                formerly,
                cells,
            ),
            caps=Caps(self.max_turn_cost, self.max_session_cost),
            search=self.search,
            rules=self.rules,
            max_rules_chars=self.max_rules_chars,
        )
