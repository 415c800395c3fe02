"""The record as data (engine/record.py): a conversation read back plans exactly the
same next turn, and branching at turn k gives the state the conversation had then."""

from __future__ import annotations

import json
import time

import pytest

from genai_magics.engine.cells import Document
from genai_magics.engine.contents import build_contents
from genai_magics.engine.context import ContextPiece
from genai_magics.engine.conversation import Conversation, Usage
from genai_magics.engine.record import NotebookRecord, conversation_texts, dumps
from genai_magics.engine.replay import RecordedConversation, TurnKey, TurnMeta, branch, replay_match, state_after
from genai_magics.persistence.schema import Damaged, NotOurs, loads
from genai_magics.persistence.texts import Bounded, KeptTexts

CODE = "def f(x):\n    return x\n"


def session(state: str, turns: int = 6, max_chain_versions: int = 0):
    """A conversation with asks, edits, Apply, Discard and Undo, and the record's view of it at every turn."""
    conv = Conversation("default", state_mode=state)  # type: ignore[arg-type]
    rec = RecordedConversation(conv, created=time.time())
    source, snapshots = CODE, {}
    for i in range(1, turns + 1):
        mode = "edit" if i % 2 == 0 else "ask"
        doc = Document("cell-a", "In[2]", source)
        pieces = [
            ContextPiece("secondaryContext", f"other cells v{i // 3}"),
            ContextPiece("variables", f"df {i}", "df"),
        ]
        plan = conv.plan_turn(mode, f"prompt {i}", doc, pieces, max_chain_versions=max_chain_versions)
        if mode == "edit":
            turn = conv.commit(
                plan,
                f"explain {i}",
                proposal_source=source + f"# edit {i}\n",
                interaction_id=f"int-{i}",
                usage=Usage(10, 2, 100),
            )
        else:
            turn = conv.commit(plan, f"answer {i}", interaction_id=f"int-{i}", usage=Usage(10, 2, 100))
        rec.meta[turn.index] = TurnMeta(
            TurnKey.of(mode, f"prompt {i}", "m", state, (), f"magic-{i}", doc.sha256, tuple(pieces)),
            1.0,
            state_after(conv, rec.told),
        )
        snapshots[i] = conv.snapshot()
        if i == 2:
            conv.apply(turn)
            source = turn.proposal_source
        if i == 4:
            conv.discard(turn)
    return rec, snapshots, source


@pytest.mark.parametrize("state", ["contents", "interactions"])
def test_a_conversation_read_back_plans_the_same_next_turn(state):
    rec, _, source = session(state, max_chain_versions=2)
    back = loads(dumps(NotebookRecord("/nb.ipynb", 1.0, conversations={"default": rec}))).conversations["default"]
    doc = Document("cell-a", "In[2]", source)
    pieces = [ContextPiece("secondaryContext", "other cells v2")]
    before = rec.conversation.plan_turn("ask", "next", doc, pieces, max_chain_versions=2)
    after = back.conversation.plan_turn("ask", "next", doc, pieces, max_chain_versions=2)
    assert after == before
    assert build_contents(back.conversation.history, after) == build_contents(rec.conversation.history, before)
    assert back.conversation.snapshot() == rec.conversation.snapshot()


def test_a_record_written_again_holds_every_change_since_the_last_write(monkeypatch):
    """Each turn's text is made once and reused (engine/record.py): an outcome, a usage, a meta or a new
    API key since the last write must still reach the next one, and a turn unchanged reads back as it was."""
    rec, _, _ = session("contents")
    record = NotebookRecord("/nb.ipynb", 1.0, conversations={"default": rec})

    def back():
        return loads(dumps(record)).conversations["default"]

    first = back()
    assert first.conversation.snapshot() == rec.conversation.snapshot()
    history = rec.conversation.history
    rec.conversation.undo(history[1])  # turn 2 was applied: the same Turn object, its outcome changed
    history[0].usage = Usage(99, 7, 1234)
    rec.meta[3] = TurnMeta(rec.meta[3].key, 2.5, rec.meta[3].after)
    again = back()
    assert [t.outcome for t in again.conversation.history] == [t.outcome for t in history]
    assert again.conversation.history[1].outcome == "undone" and first.conversation.history[1].outcome == "applied"
    assert again.conversation.history[0].usage == Usage(99, 7, 1234)
    assert again.meta[3].at == 2.5 and again.meta[5].at == first.meta[5].at
    assert again.conversation.history[4] == first.conversation.history[4]
    # a key seen after the first write is masked in the next, also inside a turn's text made before
    history[2].prompt = "prompt 3 AIzaSyRecordKey0123456789abcdefghijklmnop"
    assert "AIzaSyRecordKey" in dumps(record)
    monkeypatch.setenv("GOOGLE_API_KEY", "AIzaSyRecordKey0123456789abcdefghijklmnop")
    assert "AIzaSyRecordKey" not in dumps(record) and "***" in back().conversation.history[2].prompt


@pytest.mark.parametrize("state", ["contents", "interactions"])
def test_branching_at_turn_k_gives_the_state_of_turn_k(state):
    for k in range(0, 6):
        rec, snapshots, _ = session(state)
        back = loads(dumps(NotebookRecord("/nb.ipynb", 1.0, conversations={"default": rec}))).conversations["default"]
        back.cursor = k
        branch(back)
        conv = back.conversation
        assert [t.index for t in conv.history] == list(range(1, k + 1)) and back.replayable == k
        if k == 0:
            assert conv.sync.active_document_sha256 is None and conv.last_interaction_id is None
            continue
        want = snapshots[k]
        assert conv.last_interaction_id == want.last_interaction_id
        assert conv.chain_versions == want.chain_versions and conv.outcomes_told == want.outcomes_told
        assert conv.sync.context_hashes == want.sync.context_hashes
        # Apply/Discard done later than turn k still count (turn 4's proposal was discarded)
        expected = want.sync.active_document_sha256
        if k == 4:
            expected = conv.history[3].base_sha256
        assert conv.sync.active_document_sha256 == expected


def test_replay_matches_in_order_and_accepts_later_versions_of_the_document():
    rec, _, final = session("contents")
    back = loads(dumps(NotebookRecord("/nb.ipynb", 1.0, conversations={"default": rec}))).conversations["default"]
    first = back.meta[1].key
    assert replay_match(back, first) is back.conversation.history[0]
    # Run All sees the code as it is now: the proposal applied at turn 2
    now = TurnKey.of(
        "ask",
        "prompt 1",
        "m",
        "contents",
        (),
        "magic-1",
        Document("c", "x", final).sha256,
        (ContextPiece("secondaryContext", "a new cell elsewhere"), ContextPiece("variables", "df 1", "df")),
    )
    assert replay_match(back, now) is back.conversation.history[0]
    for changed in (
        dict(prompt="other"),
        dict(model="m2"),
        dict(flags=("--no-context",)),
        dict(magic_cell="x"),
        dict(document_sha256="0" * 64),
        dict(pieces=(("variables:df", "0" * 64),)),
    ):
        assert replay_match(back, TurnKey(**{**first.__dict__, **changed})) is None, changed
    back.cursor = 1
    assert replay_match(back, first) is None, "turn 1 is not replayed twice"


def test_an_agent_turn_named_by_its_cell_replays_whatever_its_document_and_context_are_now():
    """The agent's own changes (the cell above deleted or rewritten, the error it was given fixed) make
    the notebook Run All sees: its turn still replays, by its magic cell; without a cell id on both
    sides, or with any other part of its key changed, it does not."""
    rec, _, _ = session("contents", turns=1)
    agent = TurnKey(**{**rec.meta[1].key.__dict__, "flags": ("agent",)})
    rec.meta[1] = TurnMeta(agent, 1.0, rec.meta[1].after)
    back = loads(dumps(NotebookRecord("/nb.ipynb", 1.0, conversations={"default": rec}))).conversations["default"]
    for now in (dict(document_sha256="0" * 64), dict(document_sha256=None), dict(pieces=(("error", "1" * 64),))):
        assert replay_match(back, TurnKey(**{**agent.__dict__, **now})) is back.conversation.history[0], now
    for changed in (
        dict(document_sha256="0" * 64, magic_cell=None),
        dict(document_sha256="0" * 64, magic_cell="another"),
        dict(prompt="other"),
        dict(flags=("--new", "agent")),
    ):
        assert replay_match(back, TurnKey(**{**agent.__dict__, **changed})) is None, changed


def test_the_record_format_is_refused_when_damaged_or_newer():
    rec, _, _ = session("contents")
    text = dumps(NotebookRecord("/nb.ipynb", 1.0, conversations={"default": rec}))
    with pytest.raises(Damaged, match="corrupt or truncated"):
        loads(text[:-10])
    with pytest.raises(NotOurs, match="newer genai_magics"):
        loads(json.dumps({**json.loads(text), "schema": 2}))
    with pytest.raises(Damaged, match="wrong shape"):
        loads(json.dumps({**json.loads(text), "conversations": {"default": {"name": "default"}}}))
    # each version of the code is stored once
    stored = json.loads(text)["conversations"]["default"]
    versions = {t[f] for t in stored["turns"] for f in ("base_sha256", "proposal_sha256") if t.get(f)}
    assert set(stored["sources"]) == versions and all("base_source" not in t for t in stored["turns"])


def test_the_record_texts_kept_are_bounded_and_a_write_after_emptying_is_the_same():
    rec, _, _ = session("contents")
    record_file = NotebookRecord("/nb.ipynb", 1.0, conversations={"default": rec})
    before = dumps(record_file)
    kept = KeptTexts()
    assert dumps(record_file, conversation_texts(record_file, kept)) == before
    assert 0 < kept.turns.chars <= kept.turns.max_chars and kept.turns.entries and kept.sources.entries
    small = Bounded(max_chars=len(before) // 3)  # room for about two of the six turns
    versions = Bounded(max_chars=len(CODE) + 40)  # for one version of the code at a time
    bounded = KeptTexts(small, versions)
    for _ in range(2):
        assert dumps(record_file, conversation_texts(record_file, bounded)) == before
    assert small.chars <= small.max_chars and len(small.entries) < 6
    assert versions.chars <= versions.max_chars and len(versions.entries) == 1
