"""Token economy: ways to hold a conversation about a 2,000-line cell, side by side, in bytes and in dollars.

Everything runs the real google-genai SDK over real HTTP against the bundled
stand-in (``genai_magics.stub.StubServer``); every number is read from the
stand-in's request records (``body_bytes``: the exact request body received;
``input_tokens``: its deterministic count of the context the model reads,
ceil(utf-8 bytes / 4) of all text, for interactions including the stored
chain). Nothing is estimated by us, except strategy (e), which is computed.

Strategies
  (a) stateless resend: every turn one request with the document + prompt, no memory
      (``client.models.generate_content_stream``);
  (b) naive stateful: ``client.chats.create(model).send_message(document + prompt)``,
      the document attached to every user message;
  (c) genai_magics, contents mode (app-managed, compacted transcript) via ``pipeline.run``;
  (d) genai_magics, interactions mode (server-managed chain) via ``pipeline.run``;
  (f) genai_magics, contents mode with explicit context caching (``GeminiMagics.cache = "auto"``, the
      default; (c) runs with ``cache = "off"``);
  (e) the minimum, computed: each distinct document version a turn is about, once
      (utf-8 bytes), + every prompt (utf-8 bytes). No JSON, no system instruction,
      no secondary context, no replies.
  (e') a stricter floor, for information: only the version the model cannot
      know at all (the first document; not its own applied proposals, not the
      code an Undo restores, not a hand edit, which goes as a patch), + every prompt.

The stand-in streams replies in 48-character pieces; the google-genai SDK
parses each interactions stream event slowly (~2 ms of pydantic work), which
made a 75 kB proposal cost seconds of client CPU. The benchmark therefore
patches the stand-in's chunker to 4,096-character pieces (in this process
only): request bytes and the stand-in's token counts do not depend on it.

In (a)/(b) the user message is the same JSON envelope our turns use
(``{"mode", "prompt", "currentSource"}``) so the stand-in model holds the same
document and answers the same way (edits come back as whole-source JSON
proposals, as an edit-capable naive chat would get them); edit turns ask for
the same JSON response schema. (a)/(b) send no system instruction and no other
cells; (c)/(d) send our system instruction every turn and the other cells
(secondary context) once. Both choices favour (a)/(b).

The script (fixed seed): 50 prompts, asks and edits alternating (odd turns
ask, even turns edit; every edit is applied), a hand edit of the cell before
turn 20 and an Undo of the latest applied proposal before turn 35. Sessions:

  10   the first 10 steps (so no hand edit, no undo); the 10-turn targets use it;
  10+  the same 10 prompts with a hand edit before turn 4 and an undo before
       turn 7 (informational: the hand edit is on top of an applied proposal,
       which interactions mode sends whole, so (a)/(d) can never reach 5 in 10
       turns: at most 10 uploads / 2 uploads);
  50   all 50 steps.

  ask 30 asks on 3 versions of the cell, 10 questions each (hand edits before turns 11 and 21).

Each session runs in a fresh Session against a freshly reset stand-in, one
simulated minute per turn (the stand-in's clock; the cache manager reads it too),
and ends with ``%gemini reset`` (the explicit cache is deleted).

Billed cost, at the price table's rates for the model (``genai_magics/gemini/pricing.py``):
full-price input tokens (read minus cached, plus tokens written into explicit
caches), cached input tokens, output tokens, and explicit-cache storage
token-hours (from the stand-in's record of each cache's life, from creation to its
delete or expiry: a google-genai maintainer answered that the Gemini API bills the
actual lifetime, github.com/googleapis/js-genai/issues/508; a forum answer says a
delete does not refund the TTL set, so (f) is also shown billed to the last expiry
set). Every strategy
runs twice, under two assumptions for implicit caching: it never hits (the
stand-in's implicit model off), and it always hits an identical prefix (on, with
no TTL limit, over the model's minimum). The floor: each distinct document
version read once at full price and every later read at the cached price, plus
the prompts (input) and the replies (output).

Apply/Undo run as in a kernel without a live frontend: the real
``ProposalController`` with ``KernelStateWriter(record.set_source)`` (checks the
cell, writes the kernel's view of it, then ``conv.apply``/``conv.undo``). The
hand edit re-records the cell with a changed source, as re-running it does.

    python benchmarks/token_economy.py              # the tables and targets
    python benchmarks/token_economy.py --per-turn   # plus per-turn rows
    python benchmarks/token_economy.py --csv out.csv
    python benchmarks/token_economy.py --restart-only  # only the "restart and run all" table

Restart and Run All (issue 9): 10 magic cells (the first 10 steps, every edit
applied), a kernel restart (a fresh Session), Run All (the 10 magic cells again,
the cell holding its final code), then 3 new turns (ask, edit applied, ask).
Each genai_magics mode runs with the notebook's record (replayed turns send
nothing) and without it (persist off: a restart forgets); stateless resend sends
everything every time; "no restart" is the same 13 turns in one kernel, the
reference the 3 new turns must not exceed.
"""

from __future__ import annotations

import argparse
import csv
import difflib
import math
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT, ROOT / "tests"):  # the package, and the helpers tests and benchmarks share
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from goals import Goals  # noqa: E402
from helpers.display import RecordingDisplay  # noqa: E402
from smoke import Failures, add_flag  # noqa: E402

from genai_magics.engine.hashing import sha256_text  # noqa: E402
from genai_magics.engine.payloads import SYSTEM_INSTRUCTION, WHOLE_RESPONSE_SCHEMA, to_text  # noqa: E402
from genai_magics.frontends.cell_writer import KernelStateWriter  # noqa: E402
from genai_magics.gemini import transport as _transport  # noqa: E402
from genai_magics.gemini.pricing import Price, price_for  # noqa: E402
from genai_magics.persistence.keeper import RecordSettings  # noqa: E402
from genai_magics.stub import StubServer  # noqa: E402
from genai_magics.stub import sse as _sse  # noqa: E402
from genai_magics.stub.model import edit_source  # noqa: E402
from genai_magics.turn import pipeline  # noqa: E402
from genai_magics.turn.requests import Settings, TurnRequest  # noqa: E402
from genai_magics.turn.session import Session
from genai_magics.ui.proposal import ProposalController  # noqa: E402

_original_chunks = _sse.chunks


def _bigger_chunks(text: str, minimum: int = 3, size: int = 48) -> list[str]:
    return _original_chunks(text, minimum, 4096)


SEED = 20240611
CELL_LINES = 2000  # the cell the sessions are about
failures = Failures()  # turns whose figures would be wrong: the report then prints none, and exits 1
CELL = "cell-a"
API_KINDS = (
    "stream",
    "generate",
    "count",
    "interaction.create",
    "interaction.get",
    "cache.create",
    "cache.get",
    "cache.update",
    "cache.delete",
)
READS = ("stream", "generate", "interaction.create")  # requests the model answers
STRATEGIES = ("a", "b", "c", "d", "f", "g")
OURS = ("c", "d", "f")  # as they are now; (g) is (f) as it was before edits, for comparison
NAMES = {
    "a": "(a) stateless resend",
    "b": "(b) naive chats.send_message",
    "c": "(c) genai_magics contents",
    "d": "(d) genai_magics interactions",
    "e": "(e) minimum (computed)",
    "f": "(f) contents + explicit cache",
    "g": "(g) (f), whole text (before)",
}
ASSUMPTIONS = (("never", "implicit caching never hits"), ("always", "implicit caching always hits an identical prefix"))
MINUTE = 60.0  # simulated time per turn


def default_model() -> str:
    from genai_magics.kernel.magics import GeminiMagics

    return GeminiMagics.class_traits()["model"].default_value


# -- the deterministic material -------------------------------------------------


def generate_cell(lines: int = 2000, seed: int = SEED) -> str:
    """A plausible 2,000-line Python cell: functions and small classes, fixed seed."""
    rng = random.Random(seed)
    words = [
        "price",
        "volume",
        "ratio",
        "window",
        "signal",
        "score",
        "weight",
        "delta",
        "total",
        "count",
        "sample",
        "batch",
        "frame",
        "value",
        "limit",
        "offset",
        "rate",
        "trend",
        "noise",
        "level",
    ]
    verbs = ["compute", "normalize", "smooth", "filter", "rank", "bucket", "merge", "score", "clip", "scale"]
    out = ["import math", "import statistics", "from collections import defaultdict", ""]
    n = 0
    while len(out) < lines:
        n += 1
        a, b = rng.sample(words, 2)
        if n % 7 == 0:
            out += [
                f"class {a.capitalize()}{b.capitalize()}Tracker{n}:",
                f'    """Tracks {a} against {b} over a rolling window."""',
                "",
                f"    def __init__(self, size={rng.randint(3, 60)}):",
                "        self.size = size",
                "        self.items = []",
                "",
                f"    def push(self, {a}):",
                f"        self.items.append({a})",
                "        if len(self.items) > self.size:",
                "            self.items.pop(0)",
                f"        return statistics.fmean(self.items) * {rng.randint(2, 9)}",
                "",
            ]
            continue
        verb = rng.choice(verbs)
        out += [
            f"def {verb}_{a}_{b}_{n}({a}s, {b}={rng.randint(1, 99)}):",
            f'    """{verb.capitalize()} the {a}s by {b} (step {n})."""',
            "    result = defaultdict(float)",
        ]
        for i in range(rng.randint(2, 6)):
            k = rng.randint(2, 97)
            out += [
                f"    for i, {a} in enumerate({a}s[{i}::{k % 5 + 1}]):",
                f"        if {a} > {k}:",
                f"            result[i % {k}] += {a} * {b} - {rng.randint(0, 500)}",
                "        else:",
                f"            result[i] -= math.log1p(abs({a})) / {k}",
            ]
        out += [f"    return sorted(result.items())[:{rng.randint(5, 50)}]", ""]
    return "\n".join(out[:lines]) + "\n"


SECONDARY_CELLS = [
    (
        "setup",
        "import numpy as np\nimport pandas as pd\nimport matplotlib.pyplot as plt\n"
        "pd.set_option('display.max_rows', 50)\nRNG = np.random.default_rng(7)\n",
    ),
    (
        "load",
        "prices = pd.read_csv('prices.csv', parse_dates=['date'])\n"
        "prices = prices.set_index('date').sort_index()\n"
        "volumes = prices.pop('volume')\nprint(prices.describe())\n",
    ),
    (
        "plot",
        "fig, ax = plt.subplots(figsize=(10, 4))\nprices['close'].plot(ax=ax)\nax.set_title('close')\nplt.show()\n",
    ),
]

_TOPICS = [
    "the rolling trackers",
    "the scoring functions",
    "error handling",
    "the log1p branches",
    "the return values",
    "performance of the loops",
    "the default arguments",
    "naming",
    "the class hierarchy",
    "input validation",
]
_EDITS = [
    "Add type hints to",
    "Add docstrings with examples to",
    "Replace magic numbers in",
    "Vectorize the loops in",
    "Add input validation to",
    "Rename unclear variables in",
    "Add logging to",
    "Extract helpers from",
    "Make deterministic",
    "Simplify",
]


def script_prompts(n: int = 50, seed: int = SEED) -> list[tuple[str, str]]:
    """(mode, prompt) per turn: odd turns ask, even turns edit (each edit gets applied)."""
    rng = random.Random(seed + 1)
    prompts = []
    for turn in range(1, n + 1):
        topic = rng.choice(_TOPICS)
        if turn % 2:
            prompts.append(
                (
                    "ask",
                    f"Turn {turn}: what do you think about {topic} in this cell? "
                    f"Point at the weakest spot and explain briefly.",
                )
            )
        else:
            prompts.append(("edit", f"Turn {turn}: {rng.choice(_EDITS)} {topic}.\nKeep behaviour identical otherwise."))
    return prompts


def hand_edit(source: str) -> str:
    """What the user types into the cell by hand: a new constant mid-cell."""
    lines = source.split("\n")
    mid = len(lines) // 2
    lines[mid:mid] = ["# hand edit: keep this threshold in sync with the dashboard", "THRESHOLD = 0.75", ""]
    return "\n".join(lines)


@dataclass
class Step:
    turn: int
    mode: str
    prompt: str
    before: str = ""  # "hand edit" / "undo" event happening before this turn
    document: str = ""  # the cell's source when the turn is asked (reference)


SESSIONS = FULL_SESSIONS = (("10", 10, 20, 35), ("10+", 10, 4, 7), ("50", 50, 20, 35))  # label, turns, hand edit, undo
ASK_HEAVY = "ask"
ASK_HEAVY_SIZE = (3, 10)  # versions of the cell, questions on each


def plan_session(n: int, hand_at: int, undo_at: int) -> list[Step]:
    """The reference run: what the cell holds at every turn, from the stand-in's edit rule."""
    steps = [Step(i + 1, m, p) for i, (m, p) in enumerate(script_prompts(n))]
    doc = generate_cell(CELL_LINES)
    applied: list[tuple[str, str]] = []  # (base, proposal) of applied edits, oldest first
    for s in steps:
        if s.turn == hand_at:
            s.before = "hand edit"
            doc = hand_edit(doc)
        if s.turn == undo_at:
            s.before = "undo"
            base, proposal = applied.pop()
            assert doc == proposal
            doc = base
        s.document = doc
        if s.mode == "edit":
            new = edit_source(s.prompt, doc)
            applied.append((doc, new))
            doc = new
    return steps


def plan_ask_heavy(versions: int = 3, questions: int = 10) -> list[Step]:
    """30 asks on 3 versions of the cell: the user edits it by hand after every 10 questions."""
    rng = random.Random(SEED + 2)
    steps: list[Step] = []
    doc = generate_cell(CELL_LINES)
    for v in range(versions):
        for q in range(questions):
            turn = v * questions + q + 1
            before = "hand edit" if v and not q else ""
            if before:
                doc = hand_edit(doc)
            steps.append(
                Step(
                    turn,
                    "ask",
                    f"Turn {turn}: what does {rng.choice(_TOPICS)} in this cell do? Answer briefly.",
                    before,
                    doc,
                )
            )
    return steps


# -- measuring --------------------------------------------------------------------


@dataclass
class TurnStat:
    bytes: int = 0
    tokens: int = 0  # context read (cached included)
    requests: int = 0
    held_ok: bool = True  # the stand-in model held the intended document
    cached: int = 0  # of ``tokens``, served from a cache
    output: int = 0
    written: int = 0  # tokens written into explicit caches before the turn's request
    prefix: int = 0  # of ``tokens``, a prefix of the previous request (system instruction and turns)

    @property
    def reuse(self) -> float:
        return self.prefix / self.tokens if self.tokens else 0.0

    def dollars(self, price: Price) -> float:
        fresh = self.tokens - self.cached + self.written
        return 1e-6 * (fresh * price.input + self.cached * price.cached_input + self.output * price.output)


@dataclass
class Run:
    stats: dict[str, list[TurnStat]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    storage_hours: dict[str, float] = field(default_factory=dict)  # explicit-cache token-hours (each cache's life)
    ttl_hours: dict[str, float] = field(default_factory=dict)  # the same, to the last expiry set (delete ignored)


def take(stub: StubServer, expected_doc: str) -> TurnStat:
    """This turn's records, then one simulated minute passes."""
    recs = [r for r in stub.requests if r["kind"] in API_KINDS]
    stub.clear()
    stub.advance(MINUTE)
    bad = [r for r in recs if r["status"] != 200]
    if bad:
        raise RuntimeError(f"stand-in answered {[r['status'] for r in bad]}")
    want = sha256_text(expected_doc)
    reads = [r for r in recs if r["kind"] in READS]
    held = [r["held_document_sha256"] for r in reads]
    return TurnStat(
        sum(r["body_bytes"] for r in recs),
        sum(r["input_tokens"] for r in reads),
        len(recs),
        bool(held) and held[-1] == want,
        cached=sum(r["cached_tokens"] for r in reads),
        output=sum(r["response_tokens"] for r in reads),
        prefix=sum(r["prefix_tokens"] for r in reads),
        written=sum(r["input_tokens"] for r in recs if r["kind"] == "cache.create"),
    )


def edit_config(mode: str) -> dict | None:
    """(a)/(b) ask for the whole text, as the tools they stand for do."""
    if mode != "edit":
        return None
    return {"response_mime_type": "application/json", "response_schema": WHOLE_RESPONSE_SCHEMA}


class whole_text:
    """genai_magics as it was before edits: the edit schema offers only proposedSource (this process only)."""

    def __enter__(self) -> None:
        self.saved = _transport.EDIT_RESPONSE_SCHEMA
        _transport.EDIT_RESPONSE_SCHEMA = WHOLE_RESPONSE_SCHEMA

    def __exit__(self, *exc: object) -> None:
        _transport.EDIT_RESPONSE_SCHEMA = self.saved


def message(s: Step) -> str:
    return to_text({"mode": s.mode, "prompt": s.prompt, "currentSource": s.document})


def run_stateless(stub: StubServer, steps: list[Step], model: str) -> list[TurnStat]:
    from google import genai

    client = genai.Client()
    out = []
    for s in steps:
        for _ in client.models.generate_content_stream(model=model, contents=message(s), config=edit_config(s.mode)):
            pass
        out.append(take(stub, s.document))
    return out


def run_chat(stub: StubServer, steps: list[Step], model: str) -> list[TurnStat]:
    from google import genai

    client = genai.Client()  # keep a reference: a collected client closes its HTTP connection
    chat = client.chats.create(model=model)
    out = []
    for s in steps:
        chat.send_message(message(s), config=edit_config(s.mode))
        out.append(take(stub, s.document))
    return out


def run_session(
    stub: StubServer,
    steps: list[Step],
    model: str,
    state: str,
    notes: list[str],
    cache: str = "off",
    whole: bool = False,
) -> list[TurnStat]:
    if whole:
        with whole_text():
            return run_session(stub, steps, model, state, notes, cache)
    session = Session()
    session.caches.clock = stub.now  # the cache manager lives on the simulated clock too
    rec = session.executed
    count = 0

    def run_cell(cell_id: str, source: str) -> None:
        nonlocal count
        count += 1
        rec.add(cell_id, source, count)

    for cid, src in SECONDARY_CELLS:
        run_cell(cid, src)
    run_cell(CELL, steps[0].document)
    settings = Settings(model=model, state=state, cache=cache)  # type: ignore[arg-type]
    display = RecordingDisplay(on_note=lambda text: notes.append(f"{state}: {text}"))
    writer = KernelStateWriter(rec.set_source)
    applied: list[ProposalController] = []
    out = []
    for s in steps:
        if s.before == "hand edit":
            run_cell(CELL, hand_edit(rec.by_id[CELL].source))
        elif s.before == "undo":
            ctl = applied.pop()
            ctl.undo()
            if not ctl.message.startswith("Undone"):
                raise RuntimeError(f"{state} turn {s.turn}: undo refused: {ctl.message}")
        if rec.by_id[CELL].source != s.document:
            failures.add(f"{state} turn {s.turn}: the cell differs from the reference document")
        magic = "%%gemini_edit" if s.mode == "edit" else "%%gemini_ask"
        run_cell(f"magic-{s.turn}", f"{magic} --cell {CELL} --state {state}\n{s.prompt}")
        req = TurnRequest(mode=s.mode, prompt=s.prompt, cell=CELL, state=state)  # type: ignore[arg-type]
        outcome = pipeline.run(session, req, settings, display)
        out.append(take(stub, s.document))
        if s.mode == "edit":
            ctl = ProposalController(
                conversation=outcome.conversation,
                turn=outcome.turn,
                cell_id=CELL,
                writer=writer,
                current_source=lambda cell_id: rec.by_id[cell_id].source,
            )
            ctl.apply()
            if not ctl.message.startswith("Applied"):
                raise RuntimeError(f"{state} turn {s.turn}: apply refused: {ctl.message}")
            applied.append(ctl)
    session.reset()  # the user is done: the explicit cache is deleted
    return out


# -- restart and run all ------------------------------------------------------------

RESTART_TURNS, NEW_TURNS = 10, 3


def _record_run(
    stub: StubServer,
    steps: list[Step],
    model: str,
    state: str,
    record: Path | None,
    notes: list[str],
    restart: bool,
    cache: str = "off",
) -> tuple[TurnStat, TurnStat, TurnStat]:
    """(first session, Run All after the restart, the new turns) for one genai_magics configuration."""
    first_steps, new_steps = steps[:RESTART_TURNS], steps[RESTART_TURNS:]
    record_settings = RecordSettings(location=str(record)) if record is not None else RecordSettings(persist=False)
    settings = Settings(model=model, state=state, cache=cache, record=record_settings)  # type: ignore[arg-type]
    display = RecordingDisplay(on_note=lambda text: notes.append(f"{state}: {text}"))

    def kernel(document: str) -> Session:
        """A fresh kernel that ran the other cells and the code cell (as it is now)."""
        session = Session()
        session.caches.clock = stub.now  # the cache manager lives on the simulated clock too
        for cid, src in SECONDARY_CELLS:
            session.executed.add(cid, src, None)
        session.executed.add(CELL, document, None)
        return session

    def turn(session: Session, s: Step, apply: bool) -> None:
        rec = session.executed
        rec.add(f"magic-{s.turn}", f"%%gemini_{s.mode} --cell {CELL}\n{s.prompt}", None)
        outcome = pipeline.run(
            session,
            TurnRequest(mode=s.mode, prompt=s.prompt, cell=CELL, state=state),  # type: ignore[arg-type]
            settings,
            display,
        )
        if apply and s.mode == "edit" and outcome.replayed is None:
            ctl = ProposalController(
                conversation=outcome.conversation,
                turn=outcome.turn,
                cell_id=CELL,
                writer=KernelStateWriter(rec.set_source),
                current_source=lambda cell_id: rec.by_id[cell_id].source,
            )
            ctl.listeners.append(lambda c: session.keeper.outcome_changed(c.conversation))
            ctl.apply()

    def stat(stub: StubServer) -> TurnStat:
        recs = [r for r in stub.requests if r["kind"] in API_KINDS]
        stub.clear()
        return TurnStat(sum(r["body_bytes"] for r in recs), sum(r["input_tokens"] for r in recs), len(recs))

    stub.reset()
    session = kernel(first_steps[0].document)
    for s in first_steps:
        turn(session, s, apply=True)
    first = stat(stub)
    if restart:
        session.at_exit(settings)  # the kernel exits politely (atexit), then a new one starts
        session = kernel(new_steps[0].document)  # a new kernel: the cell holds its final code; Run All
        for s in first_steps:
            turn(session, Step(s.turn, s.mode, s.prompt, document=new_steps[0].document), apply=False)
    rerun = stat(stub)
    for s in new_steps:
        turn(session, s, apply=True)
    return first, rerun, stat(stub)


def _stateless_restart(stub: StubServer, steps: list[Step], model: str) -> tuple[TurnStat, TurnStat, TurnStat]:
    from google import genai

    client = genai.Client()
    stub.reset()
    parts = (
        steps[:RESTART_TURNS],
        [Step(s.turn, s.mode, s.prompt, document=steps[RESTART_TURNS].document) for s in steps[:RESTART_TURNS]],
        steps[RESTART_TURNS:],
    )
    out = []
    for part in parts:
        for s in part:
            for _ in client.models.generate_content_stream(
                model=model, contents=message(s), config=edit_config(s.mode)
            ):
                pass
        recs = [r for r in stub.requests if r["kind"] in API_KINDS]
        stub.clear()
        out.append(TurnStat(sum(r["body_bytes"] for r in recs), sum(r["input_tokens"] for r in recs), len(recs)))
    return out[0], out[1], out[2]


def restart_and_run_all(stub: StubServer, model: str) -> list[str]:
    """The "restart and run all" table (issue 9); every figure read from the stand-in."""
    import tempfile

    steps = plan_session(RESTART_TURNS + NEW_TURNS, 99, 99)
    notes: list[str] = []
    rows: list[tuple[str, tuple[TurnStat, TurnStat, TurnStat]]] = [
        ("(a) stateless resend", _stateless_restart(stub, steps, model))
    ]
    records = tempfile.TemporaryDirectory()  # the notebooks' record files
    tmp = records.name
    for key, state in (("c", "contents"), ("d", "interactions")):
        rows.append(
            (
                f"({key}) {state}, with the record",
                _record_run(stub, steps, model, state, Path(tmp) / f"{state}.json", notes, True),
            )
        )
        rows.append((f"({key}) {state}, without the record", _record_run(stub, steps, model, state, None, notes, True)))
        rows.append(
            (f"({key}) {state}, no restart (reference)", _record_run(stub, steps, model, state, None, notes, False))
        )
    head = (
        f"{'restart and run all':<40} {'first 10: bytes':>15} {'Run All: requests':>17} {'bytes':>10} "
        f"{'tokens read':>11} {'3 new: bytes':>13} {'tokens read':>11}"
    )
    lines = [
        f"== restart and run all: {RESTART_TURNS} magic cells on the {len(steps[0].document.encode()):,}-byte "
        f"cell (edits applied), kernel restart, Run All, then {NEW_TURNS} new turns ==",
        head,
        "-" * len(head),
    ]
    for name, (first, rerun, new) in rows:
        lines.append(
            f"{name:<40} {first.bytes:>15,} {rerun.requests:>17} {rerun.bytes:>10,} {rerun.tokens:>11,} "
            f"{new.bytes:>13,} {new.tokens:>11,}"
        )
    by = dict(rows)
    for key, state in (("c", "contents"), ("d", "interactions")):
        with_record = by[f"({key}) {state}, with the record"]
        reference = by[f"({key}) {state}, no restart (reference)"]
        ok = with_record[1].bytes == 0 and with_record[1].requests == 0
        lines.append(
            f"target ({key}) Run All after the restart uploads 0 bytes: measured {with_record[1].bytes:,} B in "
            f"{with_record[1].requests} requests — {verdict(ok)}"
        )
        ok = with_record[2].bytes <= reference[2].bytes and with_record[2].tokens <= reference[2].tokens
        lines.append(
            f"target ({key}) the {NEW_TURNS} new turns cost no more than without the restart: "
            f"{with_record[2].bytes:,} B / {with_record[2].tokens:,} tok vs {reference[2].bytes:,} B / "
            f"{reference[2].tokens:,} tok — {verdict(ok)}"
        )
        # the same with explicit context caching on (the default): the record names the cache, the exiting
        # kernel keeps it (Session.at_exit) and the restarted one adopts it
        cached = [
            _record_run(
                stub,
                steps,
                model,
                state,
                Path(tmp) / f"{state}-cache.json" if restarted else None,
                notes,
                restarted,
                cache="auto",
            )
            for restarted in (True, False)
        ]
        ok = cached[0][1].requests == 0 and cached[0][2].bytes <= cached[1][2].bytes
        lines.append(
            f"target ({key}) with cache auto: Run All {cached[0][1].requests} requests; the {NEW_TURNS} new "
            f"turns {cached[0][2].requests} requests, {cached[0][2].bytes:,} B / {cached[0][2].tokens:,} tok vs "
            f"no restart {cached[1][2].requests} requests, {cached[1][2].bytes:,} B / {cached[1][2].tokens:,} "
            f"tok — {verdict(ok)}"
        )
    records.cleanup()
    lines += [f"note: {n}" for n in notes]
    return lines


TOKEN_RATE = 200.0  # output tokens a second the stand-in streams at in the time-to-Apply table


def time_to_apply(stub: StubServer, model: str) -> list[str]:
    """Seconds from the turn's start to its proposal (the Apply button) with the stand-in writing at TOKEN_RATE."""
    rows = []
    for lines in (20, 2000):
        cell = generate_cell(lines)
        stub.reset()
        stub.token_rate = TOKEN_RATE
        session = Session()
        session.executed.add(CELL, cell, 1)
        settings = Settings(model=model, state="contents")
        session.clients.warm_up(settings).join()  # as %load_ext does: the SDK imported and the client made beforehand
        t0 = time.perf_counter()
        outcome = pipeline.run(
            session, TurnRequest(mode="edit", prompt="Add logging.", cell=CELL), settings, RecordingDisplay()
        )
        ProposalController(
            conversation=outcome.conversation,
            turn=outcome.turn,
            cell_id=CELL,
            writer=KernelStateWriter(session.executed.set_source),
            current_source=lambda cell_id, rec=session.executed: rec.by_id[cell_id].source,
        )
        seconds = time.perf_counter() - t0
        out = sum(r["response_tokens"] for r in stub.requests if r["kind"] in READS)
        form = "edits" if outcome.turn and outcome.turn.proposal_edits else "whole text"
        whole = stub_tokens(edit_source("Add logging.", cell)) + 40  # the proposal and a short explanation
        rows.append((lines, seconds, out, form, whole))
        stub.token_rate = 0.0
        session.reset()
    head = f"{'cell':>10} {'answer':>11} {'output tok':>10} {'to Apply, s':>11} {'whole text would be, s':>23}"
    out_lines = [
        f"== time from the turn's start to the Apply button, the stand-in writing {TOKEN_RATE:g} tokens/s "
        "(pipeline.run and the proposal's controller, in process) ==",
        head,
        "-" * len(head),
    ]
    for lines, seconds, out, form, whole in rows:
        out_lines.append(f"{lines:>5} lines {form:>11} {out:>10,} {seconds:>11.2f} {whole / TOKEN_RATE:>23.1f}")
    ratio = rows[1][1] / rows[0][1]
    out_lines.append(
        f"target the 2,000-line cell's Apply within 2x of the 20-line cell's: {rows[1][1]:.2f} s / "
        f"{rows[0][1]:.2f} s = {ratio:.2f}x — {verdict(ratio <= 2)} (whole text: computed at the "
        "same rate from the proposal's tokens)"
    )
    return out_lines


def minimum(steps: list[Step]) -> tuple[int, int]:
    """(e): distinct document versions once + prompts, in utf-8 bytes; and how many versions."""
    seen: dict[str, str] = {}
    for s in steps:
        seen.setdefault(sha256_text(s.document), s.document)
    docs = sum(len(d.encode("utf-8")) for d in seen.values())
    prompts = sum(len(s.prompt.encode("utf-8")) for s in steps)
    return docs + prompts, len(seen)


def floor(steps: list[Step]) -> int:
    """(e'): the version the model cannot know at all (the first) once + prompts, utf-8 bytes."""
    return len(steps[0].document.encode("utf-8")) + sum(len(s.prompt.encode("utf-8")) for s in steps)


def measure(steps: list[Step], stub: StubServer, model: str, implicit: bool = False) -> Run:
    run = Run()
    runners = {
        "a": lambda: run_stateless(stub, steps, model),
        "b": lambda: run_chat(stub, steps, model),
        "c": lambda: run_session(stub, steps, model, "contents", run.notes),
        "d": lambda: run_session(stub, steps, model, "interactions", run.notes),
        "f": lambda: run_session(stub, steps, model, "contents", run.notes, cache="auto"),
        "g": lambda: run_session(stub, steps, model, "contents", run.notes, cache="auto", whole=True),
    }
    for key in STRATEGIES:
        stub.reset()
        stub.configure_caching(
            implicit=implicit, implicit_ttl_s=1e12, implicit_minimum={model: table_price(model).cache_minimum}
        )
        t0 = time.perf_counter()
        run.stats[key] = runners[key]()
        run.storage_hours[key] = sum(c["token_seconds"] for c in stub.caches) / 3600
        run.ttl_hours[key] = sum(c["tokens"] * (c["expire"] - c["created"]) for c in stub.caches) / 3600
        if any(c["state"] == "live" for c in stub.caches):
            run.notes.append(f"{NAMES[key]}: a cache was still live at the end")
        run.seconds[key] = time.perf_counter() - t0
        missed = [i + 1 for i, t in enumerate(run.stats[key]) if not t.held_ok]
        if missed:
            failures.add(f"{NAMES[key]}: the stand-in model did NOT hold the intended document on turns {missed}")
    return run


# -- reporting --------------------------------------------------------------------


def fmt_ratio(x: float) -> str:
    return f"{x:.2f}x" if x < 10 else f"{x:.1f}x"


def report(label: str, steps: list[Step], run: Run, targets: list[tuple[str, bool | None, str]]) -> list[str]:
    n = len(steps)
    e_bytes, versions = minimum(steps)
    e_tokens = math.ceil(e_bytes / 4)
    f_bytes = floor(steps)
    tot = {k: sum(t.bytes for t in v) for k, v in run.stats.items()}
    ctx = {k: sum(t.tokens for t in v) for k, v in run.stats.items()}
    events = [f"{s.before} before turn {s.turn}" for s in steps if s.before] or ["no hand edit, no undo"]
    lines = [
        f"== session {label}: {n} turns on a {len(steps[0].document.splitlines()):,}-line cell "
        f"({len(steps[0].document.encode()):,} bytes); {sum(s.mode == 'edit' for s in steps)} edits applied; "
        f"{', '.join(events)}; {versions} distinct document versions =="
    ]
    head = (
        f"{'strategy':<31} {'uploaded bytes':>15} {'vs (e)':>8} {'(a) / x':>8} "
        f"{'context tok':>12} {'ctx@t5':>9} {f'ctx@t{n}':>9}"
    )
    lines += [head, "-" * len(head)]
    for k in STRATEGIES:
        v = run.stats[k]
        lines.append(
            f"{NAMES[k]:<31} {tot[k]:>15,} {fmt_ratio(tot[k] / e_bytes):>8} {fmt_ratio(tot['a'] / tot[k]):>8} "
            f"{ctx[k]:>12,} {v[4].tokens:>9,} {v[-1].tokens:>9,}"
        )
    lines.append(
        f"{NAMES['e']:<31} {e_bytes:>15,} {fmt_ratio(1.0):>8} {fmt_ratio(tot['a'] / e_bytes):>8} "
        f"{'~' + format(e_tokens, ','):>12} {'-':>9} {'-':>9}"
    )
    lines.append(
        f"{chr(40) + 'e' + chr(39) + ') strict floor (info)':<31} {f_bytes:>15,} {fmt_ratio(f_bytes / e_bytes):>8} "
        f"{fmt_ratio(tot['a'] / f_bytes):>8} {'~' + format(math.ceil(f_bytes / 4), ','):>12} {'-':>9} {'-':>9}"
    )
    lines.append(
        "(e) = each distinct document version a turn is about, once (utf-8 bytes), + every prompt "
        "(utf-8 bytes); (e') = only the first version + every prompt; their token "
        "figures are ceil(bytes/4), read once."
    )
    lines.append(
        f"(d) vs the strict floor (e'): {tot['d'] / f_bytes:.2f}x; per-turn overhead of (d) beyond the "
        f"first document: ~{(tot['d'] - f_bytes) / n:,.0f} bytes (system instruction "
        f"{len(SYSTEM_INSTRUCTION.encode()):,} B, JSON, "
        "previous_interaction_id, response schema, secondary context once, hand edits as patches)"
    )
    lines.append(
        f"(c) vs (a): contents mode uploads {tot['c'] / tot['a']:.2f}x the bytes of stateless resend "
        "(the app-managed transcript, with the active version in full, goes up on every request); "
        f"it saves against (b): {tot['b'] / tot['c']:.1f}x fewer bytes, "
        f"{ctx['b'] / ctx['c']:.1f}x less context"
    )
    if n >= 10:
        c5, cn = run.stats["c"][4].tokens, run.stats["c"][-1].tokens
        slope = (cn - c5) / (n - 5)
        cross = 5 + 0.3 * c5 / slope if slope > 0 else float("inf")
        lines.append(
            f"(c) context grows ~{slope:,.0f} tokens/turn after turn 5 (prompts, replies, sha markers); "
            f"at this rate it passes 1.3x turn 5 around turn {cross:.0f}"
        )
    d_more = [i + 1 for i in range(n) if run.stats["d"][i].tokens > run.stats["c"][i].tokens]
    if d_more:
        lines.append(
            f"interactions reads more context than contents on {len(d_more)}/{n} turns "
            f"(first: turn {d_more[0]}; at turn {n}: {run.stats['d'][-1].tokens:,} vs "
            f"{run.stats['c'][-1].tokens:,} tokens, {run.stats['d'][-1].tokens / run.stats['c'][-1].tokens:.1f}x; "
            f"over the session {ctx['d']:,} vs {ctx['c']:,}, {ctx['d'] / ctx['c']:.1f}x): the server keeps every "
            "proposal and every resent source in full in the stored chain and cannot compact them to sha "
            "markers, while contents mode keeps only the active version in full."
        )
    later = range(1, n)
    asks = [i for i in later if steps[i].mode == "ask" and steps[i - 1].mode == "ask" and not steps[i].before]
    lines.append(
        "prefix reuse (share of a request's tokens repeating a prefix of the previous request), mean over "
        "turns 2-n"
        + (", and over asks right after an ask" if asks else "")
        + ": "
        + ", ".join(
            f"{k} {sum(run.stats[k][i].reuse for i in later) / len(later):.0%}"
            + (f" / {sum(run.stats[k][i].reuse for i in asks) / len(asks):.0%}" if asks else "")
            for k in STRATEGIES
        )
    )
    lines.append("stand-in time per strategy: " + ", ".join(f"{k} {run.seconds[k]:.1f}s" for k in STRATEGIES))
    return lines + target_lines(targets)


goals = Goals()  # every target's verdict: a FAIL makes the run exit 1 unless --report (goals.py)


def verdict(ok: bool) -> str:
    """A target's verdict; a smoke run's tiny sessions judge none."""
    goals.judged = SESSIONS is FULL_SESSIONS
    return goals.verdict("a target above", ok)


def target_lines(targets: list[tuple[str, bool | None, str]]) -> list[str]:
    return [
        f"info {label}: measured {detail}" if ok is None else f"target {label}: measured {detail} — {verdict(ok)}"
        for label, ok, detail in targets
    ]


def stub_tokens(text: str) -> int:
    return math.ceil(len(text.encode("utf-8")) / 4)


def floor_reads(steps: list[Step], price: Price) -> tuple[float, float]:
    """The floor's input, in $ per 1M: (documents: each distinct version once at full price, every later
    read cached; prompts at full price)."""
    seen: set[str] = set()
    docs = prompts = 0.0
    for s in steps:
        sha = sha256_text(s.document)
        docs += stub_tokens(s.document) * (price.cached_input if sha in seen else price.input)
        prompts += stub_tokens(s.prompt) * price.input
        seen.add(sha)
    return docs, prompts


def change_tokens(before: str, after: str) -> int:
    """The size of a change: the lines it removes and adds, in the stand-in's tokens."""
    diff = difflib.ndiff(before.splitlines(keepends=True), after.splitlines(keepends=True))
    return stub_tokens("".join(line[2:] for line in diff if line[:1] in "+-"))


def floor_output(steps: list[Step], stats: list[TurnStat]) -> list[int]:
    """The floor's output per turn: an ask's answer as measured (the same for every strategy), an edit's change."""
    return [
        change_tokens(s.document, edit_source(s.prompt, s.document)) if s.mode == "edit" else t.output
        for s, t in zip(steps, stats, strict=True)
    ]


def change_floor(steps: list[Step], replies: list[int], price: Price) -> float:
    """For information, stricter: the first version read once in full, each later version's change once at
    full price, every other read of the document cached; prompts; replies (edits as changes)."""
    seen: set[str] = set()
    total = 0.0
    previous = None
    for s in steps:
        sha = sha256_text(s.document)
        tokens = stub_tokens(s.document)
        fresh = tokens if previous is None else (0 if sha in seen else change_tokens(previous, s.document))
        total += fresh * price.input + (tokens - fresh) * price.cached_input + stub_tokens(s.prompt) * price.input
        seen.add(sha)
        previous = s.document
    return 1e-6 * (total + sum(replies) * price.output)


def floor_cost(steps: list[Step], replies: list[int], price: Price) -> float:
    """Each distinct document version read once at full price, every later read cached; prompts; replies."""
    return 1e-6 * (sum(floor_reads(steps, price)) + sum(replies) * price.output)


def above_floor(
    steps: list[Step], stats: list[TurnStat], storage_hours: float, price: Price, replies: list[int]
) -> dict[str, float]:
    """Where a strategy's dollars go beyond the floor, in parts that add up to the difference.

    storage: explicit-cache token-hours; creating reads: the cached read of each turn that creates a cache
    (the floor reads a new version once, a cache bills its creation and then this read); head: every
    cached or written token beyond the floor's document reads (system instruction, other cells, JSON
    escaping, earlier turns inside the cached head; below zero when hand edits went as patches, so a
    version the floor reads in full was never written or read in full); full-price: tokens read at
    full price beyond the prompts (earlier turns and patches after the cached head, documents on
    turns without a cache); output: beyond each change's size (an edit's explanation, the JSON, the find text).
    """
    docs, prompts = floor_reads(steps, price)
    creating = sum(t.cached for t in stats if t.written) * price.cached_input
    cached = sum(t.written for t in stats) * price.input + sum(t.cached for t in stats) * price.cached_input
    return {
        "storage": storage_hours * price.storage_hour,
        "creating reads": creating,
        "head": cached - creating - docs,
        "full-price": sum(t.tokens - t.cached for t in stats) * price.input - prompts,
        "output": (sum(t.output for t in stats) - sum(replies)) * price.output,
    }


def dollars(run: Run, key: str, price: Price) -> float:
    return sum(t.dollars(price) for t in run.stats[key]) + 1e-6 * run.storage_hours[key] * price.storage_hour


def table_price(model: str) -> Price:
    """The table's price of the model today (the benchmark runs a model the table prices)."""
    price = price_for(model)
    if price is None:
        raise SystemExit(f"no price known for {model}")
    return price


def cost_report(label: str, steps: list[Step], runs: dict[str, Run], model: str) -> tuple[list[str], list[tuple]]:
    """The billed-cost table under both assumptions, and the targets' results."""
    price = table_price(model)
    lines = [
        f"-- billed cost, session {label}, at {model}'s table rates (${price.input} in, ${price.cached_input} "
        f"cached, ${price.output} out per 1M tokens; ${price.storage_hour} per 1M token-hours of cache) --"
    ]
    head = (
        f"{'strategy':<31} {'full-price in':>13} {'cached in':>10} {'storage tok-h':>13} {'out':>9} "
        f"{'$ in':>8} {'$ cached':>8} {'$ storage':>9} {'$ out':>8} {'dollars':>9} {'vs floor':>8} {'(a) / x':>8}"
    )
    targets: list[tuple] = []
    for assumption, words in ASSUMPTIONS:
        run = runs[assumption]
        replies = floor_output(steps, run.stats["a"])
        floor = floor_cost(steps, replies, price)
        floor_in = 1e-6 * sum(floor_reads(steps, price))
        cost = {k: dollars(run, k, price) for k in STRATEGIES}
        lines += [f"{words}:", head, "-" * len(head)]
        for k in STRATEGIES:
            v = run.stats[k]
            full = sum(t.tokens - t.cached + t.written for t in v)
            cached, out = sum(t.cached for t in v), sum(t.output for t in v)
            split = (
                1e-6 * full * price.input,
                1e-6 * cached * price.cached_input,
                1e-6 * run.storage_hours[k] * price.storage_hour,
                1e-6 * out * price.output,
            )
            lines.append(
                f"{NAMES[k]:<31} {full:>13,} {cached:>10,} {run.storage_hours[k]:>13,.0f} {out:>9,} "
                f"{split[0]:>8.4f} {split[1]:>8.4f} {split[2]:>9.4f} {split[3]:>8.4f} {cost[k]:>9.4f} "
                f"{cost[k] / floor:>7.2f}x {cost['a'] / cost[k]:>7.2f}x"
            )
        lines.append(
            f"{'floor (computed)':<31} {'':>13} {'':>10} {'':>13} {sum(replies):>9,} {floor_in:>8.4f} {'':>8} "
            f"{'':>9} {floor - floor_in:>8.4f} {floor:>9.4f} {1:>7.2f}x {cost['a'] / floor:>7.2f}x"
        )
        strict = change_floor(steps, replies, price)
        lines.append(
            "the floor's output: every ask's answer as measured, and each edit's change (the lines it removes "
            "and adds) only; its input reads each new version in full once, which edits no longer need (hence "
            f"below 1.00x): reading only each change, the rest cached, it is ${strict:.4f}, "
            + ", ".join(f"({k}) {cost[k] / strict:.2f}x" for k in OURS)
            + " of that"
        )
        if assumption == "never":
            parts = above_floor(steps, run.stats["f"], run.storage_hours["f"], price, replies)
            lines.append(
                f"(f) above the floor (${cost['f'] - floor:.4f}): "
                + ", ".join(f"{k} ${1e-6 * v:.4f} ({1e-6 * v / floor:.1%})" for k, v in parts.items())
                + " of the floor"
            )
            by_ttl = cost["f"] + 1e-6 * (run.ttl_hours["f"] - run.storage_hours["f"]) * price.storage_hour
            lines.append(
                f"(f) if storage were billed to the last expiry set, not the cache's life (a delete not "
                f"refunding the rest): {run.ttl_hours['f']:,.0f} token-hours, ${by_ttl:.4f}, "
                f"{by_ttl / floor:.2f}x the floor"
            )
        best = min(OURS, key=cost.get)
        others = min((k for k in STRATEGIES if k not in OURS and k != "g"), key=cost.get)
        targets.append(
            (
                f"session {label}, {words}: genai_magics' best mode ({best}) is the cheapest (ties within 5%)",
                cost[best] <= 1.05 * cost[others],
                f"({best}) ${cost[best]:.4f} vs cheapest other ({others}) ${cost[others]:.4f}: "
                f"{cost[best] / cost[others]:.2f}x",
            )
        )
        if label in ("50", ASK_HEAVY):
            targets.append(
                (
                    f"session {label}, {words}: within 1.3x of the floor",
                    cost[best] <= 1.3 * floor,
                    f"({best}) ${cost[best]:.4f} / floor ${floor:.4f} = {cost[best] / floor:.2f}x",
                )
            )
        if label in ("10", "50") and assumption == "never":
            out = {k: sum(t.output for t in run.stats[k]) for k in ("f", "g")}
            targets.append(
                (
                    f"session {label}: (f) answers small edits with >= 10x fewer output tokens than whole text (g)",
                    out["g"] >= 10 * out["f"],
                    f"(g) {out['g']:,} / (f) {out['f']:,} = {out['g'] / out['f']:.1f}x",
                )
            )
            targets.append(
                (
                    f"session {label}: (f)'s bill >= 3x lower than with whole text (g)",
                    cost["g"] >= 3 * cost["f"],
                    f"(g) ${cost['g']:.4f} / (f) ${cost['f']:.4f} = {cost['g'] / cost['f']:.2f}x",
                )
            )
        if label == ASK_HEAVY and assumption == "never":
            targets.append(
                (
                    f"session {label}, {words}: >= 3x cheaper than stateless resend",
                    cost["a"] >= 3 * cost[best],
                    f"(a) ${cost['a']:.4f} / ({best}) ${cost[best]:.4f} = {cost['a'] / cost[best]:.2f}x",
                )
            )
    return lines, targets


def per_turn_rows(n: str, steps: list[Step], run: Run) -> list[dict]:
    rows = []
    seen: set[str] = set()
    for i, s in enumerate(steps):
        sha = sha256_text(s.document)
        e = len(s.prompt.encode()) + (0 if sha in seen else len(s.document.encode()))
        seen.add(sha)
        row = {
            "session": n,
            "turn": s.turn,
            "mode": s.mode,
            "before": s.before or "-",
            "doc_sha": sha[:8],
            "e_bytes": e,
        }
        for k in STRATEGIES:
            row[f"{k}_bytes"] = run.stats[k][i].bytes
            row[f"{k}_tokens"] = run.stats[k][i].tokens
            row[f"{k}_reuse"] = round(run.stats[k][i].reuse, 4)
        rows.append(row)
    return rows


def per_turn_table(rows: list[dict]) -> list[str]:
    head = (
        f"{'ses':>3} {'turn':>4} {'mode':<4} {'before':<9} {'doc':<8} "
        + " ".join(f"{k + ' bytes':>10}" for k in STRATEGIES)
        + f" {'e bytes':>8} "
        + " ".join(f"{k + ' tok':>9}" for k in STRATEGIES)
        + " "
        + " ".join(f"{k + ' reuse':>8}" for k in STRATEGIES)
    )
    out = [head]
    for r in rows:
        out.append(
            f"{r['session']:>3} {r['turn']:>4} {r['mode']:<4} {r['before']:<9} {r['doc_sha']:<8} "
            + " ".join(f"{r[k + '_bytes']:>10,}" for k in STRATEGIES)
            + f" {r['e_bytes']:>8,} "
            + " ".join(f"{r[k + '_tokens']:>9,}" for k in STRATEGIES)
            + " "
            + " ".join(f"{r[k + '_reuse']:>8.0%}" for k in STRATEGIES)
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--per-turn", action="store_true", help="also print every turn's bytes and tokens")
    parser.add_argument("--csv", metavar="PATH", help="write the per-turn rows as CSV")
    parser.add_argument("--restart-only", action="store_true", help="only the restart-and-run-all table")
    parser.add_argument("--apply-only", action="store_true", help="only the time-to-Apply table")
    add_flag(parser)
    args = parser.parse_args(argv)
    if args.smoke:
        smoke_sizes()
    if args.restart_only:
        return restart_main()
    if args.apply_only:
        return restart_main(time_to_apply)

    t0 = time.perf_counter()
    model = default_model()
    _sse.chunks = _bigger_chunks  # see the module docstring: speed only, not the measured numbers
    with StubServer() as stub:
        os.environ["GOOGLE_GEMINI_BASE_URL"] = stub.url
        os.environ["GEMINI_API_KEY"] = "fake"
        os.environ.pop("GOOGLE_API_KEY", None)
        results = {}
        plans = [(label, plan_session(n, hand_at, undo_at)) for label, n, hand_at, undo_at in SESSIONS]
        for label, steps in plans + [(ASK_HEAVY, plan_ask_heavy(*ASK_HEAVY_SIZE))]:
            results[label] = (steps, {a: measure(steps, stub, model, implicit=a == "always") for a, _ in ASSUMPTIONS})
        restart_lines = restart_and_run_all(stub, model)
        apply_lines = time_to_apply(stub, model)
    if failures:
        return failures.exit_code()

    print(
        f"token economy on the stand-in (model {model}, real google-genai SDK over HTTP; bytes = request "
        "bodies received, tokens = the stand-in's input_tokens)\n"
    )
    rows: list[dict] = []
    for label, (steps, runs) in results.items():
        run = runs["never"]  # bytes and context do not depend on implicit caching
        tot = {k: sum(t.bytes for t in v) for k, v in run.stats.items()}
        e_bytes, _ = minimum(steps)
        targets: list[tuple[str, bool | None, str]] = []
        if label == "10+":
            r2 = tot["a"] / tot["d"]
            targets.append(
                (
                    "(d) uploads vs (a) with a hand edit inside 10 turns (no target)",
                    None,
                    f"(a)/(d) = {r2:.2f}; the hand edit there is on top of an applied proposal, which interactions "
                    "mode sends whole (a later Undo on the chain would leave a patch without its base), so (d) "
                    "uploads the document twice and (a)/(d) cannot exceed 10 uploads / 2 = 5.00",
                )
            )
        if label == "10":
            r1 = tot["d"] / e_bytes
            targets.append(("(d) uploads <= 1.10 x (e) over 10 turns", r1 <= 1.10, f"{r1:.3f} x (e)"))
            r2 = tot["a"] / tot["d"]
            targets.append(("(d) uploads >= 5 x less than (a) over 10 turns", r2 >= 5, f"(a)/(d) = {r2:.2f}"))
        if label == "50":
            c = run.stats["c"]
            r3 = c[-1].tokens / c[4].tokens
            targets.append(
                (
                    "(c) context at turn 50 <= 1.3 x at turn 5",
                    r3 <= 1.3,
                    f"{c[-1].tokens:,} / {c[4].tokens:,} = {r3:.3f}",
                )
            )
            for k in ("c", "d"):
                r = tot["b"] / tot[k]
                targets.append(
                    (f"({k}) uploads >= 10 x fewer bytes than (b) over 50 turns", r >= 10, f"(b)/({k}) = {r:.1f}")
                )
        costs, cost_targets = cost_report(label, steps, runs, model)
        print("\n".join(report(label, steps, run, targets) + costs + target_lines(cost_targets)))
        print("\n".join(f"note: {note}" for note in dict.fromkeys(runs["never"].notes + runs["always"].notes)))
        print()
        rows += per_turn_rows(label, steps, run)
    print("\n".join(restart_lines))
    print()
    print("\n".join(apply_lines))
    print()
    if args.per_turn:
        print(
            "per turn (bytes uploaded / context tokens read / prefix reuse: the share of the request's tokens "
            "repeating a prefix of the previous request; 'before' = event before the turn; "
            "e bytes = the prompt + the document if this version is new):"
        )
        print("\n".join(per_turn_table(rows)))
        print()
    if args.csv:
        with open(args.csv, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        print(f"per-turn CSV written to {args.csv}")
    print(f"total wall time {time.perf_counter() - t0:.1f}s")
    return goals.exit_code(args.report)


def smoke_sizes() -> None:
    """``--smoke``: every table, at tiny sizes (a 5-turn session with a hand edit and an Undo, 2 x 3 asks)."""
    global CELL_LINES, SESSIONS, ASK_HEAVY_SIZE, RESTART_TURNS, NEW_TURNS
    CELL_LINES, SESSIONS, ASK_HEAVY_SIZE = 200, (("5", 5, 2, 3),), (2, 3)
    RESTART_TURNS, NEW_TURNS = 2, 1


def restart_main(table=restart_and_run_all) -> int:
    """One table alone (``--restart-only``, ``--apply-only``)."""
    model = default_model()
    _sse.chunks = _bigger_chunks
    with StubServer() as stub:
        os.environ["GOOGLE_GEMINI_BASE_URL"] = stub.url
        os.environ["GEMINI_API_KEY"] = "fake"
        os.environ.pop("GOOGLE_API_KEY", None)
        print("\n".join(table(stub, model)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
