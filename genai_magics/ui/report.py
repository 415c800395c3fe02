"""Text for people: the per-turn footer and the token table (pure functions)."""
from __future__ import annotations

from typing import Sequence

from ..engine.conversation import Conversation, Turn, TurnPlan
from ..engine.hashing import short


def _n(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def footer(turn: Turn, plan: TurnPlan, model: str) -> str:
    parts = [
        f"turn {turn.index} · {turn.mode} · {turn.state_mode} · {model}",
        f"in {_n(turn.usage.input_tokens)} tok · out {_n(turn.usage.output_tokens)} tok",
        f"request {turn.usage.request_bytes:,} B",
    ]
    omitted = []
    if plan.document is not None:
        if plan.synchronized:
            omitted.append(f"{plan.document.label} not re-sent: synchronized")
        else:
            omitted.append(f"{plan.document.label} sent ({len(plan.document.source):,} chars)")
    for piece in plan.omitted:
        omitted.append(f"{piece.key} not re-sent: unchanged")
    for piece in plan.pieces:
        omitted.append(f"{piece.key} sent")
    if turn.saved_tokens:
        omitted.append(f"~{turn.saved_tokens:,} tokens saved")
    return " · ".join(parts + omitted)


def token_table(conv: Conversation) -> str:
    header = f"{'turn':>4}  {'mode':<4}  {'state':<12}  {'in tok':>8}  {'out tok':>8}  {'req bytes':>10}  {'doc':<6}  {'saved':>7}"
    rows = [f"conversation {conv.name!r}", header]
    total_in = total_out = total_bytes = total_saved = 0
    for t in conv.history:
        doc = "-" if t.base_sha256 is None else ("sent" if t.sent_source else "synced")
        rows.append(
            f"{t.index:>4}  {t.mode:<4}  {t.state_mode:<12}  {_n(t.usage.input_tokens):>8}  "
            f"{_n(t.usage.output_tokens):>8}  {t.usage.request_bytes:>10,}  {doc:<6}  {t.saved_tokens:>7,}"
        )
        total_in += t.usage.input_tokens or 0
        total_out += t.usage.output_tokens or 0
        total_bytes += t.usage.request_bytes
        total_saved += t.saved_tokens
    rows.append(f"{'all':>4}  {'':<4}  {'':<12}  {total_in:>8,}  {total_out:>8,}  {total_bytes:>10,}  {'':<6}  {total_saved:>7,}")
    return "\n".join(rows)


def status(convs: Sequence[Conversation], model: str, state: str, view: str) -> str:
    lines = [f"model {model} · default state mode {state} · notebook view: {view}"]
    if not convs:
        lines.append("no conversation yet")
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
        prompt = " ".join(t.prompt.split())[:width]
        reply = " ".join(t.response.split())[:width]
        outcome = f" [{t.outcome}]" if t.outcome != "none" else ""
        target = f" on {t.document_label}" if t.document_label else ""
        lines.append(f"{t.index:>3} {t.mode}{target}{outcome}: {prompt}")
        lines.append(f"    -> {reply}")
    return "\n".join(lines)
