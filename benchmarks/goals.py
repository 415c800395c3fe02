"""A benchmark's goals, judged: one ``target … PASS/FAIL`` line per goal, and the exit code they make.

Each benchmark states a goal once, beside the figure that meets or misses it, and prints its verdict
through its ``Goals``:

    goals = Goals(judged=not args.smoke)
    print(goals.line("(d) uploads <= 1.10 x (e) over 10 turns", ratio <= 1.10, f"{ratio:.3f} x (e)"))
    ...
    return goals.exit_code(report=args.report)

``target <goal>: measured <figure> — PASS`` (or ``FAIL``). A full run exits 1 when a goal FAILed,
unless ``--report`` is given (to print the figures for the docs, or while a goal is known to be missed);
a benchmark's own failure (``smoke.Failures``: a turn that failed) exits 1 whatever the flag. A smoke run
(``--smoke``: tiny sizes, often on a busy machine) judges no goal: its lines end ``not judged (smoke)``
and it exits 0 on goals, as with ``--report``; it proves that the benchmark runs and prints every goal.
"""

from __future__ import annotations

import sys

SMOKE = "not judged (smoke)"


class Goals:
    """The goals a run judged; a smoke run's (``judged=False``) are printed, never judged."""

    def __init__(self, judged: bool = True) -> None:
        self.judged = judged
        self.missed: list[str] = []

    def verdict(self, goal: str, ok: bool) -> str:
        """PASS or FAIL (a FAIL is remembered for the exit code); a smoke run's ``not judged (smoke)``."""
        if not self.judged:
            return SMOKE
        if not ok:
            self.missed.append(goal)
        return "PASS" if ok else "FAIL"

    def line(self, goal: str, ok: bool, measured: str) -> str:
        """``target <goal>: measured <measured> — PASS``: the one line a goal prints."""
        return f"target {goal}: measured {measured} — {self.verdict(goal, ok)}"

    def exit_code(self, report: bool = False) -> int:
        """1 when a goal FAILed and ``--report`` was not given (saying so on stderr), else 0."""
        if not self.missed or report:
            return 0
        print(f"FAILED: {len(self.missed)} goal(s) missed: {'; '.join(self.missed)}", file=sys.stderr)
        return 1
