"""A request's cost before it is sent, and the caps it must stay under (``GeminiMagics.max_turn_cost``,
``max_session_cost``). Pure: the session calls ``admit`` before every request of a turn.

The estimate is the request's input as the kernel counts it (about four bytes a token, images by the
image rule), all at the input price of the day for a prompt of its size (a tiered model charges more
over 200k tokens; a cache would make it cheaper, never dearer), plus, in
interactions mode, what the server chain makes the model read again (the previous turn's input and
answer); the output is the largest of the conversation's recent answers (thinking included), or a fixed
allowance when the conversation has none yet; a request that may search (``--search``) adds the most
searches of the recent turns (``FIRST_SEARCHES`` when they ran none) at the model's price per query.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import messages
from ..engine.conversation import Spent, Turn
from ..engine.errors import UserError
from ..engine.outputs import part_tokens
from ..engine.text import estimate_tokens
from .pricing import Price, turn_cost

FIRST_TURN_OUTPUT = 1_000  # tokens allowed for the answer of a conversation's first turn
RECENT_TURNS = 3  # the answers the next one is expected to be like
# searches allowed for a request that may search, when the conversation's recent turns ran none: Gemini 3.5
# Flash ran 4-7 a question (docs.apiyi.com/en/api-capabilities/gemini/web-search, measured 2026-06-11)
FIRST_SEARCHES = 7


@dataclass(frozen=True)
class Caps:
    """US$ a turn (all its requests) and this kernel's session may cost; None: no cap."""

    turn: float | None = None
    session: float | None = None


def total(spent: Sequence[Spent], before: float = 0.0) -> float:
    """US$ of the priced turns (a turn of a model without a price adds nothing: tokens only), added in
    order to ``before`` (a running total: the same float as summing all at once)."""
    return sum((s.usage.cost_usd or 0.0 for s in spent), before)


def check_cap(name: str, value: Any) -> float | None:
    """The cap as set (None: off), or a UserError with its one line: a number >= 0 or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise UserError(messages.CAP_BAD, name=name, value=value)
    return float(value)


def request_tokens(body: Mapping[str, Any], model: str) -> int:
    """The input tokens of a request body (either state mode's) as the kernel counts them: every part it
    carries, function calls and results (with the images inside them) included."""
    tokens = _instruction_tokens(body)
    for content in body.get("contents") or ():
        tokens += sum(_part_tokens(p, model) for p in content.get("parts") or ())
    given = body.get("input")
    if isinstance(given, str):
        tokens += estimate_tokens(given)
    elif isinstance(given, list):
        tokens += sum(_input_tokens(item, model) for item in given)
    return tokens


def _part_tokens(part: Mapping[str, Any], model: str) -> int:
    """contents mode: a text or image part, a ``functionCall`` (its name and arguments as JSON), or a
    ``functionResponse`` (its response as JSON, and its inline images by the image rule)."""
    call = part.get("functionCall")
    if isinstance(call, Mapping):
        return estimate_tokens(json.dumps(call, ensure_ascii=False))
    response = part.get("functionResponse")
    if isinstance(response, Mapping):
        text = json.dumps({k: v for k, v in response.items() if k != "parts"}, ensure_ascii=False)
        return estimate_tokens(text) + sum(part_tokens(p, model) for p in response.get("parts") or ())
    return part_tokens(part, model)


def _input_tokens(item: Mapping[str, Any], model: str) -> int:
    """interactions mode: an input item: text, an image, a ``function_result`` (its result: text, or text and
    images) or anything else as its JSON."""
    kind = item.get("type")
    if kind == "image":
        return part_tokens({"inlineData": {"data": item.get("data")}}, model)
    if kind == "text":
        return estimate_tokens(str(item.get("text", "")))
    if kind == "function_result":
        result = item.get("result")
        named = estimate_tokens(str(item.get("name", "")))
        if isinstance(result, list):
            return named + sum(_input_tokens(r, model) for r in result if isinstance(r, Mapping))
        return named + estimate_tokens(result if isinstance(result, str) else json.dumps(result, ensure_ascii=False))
    return estimate_tokens(json.dumps(item, ensure_ascii=False))


def _instruction_tokens(body: Mapping[str, Any]) -> int:
    """The system instruction and response schema every request carries again."""
    config = body.get("config") or {}
    system = config.get("system_instruction") or body.get("system_instruction") or ""
    schema = config.get("response_schema") or (body.get("response_format") or {}).get("schema")
    return estimate_tokens(str(system)) + (estimate_tokens(json.dumps(schema)) if schema else 0)


def expected_output(history: Sequence[Turn]) -> int:
    """The largest answer (thinking included) of the conversation's recent turns; the allowance for a first."""
    recent = [
        (t.usage.output_tokens or 0) + (t.usage.thinking_tokens or 0)
        for t in history[-RECENT_TURNS:]
        if t.usage.output_tokens is not None
    ]
    return max(recent) if recent else FIRST_TURN_OUTPUT


def chain_tokens(body: Mapping[str, Any], history: Sequence[Turn]) -> int:
    """Interactions: what the server chain adds to the input: the last turn's input and answer, read again
    (but its system instruction, which this request carries again and ``request_tokens`` counts)."""
    if not body.get("previous_interaction_id") or not history:
        return 0
    last = history[-1].usage
    return max(0, (last.input_tokens or 0) + (last.output_tokens or 0) - _instruction_tokens(body))


def expected_searches(history: Sequence[Turn]) -> int:
    """The most searches of the conversation's recent turns; ``FIRST_SEARCHES`` when they ran none."""
    return max([t.usage.searches for t in history[-RECENT_TURNS:]] + [0]) or FIRST_SEARCHES


def estimate(price: Price, body: Mapping[str, Any], history: Sequence[Turn], model: str, search: bool = False) -> float:
    """US$ the request is expected to cost (see the module's docstring); ``search``: it may run Google
    searches, each at the model's rate."""
    tokens = request_tokens(body, model) + chain_tokens(body, history)
    searches = expected_searches(history) * (price.search_query or 0.0) if search else 0.0
    return turn_cost(price, tokens, 0, expected_output(history)) + searches


def refusal(expected: float, caps: Caps, turn_spent: float, session_spent: float, first: bool) -> UserError | None:
    """The failure that stops the request, or None: it may go. ``turn_spent``: the turn's earlier requests;
    ``session_spent``: this kernel's turns so far; ``first``: no request of the turn went yet."""
    for name, cap, spent in (
        ("max_turn_cost", caps.turn, turn_spent),
        ("max_session_cost", caps.session, session_spent + turn_spent),
    ):
        if cap is not None and spent + expected > cap:
            what = messages.BUDGET_REFUSED if first else messages.BUDGET_STOPPED
            return UserError(what, estimate=dollars(spent + expected), name=name, cap=exact(cap))
    return None


def dollars(value: float) -> str:
    """Two significant digits, never an exponent: 0.0036, 0.011, 1.2, 12."""
    if value <= 0:
        return "0"
    places = max(0, 1 - math.floor(math.log10(value)))
    return f"{value:.{places}f}"


def exact(value: float) -> str:
    """A cap as the user wrote it: 0.00001, 2, 0.5."""
    return f"{value:.12f}".rstrip("0").rstrip(".")
