"""A benchmark's quick mode (``--smoke``, see ``benchmarks/smoke.py``) run as a subprocess of this checkout."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"


@functools.cache  # one run a test session: two tests read the same output
def smoke_run(script: str) -> str:
    """``benchmarks/<script> --smoke`` with this checkout imported: its output, or the test fails with it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--smoke"],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(ROOT),
        timeout=600,
    )
    assert done.returncode == 0, (
        f"{script} --smoke exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    assert done.stdout.strip(), f"{script} --smoke printed nothing"
    return done.stdout


def goal_lines(output: str) -> list[str]:
    """The ``target … PASS/FAIL`` lines a run printed (``benchmarks/goals.py``); the test fails on a malformed one."""
    lines = [line for line in output.splitlines() if line.startswith("target ")]
    for line in lines:
        assert any(f" — {v}" in line for v in ("PASS", "FAIL", "not judged (smoke)")), line
    return lines
