"""One kernel's assistant session: conversations, the notebook view, and turns.

This is where a magic's request becomes a planned, sent and recorded turn. It
imports no IPython: the magics hand it plain values and a display to talk to.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn, Protocol

from . import messages
from .edit_answer import EditAnswer, settle
from .engine.cells import WHOLE_NOTEBOOK, Cell, Document, WholeNotebook, defined_names, is_genai_magic, undecodable_at
from .engine.context import ContextPiece, secondary_context
from .engine.conversation import Conversation, Mode, StateMode, Turn, TurnPlan, Usage
from .engine.errors import UserError
from .engine.hashing import sha256_text
from .engine.outputs import images_estimate, piece_tokens
from .engine.record import TurnKey, TurnMeta
from .engine.redaction import MASK, redact, unmask
from .engine.text import estimate_tokens
from .frontends.cell_writer import strip_applied_marker
from .frontends.notebook_edit import notebook_text, unmask_cells
from .frontends.notebook_view import ExecutedCells, NotebookFileError, NotebookView
from .gemini.caching import CacheEntry, CacheStep, ContextCaches, worth_keeping
from .gemini.errors import describe, status_code
from .gemini.models import ModelInfo, available_models
from .gemini.pricing import Price, price_for, turn_cost
from .gemini.transport import (
    TRANSPORTS,
    CachedHead,
    ClientSettings,
    EditRetry,
    RetryNotices,
    Transport,
    TurnResult,
    make_client,
    request_settings,
)
from .gemini.warm_up import rehearse
from .persistence.replay import Replay
from .sources.outputs import OutputCapture, OutputPieces, cell_pieces, over_image_cap

# What the SDK reads from the environment when a client is made.
CLIENT_ENV = (
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_GENAI_API_VERSION",
)


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

    def flags(self) -> tuple[str, ...]:
        """The flags that make a turn a different turn (for replay)."""
        named = (
            ("--notebook", self.notebook),
            ("--no-context", self.no_context),
            ("--new", self.new),
            ("--no-outputs", not self.outputs),
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


# -- the hand-offs between a turn's stages (Session.run) ---------------------
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


@dataclass(frozen=True)
class Planned:
    """What the turn sends, before anything is sent."""

    resolved: Resolved
    plan: TurnPlan
    pieces: tuple[ContextPiece, ...]  # the context this turn (images over the cap wait)
    price: Price | None


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


def _no_key() -> bool:
    """The Gemini Developer API takes its key from GEMINI_API_KEY or GOOGLE_API_KEY; Vertex AI
    (GOOGLE_GENAI_USE_VERTEXAI) uses Google Cloud credentials instead (the SDK's rule)."""
    vertex = os.environ.get("GOOGLE_GENAI_USE_VERTEXAI", "").strip().lower() in ("1", "true")
    return not vertex and not (os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY"))


_FALLBACK_ID = re.compile(r"^(In\[\d+\]|run-\d+)$")  # no frontend cell id: named by execution count
_COUNT_REF = re.compile(r"^(?:In\s*\[\s*)?(\d+)\s*\]?$")
CONVERSATION_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


@dataclass
class Session:
    executed: ExecutedCells = field(default_factory=ExecutedCells)
    conversations: dict[str, Conversation] = field(default_factory=dict)
    caches: ContextCaches = field(default_factory=ContextCaches)
    replay: Replay = field(default_factory=Replay)  # the record of earlier kernels
    outputs: OutputCapture = field(default_factory=OutputCapture)  # what each cell showed in this kernel
    _clients: dict[str, tuple[Any, RetryNotices]] = field(default_factory=dict)
    # One client is built at a time: a turn that arrives during the warm-up waits for it.
    _client_lock: threading.Lock = field(default_factory=threading.Lock)

    # -- conversations -------------------------------------------------------
    def conversation(self, name: str, state: StateMode, new: bool = False) -> Conversation:
        """The named conversation, or a new one that is kept only once a turn succeeds."""
        if not CONVERSATION_NAME.match(name):
            raise UserError(messages.BAD_NAME.render(name=name))
        if new or name not in self.conversations:
            return Conversation(name=name, state_mode=state)
        return self.conversations[name]

    def reset(self, name: str | None = None) -> list[str]:
        names = list(self.conversations) if name is None else [name]
        reset = []
        for n in names:
            conv = self.conversations.pop(n, None)
            if conv is not None:
                conv.closed = True
                self.caches.release(conv)  # nothing stays billed for storage
                reset.append(n)
            self.replay.stop(n)
        return reset

    # -- the notebook --------------------------------------------------------
    def find_cell(self, view: NotebookView, ref: str, flag: str = "--cell") -> Cell:
        ref = ref.strip()
        running = self.executed.running_id
        if ref == "-1":
            cell = self.executed.latest_document(exclude=running)
            if cell is None:
                raise UserError(messages.NO_CODE_CELL_RUN.render(flag=flag))
            return self._freshest(view, cell)
        cells = list(view.cells())
        m = _COUNT_REF.match(ref)
        by_count = None
        if m:  # only this session's runs have an In[n]: a saved file's counts are another session's
            count = int(m.group(1))
            by_count = self.executed.by_execution_count(count) or next(
                (c for c in cells if c.execution_count == count), None
            )
            if not ref.isdigit():  # written In[n]: nothing else is meant
                if by_count is None:
                    raise UserError(messages.NO_CELL_WITH_COUNT.render(flag=flag, ref=ref, count=count))
                return self._freshest(view, by_count)
        exact = [c for c in cells if c.id == ref] or ([self.executed.by_id[ref]] if ref in self.executed.by_id else [])
        by_id = exact or [c for c in cells if c.id.startswith(ref)]
        if by_count is not None and by_id:
            raise UserError(messages.AMBIGUOUS_COUNT_OR_ID.render(flag=flag, ref=ref, cell=by_id[0].id[:12]))
        if by_count is not None:
            return self._freshest(view, by_count)
        if len(by_id) == 1:
            return self._freshest(view, by_id[0])
        if len(by_id) > 1:
            raise UserError(messages.AMBIGUOUS_ID.render(flag=flag, ref=ref, count=len(by_id)))
        if m:
            raise UserError(messages.NO_CELL_WITH_COUNT_OR_ID.render(flag=flag, ref=ref))
        raise UserError(messages.NO_SUCH_CELL.render(flag=flag, ref=ref))

    def _freshest(self, view: NotebookView, cell: Cell) -> Cell:
        """The same cell as the live view sees it now (unsaved edits included)."""
        for c in view.cells():
            if c.id == cell.id:
                return Cell(c.id, c.source, c.cell_type, c.execution_count or cell.execution_count)
        return cell

    def _label(self, view: NotebookView, cell: Cell) -> str:
        """How people find the cell: In[n] once it ran, else its position in the notebook."""
        ran = cell.execution_count or getattr(self.executed.by_id.get(cell.id), "execution_count", None)
        if ran is not None:
            return f"In[{ran}]"
        ids = [c.id for c in view.cells()]
        return f"cell #{ids.index(cell.id) + 1}" if cell.id in ids else cell.label

    def default_target(self, frontend: TurnFrontend) -> Cell | None:
        cell = frontend.default_target()
        return self._freshest(frontend.view, cell) if cell else None

    def follow_up_target(self, frontend: TurnFrontend, conv: Conversation | None) -> Cell | None:
        """A follow-up keeps its conversation's document (a `clear` run in between does not take
        its place), unless the newest run cell holds exactly the code the model has (the proposal
        run at the terminal's pre-filled prompt, or pasted into a new cell): the code lives there
        now. A new conversation takes the default. A document cell that now holds a genai magic
        (VS Code: a magic typed back into the cell Apply wrote) or is no code cell any more is no
        document: the code moves to a cell holding exactly what the model has, or the turn says
        why not."""
        view = frontend.view
        default = self.default_target(frontend)
        kept = self.kept_target(view, conv)
        if kept is not None and (kept.cell_type != "code" or is_genai_magic(kept.source)):
            kept = self._holding_model_code(view, conv) or self._no_document_left(view, kept)
        if kept is None or (
            default is not None
            and conv is not None
            and conv.sync.active_document_sha256 == sha256_text(strip_applied_marker(default.source))
        ):
            return default
        return kept

    def _holding_model_code(self, view: NotebookView, conv: Conversation | None) -> Cell | None:
        """The newest code cell that holds exactly the code the model has."""
        held = conv.sync.active_document_sha256 if conv else None
        cells = [c for c in view.cells() if c.cell_type == "code" and not is_genai_magic(c.source)]
        holding = [c for c in cells if held and sha256_text(strip_applied_marker(c.source)) == held]
        return holding[-1] if holding else None

    def _no_document_left(self, view: NotebookView, kept: Cell) -> NoReturn:
        where = "this cell" if kept.id == self.executed.running_id else self._label(view, kept)
        now = "holds a genai magic" if kept.cell_type == "code" else f"is a {kept.cell_type} cell"
        raise UserError(messages.MAGIC_IN_DOCUMENT.render(where=where, now=now))

    def kept_target(self, view: NotebookView, conv: Conversation | None) -> Cell | None:
        """The document a conversation already works on, while that cell still exists."""
        key = conv.document_key if conv else None
        if key is None or isinstance(key, WholeNotebook):
            return None
        # the view holds every cell the kernel knows (a live notebook: only those still there)
        kept = next((c for c in view.cells() if c.id == key), None)
        return self._edited_rerun(view, kept) if kept is not None and _FALLBACK_ID.match(key) else kept

    def _edited_rerun(self, view: NotebookView, cell: Cell) -> Cell:
        """Without cell ids every run is its own In[n]: the newest later run that defines every
        top-level name the document defines is the document edited and run again."""
        names = defined_names(cell.source)
        order = self.executed.order
        later = order[order.index(cell.id) + 1 :] if cell.id in order else []
        for key in reversed(later):
            run = self.executed.by_id[key]
            if names and key != self.executed.running_id and not is_genai_magic(run.source):
                if names <= defined_names(run.source):
                    return self._freshest(view, run)
        return cell

    def resolve_document(
        self, frontend: TurnFrontend, req: TurnRequest, settings: Settings, conv: Conversation | None = None
    ) -> tuple[Document | None, Cell | None]:
        view = frontend.view
        if req.notebook:
            try:  # the live view has every cell; otherwise the notebook file must be readable
                known = getattr(view, "notebook_cells", view.cells)()
            except NotebookFileError as exc:
                raise UserError(messages.NOTEBOOK_FLAG.render(why=exc)) from None
            cells = [c for c in known if not is_genai_magic(c.source) and c.id != self.executed.running_id]
            if not cells:
                raise UserError(messages.NOTEBOOK_FLAG.render(why=messages.NOTEBOOK_EMPTY.render()))
            doc = Document(key=WHOLE_NOTEBOOK, label="the notebook", source=notebook_text(cells))
            target = None
        else:
            if req.cell:
                target = self.find_cell(view, req.cell)
            elif req.preferred_target and req.preferred_target in self.executed.by_id:
                target = self._freshest(view, self.executed.by_id[req.preferred_target])
            else:
                target = self.follow_up_target(frontend, conv)
            if target is None:
                if req.mode == "edit":
                    raise UserError(messages.NOTHING_TO_EDIT.render())
                return None, None
            named = f"--cell {req.cell}" if req.cell else self._label(view, target)
            if target.cell_type != "code":
                raise UserError(messages.NOT_A_CODE_CELL.render(named=named, cell_type=target.cell_type))
            if is_genai_magic(target.source):
                raise UserError(messages.MAGIC_AS_DOCUMENT.render(named=named))
            # A cell Apply wrote in a running-cell frontend starts with the instruction line.
            doc = Document(key=target.id, label=self._label(view, target), source=strip_applied_marker(target.source))
        bad = undecodable_at(doc.source)
        if bad is not None:
            raise UserError(messages.DOCUMENT_NOT_TEXT.render(label=doc.label, at=bad))
        size = len(doc.source.encode("utf-8", "surrogatepass"))
        if size > settings.max_document_bytes:
            raise UserError(messages.DOCUMENT_OVER_CAP.render(size=size, cap=settings.max_document_bytes))
        if req.no_context and req.mode == "ask":
            return None, target
        return doc, target

    def context_pieces(
        self, view: NotebookView, req: TurnRequest, doc: Document | None, settings: Settings
    ) -> list[ContextPiece]:
        explicit = list(req.extra_pieces)
        if req.no_context or req.notebook:
            return explicit
        key = str(doc.key) if doc else None  # a cell's id: --notebook has no other context (above)
        exclude = {self.executed.running_id or "", key or ""}
        anchor = key if doc else self.executed.running_id  # the context is what is nearest to it
        piece = secondary_context(list(view.cells()), exclude, settings.secondary_context_chars, anchor)
        return ([piece] if piece else []) + explicit

    def output_pieces(
        self, view: NotebookView, req: TurnRequest, doc: Document | None, settings: Settings
    ) -> OutputPieces:
        """What the document cell showed (unless --no-outputs, --no-context or --notebook) and the --outputs cells."""
        cells = [self.find_cell(view, ref, "--outputs") for ref in req.output_cells]
        if doc is not None and not isinstance(doc.key, WholeNotebook) and req.outputs and not req.no_context:
            cells.insert(0, Cell(doc.key, doc.source, execution_count=None))
        pieces: list[ContextPiece] = []
        notes: dict[str, str] = {}
        for cell in {c.id: c for c in cells}.values():
            label = doc.label if doc is not None and cell.id == doc.key else self._label(view, cell)
            found = cell_pieces(self.outputs, cell.id, label, settings.max_output_chars, settings.max_image_bytes)
            pieces += found.pieces
            notes |= found.notes
        return OutputPieces(pieces, notes)

    # -- a turn --------------------------------------------------------------
    def _client(self, settings: ClientSettings):
        """One SDK client per settings and credentials: a new key or base URL takes effect at once."""
        env = tuple(os.environ.get(name, "") for name in CLIENT_ENV)
        key = hashlib.sha256(repr((settings, env)).encode()).hexdigest()  # no key text kept here
        if _no_key():
            raise UserError(messages.NO_API_KEY.render())
        with self._client_lock:
            if key not in self._clients:
                notices = RetryNotices(settings.retry_attempts, settings.timeout_s)
                try:
                    self._clients[key] = (make_client(settings, notices), notices)
                except ValueError as exc:  # the SDK's settings checks (Vertex AI project, options)
                    raise UserError(describe(exc, attempts=0, timeout_s=settings.timeout_s)) from None
            return self._clients[key]

    def warm_up(self, settings: Settings) -> threading.Thread:
        """Import the SDK, run its lazy first steps offline and build the client, in the
        background, so the first turn's request leaves as fast as the others'. The first turn
        waits for the client lock rather than importing in parallel; a failure here (no key
        yet) is left for that turn to report."""

        def build() -> None:
            with self._client_lock:
                try:
                    rehearse(settings.state, settings.model)
                except Exception:  # noqa: BLE001 - only a head start: the turn itself does the same work
                    pass
            try:
                self._client(settings.client)
            except UserError:
                pass

        thread = threading.Thread(target=build, name="genai_magics warm-up", daemon=True)
        thread.start()
        return thread

    def adopt_recorded_caches(self, settings: ClientSettings) -> None:
        """The explicit caches a killed kernel left to the restored conversations become this
        kernel's: used, replaced, or deleted on reset and at exit like its own, never doubled."""
        pending = [(c, self.replay.recorded_cache(c)) for c in self.conversations.values()]
        pending = [(c, r) for c, r in pending if r is not None and self.caches.name_of(c) is None]
        if not pending:
            return
        try:
            client, _ = self._client(settings)
        except UserError:  # no key: nothing can use or delete it; it ends with its TTL
            return
        for conv, recorded in pending:
            self.caches.adopt(conv, recorded, client)

    def at_exit(self, settings: Settings) -> list[str]:
        """Kernel exit: every explicit cache deleted but one the record on disk names whose storage
        until it expires costs less than making it again: the next kernel on this notebook (a restart,
        Run All) adopts it and uses it, or deletes it once it no longer matches. Returns the names deleted."""
        durable = self.replay.durable()  # waits for the last write's flush to the disk
        now = self.caches.clock()

        def keep(entry: CacheEntry) -> bool:
            recorded = self.replay.recorded_cache(entry.owner) if durable else None
            return (
                recorded is not None
                and recorded["name"] == entry.name
                and worth_keeping(price_for(entry.model, settings.prices), entry.expires - now)
            )

        return self.caches.release_all(keep=keep)

    def models(self, settings: ClientSettings) -> list[ModelInfo]:
        """The models the key can use (``client.models.list()``), or a UserError saying why not."""
        client, _ = self._client(settings)
        try:
            return available_models(client)
        except Exception as exc:
            raise UserError(describe(exc, attempts=settings.retry_attempts, timeout_s=settings.timeout_s)) from exc

    def run(
        self, req: TurnRequest, settings: Settings, display: TurnDisplay, frontend: TurnFrontend | None = None
    ) -> TurnOutcome:
        """A turn as its stages: resolve, replay or plan, (dry run), send, commit, persist.

        ``frontend``: the notebook as this turn's frontend sees it (None: the kernel's record)."""
        resolved = self.resolve(req, settings, display, frontend)
        replayed = self.replayed(resolved)
        if replayed is not None:
            return replayed
        planned = self.plan(resolved, settings, display)
        if resolved.req.dry_run:
            return self.dry_run(planned, settings)
        sent = self.send(planned, settings, display)
        turn = self.commit(sent, display)
        self.persist(sent, display)
        return TurnOutcome(sent.conv, sent.plan, resolved.model, turn=turn, target=resolved.target)

    # -- the stages of a turn ------------------------------------------------
    def resolve(
        self, req: TurnRequest, settings: Settings, display: TurnDisplay, frontend: TurnFrontend | None = None
    ) -> Resolved:
        """The conversation, document and context a request names, and the turn's identity."""
        frontend = frontend or ExecutedOnly(self.executed)
        # The prompt as the model gets it: no key, even one interpolated from a variable.
        req = replace(req, prompt=redact(req.prompt.strip()))
        if not req.prompt:
            raise UserError(messages.PROMPT_EMPTY.render())
        self.replay.restore(self.conversations)
        if not req.dry_run:
            self.replay.position(req.conversation, self._magic_cell())
        state = req.state or (
            self.conversations[req.conversation].state_mode
            if req.conversation in self.conversations and not req.new
            else settings.state
        )
        model = req.model or settings.model
        conv = self.conversation(req.conversation, state, req.new)
        doc, target = self.resolve_document(frontend, req, settings, None if req.new else conv)
        display.document(doc.label if doc else None, target.source if target else "")
        shown = self.output_pieces(frontend.view, req, doc, settings)
        pieces = self.context_pieces(frontend.view, req, doc, settings) + shown.pieces
        key = None
        if not req.dry_run:
            key = self._turn_key(
                req, model, state, doc, pieces, request_settings(state, req.mode, settings.temperature)
            )
        return Resolved(req, model, state, conv, doc, target, shown, tuple(pieces), key)

    def replayed(self, resolved: Resolved) -> TurnOutcome | None:
        """The recorded answer of an earlier kernel's same turn, or None: the turn is asked."""
        if resolved.key is None:  # a dry run is never replayed
            return None
        found = self.replay.replay(resolved.req.conversation, resolved.key, resolved.req.rerun)
        if found is None:
            return None
        restored, turn, meta = found
        _unmask_recorded(turn, resolved.doc)
        return TurnOutcome(restored, None, resolved.model, turn=turn, target=resolved.target, replayed=meta)

    def plan(self, resolved: Resolved, settings: Settings, display: TurnDisplay) -> Planned:
        """What goes to the model this turn, checked sendable and priced; nothing is sent."""
        pieces = resolved.pieces
        plan = self._plan_turn(resolved, pieces, settings)
        waiting = over_image_cap(plan.pieces, settings.max_images)
        if waiting:  # the later images go on a later turn: the model does not hold them yet
            pieces = tuple(p for p in pieces if p not in waiting)
            plan = self._plan_turn(resolved, pieces, settings)
            display.note(
                messages.IMAGES_WAIT.render(
                    count=len(waiting),
                    cap=settings.max_images,
                    then=(messages.IMAGES_LATER if settings.max_images > 0 else messages.IMAGES_NEVER).render(),
                )
            )
        going, kept = {p.key for p in plan.pieces}, {p.key for p in pieces}
        for (
            piece_key,
            line,
        ) in resolved.shown.notes.items():  # a downscaled image when it goes; a refused one every turn
            if piece_key in going or piece_key not in kept:
                display.note(line)
        unsendable(plan.payload)
        try:
            price = price_for(resolved.model, settings.prices)
        except ValueError as exc:
            raise UserError(str(exc)) from None
        return Planned(resolved, plan, pieces, price)

    def _plan_turn(self, resolved: Resolved, pieces: tuple[ContextPiece, ...], settings: Settings) -> TurnPlan:
        req = resolved.req
        return resolved.conv.plan_turn(
            req.mode, req.prompt, resolved.doc, pieces, resolved.state, settings.max_chain_versions, settings.patches
        )

    def _cache_step(self, planned: Planned, transport: Transport, settings: Settings) -> CacheStep:
        conv = planned.resolved.conv
        return self.caches.step(
            conv, transport, planned.plan, conv.history, settings.cache, planned.price, settings.cache_ttl_s
        )

    def dry_run(self, planned: Planned, settings: Settings) -> TurnOutcome:
        """The exact request and cache plan the turn would send, sending nothing."""
        plan, model = planned.plan, planned.resolved.model
        transport = TRANSPORTS[plan.state_mode](None, model, settings.temperature)
        step = self._cache_step(planned, transport, settings)
        request = transport.request(plan, planned.resolved.conv.history, _planned_head(step))
        return TurnOutcome(
            planned.resolved.conv,
            plan,
            model,
            request=request,
            target=planned.resolved.target,
            cache_plan=" · ".join(
                filter(None, (step.describe(settings.cache_ttl_s), images_estimate(plan.pieces, model)))
            ),
        )

    def send(self, planned: Planned, settings: Settings, display: TurnDisplay) -> Sent:
        """The turn sent (cache step, lost-chain restart, an edit answer settled), priced; any
        failure leaves the conversation as it was."""
        conv, plan, model = planned.resolved.conv, planned.plan, planned.resolved.model
        client, notices = self._client(settings.client)
        transport = TRANSPORTS[plan.state_mode](client, model, settings.temperature)
        if plan.new_chain_digest and conv.last_interaction_id:
            display.note(messages.CHAIN_TOO_LONG.render(versions=len(conv.chain_versions)))
        notices.start(display.note, transport.honours_retry_after)
        answer = None
        try:
            step = self._cache_step(planned, transport, settings)

            def replan() -> TurnPlan:
                return self._plan_turn(planned.resolved, planned.pieces, settings)

            result, plan = self._send(transport, conv, plan, display, settings, replan, step)
            result = _on_wire(result, notices)
            if plan.mode == "edit":
                sent = plan

                def resend(retry: EditRetry) -> TurnResult:
                    try:
                        again = transport.send(sent, conv.history, display.chunk, self.caches.head(conv), retry)
                    except KeyboardInterrupt:
                        raise UserError(messages.STOPPED.render()) from None
                    except Exception as exc:
                        raise UserError(self._failure(exc, settings)) from exc
                    return _on_wire(again, notices)

                result, answer = settle(result, plan.document, resend, display.note)
        except BaseException:
            if self.conversations.get(conv.name) is not conv:  # a conversation that never started keeps no cache
                self.caches.release(conv)
            raise
        finally:
            notices.start(None)
        return Sent(planned, plan, replace(result, usage=_priced(result.usage, planned.price)), answer)

    def commit(self, sent: Sent, display: TurnDisplay) -> Turn:
        """The answer recorded as the conversation's turn; the conversation exists from now on."""
        conv = sent.conv
        turn = self._commit(conv, sent.plan, sent.result, display, sent.answer)
        replaced = self.conversations.get(conv.name)
        if replaced is not None and replaced is not conv:  # --new started it over
            replaced.closed = True
            self.caches.release(replaced)
        self.conversations[conv.name] = conv  # a conversation exists once a turn succeeded
        return turn

    def persist(self, sent: Sent, display: TurnDisplay) -> None:
        """The committed turn written to the record; a failure there is one note, never a loss."""
        key = sent.planned.resolved.key
        assert key is not None  # every sent turn has one (a dry run is not sent)
        try:  # the answer is in: nothing may lose it now (it was shown; it stays in this kernel)
            note = self.replay.committed(sent.conv, key, self.caches.recorded(sent.conv))
        except Exception as exc:  # noqa: BLE001 - any failure of the record is one line
            note = redact(f"the answer is kept in this kernel but not in the record ({type(exc).__name__}: {exc})")
        if note:
            display.note(note)

    def _turn_key(
        self,
        req: TurnRequest,
        model: str,
        state: StateMode,
        doc: Document | None,
        pieces: list[ContextPiece],
        settings: str,
    ) -> TurnKey:
        magic_cell = self._magic_cell()
        return TurnKey.of(
            req.mode,
            req.prompt,
            model,
            state,
            req.flags(),
            magic_cell,
            doc.sha256 if doc else None,
            tuple(pieces),
            settings,
        )

    def _magic_cell(self) -> str | None:
        """The frontend's id of the running magic cell; None where it sends none (nbclient)."""
        running = self.executed.running_id
        return running if running and not _FALLBACK_ID.match(running) else None

    def _send(
        self,
        transport: Transport,
        conv: Conversation,
        plan: TurnPlan,
        display: TurnDisplay,
        settings: Settings,
        replan: Callable[[], TurnPlan],
        step: CacheStep,
    ) -> tuple[TurnResult, TurnPlan]:
        """Send once; if the server lost the interaction chain, start a new chain once.

        Any failure leaves the conversation exactly as it was.
        """
        try:
            return self.caches.send(
                conv, transport, plan, conv.history, display.chunk, display.note, step, settings.cache_ttl_s
            ), plan
        except KeyboardInterrupt:
            raise UserError(messages.STOPPED.render()) from None
        except Exception as exc:
            if not (plan.previous_interaction_id and status_code(exc) == 404):
                raise UserError(self._failure(exc, settings)) from exc
        # The server forgot the chain: a new one that carries what the model needs.
        display.note(messages.CHAIN_LOST.render())
        previous = conv.last_interaction_id
        conv.lose_chain()
        fresh = replan()
        try:
            return transport.send(fresh, conv.history, display.chunk), fresh
        except KeyboardInterrupt:
            conv.last_interaction_id = previous
            raise UserError(messages.STOPPED.render()) from None
        except Exception as again:
            conv.last_interaction_id = previous
            raise UserError(self._failure(again, settings)) from again

    @staticmethod
    def _failure(exc: BaseException, settings: Settings) -> str:
        if isinstance(exc, UserError):
            return str(exc)
        return describe(exc, attempts=settings.client.retry_attempts, timeout_s=settings.client.timeout_s)

    @staticmethod
    def _commit(
        conv: Conversation, plan: TurnPlan, result: TurnResult, display: TurnDisplay, answer: EditAnswer | None
    ) -> Turn:
        saved = sum(piece_tokens(p) for p in plan.omitted)
        if plan.synchronized and plan.document is not None:
            saved += estimate_tokens(plan.document.source)
        elif plan.source_patch is not None and plan.document is not None:
            saved += estimate_tokens(plan.document.source) - estimate_tokens(plan.source_patch)
        if answer is not None and answer.source is not None:
            proposal = answer.source
            if plan.document is not None:
                proposal = unmasked_proposal(plan.document, proposal, display)
            return conv.commit(
                plan,
                answer.explanation,
                proposal_source=proposal,
                proposal_edits=answer.edits,
                interaction_id=result.interaction_id,
                usage=result.usage,
                saved_tokens=saved,
            )
        return conv.commit(
            plan, result.text, interaction_id=result.interaction_id, usage=result.usage, saved_tokens=saved
        )


def unmasked_proposal(doc: Document, proposal: str, display: TurnDisplay) -> str:
    """The proposal with the API key back where the model saw ``***`` and kept it in place.

    What the kernel masked never comes back as a change: a cell whose key line
    the model changed around the mask is left as it was, and the cell says so.
    """
    if isinstance(doc.key, WholeNotebook):
        proposal, ids = unmask_cells(doc.source, proposal)
        untouched = [f"cell {i}" for i in ids]
    else:
        proposal, placed = unmask(doc.source, proposal)
        untouched = [] if placed else [doc.label]
        proposal = proposal if placed else doc.source
    if untouched:
        display.note(messages.KEY_LINE_CHANGED.render(cells=", ".join(untouched)))
    return proposal


def unsendable(payload: dict[str, Any]) -> None:
    """A UserError before anything is sent when a field of the turn is not UTF-8 text (a lone
    surrogate from an undecodable file name, say): after the answer it would be too late."""
    for name, value in payload.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise UserError(
                messages.FIELD_NOT_TEXT.render(name=name, char=ascii(text[exc.start : exc.start + 1]), at=exc.start)
            ) from None


def _planned_head(step: CacheStep) -> CachedHead | None:
    """The cache a dry run's request would name (a cache still to be made has no name yet)."""
    if step.decision.action == "use" and step.entry is not None:
        return CachedHead(step.entry.name, step.entry.length)
    if step.decision.action == "create":
        return CachedHead("cachedContents/(created before the request)", len(step.head))
    return None


def _priced(usage: Usage, price: Price | None) -> Usage:
    """The turn's cost at the price table's rates, and what the same turn costs with nothing cached."""
    if price is None or usage.input_tokens is None or usage.output_tokens is None:
        return usage
    output = usage.output_tokens + (usage.thinking_tokens or 0)
    cost = turn_cost(price, usage.input_tokens, usage.cached_tokens or 0, output, usage.cache_write_tokens)
    resend = turn_cost(price, usage.input_tokens, 0, output)
    return replace(usage, cost_usd=cost, resend_cost_usd=resend)


def _unmask_recorded(turn: Turn, doc: Document | None) -> None:
    """The record holds the key as ***: where the cell holds it now, Apply and Undo of a
    replayed proposal write it back in place, never *** over it."""
    if doc is None:
        return
    whole = isinstance(doc.key, WholeNotebook)
    for name in ("base_source", "proposal_source"):
        text = getattr(turn, name)
        if text is not None and MASK in text:
            setattr(turn, name, unmask_cells(doc.source, text)[0] if whole else unmask(doc.source, text)[0])


def _on_wire(result: TurnResult, notices: RetryNotices) -> TurnResult:
    """The footer reports what really went over the wire."""
    if not notices.request_bytes:
        return result
    return replace(result, usage=replace(result.usage, request_bytes=notices.request_bytes))


__all__ = ["Session", "Settings", "TurnRequest", "TurnOutcome", "Usage"]
