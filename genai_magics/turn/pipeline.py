"""A turn as its stages: resolve → replay or plan → dry run or send → commit → persist.

Each stage is a function with a typed input and output (the frozen hand-offs of ``requests.py``);
the send stage has a module of its own (``send.py``). A stage reads and changes the kernel's
``Session``; it imports no IPython: the magics hand it plain values and a display.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from .. import messages
from ..engine.cells import Document, WholeNotebook
from ..engine.context import ContextPiece
from ..engine.conversation import Conversation, Spent, StateMode, Turn, TurnPlan
from ..engine.errors import UserError
from ..engine.notebook_text import unmask_cells
from ..engine.outputs import images_estimate, piece_tokens
from ..engine.redaction import MASK, redact, unmask
from ..engine.replay import TurnKey
from ..engine.rules import has_rules, settings_with, summary
from ..engine.text import estimate_tokens
from ..engine.tools import ToolCall, ToolResult
from ..frontends.notebook_view import NotebookView
from ..gemini.caching import CacheStep
from ..gemini.models import searches_beside_functions
from ..gemini.pricing import price_for
from ..gemini.transport import SPLIT, TRANSPORTS, CachedHead, Head, request_settings
from ..sources import rules
from ..sources.outputs import over_image_cap
from ..sources.tools import NotebookTools, ShellReader
from .requests import (
    EditAnswer,
    ExecutedOnly,
    Planned,
    Resolved,
    Sent,
    Settings,
    TurnDisplay,
    TurnFrontend,
    TurnOutcome,
    TurnRequest,
    TurnResult,
    offered_functions,
)
from .send import Steps, TurnSend, drive
from .session import Session


def run(
    session: Session,
    req: TurnRequest,
    settings: Settings,
    display: TurnDisplay,
    frontend: TurnFrontend | None = None,
    reader: ShellReader | None = None,
    answer: Callable[[ToolCall], ToolResult] | None = None,
) -> TurnOutcome:
    """A turn as its stages: resolve, replay or plan, (dry run), send, commit, persist.

    ``frontend``: the notebook as this turn's frontend sees it (None: the kernel's record);
    ``reader``: the shell the model's function calls read (None: no function is offered);
    ``answer``: what answers the agent's calls (``send.drive``)."""
    return drive(steps(session, req, settings, display, frontend, reader), answer)


def steps(
    session: Session,
    req: TurnRequest,
    settings: Settings,
    display: TurnDisplay,
    frontend: TurnFrontend | None = None,
    reader: ShellReader | None = None,
) -> Steps[TurnOutcome]:
    """``run``'s stages as steps (``send.py``): an agent turn yields each of its calls to its driver."""
    resolved = resolve(session, req, settings, display, frontend, reader)
    shown = replayed(session, resolved)
    if shown is not None:
        return shown
    planned = plan(session, resolved, settings, display)
    if resolved.req.dry_run:
        return dry_run(session, planned, settings)
    sent = yield from send(session, planned, settings, display)
    turn = commit(session, sent, display)
    persist(session, sent, display)
    return TurnOutcome(sent.conv, sent.plan, resolved.model, turn=turn, target=resolved.target)


# -- resolve ---------------------------------------------------------------------------
def resolve(
    session: Session,
    req: TurnRequest,
    settings: Settings,
    display: TurnDisplay,
    frontend: TurnFrontend | None = None,
    reader: ShellReader | None = None,
) -> Resolved:
    """The conversation, document and context a request names, the functions offered, and the turn's identity."""
    frontend = frontend or ExecutedOnly(session.executed)
    # The prompt as the model gets it: no key, even one interpolated from a variable.
    # --search, or the setting: a flag of the turn's identity either way
    req = replace(req, prompt=redact(req.prompt.strip()), search=req.search or settings.search)
    if not req.prompt:
        raise UserError(messages.PROMPT_EMPTY)
    note = session.open_record(settings)
    if note:
        display.error(note)
    documents = session.documents
    if not req.dry_run:
        session.keeper.position(req.conversation, documents.magic_cell())
    state = req.state or (
        session.conversations[req.conversation].state_mode
        if req.conversation in session.conversations and not req.new
        else settings.state
    )
    model = req.model or settings.model
    conv = session.conversation(req.conversation, state, req.new)
    doc, target = documents.resolve_document(frontend, req, settings, None if req.new else conv)
    display.document(doc.label if doc else None, target.source if target else "")
    shown = documents.output_pieces(frontend.view, req, doc, settings)
    pieces = documents.context_pieces(frontend.view, req, doc, settings) + shown.pieces
    if settings.rules != "off":  # first: the rules head the conversation, where a cache holds them
        pieces = [*rules.pieces(settings.record.notebook, settings.max_rules_chars), *pieces]
    # an agent turn reads with the read-only functions offered (maybe none) and acts with its four
    with_tools = req.tools and (bool(settings.tools) or req.agent)
    if req.search and with_tools and not searches_beside_functions(model):  # search, or functions: not both
        if req.agent:
            raise UserError(messages.SEARCH_NO_AGENT, model=model)
        with_tools = False
        display.note(messages.SEARCH_WITHOUT_FUNCTIONS.render(model=model))
    tools = _notebook_tools(session, frontend.view, reader, settings) if with_tools else None
    offered = offered_functions(tools, req.agent)
    key = None
    if not req.dry_run:
        key = _turn_key(
            session,
            req,
            model,
            state,
            doc,
            pieces,
            settings_with(
                request_settings(state, req.mode, settings.temperature, model, offered, req.search, has_rules(pieces)),
                pieces,
            ),
        )
    return Resolved(req, model, state, conv, doc, target, shown, tuple(pieces), key, tools)


def _notebook_tools(
    session: Session, view: NotebookView, reader: ShellReader | None, settings: Settings
) -> NotebookTools | None:
    """The functions over this turn's view of the notebook, with the caps of --vars and --outputs."""
    if reader is None:
        return None
    documents = session.documents
    return NotebookTools(
        shell=reader.shell,
        cells=view.cells,
        find=lambda ref, name: documents.find_cell(view, ref, name),
        label=lambda cell: documents.label(view, cell),
        outputs=session.outputs,
        cell_for_filename=reader.cell_for_filename,
        offered=settings.tools,
        max_var_chars=settings.max_var_chars,
        max_output_chars=settings.max_output_chars,
        max_images=settings.max_images,
        max_image_bytes=settings.max_image_bytes,
        max_chars=settings.secondary_context_chars,
    )


def _turn_key(
    session: Session,
    req: TurnRequest,
    model: str,
    state: StateMode,
    doc: Document | None,
    pieces: list[ContextPiece],
    settings: str,
) -> TurnKey:
    return TurnKey.of(
        req.mode,
        req.prompt,
        model,
        state,
        req.flags(),
        session.documents.magic_cell(),
        doc.sha256 if doc else None,
        tuple(pieces),
        settings,
    )


# -- replay --------------------------------------------------------------------------------
def replayed(session: Session, resolved: Resolved) -> TurnOutcome | None:
    """The recorded answer of an earlier kernel's same turn, or None: the turn is asked."""
    if resolved.key is None:  # a dry run is never replayed
        return None
    tools = resolved.tools

    def same_results(turn: Turn) -> bool:  # the recorded calls, run again now (read-only)
        # an agent turn's calls are not asked again: they read what the turn itself changed (replay.py, rule 4)
        return resolved.req.agent or (tools is not None and tools.same_as_recorded(turn.tool_rounds))

    found = session.keeper.replay(resolved.req.conversation, resolved.key, resolved.req.rerun, same_results)
    if found is None:
        return None
    restored, turn, meta = found
    _unmask_recorded(turn, resolved.doc)
    return TurnOutcome(restored, None, resolved.model, turn=turn, target=resolved.target, replayed=meta)


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


# -- plan ------------------------------------------------------------------------------------
def plan(session: Session, resolved: Resolved, settings: Settings, display: TurnDisplay) -> Planned:
    """What goes to the model this turn, checked sendable and priced; nothing is sent."""
    pieces = resolved.pieces
    turn_plan = resolved.plan(pieces, settings)
    waiting = over_image_cap(turn_plan.pieces, settings.max_images)
    if waiting:  # the later images go on a later turn: the model does not hold them yet
        pieces = tuple(p for p in pieces if p not in waiting)
        turn_plan = resolved.plan(pieces, settings)
        display.note(
            messages.IMAGES_WAIT.render(
                count=len(waiting),
                cap=settings.max_images,
                then=(messages.IMAGES_LATER if settings.max_images > 0 else messages.IMAGES_NEVER).render(),
            )
        )
    going, kept = {p.key for p in turn_plan.pieces}, {p.key for p in pieces}
    for piece_key, line in resolved.shown.notes.items():  # a downscaled image when it goes; a refused one every turn
        if piece_key in going or piece_key not in kept:
            display.note(line)
    unsendable(turn_plan.payload)
    day = session.today()
    price = price_for(resolved.model, settings.prices, day)  # a UserError when the overrides cannot price it
    if price is None and resolved.model not in session.unpriced:  # said once a session: the footer shows tokens
        session.unpriced.add(resolved.model)
        display.note(messages.MODEL_UNPRICED.render(model=resolved.model))
    return Planned(resolved, turn_plan, pieces, price, day)


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


# -- dry run --------------------------------------------------------------------------------
def dry_run(session: Session, planned: Planned, settings: Settings) -> TurnOutcome:
    """The exact request and cache plan the turn would send, sending nothing."""
    turn_plan, model, conv = planned.plan, planned.resolved.model, planned.resolved.conv
    settings = searching(planned, settings)
    transport = TRANSPORTS[turn_plan.state_mode](None, model, settings.temperature, *offers(planned.resolved))
    step = session.caches.step(
        conv, transport, turn_plan, conv.history, settings.cache, planned.price, settings.cache_ttl_s
    )
    request = transport.request(turn_plan, conv.history, _planned_head(step))
    return TurnOutcome(
        conv,
        turn_plan,
        model,
        request=request,
        target=planned.resolved.target,
        cache_plan=" · ".join(
            filter(
                None,
                (
                    step.describe(settings.cache_ttl_s),
                    images_estimate(turn_plan.pieces, model),
                    summary(turn_plan.pieces, turn_plan.omitted),
                ),
            )
        ),
    )


def offers(resolved: Resolved) -> tuple[tuple[str, ...], bool, bool]:
    """What a transport offers beside the model: the functions, Google Search, and whether the instruction
    speaks of the notebook's rules (this conversation has them)."""
    return resolved.offered, resolved.req.search, has_rules(resolved.pieces)


def searching(planned: Planned, settings: Settings) -> Settings:
    """A turn offering Google Search names no explicit cache: a request naming one may carry no tools, and
    the cache holds the functions alone."""
    return replace(settings, cache="off") if planned.resolved.req.search else settings


def _planned_head(step: CacheStep) -> Head:
    """The cache a dry run's request would name (a cache still to be made has no name yet)."""
    if step.split:
        return SPLIT
    if step.decision.action == "use" and step.entry is not None:
        return CachedHead(step.entry.name, step.entry.length)
    if step.decision.action == "create":
        return CachedHead("cachedContents/(created before the request)", len(step.head))
    return None


# -- send ------------------------------------------------------------------------------------
def send(session: Session, planned: Planned, settings: Settings, display: TurnDisplay) -> Steps[Sent]:
    """The turn's requests (``send.py``: the staircase of steps), priced; any failure leaves the
    conversation as it was, but what Gemini billed for the turn's requests before it is counted: in this
    session's spending (``%gemini cost``, ``max_session_cost``) and in the record's ledger."""
    conv, model = planned.resolved.conv, planned.resolved.model
    settings = searching(planned, settings)
    client, notices = session.clients.client(settings.client)
    transport = TRANSPORTS[planned.plan.state_mode](client, model, settings.temperature, *offers(planned.resolved))
    sender = TurnSend(
        planned,
        settings,
        display,
        transport,
        notices,
        session.caches,
        session_spent=session.spent_usd,
        started=session.conversations.get(conv.name) is conv,
        limits=session.limits,
    )
    try:
        return (yield from sender.steps())
    except BaseException:
        if sender.billed is not None:
            spent = Spent(
                conv.name, model, sender.billed, failed=True, estimated=sender.estimated
            )  # priced per request
            session.bill(spent)
            _noted(display, lambda: session.keeper.failed(spent), messages.BILL_NOT_RECORDED)
        raise


# -- commit ----------------------------------------------------------------------------------
def commit(session: Session, sent: Sent, display: TurnDisplay) -> Turn:
    """The answer recorded as the conversation's turn; the conversation exists from now on."""
    conv = sent.conv
    turn = _committed(conv, sent.plan, sent.result, display, sent.answer, sent.planned.resolved.req.agent)
    replaced = session.conversations.get(conv.name)
    if replaced is not None and replaced is not conv:  # --new started it over
        replaced.closed = True
        session.caches.release(replaced)
    session.conversations[conv.name] = conv  # a conversation exists once a turn succeeded
    session.bill(_spent(sent))
    return turn


def _spent(sent: Sent) -> Spent:
    """A committed turn's bill, as its footer shows it."""
    return Spent(sent.conv.name, sent.planned.resolved.model, sent.result.usage)


def _committed(
    conv: Conversation,
    plan: TurnPlan,
    result: TurnResult,
    display: TurnDisplay,
    answer: EditAnswer | None,
    agent: bool,
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
            grounding=result.grounding,
        )
    return conv.commit(
        plan,
        result.text,
        interaction_id=result.interaction_id,
        usage=result.usage,
        saved_tokens=saved,
        tool_rounds=result.rounds,
        agent=agent,
        grounding=result.grounding,
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


# -- persist ----------------------------------------------------------------------------------
def persist(session: Session, sent: Sent, display: TurnDisplay) -> None:
    """The committed turn written to the record; a failure there is one note, never a loss."""
    key = sent.planned.resolved.key
    assert key is not None  # every sent turn has one (a dry run is not sent)
    # the answer is in: nothing may lose it now (it was shown; it stays in this kernel)
    _noted(
        display,
        lambda: session.keeper.committed(sent.conv, key, _spent(sent), session.caches.recorded(sent.conv)),
        messages.NOT_RECORDED,
    )


def _noted(display: TurnDisplay, write: Callable[[], str | None], failed: messages.Message) -> None:
    """A write of the record; its line, or its failure as ``failed``'s one line, shown as a note (never a loss)."""
    try:
        note = write()
    except Exception as exc:  # noqa: BLE001 - any failure of the record is one line
        note = failed.render(error=redact(f"{type(exc).__name__}: {exc}"))
    if note:
        display.note(note)
