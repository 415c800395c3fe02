"""The send stage: a planned turn's requests, as a staircase of steps (as httpx's ``Client.send``).

Each step does one thing and hands down to the one below; every request of a turn, an edit's
retry and a new chain included, takes the same lower steps::

    run           the turn: the interrupt caught once, a failure told in one line, nothing kept of it;
                  a transcript that would pass the model's input limit compacted first, and a server
                  chain holding results whole given up for a new one when that is cheaper
     └ edit       an edit whose edits do not apply is asked once more for the whole text
        └ chain   a server chain the server lost (404), or grown past the input limit, is started
                  again once, with what the model needs
           └ calls    the function-call loop: a request, its calls answered (read-only), the next
              └ limit     a request Gemini refuses as past the input limit is compacted and sent once more
                 └ request   one request: admitted by the budget, under the explicit cache, on the wire;
                             a cache the server lost is made again once and the request sent again

The rules of each step are stated where it lives. Nothing here touches the conversation but the
chain step (a lost chain is forgotten, and put back when the new one fails too); the commit stage
adds the turn.

The steps from run down to calls are generators (sans-IO, as h11): the function-call loop yields each
call of the agent's functions (engine/agent.py) that needs an answer and is sent its ``ToolResult``;
read-only calls are answered inside. ``drive`` answers the yielded calls synchronously (ask and edit
never yield one), ``drive_async`` awaits their answers (the awaited agent cell: an approval, a
frontend's reply).
"""

from __future__ import annotations

import datetime as dt
import inspect
import json
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from .. import messages
from ..engine.agent import AGENT_FUNCTIONS, bad_agent_call
from ..engine.contents import Squeeze, left_out
from ..engine.conversation import ChainRent, Conversation, Turn, TurnPlan, Usage, added
from ..engine.errors import UserError
from ..engine.grounding import Grounding, joined
from ..engine.outputs import ImagePiece
from ..engine.payloads import to_text
from ..engine.text import estimate_tokens
from ..engine.tools import (
    Holdings,
    ToolCall,
    ToolResult,
    ToolRound,
    bad_call,
    error_result,
    holdings,
    read_only,
    results_left_out,
    sent_turns,
)
from ..frontends import kernel_compat
from ..gemini import budget
from ..gemini.caching import (
    CacheStep,
    ContextCaches,
    cache_is_gone,
    chain_rent,
    filler_kept,
    implicit_padding_pays,
    implicit_share,
    measured_hit,
    new_chain_pays,
    seed_shared,
)
from ..gemini.client import RetryNotices
from ..gemini.errors import describe, over_input_limit, status_code
from ..gemini.filler import padding
from ..gemini.models import InputLimits
from ..gemini.pricing import Price, turn_cost
from ..gemini.transport import SPLIT, CachedHead, EditRetry, Reply, Transport, body_bytes, body_bytes_at_most
from .edit_answer import settle
from .requests import Planned, Sent, Settings, TurnDisplay, TurnResult

# What a call past max_tool_calls gets: the model reads it, and the next request turns calling off.
LIMIT_REACHED = "the limit of function calls for this turn is reached: answer now with what you know"
# The share of the model's input limit a request is kept under: the kernel's estimate (4 bytes a token of
# the body) is not the server's count, and the turn's function results come after the first request.
FILL = 0.8

T = TypeVar("T")
# A step that may need the agent's calls answered: yields each one, is sent its result, returns ``T``.
Steps = Generator[ToolCall, ToolResult, T]
# What answers an agent call: its result, or something to await for it (the awaited agent cell).
Answer = Callable[[ToolCall], "ToolResult | Awaitable[ToolResult]"]


def drive(steps: Steps[T], answer: Callable[[ToolCall], ToolResult] | None = None) -> T:
    """The steps run to their end on this thread, each yielded call answered by ``answer`` (None: an
    error result the model reads, for a turn that offered no agent function); a failure of the answer
    (the interrupt) is thrown into the steps, so ``run`` reports it as for any turn."""
    result: ToolResult | None = None
    failure: BaseException | None = None
    while True:
        try:
            call = steps.send(result) if failure is None else steps.throw(failure)  # type: ignore[arg-type]
        except StopIteration as done:
            return done.value
        result, failure = None, None
        try:
            result = answer(call) if answer is not None else error_result(call, NOT_HERE.format(name=call.name))
        except BaseException as exc:  # noqa: BLE001 - thrown into the steps: they end the turn
            failure = exc


async def drive_async(steps: Steps[T], answer: Answer) -> T:
    """The steps run from an awaited cell: each ``send`` synchronously (the requests), with SIGINT
    raising KeyboardInterrupt there (main thread only: ipykernel's own handler would wait for the
    coroutine to yield); each yielded call's answer awaited. A cancel or interrupt at an await is
    thrown into the steps as KeyboardInterrupt: ``run`` ends the turn with ``messages.STOPPED``."""
    import asyncio  # only here: %load_ext must not pay for it

    result: ToolResult | None = None
    failure: BaseException | None = None
    while True:
        try:
            with kernel_compat.interruptible():
                call = steps.send(result) if failure is None else steps.throw(failure)  # type: ignore[arg-type]
        except StopIteration as done:
            return done.value
        result, failure = None, None
        try:
            value = answer(call)
            result = await value if inspect.isawaitable(value) else value
        except (KeyboardInterrupt, asyncio.CancelledError):
            failure = KeyboardInterrupt()
        except Exception as exc:  # noqa: BLE001 - thrown into the steps: they end the turn, one line
            failure = exc


# What an agent call gets where no answer is given for it (a turn driven without one).
NOT_HERE = "{name} cannot be answered here"


@dataclass
class TurnSend:
    """One turn's send stage: what every step reads, and what the requests so far were billed."""

    planned: Planned
    settings: Settings
    display: TurnDisplay
    transport: Transport
    notices: RetryNotices
    caches: ContextCaches
    session_spent: float  # US$ of this session's earlier turns (max_session_cost)
    started: bool  # the conversation had a turn before this one (one that never started keeps no cache)
    limits: InputLimits = field(default_factory=InputLimits)  # the session's: each model's input limit
    cache_step: CacheStep | None = None  # decided before the first request, carried out by it
    billed: Usage | None = None  # the turn's requests answered so far, or whose answer began (None: none yet)
    estimated: bool = False  # a request of ``billed`` failed after its answer began: its usage is the estimate
    uncached: bool = False  # compacted after the cache step: its cache holds another head
    _step_pending: bool = field(default=True, repr=False)
    _limit_retried: bool = field(default=False, repr=False)
    _acted: bool = field(default=False, repr=False)  # an agent call was answered: the notebook changed
    _capped: bool = field(default=False, repr=False)  # the budget or the input limit turned calling off for good
    _first_read: tuple[TurnPlan, int] | None = field(default=None, repr=False)  # ``_chain_tokens``'s last plan

    @property
    def conv(self) -> Conversation:
        return self.planned.resolved.conv

    # -- run: the whole stage ------------------------------------------------------------
    def run(self, answer: Callable[[ToolCall], ToolResult] | None = None) -> Sent:
        """The turn's steps driven on this thread (``drive``)."""
        return drive(self.steps(), answer)

    def steps(self) -> Steps[Sent]:
        """The turn sent and priced; any failure leaves the conversation as it was (a UserError, or
        ``messages.STOPPED`` for the kernel's interrupt, also one thrown in at an agent call)."""
        plan, conv = self.planned.plan, self.conv
        if plan.new_chain_digest and conv.last_interaction_id:
            self.display.note(messages.CHAIN_TOO_LONG.render(versions=len(conv.chain_versions)))
        self.notices.start(self.display.note, self.transport.honours_retry_after)
        previous, rent = conv.last_interaction_id, conv.chain_rent
        try:
            plan = self.fit(plan)
            self.cache_step = self.caches.step(
                conv,
                self.transport,
                plan,
                conv.history,
                self.settings.cache,
                self.planned.price,
                self.settings.cache_ttl_s,
            )
            plan, result = yield from self.chain(plan)
            answer = None
            if plan.mode == "edit":  # an edit offers no agent function: its retry is driven here
                sent = plan
                result, answer = settle(
                    result, plan.document, lambda retry: drive(self.chain(sent, retry))[1], self.display.note
                )
        except BaseException as exc:
            conv.last_interaction_id = (
                previous  # a chain given up (lost, or past the limit) is kept when the turn fails
            )
            conv.chain_rent = rent  # and so is its rent: this turn did not read it
            if not self.started:
                self.caches.release(conv)
            if isinstance(exc, KeyboardInterrupt):
                raise UserError(messages.STOPPED) from None
            if isinstance(exc, Exception) and not isinstance(exc, UserError):
                client = self.settings.client
                raise describe(exc, attempts=client.retry_attempts, timeout_s=client.timeout_s) from exc
            raise
        finally:
            self.notices.start(None)
        usage = replace(result.usage, request_bytes=self.notices.turn_bytes or result.usage.request_bytes)
        return Sent(self.planned, plan, replace(result, usage=usage), answer)

    # -- fit: the model's input limit, before the turn --------------------------------------
    def fit(self, plan: TurnPlan) -> TurnPlan:
        """Rule: a turn is never stuck at the model's input limit (``InputLimits``: what the API said, else
        the table). When the first request would read more than ``FILL`` of it, contents mode leaves the
        oldest turns out (``compact``); interactions mode, whose chain the server holds (its size is
        the last turn's input), starts a new chain with the document, the context and a digest of the
        earlier turns. One line says so; the record keeps every turn as it was. A contents turn far under the
        limit is not built to be checked (``_far_under``). Under the limit, a chain may still be given up for
        its cost (``restart``)."""
        room = int(self.limits.of(self.transport.model) * FILL)
        if plan.state_mode == "contents":
            if self._far_under(plan, room):
                self.transport.squeeze = None
            else:
                self.compact(plan, room, lambda: self.transport.request(plan, self.conv.history))
            return plan
        usage = self._last_usage()
        if not plan.previous_interaction_id or usage is None or usage.input_tokens is None:
            return self.pad(plan, None)
        # the chain as its last turn read it (the mean of its requests: they differ by a function result) but
        # for its filler, plus what that turn wrote and this turn adds
        chain = usage.per_request + (usage.output_tokens or 0)
        chain -= estimate_tokens(padding(self.conv.chain_pad))
        if chain + _tokens(plan.payload) <= room:
            return self.pad(self.restart(plan, chain + _tokens(plan.payload), usage, room), chain)
        self.display.note(messages.CHAIN_OVER_LIMIT.render(limit=self.limits.of(self.transport.model)))
        self.conv.lose_chain()
        return self.pad(self.planned.resolved.plan(self.planned.pieces, self.settings), None)

    def pad(self, plan: TurnPlan, chain: int | None) -> TurnPlan:
        """Rule (interactions, issue 43.3): implicit caching serves nothing of a chain under the model's cache
        minimum, so a turn's requests carry filler after the instruction (``filler.padding``) that brings the
        chain up to the minimum, where that pays over the turn's requests (``caching.implicit_padding_pays``);
        the same filler, sized when it started, on every later request of the chain (implicit caching serves an
        identical prefix) while it pays under the minimum and, past it, until reading it has cost the re-read
        dropping it brings (``caching.filler_kept``). ``chain``: what the last turn read on the chain but for
        the filler, and wrote (None: a new chain)."""
        price, conv, history = self.planned.price, self.conv, self.conv.history
        if price is None or self.settings.cache == "off":  # caching off: no filler either
            return plan
        measured = measured_hit(history, price.cache_minimum)
        hit = 1.0 if measured is None else measured
        reads = max(1, history[-1].usage.requests) if history else 1
        carried = conv.chain_pad if plan.previous_interaction_id and chain is not None else 0
        if not carried and reads <= 1:  # one request a turn: a new filler saves nothing (no request is built)
            return plan
        if chain is None or not plan.previous_interaction_id:  # a new chain: its first request
            chain = self._chain_tokens(plan)
        else:
            chain += _tokens(plan.payload)
        if chain >= price.cache_minimum:  # past the minimum: a filler is kept while dropping it costs more
            filler = estimate_tokens(padding(carried))
            over = _requests_over(history, price.cache_minimum + filler)
            kept = carried and filler_kept(price, chain, filler, over, hit)
            return replace(plan, chain_pad=carried) if kept else plan
        shortfall = carried or price.cache_minimum - chain
        if not implicit_padding_pays(price, chain, shortfall, hit, reads, new=not carried):
            return plan
        return replace(plan, chain_pad=shortfall)

    def _chain_tokens(self, plan: TurnPlan) -> int:
        """A new chain's first request, counted as the server counts the chain: the texts (not their JSON
        escapes) and the declarations. Built once a plan: ``restart`` weighs the seed, then ``pad`` the same."""
        if self._first_read is None or self._first_read[0] is not plan:
            body = self.transport.request(plan, self.conv.history)
            tokens = budget.request_tokens(body, self.transport.model) + estimate_tokens(
                json.dumps(body.get("tools", []))
            )
            self._first_read = (plan, tokens)
        return self._first_read[1]

    def _far_under(self, plan: TurnPlan, room: int) -> bool:
        """Rule: contents mode builds a turn's request to check it against the limit (~0.1 ms) only when it may
        be near it. The last turn's requests read its input as the API counted it (all of them: a request of
        this turn reads no more than their sum); this one reads that, the last answer and what this turn adds,
        and earlier results only fade. Under a third of the room (the kernel counts a token as four bytes of
        JSON, more than the API's count), it is far under. Not so after this kernel left turns out (the last
        turn read a compacted transcript), with an image (its bytes count), or without the API's count; a
        turn let go by this rule that the API still refuses is compacted then (``limit``)."""
        usage = self._last_usage()
        if self.conv.compacted or usage is None or usage.input_tokens is None:
            return False
        if any(isinstance(piece, ImagePiece) for piece in plan.pieces):
            return False
        answer = usage.output_tokens or 0
        return usage.input_tokens + answer + _tokens_at_most(plan.payload) <= room // 3

    def _last_usage(self) -> Usage | None:
        """What the conversation's last turn read and wrote, as the API counted it (None before any)."""
        history = self.conv.history
        return history[-1].usage if history else None

    def restart(self, plan: TurnPlan, chain: int, usage: Usage, room: int) -> TurnPlan:
        """Rule: the server keeps every result whole in its chain, so interactions mode starts a new chain
        seeded with the compacted transcript (every earlier turn, what the model fetched as the calls that
        fetch it again) when that is cheaper by the price table: once re-reading the chain's excess over the
        seed has cost, summed over the chain's turns as it accrues (``caching.chain_rent``, kept on the
        conversation), more than the new chain loses of what implicit caching serves (``caching.new_chain_pays``:
        ``chain``, what the first request reads on the chain; ``usage``, the last turn's). Weighed after a turn
        that fetched something (its results are whole on the chain and calls in the seed; without them the two
        differ by noise); a turn between adds the rent of the excess last weighed, a floor of what it re-reads
        (the excess only grows: the chain keeps each turn whole, the seed compacts it). Never in a conversation
        whose agent turns changed the notebook (the seed would keep only their answers: the chain keeps what they
        did). A chain under the model's cache minimum could not show whether implicit caching hits: the rule
        then takes it as hitting (the case where a restart costs most). One line says so; the record keeps every
        turn as it was (the new chain is the turn's ``interaction_id``, as after a lost chain), so replay and
        ``--rerun`` read it as any other turn."""
        history = self.conv.history
        price, last, rent = self.planned.price, history[-1], self.conv.chain_rent
        if price is None or not all(read_only(t.tool_rounds) for t in history):
            return plan
        seen = usage.per_request >= price.cache_minimum
        hit = implicit_share(usage) if seen else 1.0
        fetched = [r for round_ in last.tool_rounds for r in round_.results if r.pieces]
        if not fetched:
            self.conv.chain_rent = replace(rent, paid=rent.paid + chain_rent(price, rent.excess, usage.requests, hit))
            return plan
        fresh = self.planned.resolved.plan(self.planned.pieces, self.settings, restart=True)
        seed = self._chain_tokens(fresh)
        excess = max(0, chain - seed)
        self.conv.chain_rent = rent = ChainRent(rent.paid + chain_rent(price, excess, usage.requests, hit), excess)
        # what a turn adds to a chain, as the last one did: its input, its calls and answer, its results
        results = sum(estimate_tokens(json.dumps(r.response, ensure_ascii=False)) for r in fetched)
        growth = _tokens(plan.payload) + (usage.output_tokens or 0) + results
        start, padded = self.conv.chain_start, self.conv.chain_pad > 0
        begun = to_text(start) if start else ""  # not known after a read back: nothing shared
        shared = seed_shared(seed, to_text(fresh.payload), begun, padded, price.cache_minimum)
        if seed > room or not new_chain_pays(price, rent.paid, chain, seed, usage.requests, hit, growth, shared):
            return plan
        self.display.note(messages.CHAIN_RESTARTED.render())
        return fresh

    def compact(self, plan: TurnPlan, room: int, body: Any, scale: float = 1.0, force: bool = False) -> None:
        """contents mode: the transcript rendered to fit ``room`` tokens (``body()``: the request as it
        would go, estimated, times ``scale``), its earlier results left out already (the calls named): the fewest
        oldest turns left out that it takes (a turn of the document's versions never; all that can go,
        if none fits). Untouched when it fits already and ``force`` is off, or when no turn can go; one
        line says which turns were left out."""
        transport, history = self.transport, self.conv.history
        transport.squeeze = None
        if not history or (not force and _within(body(), scale, room)):
            return

        def fits(dropped: int) -> bool:
            transport.squeeze = Squeeze(dropped)
            return _within(body(), scale, room)

        low, high = 1, len(history)
        while low < high:
            middle = (low + high) // 2
            low, high = (low, middle) if fits(middle) else (middle + 1, high)
        gone = left_out(history, plan, low)
        transport.squeeze = Squeeze(low) if gone else None
        if gone:
            self.conv.compacted = True
            limit = self.limits.of(transport.model)
            self.display.note(messages.COMPACTED.render(limit=limit, first=gone[0], last=gone[-1]))

    # -- chain: a server chain lost --------------------------------------------------------
    def chain(self, plan: TurnPlan, retry: EditRetry | None = None) -> Steps[tuple[TurnPlan, TurnResult]]:
        """Rule: when the server no longer knows the interaction a turn continues (404 on
        ``previous_interaction_id``), or refuses it as past the model's input limit, the turn starts a
        new chain once, carrying what the model needs, and says so; if that fails too, the conversation
        keeps its old chain. A new chain started for its cost (``restart``) whose seed, every earlier turn
        whole, passes the limit is started again the same way, with the short digest. An edit's retry
        continues the interaction its first answer made seconds ago: it is not restarted; nor is an agent
        turn that acted already (the turn fails, its changes stay)."""
        try:
            return plan, (yield from self.calls(plan, retry))
        except Exception as exc:
            over = over_input_limit(exc)
            continued = plan.previous_interaction_id and (status_code(exc) == 404 or over)
            if retry is not None or not (continued or (plan.restarted and over)):
                raise
            if self._acted:  # a new chain would ask the model again for what it already did in the notebook
                raise
        if over is not None:
            self.limits.learn(self.transport.model, over[1])
            self.display.note(messages.CHAIN_OVER_LIMIT.render(limit=over[1]))
        else:
            self.display.note(messages.CHAIN_LOST.render())
        self.conv.lose_chain()  # put back by ``run`` if the new chain fails too
        fresh = self.planned.resolved.plan(self.planned.pieces, self.settings)
        return fresh, (yield from self.calls(fresh, retry))

    # -- calls: the function-call loop -------------------------------------------------------
    def calls(self, plan: TurnPlan, retry: EditRetry | None = None) -> Steps[TurnResult]:
        """Rules: the calls of a reply are answered in order, each with its line in the cell: read-only ones
        here, the agent's (engine/agent.py: offered by ``%%gemini_agent`` only) yielded to the driver, which
        sends back their result; a call to a function not offered, or with bad arguments, gets an error
        result the model reads. Past the turn's bound (``max_tool_calls``; an agent turn's every call
        counts against ``max_agent_steps``) a call gets the limit's error result, the cell names the bound
        once, and the next request turns calling off; a request the budget lets go only with calling off
        (``request``) is the last. The loop ends at the first reply without calls (or at a bound). A result
        the model holds unchanged goes as a short marker (engine/tools.py)."""
        offered, agent, max_calls = self._call_bound()
        held = self._held(plan)
        rounds: list[ToolRound] = []
        groundings: list[Grounding | None] = []
        total: Usage | None = None
        reply: Reply | None = None
        made = 0
        while True:
            reply = self.limit(plan, retry, rounds, reply, bool(rounds) and made >= max_calls)
            total = reply.usage if total is None else added(total, reply.usage)
            groundings.append(reply.grounding)
            if not reply.calls or made >= max_calls or self._capped:
                return TurnResult(reply.text, total, reply.interaction_id, tuple(rounds), joined(groundings))
            results: list[ToolResult] = []
            for call in reply.calls:
                results.append((yield from self._answer(call, offered, held, made >= max_calls)))
                made += 1
            rounds.append(ToolRound(tuple(results), reply.model_content))
            if made >= max_calls:
                bound = messages.AGENT_STEPS_LIMIT if agent else messages.TOOL_LIMIT
                self.display.note(bound.render(count=max_calls))

    def _call_bound(self) -> tuple[tuple[str, ...], bool, int]:
        """Rule: the functions offered (none without the read-only tools), whether the turn is an agent's (it
        offers an agent function), and the turn's bound on calls: ``max_agent_steps`` for an agent turn,
        where every call counts, else ``max_tool_calls``."""
        offered = self.transport.tools if self.planned.resolved.tools is not None else ()
        agent = any(name in offered for name in AGENT_FUNCTIONS)
        return offered, agent, self.settings.max_agent_steps if agent else self.settings.max_tool_calls

    def _held(self, plan: TurnPlan) -> Holdings:
        """What the model holds at the turn's start (a new chain: nothing of the earlier turns' context), so a
        result it holds unchanged goes as a short marker."""
        conv = self.conv
        new_chain = plan.state_mode == "interactions" and plan.previous_interaction_id is None
        index = conv.history[-1].index + 1 if conv.history else 1
        return holdings(index, {} if new_chain else conv.sync.context_hashes, sent_turns(conv.history), plan.pieces)

    def _answer(self, call: ToolCall, offered: tuple[str, ...], held: Holdings, past_bound: bool) -> Steps[ToolResult]:
        """Rule: one call's result: past the turn's bound, the limit's error result; an agent function offered,
        yielded to the driver (bad arguments: an error result the model reads, and its line); any other call
        answered here."""
        if past_bound:
            return error_result(call, LIMIT_REACHED)
        if call.name in AGENT_FUNCTIONS and call.name in offered:
            why = bad_agent_call(call)
            self._acted = self._acted or why is None
            if why is None:
                return (yield call)
            result = error_result(call, why)
            self.display.note(_call_line(result))
            return result
        return self._answered_here(call, offered, held)

    def _answered_here(self, call: ToolCall, offered: tuple[str, ...], held: Holdings) -> ToolResult:
        """A read-only call answered in the kernel, with its line in the cell; a function not offered, or bad
        arguments, get an error result the model reads."""
        tools = self.planned.resolved.tools
        why = bad_call(call, offered)
        if why is not None or tools is None:
            return error_result(call, why or "")
        result = tools.answer(call, held)
        self.display.note(_call_line(result))
        return result

    # -- limit: a request refused as past the input limit ----------------------------------------
    def limit(
        self, plan: TurnPlan, retry: EditRetry | None, rounds: list[ToolRound], last: Reply | None, at_limit: bool
    ) -> Reply:
        """Rules: when Gemini refuses a request as past the model's input limit (the estimate was low, or the
        model's limit is below the table's), the limit it names is kept for the model, and, once a turn:
        in contents mode the transcript is compacted to it (scaled by how far the estimate was off) and the
        request sent once more, without the explicit cache (it holds the uncompacted head); a request
        carrying this turn's function results that is still refused, or that compacting cannot shorten
        (interactions mode: the server holds the chain), goes once more with its fetched results left out
        (``tools.results_left_out``) and calling off: the model answers with what it has, and the cell
        names the limit. Refused after that, or with no fetched result to leave out (a write's own call
        too large), the turn's one line names the limit and the way on (``--new``, ``%gemini reset``); a
        first request in interactions mode is the chain step's."""
        try:
            return self.request(plan, retry, rounds, last, at_limit)
        except Exception as exc:
            over = over_input_limit(exc)
            if over is None or self._limit_retried or (plan.state_mode != "contents" and not rounds):
                raise
        count, allowed = over
        self.limits.learn(self.transport.model, allowed)
        self._limit_retried = True
        if plan.state_mode == "contents" and self._compacted(plan, retry, rounds, last, at_limit, count, allowed):
            try:
                return self.request(plan, retry, rounds, last, at_limit)
            except Exception as exc:
                if over_input_limit(exc) is None or not rounds:
                    raise
        shorter = results_left_out(rounds)
        if shorter is not None:
            self._capped = True  # the model answers now: a call in its reply is not answered
            self.display.note(messages.LIMIT_ANSWER_NOW.render(limit=allowed))
            try:
                return self.request(plan, retry, shorter, last, True)
            except Exception as exc:
                if over_input_limit(exc) is None:
                    raise
        raise UserError(messages.INPUT_LIMIT, limit=allowed)

    def _compacted(
        self,
        plan: TurnPlan,
        retry: EditRetry | None,
        rounds: list[ToolRound],
        last: Reply | None,
        at_limit: bool,
        count: int,
        allowed: int,
    ) -> bool:
        """contents mode: the transcript compacted to ``allowed`` tokens, the estimate scaled by the server's
        ``count``; whether more turns were left out than before (else it would be refused again)."""

        def body() -> dict[str, Any]:
            return self.transport.request(plan, self.conv.history, None, retry, rounds, last, at_limit)

        self.uncached = True
        sent = self.transport.squeeze
        scale = max(1.0, count / max(1, _tokens(body())))  # the server's count against the estimate
        self.compact(plan, int(allowed * FILL), body, scale, force=True)
        return self.transport.squeeze not in (None, sent)

    # -- request: one on the wire ------------------------------------------------------------
    def request(
        self, plan: TurnPlan, retry: EditRetry | None, rounds: list[ToolRound], last: Reply | None, at_limit: bool
    ) -> Reply:
        """Rules: every request is admitted by the budget first (``_admit``), as the model reads it (whole:
        a cache makes it cheaper, never dearer) with what the turn's earlier requests cost, and may go with
        calling off instead of being stopped; the first request
        of the turn carries out the cache step decided for it (make, use, refresh or drop), the later
        ones name the cache it left; a request whose cache the server lost (403/404) makes it again
        once and is sent again."""
        transport, conv, history = self.transport, self.conv, self.conv.history
        at_limit = self._admit(lambda off: transport.request(plan, history, None, retry, rounds, last, off), at_limit)
        written = self._cache_prepared() + self._rounds_folded(plan, retry, rounds, last, at_limit)
        cache = None if self.uncached else self.caches.head(conv)
        try:
            reply = self._exchange(transport.request(plan, history, cache, retry, rounds, last, at_limit))
        except Exception as exc:
            if not isinstance(cache, CachedHead) or self.cache_step is None or not cache_is_gone(exc):
                raise
            cache_head, written = self.caches.remade(
                conv, transport, self.cache_step, self.display.note, self.settings.cache_ttl_s
            )
            reply = self._exchange(transport.request(plan, history, cache_head, retry, rounds, last, at_limit))
        if written:
            reply = replace(reply, usage=replace(reply.usage, cache_write_tokens=written))
        # priced as it comes, by its own size (a long-prompt rate is per request); the turn sums dollars
        reply = replace(reply, usage=priced(reply.usage, self.planned.price, self.planned.day))
        self._bill(reply.usage)
        return reply

    def _rounds_folded(
        self, plan: TurnPlan, retry: EditRetry | None, rounds: list[ToolRound], last: Reply | None, at_limit: bool
    ) -> int:
        """Rule: inside a turn in contents mode, the turn's earlier rounds of calls fold into the explicit cache
        by the rule between turns (``caching.folding_pays``), so the requests after the fold read them at the
        cached price; the tokens written. Not on the turn's first request (it carries out the cache step), nor
        without a cache, nor once compacted, nor at the limit of calls (a request naming a cache may carry no
        tool_config), nor in an edit's retry (its answer and ask follow the rounds: a cache cannot hold them)."""
        off = at_limit or self.uncached or retry is not None or plan.state_mode != "contents"
        if not rounds or last is None or off:
            return 0
        contents = self.transport.request(plan, self.conv.history, SPLIT, None, rounds[:-1], last)["contents"]
        return self.caches.folded(
            self.conv,
            self.transport,
            contents,
            self.planned.price,
            self.settings.cache_ttl_s,
            last.usage,
            max(1, len(rounds) - 1),  # the requests the folded rounds were read by, the newest one after
            self.display.note,
        )

    def _bill(self, usage: Usage) -> None:
        self.billed = usage if self.billed is None else added(self.billed, usage)

    def _exchange(self, body: dict[str, Any]) -> Reply:
        """The request on the wire, its text shown as it streams. Rule: a request that fails (an error, a cut
        stream, the interrupt) after its answer began to stream was billed, but its usage never came: it is
        billed as the kernel estimates it (its input as the budget counts it, the text shown as output)."""
        self.notices.next_request()
        stream = self.transport.exchange(body)
        shown: list[str] = []
        while True:
            try:
                chunk = next(stream)
                shown.append(chunk)
                self.display.chunk(chunk)
            except StopIteration as done:
                return done.value
            except BaseException:
                if shown:
                    self._bill_estimate(body, "".join(shown))
                raise

    def _bill_estimate(self, body: dict[str, Any], text: str) -> None:
        """A request whose answer began and then failed, billed at the kernel's estimate."""
        history, model = self.conv.history, self.planned.resolved.model
        tokens = budget.request_tokens(body, model) + budget.chain_tokens(body, history)
        usage = Usage(input_tokens=tokens, output_tokens=estimate_tokens(text), request_bytes=body_bytes(body))
        self._bill(priced(usage, self.planned.price, self.planned.day))
        self.estimated = True

    def _cache_prepared(self) -> int:
        """The cache step carried out, by the turn's first request only; the tokens it wrote."""
        if not self._step_pending or self.cache_step is None:
            return 0
        self._step_pending = False
        _, written = self.caches.prepare(
            self.conv, self.transport, self.cache_step, self.display.note, self.settings.cache_ttl_s
        )
        return written

    def _admit(self, body: Callable[[bool], dict[str, Any]], at_limit: bool) -> bool:
        """Whether the request goes with calling off (``at_limit`` already, or turned off here), or a
        UserError and the request not sent. Rule: a request goes only when its estimated cost keeps the
        turn under ``max_turn_cost`` and the session under ``max_session_cost``. In a turn that offers
        functions it goes with calling on only when the request answering its calls fits too (estimated
        as this one again: it carries all this one does, and more); otherwise it goes with calling off
        (and calling stays off for the rest of the turn), the model answers with what it has and the cell
        names the cap once; only a request that does not fit even alone stops the turn (``body(off)``:
        the request with calling on or off, made only when a cap is set)."""
        caps, price = self.settings.caps, self.planned.price
        if caps.turn is None and caps.session is None:
            return at_limit  # no cap
        name, model = "max_turn_cost" if caps.turn is not None else "max_session_cost", self.planned.resolved.model
        if price is None:  # a cap cannot hold a cost nobody knows: never a guessed price
            raise UserError(messages.BUDGET_NO_PRICE, name=name, model=model)
        search = self.transport.search
        if search and price.search_query is None:  # nor a search whose price nobody knows
            raise UserError(messages.BUDGET_NO_SEARCH_PRICE, name=name, model=model)
        spent = None if self.billed is None else self.billed.cost_usd or 0.0

        def refused(off: bool, requests: int) -> UserError | None:
            expected = budget.estimate(price, body(off), self.conv.history, model, search)
            return budget.refusal(expected * requests, caps, spent or 0.0, self.session_spent, first=spent is None)

        at_limit = at_limit or self._capped  # calling turned off: off for the turn (an edit's retry)
        pair = None
        if self.transport.tools and not at_limit:
            pair = refused(False, 2)
            if pair is None:
                return False
        alone = refused(at_limit or pair is not None, 1)
        if alone is not None:
            raise alone
        if pair is not None:
            self._capped = True
            self.display.note(messages.BUDGET_ANSWER_NOW.render(**pair.fields))
        return at_limit or pair is not None


def priced(usage: Usage, price: Price | None, day: dt.date) -> Usage:
    """One request's usage at the rates of its day and its prompt's size, and what it would cost with
    nothing cached."""
    usage = replace(usage, priced_on=day.isoformat())
    if price is None or usage.input_tokens is None or usage.output_tokens is None:
        return usage
    if usage.searches and price.search_query is None:  # a part of the bill nobody knows: tokens only
        return usage
    output = usage.output_tokens + (usage.thinking_tokens or 0)
    searched = usage.searches * (price.search_query or 0.0)  # each query the model ran, at the model's rate
    cost = turn_cost(price, usage.input_tokens, usage.cached_tokens or 0, output, usage.cache_write_tokens)
    resend = turn_cost(price, usage.input_tokens, 0, output)
    return replace(usage, cost_usd=cost + searched, resend_cost_usd=resend + searched)


def _requests_over(history: Sequence[Turn], reads: int) -> int:
    """The requests of the newest turns in a row that each read at least ``reads`` tokens (a chain past the
    minimum with its filler)."""
    total = 0
    for turn in reversed(history):
        usage = turn.usage
        if usage.per_request < reads:
            break
        total += usage.requests
    return total


def _tokens(body: dict[str, Any]) -> int:
    """A request's input tokens as the kernel estimates them: four bytes a token of its JSON."""
    return (body_bytes(body) + 3) // 4


def _tokens_at_most(body: dict[str, Any]) -> int:
    """An upper bound of ``_tokens(body)``, without serialising the body."""
    return (body_bytes_at_most(body) + 3) // 4


def _within(body: dict[str, Any], scale: float, room: int) -> bool:
    """Whether ``_tokens(body)`` times ``scale`` is at most ``room``: settled by the bytes' upper bound when
    that fits (no serialising: a turn far under the limit), else counted."""
    return _tokens_at_most(body) * scale <= room or _tokens(body) * scale <= room


def _call_line(result: ToolResult) -> str:
    """The call's one line in the cell: what it asked for and what the model got."""
    if result.status == "error":
        return messages.TOOL_FAILED.render(call=result.call.label, error=result.response["error"])
    what = messages.TOOL_UNCHANGED if result.status == "unchanged" else messages.TOOL_CALLED
    return what.render(call=result.call.label, chars=result.chars)
