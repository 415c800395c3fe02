"""One kernel's assistant session: its conversations, and a turn as its stages.

A magic's request becomes a resolved, planned, sent, committed and recorded turn here
(``Session.run``). It imports no IPython: the magics hand it plain values and a display.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .. import messages
from ..engine.cells import Document, WholeNotebook
from ..engine.context import ContextPiece
from ..engine.conversation import Conversation, Spent, StateMode, Turn, TurnPlan, Usage
from ..engine.errors import UserError
from ..engine.notebook_text import unmask_cells
from ..engine.outputs import images_estimate, piece_tokens
from ..engine.redaction import MASK, redact, unmask
from ..engine.replay import TurnKey
from ..engine.text import estimate_tokens
from ..engine.tools import ToolCall, ToolResult, holdings, sent_turns
from ..frontends.notebook_view import ExecutedCells, NotebookView
from ..gemini import budget
from ..gemini.caching import CacheEntry, CacheStep, ContextCaches, worth_keeping
from ..gemini.errors import describe, status_code
from ..gemini.models import ModelInfo, available_models
from ..gemini.pricing import Price, price_for, turn_cost
from ..gemini.transport import (
    TRANSPORTS,
    CachedHead,
    ClientSettings,
    EditRetry,
    RetryNotices,
    Transport,
    TurnResult,
    TurnTools,
    request_settings,
)
from ..persistence.keeper import RecordKeeper
from ..sources.outputs import OutputCapture, over_image_cap
from ..sources.tools import NotebookTools, ShellReader
from .clients import Clients
from .document import DocumentChooser
from .edit_answer import EditAnswer, settle
from .requests import (
    ExecutedOnly,
    Planned,
    Resolved,
    Sent,
    Settings,
    TurnDisplay,
    TurnFrontend,
    TurnOutcome,
    TurnRequest,
)

CONVERSATION_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


@dataclass
class Session:
    executed: ExecutedCells = field(default_factory=ExecutedCells)
    conversations: dict[str, Conversation] = field(default_factory=dict)
    caches: ContextCaches = field(default_factory=ContextCaches)
    keeper: RecordKeeper = field(default_factory=RecordKeeper)  # the notebook's record, this kernel's side
    outputs: OutputCapture = field(default_factory=OutputCapture)  # what each cell showed in this kernel
    clients: Clients = field(default_factory=Clients)
    documents: DocumentChooser = field(init=False)
    today: Callable[[], dt.date] = dt.date.today  # a turn's day, its price's (tests set the clock)
    spent: list[Spent] = field(default_factory=list)  # this kernel's turns' bills, as their footers showed

    def __post_init__(self) -> None:
        self.documents = DocumentChooser(self.executed, self.outputs)

    # -- conversations -------------------------------------------------------
    def conversation(self, name: str, state: StateMode, new: bool = False) -> Conversation:
        """The named conversation, or a new one that is kept only once a turn succeeds."""
        if not CONVERSATION_NAME.match(name):
            raise UserError(messages.BAD_NAME, name=name)
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
            self.keeper.stop(n)
        return reset

    # -- the kernel's clients and caches ---------------------------------------
    def open_record(self, settings: Settings) -> str | None:
        """The record at the place the settings name, opened: the conversations an earlier kernel
        left join this kernel's (its own of the same name win), and the explicit caches they name
        become this kernel's. Returns a line to show once (a record set aside, say)."""
        restored = self.keeper.open(settings.record, self.conversations)
        self.conversations.update(restored.conversations)
        self.adopt_recorded_caches(settings.client)
        return restored.note

    def adopt_recorded_caches(self, settings: ClientSettings) -> None:
        """The explicit caches a killed kernel left to the restored conversations become this
        kernel's: used, replaced, or deleted on reset and at exit like its own, never doubled."""
        pending = [(c, self.keeper.recorded_cache(c)) for c in self.conversations.values()]
        pending = [(c, r) for c, r in pending if r is not None and self.caches.name_of(c) is None]
        if not pending:
            return
        try:
            client, _ = self.clients.client(settings)
        except UserError:  # no key: nothing can use or delete it; it ends with its TTL
            return
        for conv, recorded in pending:
            self.caches.adopt(conv, recorded, client)

    def at_exit(self, settings: Settings) -> list[str]:
        """Kernel exit: every explicit cache deleted but one the record on disk names whose storage
        until it expires costs less than making it again: the next kernel on this notebook (a restart,
        Run All) adopts it and uses it, or deletes it once it no longer matches. Returns the names deleted."""
        durable = self.keeper.durable()  # waits for the last write's flush to the disk
        now = self.caches.clock()

        def keep(entry: CacheEntry) -> bool:
            recorded = self.keeper.recorded_cache(entry.owner) if durable else None
            return (
                recorded is not None
                and recorded["name"] == entry.name
                and worth_keeping(price_for(entry.model, settings.prices, self.today()), entry.expires - now)
            )

        return self.caches.release_all(keep=keep)

    def models(self, settings: ClientSettings) -> list[ModelInfo]:
        """The models the key can use (``client.models.list()``), or a UserError saying why not."""
        client, _ = self.clients.client(settings)
        try:
            return available_models(client)
        except Exception as exc:
            raise describe(exc, attempts=settings.retry_attempts, timeout_s=settings.timeout_s) from exc

    # -- a turn --------------------------------------------------------------
    def run(
        self,
        req: TurnRequest,
        settings: Settings,
        display: TurnDisplay,
        frontend: TurnFrontend | None = None,
        reader: ShellReader | None = None,
    ) -> TurnOutcome:
        """A turn as its stages: resolve, replay or plan, (dry run), send, commit, persist.

        ``frontend``: the notebook as this turn's frontend sees it (None: the kernel's record);
        ``reader``: the shell the model's function calls read (None: no function is offered)."""
        resolved = self.resolve(req, settings, display, frontend, reader)
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
        self,
        req: TurnRequest,
        settings: Settings,
        display: TurnDisplay,
        frontend: TurnFrontend | None = None,
        reader: ShellReader | None = None,
    ) -> Resolved:
        """The conversation, document and context a request names, the functions offered, and the turn's identity."""
        frontend = frontend or ExecutedOnly(self.executed)
        # The prompt as the model gets it: no key, even one interpolated from a variable.
        req = replace(req, prompt=redact(req.prompt.strip()))
        if not req.prompt:
            raise UserError(messages.PROMPT_EMPTY)
        note = self.open_record(settings)
        if note:
            display.error(note)
        if not req.dry_run:
            self.keeper.position(req.conversation, self.documents.magic_cell())
        state = req.state or (
            self.conversations[req.conversation].state_mode
            if req.conversation in self.conversations and not req.new
            else settings.state
        )
        model = req.model or settings.model
        conv = self.conversation(req.conversation, state, req.new)
        doc, target = self.documents.resolve_document(frontend, req, settings, None if req.new else conv)
        display.document(doc.label if doc else None, target.source if target else "")
        shown = self.documents.output_pieces(frontend.view, req, doc, settings)
        pieces = self.documents.context_pieces(frontend.view, req, doc, settings) + shown.pieces
        tools = self._notebook_tools(frontend.view, reader, settings) if req.tools and settings.tools else None
        offered = tools.offered if tools is not None else ()
        key = None
        if not req.dry_run:
            key = self._turn_key(
                req, model, state, doc, pieces, request_settings(state, req.mode, settings.temperature, model, offered)
            )
        return Resolved(req, model, state, conv, doc, target, shown, tuple(pieces), key, tools)

    def _notebook_tools(
        self, view: NotebookView, reader: ShellReader | None, settings: Settings
    ) -> NotebookTools | None:
        """The functions over this turn's view of the notebook, with the caps of --vars and --outputs."""
        if reader is None:
            return None
        return NotebookTools(
            shell=reader.shell,
            cells=view.cells,
            find=lambda ref, name: self.documents.find_cell(view, ref, name),
            label=lambda cell: self.documents.label(view, cell),
            outputs=self.outputs,
            cell_for_filename=reader.cell_for_filename,
            offered=settings.tools,
            max_var_chars=settings.max_var_chars,
            max_output_chars=settings.max_output_chars,
            max_images=settings.max_images,
            max_image_bytes=settings.max_image_bytes,
            max_chars=settings.secondary_context_chars,
        )

    def replayed(self, resolved: Resolved) -> TurnOutcome | None:
        """The recorded answer of an earlier kernel's same turn, or None: the turn is asked."""
        if resolved.key is None:  # a dry run is never replayed
            return None
        tools = resolved.tools

        def same_results(turn: Turn) -> bool:  # the recorded calls, run again now (read-only)
            return tools is not None and tools.same_as_recorded(turn.tool_rounds)

        found = self.keeper.replay(resolved.req.conversation, resolved.key, resolved.req.rerun, same_results)
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
        day = self.today()
        price = price_for(resolved.model, settings.prices, day)  # a UserError when the overrides cannot price it
        return Planned(resolved, plan, pieces, price, day)

    def admit(
        self, planned: Planned, settings: Settings, body: dict[str, Any], history: Sequence[Turn], spent: float | None
    ) -> None:
        """Called before every request of a turn (its first, an edit's retry, a new chain after a lost
        one, a tool loop's next): a UserError, and the request not sent, when its estimated cost would
        take the turn past ``max_turn_cost`` or this session past ``max_session_cost``. ``spent``: what
        the turn's earlier requests cost; None: none was billed yet (nothing was sent)."""
        caps = settings.caps
        if planned.price is None or (caps.turn is None and caps.session is None):
            return  # no cap, or no price to estimate with: tokens only
        expected = budget.estimate(planned.price, body, history, planned.resolved.model)
        refused = budget.refusal(expected, caps, spent or 0.0, budget.total(self.spent), first=spent is None)
        if refused is not None:
            raise refused

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
        transport = TRANSPORTS[plan.state_mode](None, model, settings.temperature, planned.resolved.offered)
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
        client, notices = self.clients.client(settings.client)
        transport = TRANSPORTS[plan.state_mode](client, model, settings.temperature, planned.resolved.offered)
        if plan.new_chain_digest and conv.last_interaction_id:
            display.note(messages.CHAIN_TOO_LONG.render(versions=len(conv.chain_versions)))
        notices.start(display.note, transport.honours_retry_after)
        answer = None
        try:
            self.admit(planned, settings, transport.request(plan, conv.history), conv.history, None)
            step = self._cache_step(planned, transport, settings)

            def replan() -> TurnPlan:
                return self._plan_turn(planned.resolved, planned.pieces, settings)

            def admit(body: dict[str, Any], spent: float | None) -> None:
                self.admit(planned, settings, body, conv.history, spent)

            result, plan = self._send(transport, conv, plan, display, settings, replan, step, admit, planned, notices)
            if plan.mode == "edit":
                sent, first = plan, result
                tools = self._turn_tools(planned, sent, settings, display, notices, admit)

                def resend(retry: EditRetry) -> TurnResult:
                    spent = _priced(first.usage, planned.price, planned.day).cost_usd or 0.0
                    admit(transport.request(sent, conv.history, None, retry), spent)
                    try:
                        again = transport.send(sent, conv.history, display.chunk, self.caches.head(conv), retry, tools)
                    except KeyboardInterrupt:
                        raise UserError(messages.STOPPED) from None
                    except Exception as exc:
                        raise self._failure(exc, settings) from exc
                    return again

                result, answer = settle(result, plan.document, resend, display.note)
            result = _on_wire(result, notices)  # every request of the turn
        except BaseException:
            if self.conversations.get(conv.name) is not conv:  # a conversation that never started keeps no cache
                self.caches.release(conv)
            raise
        finally:
            notices.start(None)
        return Sent(planned, plan, replace(result, usage=_priced(result.usage, planned.price, planned.day)), answer)

    def commit(self, sent: Sent, display: TurnDisplay) -> Turn:
        """The answer recorded as the conversation's turn; the conversation exists from now on."""
        conv = sent.conv
        turn = self._commit(conv, sent.plan, sent.result, display, sent.answer)
        replaced = self.conversations.get(conv.name)
        if replaced is not None and replaced is not conv:  # --new started it over
            replaced.closed = True
            self.caches.release(replaced)
        self.conversations[conv.name] = conv  # a conversation exists once a turn succeeded
        self.spent.append(Spent(conv.name, sent.planned.resolved.model, turn.usage))
        return turn

    def persist(self, sent: Sent, display: TurnDisplay) -> None:
        """The committed turn written to the record; a failure there is one note, never a loss."""
        key = sent.planned.resolved.key
        assert key is not None  # every sent turn has one (a dry run is not sent)
        try:  # the answer is in: nothing may lose it now (it was shown; it stays in this kernel)
            note = self.keeper.committed(sent.conv, key, self.caches.recorded(sent.conv))
        except Exception as exc:  # noqa: BLE001 - any failure of the record is one line
            note = messages.NOT_RECORDED.render(error=redact(f"{type(exc).__name__}: {exc}"))
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
        magic_cell = self.documents.magic_cell()
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

    def _turn_tools(
        self,
        planned: Planned,
        plan: TurnPlan,
        settings: Settings,
        display: TurnDisplay,
        notices: RetryNotices,
        admit: Callable[[dict[str, Any], float | None], None],
    ) -> TurnTools:
        """How this turn answers function calls: each call run (read-only), its line shown, the
        sent-once rule over what the model holds (nothing, on a new server chain), and every request
        after the first admitted by the budget with what the earlier ones cost."""
        conv, tools = planned.resolved.conv, planned.resolved.tools
        new_chain = plan.state_mode == "interactions" and plan.previous_interaction_id is None
        index = conv.history[-1].index + 1 if conv.history else 1
        held = holdings(index, {} if new_chain else conv.sync.context_hashes, sent_turns(conv.history), plan.pieces)

        def answer(call: ToolCall) -> ToolResult:
            assert tools is not None  # a function is offered only with them
            result = tools.answer(call, held)
            display.note(_call_line(result))
            return result

        def before_request(body: dict[str, Any], earlier: Usage | None) -> None:
            notices.next_request()
            if earlier is not None:  # the first request of a send was admitted before it (send, resend)
                admit(body, _priced(earlier, planned.price, planned.day).cost_usd or 0.0)

        return TurnTools(
            answer=answer if tools is not None else None,
            max_calls=settings.max_tool_calls,
            on_limit=lambda count: display.note(messages.TOOL_LIMIT.render(count=count)),
            before_request=before_request,
        )

    def _send(
        self,
        transport: Transport,
        conv: Conversation,
        plan: TurnPlan,
        display: TurnDisplay,
        settings: Settings,
        replan: Callable[[], TurnPlan],
        step: CacheStep,
        admit: Callable[[dict[str, Any], float | None], None],
        planned: Planned,
        notices: RetryNotices,
    ) -> tuple[TurnResult, TurnPlan]:
        """Send once; if the server lost the interaction chain, start a new chain once (admitted by the
        budget like the first: the lost chain's request was refused, so nothing was billed).

        Any failure leaves the conversation exactly as it was.
        """
        try:
            tools = self._turn_tools(planned, plan, settings, display, notices, admit)
            return self.caches.send(
                conv, transport, plan, conv.history, display.chunk, display.note, step, settings.cache_ttl_s, tools
            ), plan
        except KeyboardInterrupt:
            raise UserError(messages.STOPPED) from None
        except Exception as exc:
            if not (plan.previous_interaction_id and status_code(exc) == 404):
                raise self._failure(exc, settings) from exc
        # The server forgot the chain: a new one that carries what the model needs.
        display.note(messages.CHAIN_LOST.render())
        previous = conv.last_interaction_id
        conv.lose_chain()
        fresh = replan()
        try:
            admit(transport.request(fresh, conv.history), None)
            tools = self._turn_tools(planned, fresh, settings, display, notices, admit)
            return transport.send(fresh, conv.history, display.chunk, tools=tools), fresh
        except KeyboardInterrupt:
            conv.last_interaction_id = previous
            raise UserError(messages.STOPPED) from None
        except Exception as again:
            conv.last_interaction_id = previous
            raise self._failure(again, settings) from again

    @staticmethod
    def _failure(exc: BaseException, settings: Settings) -> UserError:
        if isinstance(exc, UserError):
            return exc
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
                tool_rounds=result.rounds,
            )
        return conv.commit(
            plan,
            result.text,
            interaction_id=result.interaction_id,
            usage=result.usage,
            saved_tokens=saved,
            tool_rounds=result.rounds,
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
                messages.FIELD_NOT_TEXT, name=name, char=ascii(text[exc.start : exc.start + 1]), at=exc.start
            ) from None


def _planned_head(step: CacheStep) -> CachedHead | None:
    """The cache a dry run's request would name (a cache still to be made has no name yet)."""
    if step.decision.action == "use" and step.entry is not None:
        return CachedHead(step.entry.name, step.entry.length)
    if step.decision.action == "create":
        return CachedHead("cachedContents/(created before the request)", len(step.head))
    return None


def _priced(usage: Usage, price: Price | None, day: dt.date) -> Usage:
    """The turn's cost at the rates of its day, and what the same turn costs with nothing cached."""
    usage = replace(usage, priced_on=day.isoformat())
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


def _call_line(result: ToolResult) -> str:
    """The call's one line in the cell: what it asked for and what the model got."""
    if result.status == "error":
        return messages.TOOL_FAILED.render(call=result.call.label, error=result.response["error"])
    what = messages.TOOL_UNCHANGED if result.status == "unchanged" else messages.TOOL_CALLED
    return what.render(call=result.call.label, chars=result.chars)


def _on_wire(result: TurnResult, notices: RetryNotices) -> TurnResult:
    """The footer reports what really went over the wire."""
    if not notices.turn_bytes:
        return result
    return replace(result, usage=replace(result.usage, request_bytes=notices.turn_bytes))


__all__ = ["Session"]
