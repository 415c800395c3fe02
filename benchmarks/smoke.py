"""What every benchmark shares: its quick mode and how it fails.

``--smoke`` runs a benchmark at tiny sizes in a few seconds; ``tests/unit/test_benchmarks.py`` runs every
benchmark so, so that none stops running unseen. A smoke run proves that the benchmark still runs
and that its turns succeed, not its figures: it judges no goal (tiny sizes on a busy machine).

A benchmark that hits an error, or whose measured turn failed (the stand-in answered an error, a
magic printed a failure, a turn recorded nothing), prints what failed instead of its ratios and
exits 1: a ratio over failing turns measures the failure.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import Any

HELP = "tiny sizes, a few seconds: checks that the benchmark runs and its turns succeed (CI); judges no goal"
REPORT = "print the figures and exit 0 even when a goal FAILs (goals.py); a failed turn still exits 1"


def add_flag(parser: argparse.ArgumentParser) -> None:
    """``--smoke`` and ``--report``, which every benchmark takes."""
    parser.add_argument("--smoke", action="store_true", help=HELP)
    parser.add_argument("--report", action="store_true", help=REPORT)


class Failures:
    """What went wrong in a run, in the order found."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __bool__(self) -> bool:
        return bool(self.lines)

    def add(self, what: str) -> None:
        if what not in self.lines:  # the same failure on every call is said once
            self.lines.append(what)

    def check_requests(self, records: Iterable[dict[str, Any]], where: str) -> None:
        """Every request the stand-in answered was answered 200."""
        bad = [f"{r['kind']} {r['status']}" for r in records if r["status"] != 200]
        if bad:
            self.add(f"{where}: the stand-in answered {len(bad)} request(s) with an error: {', '.join(bad[:5])}")

    def check_quiet(self, stderr: str, where: str) -> None:
        """A magic reports a failed turn on stderr: anything there is a failure."""
        if stderr.strip():
            self.add(f"{where}: wrote to stderr: {stderr.strip()[:300]}")

    def exit_code(self) -> int:
        """1 after saying on stderr what failed (the figures are not printed then), else 0."""
        for line in self.lines:
            print(f"FAILED: {line}", file=sys.stderr)
        return 1 if self.lines else 0
