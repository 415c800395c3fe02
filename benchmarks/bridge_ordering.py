"""Is the live view fresh when a cell runs? The snapshot-ordering trap, side by side.

JupyterLab 4.6 may send comm messages on kernel subshells, and ipykernel 7.4
routes a comm's incoming messages to the thread that last sent on it, so a
snapshot pushed just before an execute request can be handled after the cell
started. ``genai_magics.frontends.bridge`` routes every snapshot to the main shell. This
runs N hand-edit-then-run cycles through the fake frontend of the tests, with
the routing and with it switched off, for a frontend that sends on the main
shell and one that sends on a subshell, and prints how many runs saw the fresh
source. It is a measurement (the unrouted figure varies run to run); the goal, one ``target`` line
per frontend (``goals.py``: a FAIL exits 1 unless ``--report``): routed, N of N, as the test suite
holds it.

    python benchmarks/bridge_ordering.py [--runs 30] [--smoke] [--report]

``--smoke``: 2 runs of each.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from goals import Goals  # noqa: E402
from helpers.bridge import ATTACH, make_comm_last_used_from_a_subshell, ordering_runs  # noqa: E402
from helpers.fake_frontend import FakeFrontend  # noqa: E402
from smoke import add_flag  # noqa: E402

UNROUTE = "B._comm._reply_subshell_for = type(B._comm)._reply_subshell_for.__get__(B._comm)"


def measure(routed: bool, comm_subshell: bool, runs: int) -> int:
    with FakeFrontend(cells=[("a", "x = 1"), ("b", "y = 2")], comm_subshell=comm_subshell) as ff:
        ff.execute_code(ATTACH)
        if not routed:
            ff.execute_code(UNROUTE)
        make_comm_last_used_from_a_subshell(ff)
        return ordering_runs(ff, runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    add_flag(parser)
    args = parser.parse_args()
    if args.smoke:
        args.runs = 2
    goals = Goals(judged=not args.smoke)
    verdicts = []
    print(f"{'kernel routing':<16} {'frontend sends on':<18} {'fresh when the cell ran':>24}")
    for routed in (True, False):
        for subshell in (False, True):
            fresh = measure(routed, subshell, args.runs)
            sends = "a subshell" if subshell else "the main shell"
            print(f"{'on' if routed else 'off':<16} {sends:<18} {fresh:>17} of {args.runs}")
            if routed:  # the goal: with the routing, every run sees the fresh source
                goal = f"routing on, frontend sending on {sends}: every run fresh"
                verdicts.append(goals.line(goal, fresh == args.runs, f"{fresh} of {args.runs}"))
    print("\n".join(verdicts))
    return goals.exit_code(args.report)


if __name__ == "__main__":
    sys.exit(main())
