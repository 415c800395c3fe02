"""A 10-turn session with the notebook's rules (a 6 KB AGENTS.md) against the same session without them:
what the rules add, in tokens and dollars, and how many full-price reads of the rules that is.

Everything runs the real google-genai SDK over real HTTP against the bundled stand-in; every number is
read from the stand-in's request records (``input_tokens``: what the model reads, ``cached_tokens``: what
its implicit cache or an explicit cache served) and priced as the footers price them (the default model's
rate of the turn's day, cached tokens at the cached rate).

Strategies, each run with the rules and without:
  (c) genai_magics contents mode, ``cache = "off"``: the rules go once, in the first turn, and stay in the
      transcript's head, which every later request repeats: implicit caching serves them as cached tokens;
  (f) genai_magics contents mode, ``cache = "auto"`` (the default): the same, with an explicit cache when the
      head is over the model's minimum;
  (d) genai_magics interactions mode: the rules go once; the server chain holds them (and reads them again).
  (a) for reference, computed: the rules sent with every request at the full input price (a tool that
      prepends AGENTS.md to each prompt), i.e. ten full-price reads.

The ratio printed is (cost with rules - cost without) / (one full-price read of the rules): ~1 means the
rules cost once, 10 that they cost on every turn.

    python benchmarks/rules_economy.py [--smoke]

``--smoke``: 2 turns instead of 10. A failed request stops the run with an error (no table).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT, ROOT / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from goals import Goals  # noqa: E402
from helpers.display import RecordingDisplay  # noqa: E402
from smoke import add_flag  # noqa: E402

from genai_magics.engine.text import estimate_tokens  # noqa: E402
from genai_magics.gemini.models import DEFAULT_MODEL  # noqa: E402
from genai_magics.gemini.pricing import billing_day, price_for  # noqa: E402
from genai_magics.persistence.keeper import RecordSettings  # noqa: E402
from genai_magics.stub import StubServer  # noqa: E402
from genai_magics.turn import pipeline  # noqa: E402
from genai_magics.turn.requests import Settings, TurnRequest  # noqa: E402
from genai_magics.turn.session import Session  # noqa: E402

MODEL = DEFAULT_MODEL
CELL = "code"
GOAL_READS = 2.5  # full-price reads of the rules over the session: about once, never once a turn
SMALL = "import polars as pl\n\ndef load(path):\n    return pl.read_csv(path).filter(pl.col('amount') > 0)\n"
# a cell of ~17 KB: the head (instruction, cell, rules) is then over the implicit-caching minimum (2,048 tokens)
LARGE = SMALL + "".join(
    f"\ndef step_{i}(frame):\n    '''Step {i} of the pipeline.'''\n"
    f"    return frame.with_columns(pl.col('amount') * {i})\n"
    for i in range(160)
)
SECTION = (
    "## {n}. Conventions for {topic}\n"
    "- Use polars for data frames, never pandas; lazy frames for anything over a million rows.\n"
    "- Every public function has a docstring saying what it returns and a type-annotated signature.\n"
    "- Plots use matplotlib with the house style (plt.style.use('house')), axes labelled with units.\n"
    "- Tests live in tests/, one file per module, named for the behaviour they check.\n\n"
)
TOPICS = ["loading", "cleaning", "joins", "aggregation", "plots", "tests", "naming", "errors", "logging", "reviews"]
RULES = "# Project rules\n\n" + "".join(SECTION.format(n=i + 1, topic=t) for i, t in enumerate(TOPICS))
PROMPTS = [
    "What does load do?",
    "Is the filter right for refunds?",
    "How would I read only two columns?",
    "What happens on an empty file?",
    "Should this be a lazy frame?",
    "How do I test this function?",
    "What type does it return?",
    "How would I log the rows dropped?",
    "Is the name load clear enough?",
    "Summarize what to change.",
]


def run_ours(folder: Path, source: str, prompts: list[str], state: str, cache: str, rules: bool) -> Session:
    session = Session()
    session.executed.add(CELL, source, 1)
    notebook = folder / "work.ipynb"
    settings = Settings(
        model=MODEL,
        state=state,  # type: ignore[arg-type]
        cache=cache,
        record=RecordSettings(mode="off", persist=False, notebook=notebook),
        rules="on" if rules else "off",
    )
    display = RecordingDisplay()
    for prompt in prompts:
        pipeline.run(session, TurnRequest(mode="ask", prompt=prompt, cell=CELL, state=state), settings, display)  # type: ignore[arg-type]
    return session


def measure(stub: StubServer, run) -> dict[str, float]:
    stub.reset()
    session = run()
    reads = [r for r in stub.requests if r["kind"] in ("stream", "generate", "interaction.create", "cache.create")]
    bad = [r for r in reads if r["status"] != 200]
    if bad:
        raise RuntimeError(f"failed requests: {[(r['kind'], r['status']) for r in bad]}")
    usage = [s.usage for s in session.spent]
    return {
        "input_tokens": sum(u.input_tokens or 0 for u in usage),
        "cached_tokens": sum(u.cached_tokens or 0 for u in usage),
        "cost": sum(u.cost_usd or 0.0 for u in usage),
    }


def main(argv: list[str] | None = None) -> int:
    import os

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_flag(parser)
    args = parser.parse_args(argv)
    prompts = PROMPTS[:2] if args.smoke else PROMPTS
    goals = Goals(judged=not args.smoke)
    price = price_for(MODEL, None, billing_day())
    assert price is not None, f"{MODEL} has no price"
    # implicit caching modelled (the stand-in leaves it off unless asked): what the real API does for Flash
    with tempfile.TemporaryDirectory() as tmp, StubServer(implicit_caching=True) as stub:
        folder = Path(tmp)
        (folder / "pyproject.toml").write_text("[project]\nname = 'bench'\n")
        (folder / "AGENTS.md").write_text(RULES)
        os.environ["GOOGLE_GEMINI_BASE_URL"] = stub.url
        os.environ.setdefault("GEMINI_API_KEY", "benchmark-key-not-secret")
        rows = {}
        for size, source in (("small cell", SMALL), (f"{len(LARGE) // 1000} KB cell", LARGE)):
            for name, state, cache in (
                ("(c) contents, cache off", "contents", "off"),
                ("(f) contents, cache auto", "contents", "auto"),
                ("(d) interactions", "interactions", "off"),
            ):
                runs = [
                    measure(stub, lambda r=r, s=state, c=cache, x=source: run_ours(folder, x, prompts, s, c, r))
                    for r in (False, True)
                ]
                rows[f"{name}, {size}"] = (runs[0], runs[1])
    rules_tokens = estimate_tokens(RULES)
    one_read = rules_tokens * price.input * 1e-6
    n = len(prompts)
    print(f"{n} asks, {MODEL} at ${price.input}/1M in (${price.cached_input} cached), a {len(RULES):,} B AGENTS.md")
    print(f"(~{rules_tokens:,} tokens; one full-price read ${one_read:.6f}), on the stand-in\n")
    print("| strategy | in tok without | in tok with | cached with | $ without | $ with | rules cost | in reads |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, (a, b) in rows.items():
        extra = b["cost"] - a["cost"]
        print(
            f"| {name} | {a['input_tokens']:,} | {b['input_tokens']:,} | {b['cached_tokens']:,} | "
            f"{a['cost']:.6f} | {b['cost']:.6f} | {extra:.6f} | {extra / one_read:.2f}x |"
        )
    print(f"| (a) rules with every request (computed) | | | | | | {n * one_read:.6f} | {n:.2f}x |")
    # the rules are uploaded once in every row; they are read at the cached price only once the head passes the
    # implicit-caching minimum, so the goal (cost about once, not once a turn) is judged on the large cell's rows
    for name, (a, b) in rows.items():
        if name.endswith("small cell"):
            continue
        reads = (b["cost"] - a["cost"]) / one_read
        print(
            goals.line(
                f"{name}: the rules cost <= {GOAL_READS}x one full-price read", reads <= GOAL_READS, f"{reads:.2f}x"
            )
        )
    return goals.exit_code(args.report)


if __name__ == "__main__":
    raise SystemExit(main())
