"""Every benchmark runs, in its quick mode (``--smoke``), so that none stops running unseen (issue 31).

A smoke run is a subprocess of this checkout (``helpers/benchmark.py``): it fails when the benchmark
cannot run or when one of its measured turns failed (``benchmarks/smoke.py``); tiny sizes, no goal
judged. Each prints a ``target`` line per goal it states (``benchmarks/goals.py``, issue 42), not judged
at smoke sizes. A benchmark whose smoke run starts kernels is marked ``kernel``; ``vscode_apply.py``
(no goal: it prints medians) runs in ``tests/vscode/test_vscode_benchmark.py`` (it needs code-server).
"""

from __future__ import annotations

import json

import pytest
from helpers.benchmark import BENCHMARKS, goal_lines, smoke_run

IN_PROCESS = [
    "kernel_overhead_ab.py",
    "long_session.py",
    "outputs_economy.py",
    "record_load.py",
    "rules_economy.py",
    "token_economy.py",
    "tools_economy.py",
]
KERNELS = ["agent_economy.py", "bridge_ordering.py", "kernel_overhead.py"]  # their smoke runs start ipykernels
ELSEWHERE = ["vscode_apply.py"]
NO_GOAL_AT_SMOKE_SIZE = {"long_session.py"}  # its goals compare turn 40 with turn 5: a smoke run has 12 turns


def test_every_benchmark_has_its_smoke_run():
    scripts = {p.name for p in BENCHMARKS.glob("*.py") if 'if __name__ == "__main__":' in p.read_text()}
    assert scripts == {*IN_PROCESS, *KERNELS, *ELSEWHERE}


@pytest.mark.parametrize("script", IN_PROCESS)
def test_a_benchmark_runs_in_its_smoke_mode_and_prints_its_goals(script):
    assert goal_lines(smoke_run(script)) or script in NO_GOAL_AT_SMOKE_SIZE


@pytest.mark.kernel
@pytest.mark.parametrize("script", KERNELS)
def test_a_benchmark_with_kernels_runs_in_its_smoke_mode_and_prints_its_goals(script):
    assert goal_lines(smoke_run(script))


def test_the_published_tools_figures_are_what_the_code_computes_now():
    """The smoke run's table (7 cells, implicit caching never hits) is one of ``benchmarks/figures.json``'s: when
    the code changes the figures, ``python scripts/figures.py`` writes them and the docs again."""
    figures = json.loads((BENCHMARKS / "figures.json").read_text(encoding="utf-8"))
    rows = [line for line in smoke_run("tools_economy.py").splitlines() if line.startswith("(")]
    assert rows == figures["tools_economy"]["rows"]["7 cells, implicit caching never"]


def test_the_published_cost_figures_are_what_the_code_computes_now():
    """The README's cost table comes from token_economy's full sessions (``benchmarks/figures.json``'s ``cost``);
    its smoke run's rows, kept beside them, are computed again here: a change of the code that moves the bill
    moves these rows, and ``python scripts/figures.py cost`` writes the file and the README again."""
    figures = json.loads((BENCHMARKS / "figures.json").read_text(encoding="utf-8"))
    rows = [line for line in smoke_run("token_economy.py").splitlines() if line.startswith("(")]
    assert rows == figures["cost"]["rows"]
