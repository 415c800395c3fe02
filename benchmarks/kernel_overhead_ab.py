"""The kernel overhead of this checkout against another git ref, side by side in one run.

A shared machine is noisy: a number measured alone says little. This script exports
the base ref (``git archive``, default ``main``) to a temporary folder and alternates
fresh interpreters of the base and of this checkout (same venv), each timing the magic
edit and ask on the 200-cell .ipynb exactly as ``kernel_overhead.py`` sets them up (its
``write_notebook``, ``cell_source`` and offline transports: this checkout's for both, the same
measuring stick; a base whose package they cannot drive runs its own benchmark's, and the report
says so in one line, with why): ``ip.run_cell`` per call, wall (``perf_counter``) and CPU
(``process_time``, every thread of the process) in ms. It prints each round's wall medians and
ratios, then per row the median over the runs of each run's median and 25th percentile, and the
ratio this/base, with the load average before and after. The goal (``GOAL_RATIO``): each kind's
wall median no slower than the base's, within noise (``goals.py``: a FAIL exits 1 unless
``--report``). A timed call that records no turn, or writes to stderr (a magic's failure line),
fails the run: it then prints what failed and no ratio.

    python benchmarks/kernel_overhead_ab.py [--base main] [--rounds 6] [--calls 100] [--at-once] [--smoke] [--report]

``--at-once`` starts each round's two children together: on a busy shared machine the load then
changes between rounds, not between the two sides of a round. ``--smoke`` (1 round, 3 calls) compares
against ``HEAD`` unless ``--base`` is given: it checks that this checkout's benchmark runs, whatever the
state of main.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from goals import Goals
from smoke import Failures, add_flag

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import contextlib, io, json, os, statistics, sys, tempfile, time
from pathlib import Path
root, calls, bench = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
sys.path[:0] = [str(bench)]
import kernel_overhead as ko  # this checkout's benchmark (it puts its own checkout on sys.path)
sys.path[:0] = [str(root)]  # the package timed: this checkout's or the base's
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config
import genai_magics
from genai_magics.stub import StubServer
assert Path(genai_magics.__file__).is_relative_to(root), genai_magics.__file__
tmp = Path(tempfile.mkdtemp(prefix="genai-ab-"))
os.environ["IPYTHONDIR"], os.environ["JUPYTER_DATA_DIR"] = str(tmp / "ipython"), str(tmp / "data")
cfg = Config(); cfg.HistoryManager.hist_file = ":memory:"
ip = InteractiveShell.instance(config=cfg)
ip.run_line_magic("load_ext", "genai_magics")
magics = ip.magics_manager.registry["GeminiMagics"]
nb = tmp / "analysis.ipynb"; ko.write_notebook(nb)
failed = []  # a timed call that failed makes its timings meaningless: the parent prints no ratio then
with contextlib.redirect_stdout(ko.Null()), contextlib.redirect_stderr(io.StringIO()) as err:
    for i in range(ko.N_CELLS):
        ip.run_cell(ko.cell_source(i), cell_id=f"c{i:03d}")
    with StubServer() as stub:
        os.environ["GOOGLE_GEMINI_BASE_URL"], os.environ["GEMINI_API_KEY"] = stub.url, "fake"
        for t in range(10):
            kind = "edit" if t % 2 else "ask"
            ip.run_cell(f"%%gemini_{kind} --cell {ko.TARGET}\nTurn {t}.", cell_id=f"setup-{t}")
            if kind == "edit":
                magics.latest["default"].apply()
        failed += [f"setup: the stand-in answered {r['status']}" for r in stub.requests if r["status"] != 200]
if err.getvalue().strip():
    failed.append("setup wrote to stderr: " + err.getvalue().strip()[:300])
convs = magics.session.conversations
saved = {n: c.snapshot() for n, c in convs.items()}
turns_saved = sum(len(s.history) for s in saved.values())
def restore():
    if sum(len(c.history) for c in convs.values()) != turns_saved + 1:
        failed.append("a timed call recorded no turn (it failed)")
    for n, s in saved.items():
        convs[n] = s.snapshot()
    magics.latest.clear()
ip.user_ns["__session__"] = str(nb)
def offline(install):  # None once install's transports answered an ask and an edit, else why not (undone)
    try:  # an older package may keep its transports elsewhere: its own benchmark knows where
        import genai_magics.gemini.transport as transport
        before = dict(transport.TRANSPORTS)
    except (ImportError, AttributeError):
        transport = before = None
    try:
        install()
        for kind in ("ask", "edit"):
            with contextlib.redirect_stdout(ko.Null()), contextlib.redirect_stderr(io.StringIO()) as err:
                ip.run_cell(f"%%gemini_{kind} --cell {ko.TARGET}\nCheck.", cell_id=f"check-{kind}")
            grew = sum(len(c.history) for c in convs.values()) == turns_saved + 1
            for n, s in saved.items():
                convs[n] = s.snapshot()
            magics.latest.clear()
            if not grew or err.getvalue().strip():
                raise RuntimeError(f"the {kind} failed: {err.getvalue().strip()[-200:] or 'no turn recorded'}")
        return None
    except Exception as exc:  # an older package: whatever its transports lack
        if before is not None:
            transport.TRANSPORTS.clear(); transport.TRANSPORTS.update(before)
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
transports = "this checkout's offline transports"
why = offline(ko.install_fake_transports)
if why is not None:  # the base's own benchmark, if it has one that drives it
    import importlib.util
    spec = importlib.util.spec_from_file_location("own_overhead", root / "benchmarks" / "kernel_overhead.py")
    own = importlib.util.module_from_spec(spec); spec.loader.exec_module(own)
    sys.path[:0] = [str(root)]
    still = offline(own.install_fake_transports)
    if still is not None:
        failed.append(f"neither this checkout's offline transports ({why}) nor its own ({still}) drive it")
    transports = f"its own benchmark's offline transports; this checkout's cannot drive it ({why})"
out = {}
with contextlib.redirect_stdout(ko.Null()), contextlib.redirect_stderr(io.StringIO()) as err:
    for kind, text in (("edit", "Vectorize the loop."), ("ask", "Why is the summary tuple built this way?")):
        cell = f"%%gemini_{kind} --cell {ko.TARGET}\n{text}"
        wall, cpu = [], []
        for i in range(10 + calls):
            w0, c0 = time.perf_counter(), time.process_time()
            ip.run_cell(cell, cell_id=f"magic-{kind}")
            if i >= 10:
                wall.append((time.perf_counter() - w0) * 1000); cpu.append((time.process_time() - c0) * 1000)
            restore()
        out[kind] = {"wall": statistics.median(wall), "wall_p25": ko.pct(wall, 0.25), "cpu": statistics.median(cpu)}
if err.getvalue().strip():
    failed.append("timed calls wrote to stderr: " + err.getvalue().strip()[:300])
out["failed"], out["transports"] = sorted(set(failed)), transports
print(json.dumps(out))
"""


GOAL_RATIO = 1.05  # this/base, each kind's wall median: no slower than the base, within the noise of a shared machine
KINDS = ("edit", "ask")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", help="the git ref to compare with (default main; HEAD with --smoke)")
    parser.add_argument("--rounds", type=int, default=6, help="alternating runs of each (default 6)")
    parser.add_argument("--calls", type=int, default=100, help="timed calls per row and run (default 100)")
    parser.add_argument(
        "--at-once",
        action="store_true",
        help="run each round's two children at the same time: on a busy shared machine both then meet the same load",
    )
    add_flag(parser)
    args = parser.parse_args(argv)
    if args.smoke:
        args.rounds, args.calls = 1, 3
    args.base = args.base or ("HEAD" if args.smoke else "main")
    failures = Failures()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="genai-ab-base-") as base:
        archive = subprocess.run(["git", "archive", args.base], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", base], input=archive, check=True)
        runs: dict[str, list[dict]] = {"base": [], "this": []}
        # the base is a copy that is gone afterwards: measuring its coverage (.ci/run's COVERAGE_PROCESS_START)
        # would leave data for files that no longer exist
        base_env = {k: v for k, v in os.environ.items() if k != "COVERAGE_PROCESS_START"}
        for _ in range(args.rounds):
            children = {
                name: subprocess.Popen(
                    [sys.executable, "-c", CHILD, root, str(args.calls), str(ROOT / "benchmarks")],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    cwd=root,
                    env=base_env if name == "base" else None,
                )
                for name, root in (("base", base), ("this", str(ROOT)))
                if args.at_once or name == "base"
            }
            if not args.at_once:  # one after the other: the base's child first, then this checkout's
                children["base"].wait()
                children["this"] = subprocess.Popen(
                    [sys.executable, "-c", CHILD, str(ROOT), str(args.calls), str(ROOT / "benchmarks")],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    cwd=str(ROOT),
                )
            for name, child in children.items():
                stdout, stderr = child.communicate()
                if child.returncode != 0:
                    failures.add(f"the {name} run failed: {stderr[-2000:]}")
                    continue
                result = json.loads(stdout.strip().splitlines()[-1])
                for line in result["failed"]:
                    failures.add(f"{name} ({args.base if name == 'base' else 'this'}): {line}")
                runs[name].append(result)
    if failures:
        return failures.exit_code()
    load_after = os.getloadavg()
    print(
        f"kernel overhead, this checkout against {args.base}: {args.rounds} "
        f"{'paired runs at once' if args.at_once else 'alternating runs'} of each, "
        f"{args.calls} calls per row and run; median over the runs ({os.cpu_count()} cpus, load average "
        f"{load_before[0]:.1f} before, {load_after[0]:.1f} after)"
    )
    print(f"base {args.base} ran {runs['base'][0]['transports']}\n")
    head = f"{'round':<6}" + "".join(f"{kind + ' base':>11} {kind + ' this':>10} {'ratio':>6}" for kind in KINDS)
    print(head + "   (wall median, ms per call)")
    print("-" * len(head))
    for i, (b, t) in enumerate(zip(runs["base"], runs["this"], strict=True), 1):
        cells = (f"{b[k]['wall']:>11.2f} {t[k]['wall']:>10.2f} {t[k]['wall'] / b[k]['wall']:>5.2f}x" for k in KINDS)
        print(f"{i:<6}" + "".join(cells))
    print()
    head = f"{'200-cell .ipynb, ms per call':<34} {args.base + ' (base)':>14} {'this':>10} {'this/base':>10}"
    print(head)
    print("-" * len(head))
    goals = Goals(judged=not args.smoke)
    verdicts = []
    for kind in KINDS:
        for key, label in (("wall", "wall median"), ("wall_p25", "wall 25th percentile"), ("cpu", "CPU median")):
            b = statistics.median(r[kind][key] for r in runs["base"])
            t = statistics.median(r[kind][key] for r in runs["this"])
            print(f"{'magic ' + kind + ', ' + label:<34} {b:>14.2f} {t:>10.2f} {t / b:>9.2f}x")
            if key == "wall":
                goal = f"magic {kind} on the 200-cell .ipynb no slower than {args.base} (this/base <= {GOAL_RATIO:g})"
                verdicts.append(goals.line(goal, t / b <= GOAL_RATIO, f"{t / b:.2f}x"))
    print("\n".join(verdicts))
    return goals.exit_code(args.report)


if __name__ == "__main__":
    sys.exit(main())
