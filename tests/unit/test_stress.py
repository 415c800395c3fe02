"""A long session in one kernel, in-process against the stand-in (real SDK, real HTTP).

50 turns (26 in the fast layer, outside CI: each conversation's pattern twice
then an ask), two named conversations interleaved on two cells, with edits that
are applied or discarded and hand edits: no cross-talk, the request size and
the memory of the history stay flat, and every request obeys the protocol
invariants of docs/protocol.md.
"""

from __future__ import annotations

import json
import re

import pytest
from helpers.display import RecordingDisplay
from helpers.kernel import point_sdk_at
from helpers.properties import effort
from helpers.wire import TRANSCRIPT_USER_KEYS, api_requests, earlier_turns, payload_of

from genai_magics import messages
from genai_magics.engine.conversation import Conversation
from genai_magics.engine.hashing import sha256_text
from genai_magics.gemini.client import ClientSettings
from genai_magics.kernel.magics import GeminiMagics
from genai_magics.turn import pipeline
from genai_magics.turn.requests import Settings, TurnRequest
from genai_magics.turn.session import Session

MODEL = GeminiMagics.class_traits()["model"].default_value
TURNS = effort(50, 26)  # each conversation: its 6-turn pattern twice or four times, then an ask
MODEL_KEYS = {"kind", "explanation", "proposedSource", "edits", "supersededProposalSha256", "outcome"}
SHA = re.compile(r"^[0-9a-f]{64}$")


@pytest.fixture
def env(stub):
    with pytest.MonkeyPatch.context() as mp:
        point_sdk_at(mp, stub.url)
        stub.reset()
        yield


def big_cell(name: str, lines: int = 400) -> str:
    """About 20 KB of code: the document dominates a request, as in a real notebook."""
    body = "\n".join(f"    total_{name}_{i} = value * {i} + offset  # step {i}" for i in range(lines))
    return f"def compute_{name}(value, offset):\n{body}\n    return value\n"


def check_contents_request(body: dict, conv: str, own_versions: set[str]) -> None:
    contents = body["contents"]
    roles = [c["role"] for c in contents]
    assert roles == ["user", "model"] * (len(contents) // 2) + ["user"]
    assert body["systemInstruction"]  # the SDK's wire name
    full = 0
    for c in contents:
        assert len(c["parts"]) == 1
        payload = payload_of(c["role"], c["parts"][0]["text"])
        if c["role"] == "user":
            assert set(payload) <= TRANSCRIPT_USER_KEYS, set(payload) - TRANSCRIPT_USER_KEYS
            assert payload["prompt"].startswith(f"{conv}:"), f"cross-talk: {payload['prompt']!r} in {conv}"
            assert not ("currentSource" in payload and "sourceSynchronized" in payload)
            for key in ("supersededSourceSha256", "supersededSecondaryContextSha256"):
                if key in payload:
                    assert SHA.match(payload[key])
            if "currentSource" in payload:
                full += 1
                assert payload["currentSource"] in own_versions, "another conversation's document"
        else:
            assert set(payload) <= MODEL_KEYS
            if "proposedSource" in payload:
                full += 1
                assert payload["proposedSource"] in own_versions
            if "supersededProposalSha256" in payload:
                assert SHA.match(payload["supersededProposalSha256"])
    assert full <= 1, f"{full} full copies of the document in one request"


def stored_texts(conv: Conversation) -> list[str]:
    return [s for t in conv.history for s in (t.base_source, t.proposal_source) if s is not None]


@pytest.mark.parametrize("state", ["contents", "interactions"])
def test_fifty_turns_two_conversations_interleaved(env, stub, state):
    session = Session()
    cells = {"a": ("cell-a", big_cell("alpha")), "b": ("cell-b", big_cell("beta"))}
    count = 0

    def record(cell_id: str, source: str) -> None:
        nonlocal count
        count += 1
        session.executed.add(cell_id, source, count)

    for cell_id, source in cells.values():
        record(cell_id, source)
    # the compacted transcript as it goes out whole (with an explicit cache: tests/kernel/test_caching_wire.py)
    settings = Settings(
        model=MODEL,
        state=state,
        client=ClientSettings(retry_attempts=1, timeout_s=30),
        cache="off",
        # fewer turns hold fewer versions: a smaller bound, so that a shorter session rebases its chain too
        max_chain_versions=effort(Settings.max_chain_versions, 4),
    )
    versions = {name: {source} for name, (_, source) in cells.items()}  # every version each cell had
    sizes: dict[str, list[int]] = {"a": [], "b": []}
    own_ids: dict[str, list[str]] = {"a": [], "b": []}
    edits = {"a": 0, "b": 0}
    hand_edits = {"a": 0, "b": 0}
    rebases = {"a": 0, "b": 0}

    for n in range(TURNS):
        name = "ab"[n % 2]
        i = n // 2
        cell_id = cells[name][0]
        mode = "edit" if i % 6 in (1, 3) else "ask"
        if i % 6 == 5:  # the user edits the cell by hand and runs it
            source = session.executed.by_id[cell_id].source + f"# hand edit {i}\n"
            record(cell_id, source)
            versions[name].add(source)
            hand_edits[name] += 1
        record(f"magic-{n}", f"%%gemini_{mode} -c {name}\n{name}: turn {i}")  # the running magic cell
        before = len(api_requests(stub))
        display = RecordingDisplay()
        outcome = pipeline.run(
            session,
            TurnRequest(mode=mode, prompt=f"{name}: turn {i}", conversation=name, cell=cell_id),
            settings,
            display,
        )
        sent = api_requests(stub)[before:]
        assert len(sent) == 1 and sent[0]["status"] == 200
        request = sent[0]
        sizes[name].append(request["body_bytes"])
        assert request["model"] == MODEL
        conv = session.conversations[name]
        turn = outcome.turn
        if mode == "edit":
            edits[name] += 1
            versions[name].add(turn.proposal_source)
            assert turn.proposal_source.startswith(f"# stub edit: {name}: turn {i}")
            # the model held exactly this conversation's current cell
            assert turn.proposal_source.endswith(session.executed.by_id[cell_id].source)
            if i % 6 == 1:
                conv.apply(turn)
                session.executed.set_source(cell_id, turn.proposal_source)
            else:
                conv.discard(turn)
        if state == "contents":
            check_contents_request(request["json"], name, versions[name])
        else:
            body = request["json"]
            payload = json.loads(body["input"])
            assert payload["prompt"] == f"{name}: turn {i}"
            assert body["system_instruction"] and body["store"] is True
            assert (mode == "edit") == ("response_format" in body)
            if "currentSource" in payload:
                assert payload["currentSource"] in versions[name]
            previous = body.get("previous_interaction_id")
            if previous is None and own_ids[name]:
                # a deliberate new chain (the old one holds too many versions of the code): said, and complete
                assert any(messages.CHAIN_TOO_LONG.matches(note) for note in display.notes), display.notes
                assert payload["earlierTurns"] and payload["currentSource"] in versions[name]
                assert earlier_turns(payload)[-1]["prompt"] == f"{name}: turn {i - 1}"
                rebases[name] += 1
            else:
                expected_previous = own_ids[name][-1] if own_ids[name] else None
                assert previous == expected_previous, "chained to another conversation"
            own_ids[name].append(request["interaction_id"])
            assert conv.last_interaction_id == request["interaction_id"]

    assert set(own_ids["a"]).isdisjoint(own_ids["b"])
    for name in "ab":
        conv = session.conversations[name]
        assert len(conv.history) == TURNS // 2
        # request size flat: the last turn costs about what the third did (both synchronized asks)
        print(f"{state} {name}: request bytes turn 3 {sizes[name][2]:,} -> turn {TURNS // 2} {sizes[name][-1]:,}")
        assert sizes[name][-1] <= 1.3 * sizes[name][2], (name, sizes[name][2], sizes[name][-1])
        # memory of the history: each version of the cell is held once, not once per turn
        texts = stored_texts(conv)
        distinct = set(texts)
        assert len({id(t) for t in texts}) == len(distinct), "the same text is held in several copies"
        assert len(distinct) <= 1 + edits[name] + hand_edits[name]
        assert distinct <= versions[name]
        held = sum(len(t) for t in distinct)
        assert held <= (1 + edits[name] + hand_edits[name]) * (len(max(versions[name], key=len)) + 1)
    if state == "contents":
        # the full document appears once however long the session: not one copy per turn
        last = api_requests(stub)[-1]["json"]["contents"]
        full = [
            p
            for c in last
            for p in [payload_of(c["role"], c["parts"][0]["text"])]
            if "currentSource" in p or "proposedSource" in p
        ]
        assert len(full) <= 1
    else:
        # interactions: a synchronized turn sends a few hundred bytes, not the document
        assert min(sizes["a"]) < 2_000 and min(sizes["b"]) < 2_000
        # and the server chain is rebased now and then instead of growing without bound
        assert rebases["a"] >= 1 and rebases["b"] >= 1


def test_hashes_match_what_was_sent(env, stub):
    """A compact check of the sha markers: they name versions that really were sent earlier."""
    session = Session()
    session.executed.add("c", "x = 1\n", 1)
    settings = Settings(model=MODEL, state="contents", client=ClientSettings(retry_attempts=1))
    seen: set[str] = set()
    for i in range(8):
        session.executed.add(f"m{i}", "%%gemini_edit\n", i + 2)
        out = pipeline.run(session, TurnRequest(mode="edit", prompt=f"x: {i}", cell="c"), settings, RecordingDisplay())
        session.conversations["default"].apply(out.turn)
        session.executed.set_source("c", out.turn.proposal_source)
        seen |= {sha256_text(out.turn.base_source), out.turn.proposal_sha256}
    last = api_requests(stub)[-1]["json"]["contents"]
    markers = [
        v for c in last for k, v in payload_of(c["role"], c["parts"][0]["text"]).items() if k.startswith("superseded")
    ]
    assert markers and set(markers) <= seen
