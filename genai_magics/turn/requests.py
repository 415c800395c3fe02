"""The values a turn is made of: its settings, its request, what it asks of the frontend and the
display, its outcome, and the frozen hand-offs between its stages (resolve, plan, send)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..engine.agent import AGENT_FUNCTIONS, MAX_AGENT_STEPS
from ..engine.cells import Cell, Document
from ..engine.context import ContextPiece
from ..engine.conversation import Conversation, Mode, StateMode, Turn, TurnPlan, Usage
from ..engine.edits import Edits
from ..engine.grounding import Grounding
from ..engine.replay import TurnKey, TurnMeta
from ..engine.tools import MAX_TOOL_CALLS, TOOL_NAMES, ToolRound
from ..frontends.notebook_view import ExecutedCells, NotebookView
from ..gemini.budget import Caps
from ..gemini.client import ClientSettings
from ..gemini.pricing import Price
from ..persistence.keeper import RecordSettings
from ..sources.outputs import OutputPieces
from ..sources.tools import NotebookTools


@dataclass(frozen=True)
class Settings:
    model: str
    state: StateMode
    max_document_bytes: int = 1_000_000
    secondary_context_chars: int = 20_000
    max_chain_versions: int = 8
    patches: bool = True  # a small hand edit goes as a patch
    temperature: float | None = None
    client: ClientSettings = ClientSettings()
    cache: str = "auto"  # explicit context caching: "auto" or "off"
    cache_ttl_s: float = 600.0
    prices: dict[str, dict[str, Any]] = field(default_factory=dict)  # overrides of gemini/pricing.py
    max_output_chars: int = 4_000  # text a cell showed, per cell
    max_images: int = 4  # images sent per turn
    max_image_bytes: int = 1_000_000  # a larger image is downscaled (Pillow) or not sent
    tools: tuple[str, ...] = TOOL_NAMES  # the functions the model may call (engine/tools.py)
    max_tool_calls: int = MAX_TOOL_CALLS  # per turn; then it is asked to answer without
    max_agent_steps: int = MAX_AGENT_STEPS  # an agent turn's calls (read-only ones included); then as above
    agent_approve: str = "runs"  # what of an agent turn waits for the user's click: runs, all, none
    max_var_chars: int = 2_000  # inspect_variable's summary, as --vars
    record: RecordSettings = RecordSettings()  # where the record lives (none: no notebook path, no file named)
    caps: Caps = Caps()  # US$ a turn and the session may cost (max_turn_cost, max_session_cost)
    search: bool = False  # every turn offers Google Search, as --search does
    rules: str = "on"  # the notebook's rules (AGENTS.md, its metadata) go with the conversation; "off": never
    max_rules_chars: int = 20_000  # each source of rules cut at this many characters


@dataclass(frozen=True)
class TurnRequest:
    mode: Mode
    prompt: str
    conversation: str = "default"
    cell: str | None = None
    notebook: bool = False
    new: bool = False
    model: str | None = None
    state: StateMode | None = None
    no_context: bool = False
    dry_run: bool = False
    extra_pieces: tuple[ContextPiece, ...] = ()  # asked for explicitly: the last error, variables
    preferred_target: str | None = None  # a cell id to use when no --cell is given (the failing cell)
    rerun: bool = False  # ask again although a recorded turn matches
    outputs: bool = True  # what the document cell showed goes along (--no-outputs: not)
    output_cells: tuple[str, ...] = ()  # --outputs: other cells whose outputs go along
    tools: bool = True  # --no-tools: no function offered this turn
    agent: bool = False  # %%gemini_agent: the agent's functions offered too (an ask that may act)
    search: bool = False  # --search: Gemini's google_search and url_context offered too

    def flags(self) -> tuple[str, ...]:
        """The flags that make a turn a different turn (for replay)."""
        named = (
            ("--notebook", self.notebook),
            ("--no-context", self.no_context),
            ("--new", self.new),
            ("--no-outputs", not self.outputs),
            ("--no-tools", not self.tools),
            ("agent", self.agent),
            ("--search", self.search),
        )
        return (
            tuple(f for f, on in named if on)
            + ((f"--cell {self.cell}",) if self.cell else ())
            + ((f"--outputs {','.join(self.output_cells)}",) if self.output_cells else ())
        )


class TurnFrontend(Protocol):
    """What a turn asks of its frontend (``frontends.frontend.Frontend``), built once per turn."""

    @property
    def view(self) -> NotebookView: ...
    def default_target(self) -> Cell | None: ...


@dataclass(frozen=True)
class ExecutedOnly:
    """No frontend: the cells this kernel executed are the view (a Session used alone)."""

    view: ExecutedCells

    def default_target(self) -> Cell | None:
        return self.view.latest_document(exclude=self.view.running_id)


class TurnDisplay(Protocol):
    def chunk(self, text: str) -> None: ...
    def note(self, text: str) -> None: ...
    def error(self, text: str) -> None: ...
    def document(self, label: str | None, source: str) -> None: ...


@dataclass
class TurnOutcome:
    conversation: Conversation
    plan: TurnPlan | None  # None for a replayed turn
    model: str
    turn: Turn | None = None  # None for a dry run
    request: dict[str, Any] | None = None  # the dry run's exact request
    target: Cell | None = None  # the cell an edit proposal is for
    cache_plan: str | None = None  # the dry run's explicit-cache plan
    replayed: TurnMeta | None = None  # set when the turn was shown from the record, not asked


# -- the hand-offs between a turn's stages (pipeline.run) -------------------
@dataclass(frozen=True)
class Resolved:
    """A request resolved: its conversation, document, context and identity (None: a dry run)."""

    req: TurnRequest  # the prompt redacted and stripped
    model: str
    state: StateMode
    conv: Conversation
    doc: Document | None
    target: Cell | None
    shown: OutputPieces
    pieces: tuple[ContextPiece, ...]
    key: TurnKey | None
    tools: NotebookTools | None = None  # the functions offered this turn (None: none)

    @property
    def offered(self) -> tuple[str, ...]:
        return offered_functions(self.tools, self.req.agent)

    def plan(self, pieces: tuple[ContextPiece, ...], settings: Settings, restart: bool = False) -> TurnPlan:
        """What the conversation sends this turn with ``pieces`` as context (nothing is sent; ``restart``:
        on a new chain seeded with every earlier turn)."""
        return self.conv.plan_turn(
            self.req.mode,
            self.req.prompt,
            self.doc,
            pieces,
            self.state,
            settings.max_chain_versions,
            settings.patches,
            restart=restart,
        )


def offered_functions(tools: NotebookTools | None, agent: bool) -> tuple[str, ...]:
    """The functions a turn offers: the read-only ones, and an agent turn's four (none without ``tools``)."""
    if tools is None:
        return ()
    return tools.offered + (AGENT_FUNCTIONS if agent else ())


@dataclass(frozen=True)
class Planned:
    """What the turn sends, before anything is sent."""

    resolved: Resolved
    plan: TurnPlan
    pieces: tuple[ContextPiece, ...]  # the context this turn (images over the cap wait)
    price: Price | None  # the model's on the turn's day
    day: dt.date  # the turn's day: its price's


@dataclass(frozen=True)
class EditAnswer:
    """An edit turn's answer settled (turn/edit_answer.py)."""

    explanation: str
    source: str | None  # the whole proposal (sent, or built from the edits)
    edits: Edits | None = None  # what the model sent instead of the whole text


@dataclass(frozen=True)
class TurnResult:
    """What a turn's requests answered: the final text, their usage summed, the function calls on the way."""

    text: str
    usage: Usage  # summed over every request of the turn (``usage.requests`` of them)
    interaction_id: str | None = None
    rounds: tuple[ToolRound, ...] = ()  # the function calls answered on the way, one round a request
    grounding: Grounding | None = None  # --search: the searches of every request and the sources cited


@dataclass(frozen=True)
class Sent:
    """The answer, priced, with the plan it answers (a new one when the chain was lost)."""

    planned: Planned
    plan: TurnPlan
    result: TurnResult
    answer: EditAnswer | None  # an edit answer, settled

    @property
    def conv(self) -> Conversation:
        return self.planned.resolved.conv
