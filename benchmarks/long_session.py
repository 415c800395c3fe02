"""Long sessions stay flat (issue 33): a 100-turn exploration of a real notebook, the model fetching what each
question needs with functions, in bytes, tokens and dollars per turn.

The notebook: ``tests/corpus/wtop_14_strings_and_regular_expressions.ipynb`` (63 code cells, pure Python, so
every cell runs in the benchmark's process and has its real outputs). Every turn asks about one cell (the
cells in a fixed stride, so turns 64-100 come back to cells asked before) and the stand-in plays a model
that reads it with three parallel calls in one round: ``read_cell``, ``cell_outputs`` and one
``search_cells`` for a word of the cell.

Everything runs the real google-genai SDK over real HTTP against the bundled stand-in, the extension in an
in-process IPython shell (``tests/helpers/shell.py``); every number is read from the stand-in's request
records (``token_economy.take``) and its record of each explicit cache's life (storage).

Runs, each under both implicit-caching extremes (never hits / always hits an identical prefix over the
model's minimum):
  contents      genai_magics' defaults (``cache auto``): results fade (an earlier turn names the calls that
                fetch them again), the faded turns folded into the explicit cache's head when that pays
                (docs/token-economy.md);
  interactions  the server chain (``--state interactions``), started again seeded with the compacted
                transcript when that pays;
  (s)           stateless resend: each turn one request with the prompt and the three results whole;
  floor         computed, the strict floor: each turn's prompt and each distinct result read once at full
                price, the system instruction, the declarations and every earlier prompt and answer read
                at the cached price, the output as measured. No implementation reaches it.
Three reference lines (``least``), each counting the same conversation as the floor (the instructions, every
earlier prompt and answer; a turn's function calls are output, never conversation), under the API's rules:
  one request, a cache     any assistant: the content up front, one request a turn (the product's flags);
  fetching, a cache        an assistant fetching with functions: two requests a question, the second reading
                           again what the first read; the sessions' target;
  one request, no cache    the content up front with no cache at all;
and two more for the never-hits extreme, where the fetching line's cached reads need a cache nobody pays for:
  fetching, explicit only  fetching where only explicit caches serve (implicit caching never hits): each cache
                           written at the input price and stored while it serves, the cheapest schedule of
                           caches for the whole session (``least_explicit``); contents mode's reachable floor;
  fetching, no cache       fetching with no cache at all: interactions mode's, whose API has no explicit cache.

Goals (issues 33 and 43): turn 40's full-price input <= 1.3x turn 5's; the whole session <= 1.5x the least a
function-fetching assistant pays (``fetching, a cache``); no request over the model's input limit.

    python benchmarks/long_session.py [--smoke] [--turns N]

``--smoke``: 12 turns, implicit caching never hits, both modes; judges no goal.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT, ROOT / "tests", ROOT / "benchmarks"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from goals import Goals  # noqa: E402
from helpers.kernel import FAKE_KEY  # noqa: E402
from helpers.shell import Shell  # noqa: E402
from smoke import Failures, add_flag  # noqa: E402
from token_economy import TurnStat, take  # noqa: E402

from genai_magics.engine.payloads import SYSTEM_INSTRUCTION, to_text  # noqa: E402
from genai_magics.engine.text import estimate_tokens  # noqa: E402
from genai_magics.engine.tools import TOOL_NAMES, TOOLS_INSTRUCTION, declarations  # noqa: E402
from genai_magics.gemini.models import DEFAULT_MODEL, INPUT_LIMIT  # noqa: E402
from genai_magics.gemini.pricing import Price, price_for  # noqa: E402
from genai_magics.stub import StubServer  # noqa: E402

MODEL = DEFAULT_MODEL
NOTEBOOK = ROOT / "tests" / "corpus" / "wtop_14_strings_and_regular_expressions.ipynb"
TURNS = 100
SMOKE_TURNS = 12
STRIDE = 8  # turn i asks about code cell (i * STRIDE) mod 63 (coprime: every cell once, then again)
EXTREMES = (("never", "implicit caching never hits"), ("always", "implicit caching always hits"))
SHOWN_TURNS = (1, 5, 10, 20, 40, 60, 80, 100)


def code_cells() -> list[tuple[str, str]]:
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    return [(c.get("id") or f"cell-{i:02d}", "".join(c["source"])) for i, c in enumerate(code)]


def word(source: str) -> str:
    """The search of a turn: the cell's longest name (a word most cells share is no question)."""
    names = re.findall(r"[A-Za-z_][A-Za-z0-9_]{2,}", source) or ["print"]
    return max(names, key=len)


@dataclass
class Session:
    stats: list[TurnStat]
    largest: int  # the most tokens one request read
    storage_usd: float
    prompts: list[str]
    results: list[list[dict]]  # each turn's function results as the model got them (name, response)
    answers: list[int]  # each turn's answer, in output tokens (its last request's)


def notebook(stub: StubServer) -> Shell:
    os.environ["GOOGLE_GEMINI_BASE_URL"] = stub.url
    os.environ["GEMINI_API_KEY"] = FAKE_KEY
    os.environ.pop("GOOGLE_API_KEY", None)
    shell = Shell()
    for cell_id, source in code_cells():
        shell.run(source, cell_id=cell_id)
    return shell


def fresh(stub: StubServer, shell: Shell, implicit: bool) -> None:
    shell.run("%gemini reset --all", cell_id="reset")
    stub.reset()
    shell.magics.session.caches.clock = stub.now  # one simulated minute a turn: the cache manager reads it too
    price = price_for(MODEL)
    minimum = price.cache_minimum if price is not None else 4_096
    stub.configure_caching(implicit=implicit, implicit_ttl_s=1e12, implicit_minimum={MODEL: minimum})


def question(turn: int) -> tuple[str, list[dict]]:
    cells = code_cells()
    cell_id, source = cells[(turn * STRIDE) % len(cells)]
    pattern = word(source)
    calls = [
        {"name": "read_cell", "args": {"ref": cell_id}},
        {"name": "cell_outputs", "args": {"ref": cell_id}},
        {"name": "search_cells", "args": {"pattern": pattern}},
    ]
    return f"Turn {turn}: what does cell {cell_id} do, and where else is {pattern} used?", calls


def run_magics(stub: StubServer, shell: Shell, state: str, implicit: bool, turns: int, failures: Failures) -> Session:
    fresh(stub, shell, implicit)
    stats, prompts, results, answers = [], [], [], []
    largest = 0
    for turn in range(1, turns + 1):
        prompt, calls = question(turn)
        stub.script_tools([calls])
        new = " --new" if turn == 1 else ""
        shown = shell.run(f"%%gemini_ask --state {state}{new}\n{prompt}", cell_id=f"ask-{state}-{turn}")
        failures.check_quiet(shown.stderr, f"{state}, turn {turn}")
        records = [r for r in stub.requests if r["kind"] in ("stream", "generate", "interaction.create")]
        failures.check_requests(records, f"{state}, turn {turn}")
        largest = max([largest, *(r["input_tokens"] for r in records)])
        results.append([{"name": t["name"], "response": t["response"]} for r in records for t in r["tool_results"]])
        prompts.append(prompt)
        answers.append(records[-1]["response_tokens"] if records else 0)
        stats.append(take(stub, ""))
        if not stats[-1].requests:
            failures.add(f"{state}, turn {turn}: sent no request")
    price = price_for(MODEL)
    hours = sum(c["token_seconds"] for c in stub.caches) / 3600
    storage = 1e-6 * hours * price.storage_hour if price is not None else 0.0
    return Session(stats, largest, storage, prompts, results, answers)


def whole_results(session: Session) -> list[list[dict]]:
    """Each turn's results whole: a result the model got as ``unchanged`` is the whole one an earlier turn got."""
    seen: dict[str, dict] = {}
    out = []
    for turn in session.results:
        for r in turn:
            if "text" in r["response"]:
                seen.setdefault(r["response"]["sha256"], r)
        out.append([seen.get(r["response"].get("sha256", ""), r) for r in turn])
    return out


def run_stateless(stub: StubServer, shell: Shell, implicit: bool, reference: Session) -> list[TurnStat]:
    """Each turn one request: the prompt and the three results whole, no memory, no functions."""
    from google import genai

    fresh(stub, shell, implicit)
    client = genai.Client()
    out = []
    for prompt, results in zip(reference.prompts, whole_results(reference), strict=True):
        text = to_text({"mode": "ask", "prompt": prompt, "results": results})
        for _ in client.models.generate_content_stream(model=MODEL, contents=text):
            pass
        out.append(take(stub, ""))
    return out


def fixed_tokens(functions: bool = True) -> int:
    """What every request reads first: the system instruction, and with ``functions`` the tools' instruction and
    the declarations."""
    if not functions:
        return estimate_tokens(SYSTEM_INSTRUCTION)
    return estimate_tokens(SYSTEM_INSTRUCTION + TOOLS_INSTRUCTION + json.dumps(declarations(TOOL_NAMES)))


def new_reads(reference: Session) -> Iterator[tuple[int, int, TurnStat, int]]:
    """Per turn: its prompt's tokens, what it read new (the prompt and each result no earlier turn got whole),
    its stats and its answer's output tokens."""
    seen: set[str] = set()
    for prompt, results, stat, answer in zip(
        reference.prompts, whole_results(reference), reference.stats, reference.answers, strict=True
    ):
        new = estimate_tokens(prompt)
        for r in results:
            key = r["response"].get("sha256", "")
            if key not in seen:
                seen.add(key)
                new += estimate_tokens(json.dumps(r["response"], ensure_ascii=False))
        yield estimate_tokens(prompt), new, stat, answer


# Every line below counts the same conversation: the instructions, then each earlier turn's prompt and answer
# (its answer's output tokens, never the function calls a turn made: those are output, billed as measured).


def floor(reference: Session, price: Price) -> list[float]:
    """The strict floor's dollars per turn: each prompt and distinct result once at full price, the instructions,
    the declarations and the conversation so far at the cached price, the output as measured. No implementation
    reaches it (nothing under the cache minimum is cached, and an answer is new to any cache when first read)."""
    fixed, held, out = fixed_tokens(), 0, []
    for prompt, new, stat, answer in new_reads(reference):
        out.append(1e-6 * (new * price.input + (fixed + held) * price.cached_input + stat.output * price.output))
        held += prompt + answer
    return out


def least(reference: Session, price: Price, functions: bool, cache: bool) -> float:
    """The least an implementation pays, in dollars, by the API's rules:
    - a read is at the cached price only where a cache can hold it (``cache``): what an earlier request read,
      and at least the model's cache minimum (a shorter read counted as padded up to it, where that is cheaper);
    - each prompt and each distinct result is read once at full price, and each answer at full price the first
      time a request reads it (no cache holds it before);
    - ``functions``: the assistant fetches with functions, so a question takes two requests, the second reading
      again what the first read (the prompt included) before the results; else one request a turn with the
      content up front (the product's flags do this: no declarations, no calls);
    - the output as measured (without ``functions``: the answers alone); cache writes and storage not counted.
    """
    fixed, held, last, total = fixed_tokens(functions), 0, 0, 0.0

    def read(tokens: int) -> float:
        full = tokens * price.input
        return min(full, max(tokens, price.cache_minimum) * price.cached_input) if cache else full

    for prompt, new, stat, answer in new_reads(reference):
        first = read(fixed + held) + last * price.input
        again = read(fixed + held + last + prompt) if functions else 0.0
        output = stat.output if functions else answer
        total += 1e-6 * (first + again + new * price.input + output * price.output)
        held, last = held + last + prompt, answer
    return total


def fetching_reads(reference: Session, price: Price) -> tuple[list[tuple[int, int]], float]:
    """A function-fetching assistant's requests, two a turn, each as (its turn, the conversation tokens it reads:
    the instructions, every earlier prompt and answer, and the second one this turn's prompt); and the dollars
    every way of caching them pays alike (each prompt and result once at the input price, the output)."""
    fixed, held, last = fixed_tokens(), 0, 0
    reads: list[tuple[int, int]] = []
    others = 0.0
    for turn, (prompt, new, stat, answer) in enumerate(new_reads(reference)):
        reads += [(turn, fixed + held + last), (turn, fixed + held + last + prompt)]
        others += 1e-6 * (new * price.input + stat.output * price.output)
        held, last = held + last + prompt, answer
    return reads, others


def least_explicit(reference: Session, price: Price) -> float:
    """The least a function-fetching assistant pays where implicit caching never hits, so only explicit caches
    serve a cached read, by their rules (``least``'s conversation, requests and output):
    - a cache holds what the request it is made before reads of the conversation (at least the model's cache
      minimum: filler up to it written and read alike), and is written once at the input price; that request
      and every later one read it at the cached price, and the rest of the conversation at the input price;
    - a cache is stored (``storage_hour``) for the turns it serves, a simulated minute a turn, no longer;
    - one cache at a time: a new one is a new write of all it holds, the previous one gone.
    The schedule of caches is the cheapest of all (a dynamic program over the requests, caches made before any
    of them). No implementation reaches it: it knows the whole session in advance."""
    reads, others = fetching_reads(reference, price)
    sums = [0]
    for _, tokens in reads:
        sums.append(sums[-1] + tokens)

    def segment(start: int, end: int) -> float:
        """Requests ``start``..``end - 1``, the cheaper of no cache and one made before ``start``."""
        count, total = end - start, sums[end] - sums[start]
        held_ = reads[start][1]
        stored = max(held_, price.cache_minimum)
        minutes = reads[end - 1][0] - reads[start][0] + 1
        cached = (
            stored * (price.input + count * price.cached_input + price.storage_hour * minutes / 60)
            + (total - count * held_) * price.input
        )
        return 1e-6 * min(total * price.input, cached)

    best = [0.0] + [float("inf")] * len(reads)
    for end in range(1, len(reads) + 1):
        best[end] = min(best[start] + segment(start, end) for start in range(end))
    return best[-1] + others


@dataclass
class Floors:
    """What a session is measured against (the module's docstring)."""

    strict: list[float]  # the strict floor's dollars per turn
    one_request: float  # any assistant: the content up front, one request a turn, a cache usable
    fetching: float  # an assistant fetching with functions, a cache usable: the sessions' target
    uncached: float  # one request a turn with the content up front and no cache at all
    fetching_explicit: float  # fetching, implicit caching never hitting: explicit caches written and stored
    fetching_uncached: float  # fetching with no cache at all (the Interactions API has no explicit one)

    @classmethod
    def of(cls, reference: Session, price: Price) -> Floors:
        return cls(
            floor(reference, price),
            least(reference, price, functions=False, cache=True),
            least(reference, price, functions=True, cache=True),
            least(reference, price, functions=False, cache=False),
            least_explicit(reference, price),
            least(reference, price, functions=True, cache=False),
        )


def full_price(t: TurnStat) -> int:
    return t.tokens - t.cached + t.written


def report(title: str, runs: dict[str, Session], stateless: list[TurnStat], floors: Floors, smoke: bool) -> None:
    price = price_for(MODEL)
    assert price is not None
    print(f"\n== {title} ==")
    per = {k: [t.dollars(price) for t in s.stats] for k, s in runs.items()}
    per["(s) stateless resend"] = [t.dollars(price) for t in stateless]
    head = (
        f"{'turn':>5} "
        + " ".join(f"│ {k[:20]:<20} {'bytes':>8} {'full':>7} {'cached':>7} {'US$':>8}" for k in runs)
        + f" │ {'(s) US$':>8} {'floor US$':>9}"
    )
    print(head)
    print("─" * len(head))
    for n in SHOWN_TURNS:
        if n > len(floors.strict):
            continue
        row = f"{n:>5} "
        for s in runs.values():
            t = s.stats[n - 1]
            row += f"│ {'':<20} {t.bytes:>8,} {full_price(t):>7,} {t.cached:>7,} {t.dollars(price):>8.5f} "
        print(row + f"│ {stateless[n - 1].dollars(price):>8.5f} {floors.strict[n - 1]:>9.5f}")
    total_floor = sum(floors.strict)
    total_stateless = sum(per["(s) stateless resend"])
    print(
        f"{'whole session':<22} {'bytes':>11} {'full-price':>11} {'cached':>10} {'storage $':>9} {'US$':>8}"
        f" {'vs (s)':>7} {'vs floor':>8} {'t40/t5 full':>11} {'largest request':>15}"
    )
    for k, s in runs.items():
        usd = sum(per[k]) + s.storage_usd
        t5, t40 = (full_price(s.stats[n - 1]) if n <= len(s.stats) else 0 for n in (5, 40))
        ratio = f"{t40 / t5:.2f}x" if t5 and t40 else "-"
        print(
            f"{k:<22} {sum(t.bytes for t in s.stats):>11,} {sum(full_price(t) for t in s.stats):>11,}"
            f" {sum(t.cached for t in s.stats):>10,} {s.storage_usd:>9.5f} {usd:>8.4f}"
            f" {usd / total_stateless:>6.2f}x {usd / total_floor:>7.2f}x {ratio:>11} {s.largest:>15,}"
        )
    print(
        f"{'(s) stateless resend':<22} {sum(t.bytes for t in stateless):>11,} "
        f"{sum(full_price(t) for t in stateless):>11,} {sum(t.cached for t in stateless):>10,}"
        f" {0:>9.5f} {total_stateless:>8.4f}"
    )
    print(f"{'floor (computed)':<22} {'':>11} {'':>11} {'':>10} {'':>9} {total_floor:>8.4f}")
    for name, usd in (
        ("one request, a cache", floors.one_request),
        ("fetching, a cache", floors.fetching),
        ("one request, no cache", floors.uncached),
        ("fetching, explicit only", floors.fetching_explicit),
        ("fetching, no cache", floors.fetching_uncached),
    ):
        print(f"{name:<22} {'':>11} {'':>11} {'':>10} {'':>9} {usd:>8.4f}  ({usd / total_floor:.2f}x the strict floor)")
    if smoke:
        return
    for k, s in runs.items():
        usd = sum(per[k]) + s.storage_usd
        t5, t40 = full_price(s.stats[4]), full_price(s.stats[39])
        for goal, ok, measured in (
            ("turn 40's full-price input <= 1.3x turn 5's", t40 <= 1.3 * t5, f"{t40:,} / {t5:,} = {t40 / t5:.2f}x"),
            (
                "the session <= 1.5x the least a function-fetching assistant pays",
                usd <= 1.5 * floors.fetching,
                f"{usd / floors.fetching:.2f}x",
            ),
            ("no request over the input limit", s.largest <= INPUT_LIMIT, f"largest {s.largest:,} tokens"),
        ):
            print(goals.line(f"{title}, {k}: {goal}", ok, measured))
        first = next((i for i, t in enumerate(s.stats) if t.cached or t.written), len(s.stats))
        early = sum(full_price(t) for t in s.stats[:first])
        print(
            f"information {title}, {k}: the session / the strict floor: {usd / total_floor:.2f}x;"
            f" / one request a turn, a cache: {usd / floors.one_request:.2f}x;"
            f" / one request a turn, no cache: {usd / floors.uncached:.2f}x;"
            f" / fetching with explicit caches only: {usd / floors.fetching_explicit:.2f}x;"
            f" / fetching with no cache: {usd / floors.fetching_uncached:.2f}x; turns 1-{first}, before any input was"
            f" cached, hold {early:,} of {sum(full_price(t) for t in s.stats):,} full-price input tokens"
        )


goals = Goals()  # a FAIL makes the run exit 1 unless --report (goals.py); a smoke run prints no goal


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_flag(parser)
    parser.add_argument("--turns", type=int, default=TURNS)
    args = parser.parse_args(argv)
    turns = SMOKE_TURNS if args.smoke else args.turns
    price = price_for(MODEL)
    assert price is not None
    failures = Failures()
    tables = []
    with StubServer() as stub:
        shell = notebook(stub)
        try:
            for key, what in EXTREMES[: 1 if args.smoke else 2]:
                implicit = key == "always"
                runs = {
                    "contents (default)": run_magics(stub, shell, "contents", implicit, turns, failures),
                    "interactions": run_magics(stub, shell, "interactions", implicit, turns, failures),
                }
                if failures:
                    break
                stateless = run_stateless(stub, shell, implicit, runs["contents (default)"])
                floors = Floors.of(runs["contents (default)"], price)
                tables.append((f"{turns} turns, {what}", runs, stateless, floors))
        finally:
            shell.close()
    if failures:
        return failures.exit_code()
    print(f"model {MODEL} (genai_magics defaults: cache auto); {NOTEBOOK.name}, {len(code_cells())} code cells run;")
    print("each turn asks about one cell: read_cell, cell_outputs and search_cells in one round, then the answer")
    print(
        "full = full-price input tokens (read minus cached, plus tokens written into a cache); US$ at the table's rates"
    )
    for title, runs, stateless, floors in tables:
        report(title, runs, stateless, floors, args.smoke)
    return goals.exit_code(args.report)


if __name__ == "__main__":
    raise SystemExit(main())
