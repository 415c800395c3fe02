"""How long a notebook's conversation record takes to load and to write (issue 9).

Builds a record of 500 turns (asks and edits alternating, every edit applied,
the other cells as context, one variable summary every 10 turns) with the real
engine, writes it whole with the real store (temp file + rename under the lock),
then the next turns one by one (each a line appended to the record's journal),
and loads it back the way a restarted kernel does. Goal: a 500-turn record loads
in under 50 ms. Timings: the best of N (the run least disturbed by other
processes, as timeit reports) and the median; on a shared machine both vary.

    python benchmarks/record_load.py [--smoke] [--report]

``--smoke``: 20 turns, 3 repeats, the goal not judged. The goal's ``target`` lines: ``goals.py`` (a FAIL
exits 1 unless ``--report``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from goals import Goals  # noqa: E402
from smoke import add_flag  # noqa: E402
from token_economy import SECONDARY_CELLS, generate_cell, script_prompts  # noqa: E402

from genai_magics.engine.cells import Document  # noqa: E402
from genai_magics.engine.context import ContextPiece  # noqa: E402
from genai_magics.engine.conversation import Conversation, Usage  # noqa: E402
from genai_magics.engine.record import NotebookRecord  # noqa: E402
from genai_magics.engine.replay import RecordedConversation, TurnKey, TurnMeta, state_after  # noqa: E402
from genai_magics.gemini.models import DEFAULT_MODEL  # noqa: E402
from genai_magics.persistence.schema import Record, compiled  # noqa: E402
from genai_magics.persistence.store import RecordStore  # noqa: E402
from genai_magics.stub.model import edit_source  # noqa: E402

TURNS, GOAL_MS, NEXT = 500, 50.0, 9


def build(turns: int, lines: int, state: str) -> NotebookRecord:
    conv = Conversation("default", state_mode=state)  # type: ignore[arg-type]
    rec = RecordedConversation(conv, created=time.time())
    source = generate_cell(lines)
    context = ContextPiece("secondaryContext", "\n\n".join(src for _, src in SECONDARY_CELLS))
    for i, (mode, prompt) in enumerate(script_prompts(turns), start=1):
        doc = Document("cell-a", "In[4]", source)
        pieces = [context] + ([ContextPiece("variables", f"df: DataFrame (1000, {i})", "df")] if i % 10 == 0 else [])
        plan = conv.plan_turn(mode, prompt, doc, pieces, max_chain_versions=8)  # type: ignore[arg-type]
        reply = f"Turn {i}: " + "an answer of a few sentences about the code. " * 8
        if mode == "edit":
            proposal = edit_source(prompt, source)
            turn = conv.commit(
                plan, reply, proposal_source=proposal, interaction_id=f"int-{i}", usage=Usage(2000, 300, 4000)
            )
            conv.apply(turn)
            source = proposal
        else:
            turn = conv.commit(plan, reply, interaction_id=f"int-{i}", usage=Usage(2000, 300, 4000))
        key = TurnKey.of(mode, prompt, DEFAULT_MODEL, state, (), f"magic-{i}", doc.sha256, tuple(pieces))
        rec.meta[turn.index] = TurnMeta(key, time.time(), state_after(conv, rec.told))
    return NotebookRecord("/home/user/work.ipynb", time.time(), conversations={"default": rec})


def renamed(record: NotebookRecord) -> NotebookRecord:
    """The record with its conversation under a new name: a conversation gone, so the store writes it whole."""
    ((name, rec),) = record.conversations.items()
    record.conversations = {f"{name}'": rec}
    return record


def timed_ms(fn, repeat: int) -> tuple[float, float]:
    """(best, median) of ``repeat`` calls, in ms."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return min(times), statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_flag(parser)
    args = parser.parse_args(argv)
    smoke = args.smoke
    goals = Goals(judged=not smoke)  # 20 turns say nothing of the goal
    verdicts = []
    turns, repeat = (20, 3) if smoke else (TURNS, 21)
    print(
        f"{'record':<44} {'file size':>12} {'load best / median':>20} {'of it: schema check':>20} "
        f"{'write whole b / m':>19} {'next turn b / m':>17}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for lines in (100, 2000):
            for state in ("contents", "interactions"):
                record = build(turns + NEXT, lines, state)
                history = record.conversations["default"].conversation.history
                later = history[turns:]
                del history[turns:]
                path = Path(tmp) / f"{lines}-{state}.json"
                store = RecordStore(
                    path, private=True
                )  # the journal is the private folder's (a record beside the notebook is one file)
                write = timed_ms(lambda store=store, record=record: store.save(renamed(record)), min(9, repeat))
                # the next turns, one by one: each write a line of the journal
                nexts = timed_ms(
                    lambda h=history, more=later, store=store, record=record: (
                        h.append(more.pop(0)),
                        store.save(record),
                    ),
                    NEXT,
                )
                assert store.journal.exists()
                store.wait()
                load = timed_ms(lambda path=path: RecordStore(path, private=True).load(), repeat)
                data = json.loads(path.read_text())
                check = timed_ms(lambda data=data: compiled(Record)(data), repeat)  # measured beside the load
                loaded, note = RecordStore(path, private=True).load()
                assert note is None and [len(r.conversation.history) for r in loaded.conversations.values()] == [
                    turns + NEXT
                ]
                name = f"{turns} turns, {lines:,}-line cell, {state}"
                print(
                    f"{name:<44} {path.stat().st_size:>10,} B {load[0]:>8.1f} / {load[1]:>6.1f} ms "
                    f"{check[0]:>8.1f} ms ({check[0] / load[0]:>4.0%}) {write[0]:>7.1f} / {write[1]:>6.1f} ms "
                    f"{nexts[0]:>5.2f} / {nexts[1]:>5.2f} ms"
                )
                if lines == 100:
                    goal = (
                        f"a {TURNS}-turn record on a 100-line cell, {state}, loads in < {GOAL_MS:.0f} ms (best of 21)"
                    )
                    verdicts.append(goals.line(goal, load[0] < GOAL_MS, f"{load[0]:.1f} ms"))
    print("\n".join(verdicts))
    return goals.exit_code(args.report)


if __name__ == "__main__":
    sys.exit(main())
