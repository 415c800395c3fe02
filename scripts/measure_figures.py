"""The figures the README and docs/development.md quote about the tests, measured.

    python scripts/measure_figures.py           # the fast layer: its test count and its time
    python scripts/measure_figures.py --write   # and writes both into the two docs
    python scripts/measure_figures.py --suite   # also times the README's test command (minutes)

The count is what ``pytest --collect-only`` collects of the fast layer (``-m "not kernel and
not browser"``); tests/unit/test_readme.py fails when a doc quotes another. The time is pytest's
own for one run of the layer without a bytecode cache, so it depends on the machine and its
load: the docs quote it with the load average it was taken at.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAST = ["-m", "not kernel and not browser"]
DOCS = [ROOT / "README.md", ROOT / "docs" / "development.md"]
# how the docs quote the fast layer: "371 tests in ~30 s at load 0.4 on 2026-12-06" (a timing says its day
# and load; every "N tests" in them is its count)
QUOTED_COUNT = re.compile(r"\b(\d[\d,]*) tests\b")
QUOTED_TIME = re.compile(r"\b(\d[\d,]* tests in ~)\d+ s at load [\d.]+(?: on \d{4}-\d{2}-\d{2})?")
_COLLECTED = re.compile(r"^(\d+)(?:/\d+)? tests? collected", re.M)
_PYTEST_TIME = re.compile(r" in ([\d.]+)s\b")


def _pytest(python: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [python, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )


def fast_layer_count(python: str = sys.executable) -> int:
    """How many tests pytest collects of the fast layer."""
    run = _pytest(python, ["--collect-only", "-q", *FAST])
    found = _COLLECTED.search(run.stdout)
    if run.returncode != 0 or found is None:
        raise RuntimeError(f"pytest --collect-only failed:\n{run.stdout[-2000:]}{run.stderr[-2000:]}")
    return int(found.group(1))


def timed(python: str, args: list[str]) -> tuple[float, float, float]:
    """(pytest's own seconds, wall-clock seconds, the load average over the last minute at the end)
    of one run that must pass."""
    start = time.monotonic()
    run = _pytest(python, ["-q", *args])
    wall = time.monotonic() - start
    last = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
    found = _PYTEST_TIME.search(last)
    if run.returncode != 0 or found is None:
        raise RuntimeError(f"the tests failed:\n{run.stdout[-3000:]}{run.stderr[-2000:]}")
    return float(found.group(1)), wall, os.getloadavg()[0]


def quoted_counts(text: str) -> list[int]:
    return [int(n.replace(",", "")) for n in QUOTED_COUNT.findall(text)]


def rewritten(text: str, count: int, timing: tuple[float, float, datetime.date] | None) -> str:
    """``text`` quoting ``count`` tests (and, when given, the (seconds, load average, day) they took)."""
    if timing is not None:
        seconds, load, day = timing
        text = QUOTED_TIME.sub(lambda m: f"{m.group(1)}{round(seconds)} s at load {load:.1f} on {day}", text)
    return QUOTED_COUNT.sub(f"{count:,} tests", text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=sys.executable, help="the venv's interpreter (default: this one)")
    parser.add_argument("--write", action="store_true", help="write the count and the time into the docs")
    parser.add_argument("--suite", action="store_true", help="also time every test (the README's second command)")
    args = parser.parse_args(argv)
    count = fast_layer_count(args.python)
    print(f"fast layer: {count} tests")
    if args.write:  # the count first: the layer's own test of it passes only once the docs quote it
        _write(count, None)
    seconds, wall, load = timed(args.python, FAST)
    print(
        f"fast layer: {count} tests in {seconds:.1f} s as pytest reports it ({wall:.1f} s wall clock, load {load:.1f})"
    )
    if args.write:
        _write(count, (seconds, load, datetime.date.today()))
    if args.suite:
        seconds_all, wall_all, load_all = timed(args.python, [])
        print(
            f"every test: {seconds_all / 60:.1f} min as pytest reports it "
            f"({wall_all / 60:.1f} min wall clock, load {load_all:.1f})"
        )
    return 0


def _write(count: int, timing: tuple[float, float, datetime.date] | None) -> None:
    for doc in DOCS:
        doc.write_text(rewritten(doc.read_text(encoding="utf-8"), count, timing), encoding="utf-8")
        print(f"written: {doc.relative_to(ROOT)}")


if __name__ == "__main__":
    sys.exit(main())
