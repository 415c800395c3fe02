"""A benchmark's goals (``benchmarks/goals.py``, issue 42): one ``target`` line each; a FAIL exits 1 unless
``--report`` is given; a smoke run judges none."""

from __future__ import annotations

import sys

from helpers.benchmark import BENCHMARKS

sys.path.insert(0, str(BENCHMARKS))

from goals import SMOKE, Goals  # noqa: E402


def test_a_missed_goal_fails_the_run_unless_report_is_given(capsys):
    goals = Goals()
    assert goals.line("x <= 1.5x", True, "1.20x") == "target x <= 1.5x: measured 1.20x — PASS"
    assert goals.exit_code() == 0
    assert goals.line("y <= 1.5x", False, "2.00x") == "target y <= 1.5x: measured 2.00x — FAIL"
    assert goals.exit_code(report=True) == 0
    assert goals.exit_code() == 1
    assert "y <= 1.5x" in capsys.readouterr().err


def test_a_smoke_run_prints_every_goal_and_judges_none():
    goals = Goals(judged=False)
    assert goals.line("y <= 1.5x", False, "2.00x") == f"target y <= 1.5x: measured 2.00x — {SMOKE}"
    assert goals.exit_code() == 0
