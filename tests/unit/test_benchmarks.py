"""Every benchmark runs, in its quick mode (``--smoke``), so that none stops running unseen (issue 31).

A smoke run is a subprocess of this checkout (``helpers/benchmark.py``): it fails when the benchmark
cannot run or when one of its measured turns failed (``benchmarks/smoke.py``); tiny sizes, no goal
judged. A benchmark whose smoke run starts kernels is marked ``kernel``; ``vscode_apply.py`` runs in
``tests/vscode/test_vscode_benchmark.py`` (it needs code-server).
"""

from __future__ import annotations

import pytest
from helpers.benchmark import BENCHMARKS, smoke_run

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


def test_every_benchmark_has_its_smoke_run():
    scripts = {p.name for p in BENCHMARKS.glob("*.py") if 'if __name__ == "__main__":' in p.read_text()}
    assert scripts == {*IN_PROCESS, *KERNELS, *ELSEWHERE}


@pytest.mark.parametrize("script", IN_PROCESS)
def test_a_benchmark_runs_in_its_smoke_mode(script):
    smoke_run(script)


@pytest.mark.kernel
@pytest.mark.parametrize("script", KERNELS)
def test_a_benchmark_with_kernels_runs_in_its_smoke_mode(script):
    smoke_run(script)
