"""A model with no known price (issue 44): accepted with one line, its turns in tokens only, and a cost cap
refuses it rather than guess; `%gemini models` marks which models are priced. The in-process shell against
the stand-in (the real SDK over real HTTP)."""

from __future__ import annotations

from helpers.wire import api_requests

from genai_magics import messages
from genai_magics.gemini.models import DEFAULT_MODEL
from genai_magics.gemini.pricing import PRICES

UNPRICED = "gemini-9-unpriced"


def test_an_unpriced_model_is_accepted_with_one_line_once(magic_shell, stub):
    magic_shell.run("%gemini reset --all")
    chosen = magic_shell.run(f"%gemini model {UNPRICED}")
    try:
        assert chosen.stdout.splitlines() == [
            messages.MODEL_IS.render(model=UNPRICED),
            messages.MODEL_UNPRICED.render(model=UNPRICED),
        ]
        first = magic_shell.run("%%gemini_ask -c odd\nwhy?", cell_id="m1")
        second = magic_shell.run("%%gemini_ask -c odd\nand now?", cell_id="m2")
    finally:
        magic_shell.run(f"%gemini model {DEFAULT_MODEL}")
    assert len(api_requests(stub)) == 2  # accepted: both turns asked
    line = messages.MODEL_UNPRICED.render(model=UNPRICED)
    assert first.plain.count(line) == 1 and line not in second.plain


def test_a_cost_cap_refuses_an_unpriced_model_rather_than_guess(magic_shell, stub):
    magic_shell.run("%gemini reset --all")
    magic_shell.magics.max_turn_cost = 1.0  # on this load only
    refused = magic_shell.run(f"%%gemini_ask -c odd --model {UNPRICED}\nwhy?", cell_id="m1")
    assert api_requests(stub) == []
    assert refused.stderr.strip() == messages.BUDGET_NO_PRICE.shown(name="max_turn_cost", model=UNPRICED)
    magic_shell.run(f"%%gemini_ask -c priced --model {DEFAULT_MODEL}\nwhy?", cell_id="m2")
    assert len(api_requests(stub)) == 1  # a priced model under the same cap goes


def test_models_marks_the_priced_ones(magic_shell, stub):
    listed = magic_shell.run("%gemini models").stdout.splitlines()
    rows = {line[3:].split()[0]: line[:2] for line in listed if line[3:].startswith("gemini")}
    assert rows[DEFAULT_MODEL] == "*$"
    assert rows["gemini-4-argon"] == " $" and "gemini-4-argon" in PRICES
    assert rows["gemini-embedding-001"] == "  "  # no price known
    argon = next(line for line in listed if line[3:].startswith("gemini-4-argon"))
    assert messages.MODELS_IMPLICIT_ONLY.render() in argon  # Gemini 4: a stable prefix earns the discount
    assert messages.MODELS_INPUT_LIMIT.render(tokens=1_048_576) in argon  # the endpoint's inputTokenLimit
    assert not any(messages.MODELS_IMPLICIT_ONLY.render() in line for line in listed if DEFAULT_MODEL in line)
    assert listed[-1] == messages.MODELS_LEGEND.render()
