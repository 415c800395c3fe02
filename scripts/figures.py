"""The deterministic figures the docs publish, produced by their benchmarks: one generated file, blocks in the docs.

    python scripts/figures.py          # runs the benchmarks' deterministic parts (~5 min on 2 busy cores),
                                       # writes benchmarks/figures.json and every block in the docs
    python scripts/figures.py --docs   # only writes the blocks again from benchmarks/figures.json

A block is ``<!-- figures:NAME -->`` … ``<!-- /figures -->`` in README.md, docs/*.md or
benchmarks/README.md; its text is ``figures.json``'s ``NAME`` (``text``), made here from the benchmark's
own functions. Token counts, bytes and dollars on the stand-in are deterministic (the same code gives the
same figures on any machine); a block holds only such figures, timings are quoted with their date,
machine and load outside them. ``tests/unit/test_figures.py`` fails when a block differs from the file
(a figure edited by hand), and ``tests/unit/test_benchmarks.py`` when a smoke run no longer computes the
file's smoke-size rows (the code changed the figures: run this script).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "benchmarks" / "figures.json"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "benchmarks" / "README.md"]
BLOCK = re.compile(r"<!-- figures:(?P<name>[\w-]+) -->\n(?P<text>.*?)<!-- /figures -->", re.S)


def blocks(markdown: str) -> dict[str, str]:
    """Every figures block of a doc: name -> its text."""
    return {m["name"]: m["text"] for m in BLOCK.finditer(markdown)}


def written(markdown: str, figures: dict[str, Any]) -> str:
    """``markdown`` with each block's text the file's."""
    return BLOCK.sub(
        lambda m: (
            f"<!-- figures:{m['name']} -->\n{figures[m['name']]['text']}<!-- /figures -->"
            if m["name"] in figures
            else m[0]
        ),
        markdown,
    )


def _benchmarks() -> None:
    for path in (ROOT, ROOT / "tests", ROOT / "benchmarks"):
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))


# -- tools_economy.py ---------------------------------------------------------------------------------------


def tools_economy() -> dict[str, Any]:
    """The 31-cell table, the 7-cell ratios and what sending once saves; every table's rows (the smoke run's
    7-cell one is checked against them)."""
    _benchmarks()
    import tools_economy as te

    from genai_magics.gemini.pricing import price_for

    price = price_for(te.MODEL)
    assert price is not None
    measured = {(size, what.split(" ", 3)[2]): runs for size, what, runs in te.measured(smoke=False)}
    rows = {
        f"{size}, implicit caching {hits}": [line for line in te.table(runs, None) if line.startswith("(")][:6]
        for (size, hits), runs in measured.items()
    }
    n = len(te.QUESTIONS)

    def usd(stats: list, part: slice = slice(None)) -> float:
        return sum(t.dollars(price) for t in stats[part])

    never, always = measured[("31 cells", "never")], measured[("31 cells", "always")]
    lines = [
        "| strategy | requests | input tok (first 3) | cached | US$ (first 3) | US$ (the 3 again) "
        "| all 6 vs (s), implicit never / always |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label, stats in never.items():
        first = stats[:n]
        vs = [usd(runs[label]) / usd(runs["(s) stateless resend"]) for runs in (never, always)]
        lines.append(
            f"| {label} | {sum(t.requests for t in stats)} | {sum(t.tokens for t in first):,} "
            f"| {sum(t.cached for t in first):,} | {usd(first):.5f} | {usd(stats, slice(n, None)):.5f} "
            f"| {vs[0]:.2f}x / {vs[1]:.2f}x |"
        )
    small = measured[("7 cells", "never")]
    base = usd(small["(s) stateless resend"])
    again = slice(n, None)
    tools, whole = "(t) tools, contents", "(t0) (t) results always whole"
    saved = [1 - usd(r[tools], again) / usd(r[whole], again) for r in (never, always)]
    text = "\n".join(lines) + (
        f"\n\nIn the 7-cell notebook (implicit caching never hits) tools cost "
        f"{usd(small['(t) tools, contents']) / base:.2f}x stateless resend in contents mode, "
        f"{usd(small['(t) tools, interactions']) / base:.2f}x in interactions mode, and up front "
        f"{usd(small['(u) up front, contents']) / base:.2f}x. The sent-once rule saves "
        f"{saved[0]:.0%} of the repeated three's US$ ((t) against (t0), 31 cells) when implicit caching never "
        f"hits and {saved[1]:.0%} when it always hits.\n"
    )
    return {"text": text, "rows": rows}


# -- token_economy.py -----------------------------------------------------------------------------------------


@functools.cache
def sessions() -> tuple[str, dict[str, tuple[list, dict[str, Any]]]]:
    """token_economy's sessions measured once for every block: label -> (steps, assumption -> Run); the 10-turn
    one never hitting only (bytes and context do not depend on implicit caching)."""
    _benchmarks()
    import token_economy as tk

    from genai_magics.stub import StubServer

    model = tk.default_model()
    tk._sse.chunks = tk._bigger_chunks  # as token_economy's main: speed only, not the measured numbers
    plans = {label: tk.plan_session(n, hand, undo) for label, n, hand, undo in tk.FULL_SESSIONS if label != "10+"}
    plans[tk.ASK_HEAVY] = tk.plan_ask_heavy(*tk.ASK_HEAVY_SIZE)
    out: dict[str, tuple[list, dict[str, Any]]] = {}
    with StubServer() as stub:
        os.environ["GOOGLE_GEMINI_BASE_URL"], os.environ["GEMINI_API_KEY"] = stub.url, "fake"
        os.environ.pop("GOOGLE_API_KEY", None)
        for label, steps in plans.items():
            extremes = ("never",) if label == "10" else ("never", "always")
            out[label] = (steps, {a: tk.measure(steps, stub, model, implicit=a == "always") for a in extremes})
    if tk.failures:
        raise RuntimeError("; ".join(tk.failures.lines))
    return model, out


def wire() -> dict[str, Any]:
    """docs/token-economy.md's "What goes over the wire": the 10- and 50-turn sessions, implicit caching never
    hitting (bytes and context do not depend on it)."""
    measured = sessions()[1]
    import token_economy as tk

    runs = {label: (steps, by["never"]) for label, (steps, by) in measured.items() if label in ("10", "50")}
    out = []
    for steps, run in runs.values():
        n = len(steps)
        tot = {k: sum(t.bytes for t in v) for k, v in run.stats.items()}
        ctx = {k: sum(t.tokens for t in v) for k, v in run.stats.items()}
        e_bytes, _ = tk.minimum(steps)
        edits = sum(s.mode == "edit" for s in steps)
        events = ", ".join(f"{s.before} before turn {s.turn}" for s in steps if s.before) or "no hand edit"
        out += [
            f"| {n} turns ({edits} edits applied; {events}) | uploaded bytes | (a) / x | context tokens read "
            f"| context at turn 5 → {n} |",
            "| --- | ---: | ---: | ---: | ---: |",
        ]
        for k in tk.STRATEGIES:
            v = run.stats[k]
            out.append(
                f"| {tk.NAMES[k]} | {tot[k]:,} | {tot['a'] / tot[k]:.2f}x | {ctx[k]:,} "
                f"| {v[4].tokens:,} → {v[-1].tokens:,} |"
            )
        out += [f"| {tk.NAMES['e']} | {e_bytes:,} | {tot['a'] / e_bytes:.2f}x | | |", ""]
    (steps10, ten), (_, fifty) = runs["10"], runs["50"]
    e10 = tk.minimum(steps10)[0]
    t10 = {k: sum(t.bytes for t in v) for k, v in ten.stats.items()}
    t50 = {k: sum(t.bytes for t in v) for k, v in fifty.stats.items()}
    c = fifty.stats["c"]
    out.append(
        f"Targets, as measured: (d) uploads {t10['d'] / e10:.2f}x (e) over 10 turns (target ≤ 1.10x) and "
        f"{t10['a'] / t10['d']:.1f}x less than (a) (target ≥ 5x); (c)'s context at turn 50 is "
        f"{c[-1].tokens / c[4].tokens:.2f}x turn 5 (target ≤ 1.3x); over 50 turns (c) uploads "
        f"{t50['b'] / t50['c']:.1f}x and (d) {t50['b'] / t50['d']:.0f}x fewer bytes than (b) (target ≥ 10x)."
    )
    return {"text": "\n".join(out) + "\n"}


class Bills:
    """A session's bills at the model's table rates: strategy -> US$, and the floor, per implicit-caching extreme."""

    def __init__(self, steps: list, runs: dict[str, Any], model: str) -> None:
        import token_economy as tk

        self.price = tk.table_price(model)
        self.steps, self.runs = steps, runs
        self.floor = {
            a: tk.floor_cost(steps, tk.floor_output(steps, run.stats["a"]), self.price) for a, run in runs.items()
        }
        self.cost = {a: {k: tk.dollars(run, k, self.price) for k in tk.STRATEGIES} for a, run in runs.items()}

    def cells(self, a: str, k: str, usd: str = "$") -> str:
        """``US$ | × floor``, in bold for genai_magics' cheapest strategy under ``a``."""
        import token_economy as tk

        text = f"{usd}{self.cost[a][k]:.4f} | {self.cost[a][k] / self.floor[a]:.2f}x"
        best = min(tk.OURS, key=self.cost[a].get)
        return " | ".join(f"**{part.strip()}**" for part in text.split(" | ")) if k == best else text

    def output(self, k: str) -> int:
        return sum(t.output for t in self.runs["never"].stats[k])


# the README's table: its label for each strategy token_economy measures
COST_ROWS = {
    "a": "stateless resend (document + prompt every turn)",
    "b": "naive `chats.send_message`",
    "c": 'genai_magics contents mode, `cache = "off"`',
    "d": "genai_magics interactions mode",
    "f": 'genai_magics contents mode, `cache = "auto"` (default)',
}


def cost() -> dict[str, Any]:
    """The README's "What it costs": the ask-heavy session's bills under both extremes, and what answering edits
    as edits saves in the 50-turn session; the smoke run's rows beside them (``test_benchmarks.py`` computes them
    again, so a change of the code that moves the bills fails there)."""
    model, runs = sessions()
    import token_economy as tk

    ask, fifty = Bills(*runs[tk.ASK_HEAVY], model), Bills(*runs["50"], model)
    lines = [
        "| ask-heavy session | implicit caching never hits | vs floor | always hits | vs floor |",
        "| --- | ---: | ---: | ---: | ---: |",
        *(f"| {label} | {ask.cells('never', k)} | {ask.cells('always', k)} |" for k, label in COST_ROWS.items()),
        f"| floor | ${ask.floor['never']:.4f} | | ${ask.floor['always']:.4f} | |",
    ]
    edits = sum(s.mode == "edit" for s in fifty.steps)
    text = "\n".join(lines) + (
        f"\n\nA small edit is answered with find/replace pairs: in a {len(fifty.steps)}-turn session ({edits} edits) "
        f"{fifty.output('g') / fifty.output('f'):.0f}x fewer output tokens and a bill "
        f"{fifty.cost['never']['g'] / fifty.cost['never']['f']:.1f}x smaller than the whole text.\n"
    )
    return {"text": text, "rows": smoke_rows("token_economy.py")}


def smoke_rows(script: str) -> list[str]:
    """A benchmark's smoke-size rows (its lines starting with a strategy's letter): what
    ``tests/unit/test_benchmarks.py`` computes again, so a change of the code that moves the figures fails there."""
    _benchmarks()
    from helpers.benchmark import smoke_run

    return [line for line in smoke_run(script).splitlines() if line.startswith("(")]


# docs/token-economy.md's tables: its label for each strategy
ECONOMY_ROWS = {
    "a": "(a) stateless resend",
    "b": "(b) naive `chats.send_message`",
    "c": '(c) contents mode, `cache = "off"`',
    "d": "(d) interactions mode",
    "f": '(f) contents mode, `cache = "auto"` (default)',
    "g": "(g) (f) answering the whole text (before edits)",
}


def economy() -> dict[str, Any]:
    """docs/token-economy.md's bills: the ask-heavy and 50-turn sessions under both extremes, the 50-turn bill
    split (never hitting), and what edits cut."""
    model, runs = sessions()
    import token_economy as tk

    ask, fifty = Bills(*runs[tk.ASK_HEAVY], model), Bills(*runs["50"], model)
    out = []
    for bills, head, keys in (
        (ask, "ask-heavy: 30 asks on 3 versions of the cell", "abcdf"),
        (fifty, "50 turns (25 small edits applied, a hand edit, an Undo)", "abcdfg"),
    ):
        out += [
            f"| {head} | never hits: $ | vs floor | always hits: $ | vs floor |",
            "| --- | ---: | ---: | ---: | ---: |",
            *(f"| {ECONOMY_ROWS[k]} | {bills.cells('never', k, '')} | {bills.cells('always', k, '')} |" for k in keys),
            f"| floor | {bills.floor['never']:.4f} | | {bills.floor['always']:.4f} | |",
            "",
        ]
    run, price = fifty.runs["never"], fifty.price
    replies = tk.floor_output(fifty.steps, run.stats["a"])
    floor_in = 1e-6 * sum(tk.floor_reads(fifty.steps, price))
    out += [
        "The bill of the 50-turn session, implicit caching never hitting, split:",
        "",
        "| | input | cached input | storage | output (tokens) |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for k, label in (("a", "(a) stateless resend"), ("f", "(f) default, edits"), ("g", "(g) default, whole text")):
        v = run.stats[k]
        full, cached, output = (
            sum(t.tokens - t.cached + t.written for t in v),
            sum(t.cached for t in v),
            fifty.output(k),
        )
        parts = [
            f"${1e-6 * full * price.input:.4f}",
            f"${1e-6 * cached * price.cached_input:.4f}" if cached else "–",
            f"${1e-6 * run.storage_hours[k] * price.storage_hour:.4f}" if run.storage_hours[k] else "–",
            f"${1e-6 * output * price.output:.4f} ({output:,})",
        ]
        out.append(f"| {label} | {' | '.join(parts)} |")
    out.append(f"| floor | ${floor_in:.4f} | | | ${1e-6 * sum(replies) * price.output:.4f} ({sum(replies):,}) |")
    out += [
        "",
        f"So edits cut the output {fifty.output('g') / fifty.output('f'):.0f}x (target ≥ 10x) and the default's bill "
        f"{fifty.cost['never']['g'] / fifty.cost['never']['f']:.1f}x (target ≥ 3x).",
    ]
    return {"text": "\n".join(out) + "\n"}


PRODUCERS: dict[str, Callable[[], dict[str, Any]]] = {
    "tools_economy": tools_economy,
    "wire": wire,
    "cost": cost,
    "economy": economy,
}


def write_docs(figures: dict[str, Any]) -> None:
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        new = written(text, figures)
        if new != text:
            doc.write_text(new, encoding="utf-8")
            print(f"written: {doc.relative_to(ROOT)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", action="store_true", help="only write the docs' blocks from figures.json")
    parser.add_argument("names", nargs="*", help=f"only these (of {', '.join(PRODUCERS)})")
    args = parser.parse_args(argv)
    figures = json.loads(FIGURES.read_text(encoding="utf-8")) if FIGURES.exists() else {}
    if not args.docs:
        for name in args.names or PRODUCERS:
            figures[name] = PRODUCERS[name]()
            print(f"measured: {name}")
        FIGURES.write_text(json.dumps(figures, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    write_docs(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
