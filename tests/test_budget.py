"""The budget: a request's estimated cost before it is sent, refused in one line when it would pass
max_turn_cost or max_session_cost (nothing sent, nothing changed); %gemini cost."""

from __future__ import annotations

import datetime as dt

import pytest

from genai_magics import messages
from genai_magics.engine.conversation import Turn, Usage
from genai_magics.gemini.budget import (
    FIRST_TURN_OUTPUT,
    Caps,
    check_cap,
    dollars,
    estimate,
    exact,
    expected_output,
    refusal,
    request_tokens,
)
from genai_magics.gemini.models import DEFAULT_MODEL
from genai_magics.gemini.pricing import price_for

FLASH = price_for(DEFAULT_MODEL, day=dt.date(2026, 12, 31))


def turn(index: int, out: int | None, thinking: int | None = None, inp: int = 100) -> Turn:
    return Turn(index, "ask", "p", "contents", usage=Usage(inp, out, thinking_tokens=thinking))


def test_the_output_expected_is_the_largest_recent_answer_or_the_first_turn_allowance():
    assert expected_output([]) == FIRST_TURN_OUTPUT
    assert expected_output([turn(1, 50), turn(2, 70, thinking=30), turn(3, 20)]) == 100
    # only the last three count; a turn without a reported output does not
    assert expected_output([turn(1, 9_000), turn(2, 10), turn(3, 20), turn(4, None), turn(5, 30)]) == 30


def test_the_estimate_counts_the_request_as_the_kernel_does_and_the_chain_it_reads_again():
    contents = {"contents": [{"role": "user", "parts": [{"text": "x" * 400}]}], "config": {"system_instruction": ""}}
    assert request_tokens(contents, DEFAULT_MODEL) == 100
    first = estimate(FLASH, contents, [], DEFAULT_MODEL)
    assert first == pytest.approx((100 * 0.75 + FIRST_TURN_OUTPUT * 3.75) / 1e6)
    chained = {"input": "y" * 40, "previous_interaction_id": "i1"}
    history = [turn(1, 200, inp=5_000)]
    # the server chain makes the model read the last turn's input and answer again
    assert estimate(FLASH, chained, history, DEFAULT_MODEL) == pytest.approx(((10 + 5_200) * 0.75 + 200 * 3.75) / 1e6)
    assert estimate(FLASH, {"input": "y" * 40}, history, DEFAULT_MODEL) == pytest.approx((10 * 0.75 + 200 * 3.75) / 1e6)


def test_a_request_passing_either_cap_is_refused_naming_the_setting():
    assert refusal(0.0036, Caps(), 0, 0, first=True) is None  # off by default
    assert refusal(0.0036, Caps(turn=0.00001), 0, 0, first=True) == messages.BUDGET_REFUSED.render(
        estimate="0.0036", name="max_turn_cost", cap="0.00001"
    )
    assert refusal(0.003, Caps(turn=0.003), 0, 0, first=True) is None  # at the cap is within it
    # the session cap counts what this session spent, and the turn's earlier requests
    assert refusal(0.002, Caps(session=0.01), 0.002, 0.007, first=False) == messages.BUDGET_STOPPED.render(
        estimate="0.011", name="max_session_cost", cap="0.01"
    )
    assert refusal(0.002, Caps(session=0.01), 0, 0.007, first=True) is None


@pytest.mark.parametrize("bad", [-1, -0.01, "abc", "1", True, float("nan"), float("inf"), [1]])
def test_a_cap_is_none_or_a_number_at_least_zero(bad):
    assert check_cap("max_turn_cost", None) is None and check_cap("max_turn_cost", 0) == 0.0
    assert check_cap("max_session_cost", 2) == 2.0
    with pytest.raises(ValueError) as refused:
        check_cap("max_turn_cost", bad)
    assert str(refused.value) == messages.CAP_BAD.render(name="max_turn_cost", value=bad)


def test_dollars_have_two_significant_digits_and_caps_are_shown_as_written():
    assert [dollars(v) for v in (0.0036, 0.00361, 0.011, 1.23, 0)] == ["0.0036", "0.0036", "0.011", "1.2", "0"]
    assert [exact(v) for v in (0.00001, 2.0, 0.5)] == ["0.00001", "2", "0.5"]
