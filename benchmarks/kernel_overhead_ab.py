"""The kernel overhead of this checkout against another git ref, side by side in one run.

A shared machine is noisy: a number measured alone says little. This script exports
the base ref (``git archive``, default ``main``) to a temporary folder and alternates
fresh interpreters of the base and of this checkout (same venv), each timing the magic
edit and ask on the 200-cell .ipynb exactly as ``kernel_overhead.py`` sets them up
(its ``write_notebook``, ``cell_source`` and offline transports, imported from the
checkout being timed): ``ip.run_cell`` per call, wall (``perf_counter``) and CPU
(``process_time``, every thread of the process) in ms. It prints per row the median
over the runs of each run's median and 25th percentile, and the ratio this/base,
with the load average before and after. A timed call that records no turn, or writes to
stderr (a magic's failure line), fails the run: it then prints what failed and no ratio.

    python benchmarks/kernel_overhead_ab.py [--base main] [--rounds 6] [--calls 100] [--smoke]

``--smoke`` (1 round, 3 calls) compares against ``HEAD`` unless ``--base`` is given: it checks that
this checkout's benchmark runs, whatever the state of main.
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

from smoke import Failures, add_flag

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import contextlib, io, json, os, statistics, sys, tempfile, time
from pathlib import Path
root, calls = Path(sys.argv[1]), int(sys.argv[2])
sys.path[:0] = [str(root), str(root / "tests"), str(root / "benchmarks")]
import kernel_overhead as ko
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
ko.install_fake_transports()
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
out["failed"] = sorted(set(failed))
print(json.dumps(out))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", help="the git ref to compare with (default main; HEAD with --smoke)")
    parser.add_argument("--rounds", type=int, default=6, help="alternating runs of each (default 6)")
    parser.add_argument("--calls", type=int, default=100, help="timed calls per row and run (default 100)")
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
            for name, root in (("base", base), ("this", str(ROOT))):
                done = subprocess.run(
                    [sys.executable, "-c", CHILD, root, str(args.calls)],
                    capture_output=True,
                    text=True,
                    cwd=root,
                    env=base_env if name == "base" else None,
                )
                if done.returncode != 0:
                    failures.add(f"the {name} run ({root}) failed: {done.stderr[-2000:]}")
                    continue
                result = json.loads(done.stdout.strip().splitlines()[-1])
                for line in result["failed"]:
                    failures.add(f"{name} ({args.base if name == 'base' else 'this'}): {line}")
                runs[name].append(result)
    if failures:
        return failures.exit_code()
    load_after = os.getloadavg()
    head = f"{'200-cell .ipynb, ms per call':<34} {args.base + ' (base)':>14} {'this':>10} {'this/base':>10}"
    print(
        f"kernel overhead, this checkout against {args.base}: {args.rounds} alternating runs of each, "
        f"{args.calls} calls per row and run; median over the runs ({os.cpu_count()} cpus, load average "
        f"{load_before[0]:.1f} before, {load_after[0]:.1f} after)\n"
    )
    print(head)
    print("-" * len(head))
    for kind in ("edit", "ask"):
        for key, label in (("wall", "wall median"), ("wall_p25", "wall 25th percentile"), ("cpu", "CPU median")):
            b = statistics.median(r[kind][key] for r in runs["base"])
            t = statistics.median(r[kind][key] for r in runs["this"])
            print(f"{'magic ' + kind + ', ' + label:<34} {b:>14.2f} {t:>10.2f} {t / b:>9.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
