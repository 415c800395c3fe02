"""The model asks the notebook (issue 25): tokens and dollars of a session whose answers need df's schema,
one cell's output and the last error, fetched by the model with functions vs given up front vs resent.

Everything runs the real google-genai SDK over real HTTP against the bundled stand-in, the
extension in an in-process IPython shell (``tests/helpers/shell.py``: the real magics, a real
pandas DataFrame, a real exception); every number is read from the stand-in's request records
(``token_economy.take``: body bytes, the tokens the model read, cached and output tokens; dollars
at the price table's rates, ``TurnStat.dollars``). The stand-in plays a model that calls exactly
the function a question needs (``StubServer.script_tools``), and calls it again when the same
question comes back: the result it holds comes back ``{"unchanged": true, ...}``.

The notebook: df (5,000 rows, 12 columns), a cell that prints a 40-line report, a cell that
raised a KeyError, and four other cells. Three questions (df's columns, the report, the error),
then the same three again.

Strategies
  (t0) (t) with the sent-once rule off (a result the model holds goes whole again): what it saves;
  (t) tools: each question a plain ``%%gemini_ask``; the model calls ``inspect_variable(df)``,
      ``cell_outputs(report)`` or ``last_error()`` (two requests a question);
  (u) up front: every question carries ``--vars df --outputs report --error`` (the user cannot
      tell which one the model needs), functions off (``--no-tools``); genai_magics sends each
      piece once;
  (s) stateless resend: each question one ``generate_content_stream`` request with the three
      pieces, the other cells and the prompt, no memory, no system instruction, no functions.

Both genai_magics strategies run in contents mode and interactions mode; implicit caching off
(the stand-in's default), explicit caching off (the head is under the model's minimum anyway).

    python benchmarks/tools_economy.py [--smoke] [--report]

Goal (issue 33, ``GOAL_RATIO``): tools cost at most that many times flags up front, in US$ over the six
questions, in each mode and under each assumption, on the 31-cell notebook; one ``target`` line each
(``goals.py``: a FAIL exits 1 unless ``--report``).

``--smoke``: the 7-cell notebook, implicit caching off, only. A magic that fails (its line on stderr),
or a question that sent no request, stops the run with an error (no table).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT, ROOT / "tests", ROOT / "benchmarks"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from goals import Goals  # noqa: E402
from helpers.kernel import FAKE_KEY  # noqa: E402
from helpers.shell import Shell  # noqa: E402
from helpers.wire import current_payload  # noqa: E402
from smoke import add_flag  # noqa: E402
from token_economy import TurnStat, take  # noqa: E402

from genai_magics.engine import tools as _tools  # noqa: E402
from genai_magics.engine.payloads import to_text  # noqa: E402
from genai_magics.gemini.models import DEFAULT_MODEL  # noqa: E402
from genai_magics.gemini.pricing import price_for  # noqa: E402
from genai_magics.stub import StubServer  # noqa: E402

MODEL = DEFAULT_MODEL
CELLS = [
    ("load", "import numpy as np\nimport pandas as pd\n\nrng = np.random.default_rng(3)\n"),
    (
        "frame",
        "df = pd.DataFrame({\n"
        + "".join(f"    'm{i}': rng.normal(size=5000),\n" for i in range(8))
        + "    'region': rng.choice(['north', 'south', 'east', 'west'], 5000),\n"
        "    'day': pd.date_range('2026-01-01', periods=5000, freq='h'),\n"
        "    'ok': rng.random(5000) > 0.1,\n    'count': rng.integers(0, 100, 5000),\n})\n",
    ),
    (
        "report",
        "for region, part in df.groupby('region'):\n"
        "    print(f'{region:>6}: n={len(part):5d} mean m0={part.m0.mean():+.3f} ok={part.ok.mean():.1%}')\n"
        "    for col in ['m1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7', 'count', 'ok']:\n"
        "        print(f'        {col:>5} p50={part[col].median():+.3f} max={part[col].max():+.3f}')\n",
    ),
    ("helpers", "def weekly(frame):\n    return frame.set_index('day').resample('W').mean(numeric_only=True)\n"),
    ("plot", "summary = weekly(df)\nsummary.tail()\n"),
    ("clean", "df = df[df.ok]\n"),
    ("fail", "df['revenue'] = df['price'] * df['count']\n"),
]
QUESTIONS = [
    ("Which columns of df are numeric, and which could be categorical?", "inspect_variable", {"name": "df"}),
    ("What does the report cell say about the east region?", "cell_outputs", {"ref": "report"}),
    ("Why did the last cell fail, and how do I fix it?", "last_error", {}),
]
ROUNDS = 2  # the three questions, then the same three again
# A bigger notebook: 24 more cells of helpers (~19k characters), over the model's cache minimum
FILLER = [
    (
        f"helper-{i}",
        f"def feature_{i}(frame, window={i + 2}):\n"
        f'    """Rolling feature {i}: mean of m{i % 8} over the window, clipped to its 1-99% range."""\n'
        f"    values = frame['m{i % 8}'].rolling(window, min_periods=1).mean()\n"
        f"    low, high = values.quantile([0.01, 0.99])\n"
        f"    return values.clip(low, high).rename('feature_{i}')\n\n\n"
        f"def check_{i}(frame):\n"
        f"    assert frame['m{i % 8}'].notna().all(), 'm{i % 8} has gaps'\n"
        f"    return frame.assign(flag_{i}=frame['m{i % 8}'] > frame['m{i % 8}'].median())\n"
        + "".join(f"# note {i}.{j}: keep the window under {i + j + 10} rows for the weekly report\n" for j in range(6)),
    )
    for i in range(24)
]
GOAL_RATIO, GOAL_CELLS = 1.5, "31 cells"  # issue 33: tools cost at most 1.5x flags up front, on 31 cells
ASSUMPTIONS = (
    ("never", "implicit caching never hits"),
    ("always", "implicit caching always hits an identical prefix over the model's minimum"),
)


def notebook(stub: StubServer) -> Shell:
    os.environ["GOOGLE_GEMINI_BASE_URL"] = stub.url
    os.environ["GEMINI_API_KEY"] = FAKE_KEY
    os.environ.pop("GOOGLE_API_KEY", None)
    shell = Shell()
    for cell_id, source in CELLS:
        shell.run(source, cell_id=cell_id)
    return shell


def fresh(stub: StubServer, shell: Shell, implicit: bool) -> None:
    shell.run("%gemini reset --all", cell_id="reset")
    stub.reset()
    price = price_for(MODEL)
    minimum = price.cache_minimum if price is not None else 4_096
    stub.configure_caching(implicit=implicit, implicit_ttl_s=1e12, implicit_minimum={MODEL: minimum})


def run_magics(stub: StubServer, shell: Shell, state: str, tools: bool, implicit: bool) -> list[TurnStat]:
    fresh(stub, shell, implicit)
    flags = f"--state {state}"
    out = []
    for i in range(ROUNDS * len(QUESTIONS)):
        prompt, name, args = QUESTIONS[i % len(QUESTIONS)]
        if tools:
            stub.script_tools([[{"name": name, "args": args}]])
            extra = ""
        else:
            extra = " --no-tools --vars df --outputs report --error"
        first = " --new" if i == 0 else ""
        shown = shell.run(f"%%gemini_ask {flags}{first}{extra}\n{prompt}", cell_id=f"ask-{state}-{tools}-{i}")
        if shown.stderr.strip():
            raise RuntimeError(shown.stderr)
        out.append(take(stub, ""))
        if not out[-1].requests:
            raise RuntimeError(f"{prompt!r} sent no request")
    return out


def run_stateless(stub: StubServer, shell: Shell, implicit: bool) -> list[TurnStat]:
    """Everything again every time: the pieces (as genai_magics made them for (u)), the other cells, the prompt."""
    from google import genai

    fresh(stub, shell, implicit)
    # the pieces, as the flags send them (an interaction's input is the turn's whole JSON)
    shell.run("%%gemini_ask --new --state interactions --no-tools --vars df --outputs report --error\nx", cell_id="p")
    first = next(r for r in stub.requests if r["kind"] == "interaction.create")
    pieces = {k: v for k, v in current_payload(first).items() if k not in ("mode", "prompt")}
    fresh(stub, shell, implicit)
    client = genai.Client()
    out = []
    for i in range(ROUNDS * len(QUESTIONS)):
        prompt = QUESTIONS[i % len(QUESTIONS)][0]
        text = to_text({"mode": "ask", "prompt": prompt, **pieces})
        for _ in client.models.generate_content_stream(model=MODEL, contents=text):
            pass
        out.append(take(stub, ""))
    return out


def table(runs: dict[str, list[TurnStat]], goals: Goals | None) -> list[str]:
    """The table of one notebook size and assumption; the goal's lines when ``goals`` judges this one."""
    price = price_for(MODEL)
    assert price is not None
    n = len(QUESTIONS)
    head = (
        f"{'strategy':<28} {'requests':>8} {'input tok':>10} {'cached':>7} {'output':>7} {'bytes':>8} {'US$':>8}"
        f" │ {'again: input':>12} {'cached':>7} {'US$':>8}"
    )
    lines = [head, "─" * len(head)]
    for label, stats in runs.items():
        first, again = stats[:n], stats[n:]

        def total(part: list[TurnStat], field: str) -> int:
            return sum(getattr(t, field) for t in part)

        usd1 = sum(t.dollars(price) for t in first)
        usd2 = sum(t.dollars(price) for t in again)
        lines.append(
            f"{label:<28} {total(stats, 'requests'):>8} {total(first, 'tokens'):>10,} {total(first, 'cached'):>7,}"
            f" {total(first, 'output'):>7,} {total(first, 'bytes'):>8,} {usd1:>8.5f}"
            f" │ {total(again, 'tokens'):>12,} {total(again, 'cached'):>7,} {usd2:>8.5f}"
        )
    all_usd = {label: sum(t.dollars(price) for t in stats) for label, stats in runs.items()}
    base = all_usd["(s) stateless resend"]
    lines.append(
        "all six questions, US$ against stateless resend: "
        + " · ".join(
            f"{label.split(' ', 1)[0]}{' ' + label.split(', ')[1][:5] if ', ' in label else ''} {usd / base:.2f}x"
            for label, usd in all_usd.items()
        )
    )
    for mode in ("contents", "interactions"):
        ratio = all_usd[f"(t) tools, {mode}"] / all_usd[f"(u) up front, {mode}"]
        if goals is None:
            lines.append(f"info tools ÷ flags up front, {mode}: {ratio:.2f}x (the goal is judged on {GOAL_CELLS})")
        else:
            goal = f"tools <= {GOAL_RATIO:g}x flags up front in US$, {mode} (issue 33; all six questions)"
            lines.append(goals.line(goal, ratio <= GOAL_RATIO, f"{ratio:.2f}x"))
    return lines


class every_result_whole:
    """The sent-once rule switched off (this process only): a result the model holds goes whole again."""

    def __enter__(self) -> None:
        self.saved = _tools.Holdings.answer

        def whole(holdings: _tools.Holdings, call: _tools.ToolCall, found):
            return _tools.ToolResult(
                call, _tools.whole_response(found), "whole", tuple(found), tuple((p.key, p.sha256) for p in found)
            )

        _tools.Holdings.answer = whole  # type: ignore[method-assign]

    def __exit__(self, *exc: object) -> None:
        _tools.Holdings.answer = self.saved  # type: ignore[method-assign]


def strategies(stub: StubServer, shell: Shell, implicit: bool) -> dict[str, list[TurnStat]]:
    with every_result_whole():
        resent = run_magics(stub, shell, "contents", True, implicit)
    return {
        "(t) tools, contents": run_magics(stub, shell, "contents", True, implicit),
        "(t0) (t) results always whole": resent,
        "(t) tools, interactions": run_magics(stub, shell, "interactions", True, implicit),
        "(u) up front, contents": run_magics(stub, shell, "contents", False, implicit),
        "(u) up front, interactions": run_magics(stub, shell, "interactions", False, implicit),
        "(s) stateless resend": run_stateless(stub, shell, implicit),
    }


def measured(smoke: bool) -> list[tuple[str, str, dict[str, list[TurnStat]]]]:
    """(notebook size, assumption, each strategy's turns) of every table, in order (scripts/figures.py reads them)."""
    sizes = (("7 cells", []), ("31 cells", FILLER))[: 1 if smoke else 2]
    out = []
    with StubServer() as stub:
        shell = notebook(stub)
        try:
            for size, extra in sizes:
                for cell_id, source in extra:
                    shell.run(source, cell_id=cell_id)
                shell.run(CELLS[-1][1], cell_id=CELLS[-1][0])  # the failing cell last again: the same error
                for key, what in ASSUMPTIONS[: 1 if smoke else 2]:
                    out.append((size, what, strategies(stub, shell, key == "always")))
        finally:
            shell.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_flag(parser)
    args = parser.parse_args(argv)
    smoke = args.smoke
    goals = Goals(judged=not smoke)
    tables = [
        (f"notebook of {size}, {what}", table(runs, goals if smoke or size == GOAL_CELLS else None))
        for size, what, runs in measured(smoke)
    ]  # a smoke run prints the goal's lines (not judged) on its 7 cells
    print(f"model {MODEL} (genai_magics defaults: cache auto); 3 questions (df's columns, a cell's output, the last")
    print("error), then the same 3 again: tokens, bytes and US$ of the first 3, then of the repeated 3")
    for title, lines in tables:
        print()
        print(title)
        for line in lines:
            print(line)
    return goals.exit_code(args.report)


if __name__ == "__main__":
    raise SystemExit(main())
