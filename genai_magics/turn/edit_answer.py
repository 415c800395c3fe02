"""An edit turn's answer made into a proposal: the whole text, or edits the kernel applies strictly.

When an answer's edits do not apply (a ``find`` that matches nowhere or twice),
no proposal is built from a guess: the same conversation is asked once more, for
``proposedSource``; if that answer has none either, the turn fails in one line
and nothing is recorded.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace

from .. import messages
from ..engine.cells import Document
from ..engine.conversation import added
from ..engine.edits import EditRefused, apply_edits, parse_edits
from ..engine.errors import UserError
from ..engine.payloads import retry_payload
from ..engine.redaction import redact
from ..gemini.transport import EditRetry
from .requests import EditAnswer, TurnResult


def parse_edit_answer(text: str) -> EditAnswer:
    """The answer's explanation and ``proposedSource`` or ``edits``, or a UserError: nothing is recorded."""
    try:
        data = json.loads(text)
    except ValueError:
        raise UserError(messages.EDIT_NOT_JSON) from None
    if not isinstance(data, dict):
        data = {}
    given = data.get("explanation")
    explanation = given if isinstance(given, str) else ""
    edits = parse_edits(data.get("edits")) if "edits" in data else None
    if isinstance(data.get("proposedSource"), str):  # both given: the whole text is the answer
        return EditAnswer(explanation, data["proposedSource"])
    if edits is not None:
        return EditAnswer(explanation, None, edits)
    raise UserError(messages.EDIT_EMPTY)


def built(answer: EditAnswer, document: Document | None) -> EditAnswer | EditRefused:
    """The answer with its whole proposal: edits applied to the document as the model holds it (key masked)."""
    if answer.source is not None or answer.edits is None:
        return answer
    result = apply_edits(redact(document.source) if document else "", answer.edits)
    return result if isinstance(result, EditRefused) else replace(answer, source=result)


Resend = Callable[[EditRetry], TurnResult]


def settle(
    result: TurnResult, document: Document | None, resend: Resend, note: Callable[[str], None]
) -> tuple[TurnResult, EditAnswer]:
    """The answer as a proposal; edits that do not apply are asked for once more as the whole text."""
    first = built(parse_edit_answer(result.text), document)
    if not isinstance(first, EditRefused):
        return result, first
    why = first.describe()
    note(messages.EDITS_ASKED_AGAIN.render(why=why))
    again = resend(EditRetry(result.text, retry_payload(why), result.interaction_id, result.rounds))
    second = parse_edit_answer(again.text)
    if second.source is None:
        raise UserError(messages.EDITS_AGAIN, why=why)
    total = TurnResult(again.text, added(result.usage, again.usage), again.interaction_id, result.rounds + again.rounds)
    return total, second
