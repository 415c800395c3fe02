"""Text for people: the per-turn footer and the token table (pure functions)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from .. import messages
from ..engine import rules
from ..engine.agent import wrote
from ..engine.context import SECONDARY_FIELD, ContextPiece
from ..engine.conversation import Conversation, Spent, Turn, TurnPlan, Usage
from ..engine.hashing import short
from ..engine.outputs import ImagePiece, piece_name, piece_tokens
from ..engine.text import cut
from ..messages import Message


def _n(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def _usd(value: float) -> str:
    """Two significant digits: ~$0.0012, ~$0.011, ~$1.2."""
    return f"~${value:.2g}" if 0 < abs(value) < 1 else f"~${value:,.2f}"


def _saved(usage: Usage) -> float | None:
    if usage.cost_usd is None or usage.resend_cost_usd is None:
        return None
    return usage.resend_cost_usd - usage.cost_usd


def bill(usage: Usage) -> str:
    """``in 12,345 tok (11,002 cached) · out 321 · ~$0.0012 · ~$0.011 saved vs resending``."""
    cached = messages.BILL_CACHED.render(tokens=usage.cached_tokens) if usage.cached_tokens else ""
    thinking = messages.BILL_THINKING.render(tokens=usage.thinking_tokens) if usage.thinking_tokens else ""
    parts = [
        messages.BILL_IN.render(tokens=_n(usage.input_tokens), cached=cached),
        messages.BILL_OUT.render(tokens=_n(usage.output_tokens), thinking=thinking),
    ]
    if usage.cache_write_tokens:
        parts.append(messages.BILL_WRITTEN.render(tokens=usage.cache_write_tokens))
    if usage.cost_usd is not None:
        parts.append(_usd(usage.cost_usd))
        saved = _saved(usage)
        if saved and saved > 0:
            parts.append(messages.BILL_SAVED.render(usd=_usd(saved)))
        elif saved and saved < 0:
            parts.append(messages.BILL_MORE.render(usd=_usd(-saved)))
    return messages.FOOTER_SEPARATOR.join(parts)


def footer(turn: Turn, plan: TurnPlan, model: str) -> str:
    """The turn's footer, naming the magic that asked it (``Turn.magic``)."""
    usage = turn.usage
    parts = [
        messages.FOOTER_TURN.render(turn=turn.index, mode=turn.magic, state=turn.state_mode, model=model),
        bill(usage),
        messages.FOOTER_REQUEST.render(size=usage.request_bytes)
        if usage.requests == 1
        else messages.FOOTER_REQUESTS.render(count=usage.requests, size=usage.request_bytes),
    ]
    calls = sum(len(r.results) for r in turn.tool_rounds)
    if calls:
        parts.append(messages.FOOTER_CALLS.render(count=calls))
    if usage.searches:  # each billed at the model's rate, in the dollars above
        parts.append(messages.FOOTER_SEARCHES.render(count=usage.searches))
    if (doc := plan.document) is not None:
        if plan.synchronized:
            parts.append(messages.DOCUMENT_SYNCHRONIZED.render(label=doc.label))
        elif plan.source_patch is not None:
            parts.append(messages.DOCUMENT_PATCHED.render(label=doc.label, chars=len(plan.source_patch)))
        else:
            sent = messages.DOCUMENT_CACHED if usage.cache_write_tokens else messages.DOCUMENT_SENT
            parts.append(sent.render(label=doc.label, chars=len(doc.source)))
    said = rules.summary(plan.pieces, plan.omitted)  # the rules in one part, not a part per file
    parts += [said] if said else []
    parts += [messages.PIECE_UNCHANGED.render(name=_named(piece)) for piece in plan.omitted if not rules.is_rule(piece)]
    for piece in (p for p in plan.pieces if not rules.is_rule(p)):
        if isinstance(piece, ImagePiece):
            parts.append(messages.IMAGE_SENT.render(name=_named(piece), tokens=piece_tokens(piece, model)))
        else:
            parts.append(messages.PIECE_SENT.render(name=_named(piece)))
    if turn.saved_tokens:
        parts.append(messages.TOKENS_SAVED.render(tokens=turn.saved_tokens))
    return messages.FOOTER_SEPARATOR.join(parts)


# The payload's fields the footer names in plain words: sources/ defines the last two (LAST_ERROR_FIELD,
# VARIABLES_FIELD), which ui/ may not import; tests/unit/test_magics_parts.py holds them equal.
PLAIN_NAMES = {
    SECONDARY_FIELD: messages.PIECE_OTHER_CELLS,
    "lastError": messages.PIECE_LAST_ERROR,
    "variables": messages.PIECE_VARIABLE,
}


def _named(piece: ContextPiece) -> str:
    """A piece as the footer names it: in plain words, not by the payload's field (``secondaryContext``)."""
    plain = PLAIN_NAMES.get(piece.field)
    if plain is None:
        return piece_name(piece)
    return plain.render(**({"name": piece.name} if plain.fields else {}))


def replay_footer(turn: Turn, at: float) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(at))
    return messages.REPLAYED_FOOTER.render(turn=turn.index, when=when)


_REPLAYED_OUTCOMES = {
    "proposed": messages.REPLAYED_NOT_ACTED,
    "applied": messages.REPLAYED_APPLIED,
    "discarded": messages.REPLAYED_DISCARDED,
    "undone": messages.REPLAYED_UNDONE,
}


def replayed_proposal(turn: Turn, holds: str | None) -> str:
    """The status line of a proposal shown from the record: what happened to it, what the cell holds now."""
    where = turn.document_label or "the cell"
    if holds is None:
        now = ""
    elif turn.proposal_source is not None and holds == turn.proposal_source:
        now = messages.REPLAYED_HOLDS_PROPOSAL.render(where=where)
    elif holds == turn.base_source:
        now = messages.REPLAYED_HOLDS_BEFORE.render(where=where)
    else:
        now = messages.REPLAYED_CHANGED.render(where=where)
    done = _REPLAYED_OUTCOMES.get(turn.outcome)
    return messages.REPLAYED_PROPOSAL.render(outcome=turn.outcome if done is None else done.render(), now=now)


def token_table(conv: Conversation) -> str:
    header = (
        f"{'turn':>4}  {'mode':<5}  {'state':<12}  {'in tok':>8}  {'cached':>8}  {'out tok':>8}  "
        f"{'req bytes':>10}  {'doc':<6}  {'images':>6}  {'saved':>7}  {'cost $':>9}  {'saved $':>9}"
    )
    rows = [f"conversation {conv.name!r}", header]
    for t in conv.history:
        doc = "-" if t.base_sha256 is None else ("sent" if t.sent_source else "patch" if t.source_patch else "synced")
        u = t.usage
        images = sum(isinstance(p, ImagePiece) for p in t.pieces)  # sent by this turn; "in tok" counts them
        rows.append(
            f"{t.index:>4}  {t.magic:<5}  {t.state_mode:<12}  {_n(u.input_tokens):>8}  {u.cached_tokens or 0:>8,}  "
            f"{_n(u.output_tokens):>8}  {u.request_bytes:>10,}  {doc:<6}  {images:>6}  {t.saved_tokens:>7,}  "
            f"{_dollars(u.cost_usd):>9}  {_dollars(_saved(u)):>9}"
        )
    rows.append(_total_row("all", [t.usage for t in conv.history], sum(t.saved_tokens for t in conv.history)))
    return "\n".join(rows)


def _dollars(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _total_row(label: str, usages: Sequence[Usage], saved_tokens: int) -> str:
    priced = [u for u in usages if u.cost_usd is not None]
    cost = sum(u.cost_usd or 0 for u in priced) if priced else None
    saved = sum(_saved(u) or 0 for u in priced) if priced else None
    unpriced = len(usages) - len(priced)
    note = f"  ({unpriced} turn(s) of a model with no price: tokens only)" if priced and unpriced else ""
    return (
        f"{label:>4}  {'':<5}  {'':<12}  {sum(u.input_tokens or 0 for u in usages):>8,}  "
        f"{sum(u.cached_tokens or 0 for u in usages):>8,}  {sum(u.output_tokens or 0 for u in usages):>8,}  "
        f"{sum(u.request_bytes for u in usages):>10,}  {'':<6}  {'':>6}  {saved_tokens:>7,}  {_dollars(cost):>9}  "
        f"{_dollars(saved):>9}{note}"
    )


def session_totals(convs: Sequence[Conversation], storage: Sequence[tuple[str, float, float | None]]) -> str:
    """Every conversation's turns together, and explicit cache storage so far (model, token-hours, dollars)."""
    turns = [t for c in convs for t in c.history]
    lines = [
        f"session: {len(convs)} conversation(s), {len(turns)} turn(s)",
        _total_row("all", [t.usage for t in turns], sum(t.saved_tokens for t in turns)),
    ]
    for model, hours, dollars in storage:
        lines.append(
            f"cache storage {model}: {hours:,.1f} token-hours"
            + (f", {_usd(dollars)}" if dollars is not None else " (no price known)")
        )
    return "\n".join(lines)


def cost_report(spent: Sequence[Spent], before: Sequence[Spent]) -> str:
    """What ``%gemini cost`` prints: this session's turns, then the record's ledger from before the last restart
    (every turn billed, of conversations forgotten since too), each per conversation and model (the session's
    total is its footers' sum, and what its failed turns were billed)."""
    lines = [_spent_line(messages.COST_THIS_SESSION, spent), *_spent_rows(spent)]
    lines += [_spent_line(messages.COST_BEFORE, before), *_spent_rows(before)]
    return "\n".join(lines)


def _spent_line(line: Message, spent: Sequence[Spent]) -> str:
    priced = [s.usage.cost_usd for s in spent if s.usage.cost_usd is not None]
    unpriced = len(spent) - len(priced)
    failed = sum(s.failed for s in spent)
    estimated = sum(s.estimated for s in spent)
    return line.render(
        cost=f"${sum(priced):.6f}" if priced else "$0",
        turns=len(spent),
        unpriced=messages.COST_UNPRICED.render(count=unpriced) if unpriced else "",
        failed=messages.COST_FAILED.render(
            count=failed, estimated=messages.COST_ESTIMATED.render(count=estimated) if estimated else ""
        )
        if failed
        else "",
    )


def _spent_rows(spent: Sequence[Spent]) -> list[str]:
    groups: dict[tuple[str, str], list[Spent]] = {}
    for s in spent:
        groups.setdefault((s.conversation, s.model), []).append(s)
    rows = []
    for (name, model), items in groups.items():
        priced = [s.usage.cost_usd for s in items if s.usage.cost_usd is not None]
        searches = sum(s.usage.searches for s in items)
        rows.append(
            messages.COST_ROW.render(
                name=name,
                model=model,
                turns=len(items),
                tokens=sum((s.usage.input_tokens or 0) + (s.usage.output_tokens or 0) for s in items),
                searches=messages.COST_SEARCHES.render(count=searches) if searches else "",
                cost=f"${sum(priced):.6f}" if priced else messages.COST_TOKENS_ONLY.render(),
            )
        )
    return rows


def status(convs: Sequence[Conversation], model: str, state: str, view: str) -> str:
    lines = [f"model {model} · default state mode {state} · notebook view: {view}"]
    if not convs:
        lines.append(messages.NO_CONVERSATION_YET.render())
    for c in convs:
        lines.append(
            f"conversation {c.name!r}: {len(c.history)} turn(s), state {c.state_mode}, "
            f"active document sha256 {short(c.sync.active_document_sha256) or '-'}, "
            f"secondary context hash {short(c.sync.secondary_context_hash) or '-'}"
            + (f", interaction {c.last_interaction_id}" if c.last_interaction_id else "")
        )
    return "\n".join(lines)


def history(conv: Conversation, width: int = 100) -> str:
    lines = [f"conversation {conv.name!r}"]
    for t in conv.history:
        prompt = cut(" ".join(t.prompt.split()), width)
        reply = cut(" ".join(t.response.split()), width)
        outcome = f" [{t.outcome}]" if t.outcome != "none" else ""
        if t.agent and t.outcome == "none" and wrote(t.tool_rounds):  # an agent turn's changes: undone or not
            outcome = " [changes kept]"
        target = f" on {t.document_label}" if t.document_label else ""
        lines.append(f"{t.index:>3} {t.magic}{target}{outcome}: {prompt}")
        lines.append(f"    -> {reply}")
    return "\n".join(lines)
