"""Unit tests of the pure conversation engine (docs/protocol.md), with plain data.

One behaviour per test. Nothing here touches IPython or the network: a "turn"
is ``plan_turn`` (what would be sent) followed by ``record`` (what came back).
"""

from __future__ import annotations

import json
import re

import pytest
from helpers.hashing import sha
from helpers.wire import earlier_turns, payload_of

from genai_magics import messages
from genai_magics.engine.cells import Cell, Document
from genai_magics.engine.contents import build_contents
from genai_magics.engine.context import SECONDARY_FIELD, ContextPiece, secondary_context
from genai_magics.engine.conversation import Conversation, TransitionRefused, version_chain
from genai_magics.engine.payloads import to_text
from genai_magics.engine.text import common_prefix

S0 = "def f(x):\n    return x\n"
S1 = "def f(x):\n    return x + 1\n"
S2 = "def f(x):\n    return x + 2\n"
OTHER = "import numpy as np\n"


def doc(source: str, key: str = "cell-a", label: str = "In[1]") -> Document:
    return Document(key=key, label=label, source=source)


def ctx(text: str) -> ContextPiece:
    return ContextPiece(SECONDARY_FIELD, text)


def parsed(contents: list[dict]) -> list[tuple[str, dict]]:
    """(role, payload) per content; each content must be exactly one JSON text part."""
    out = []
    for content in contents:
        assert set(content) == {"role", "parts"}
        assert len(content["parts"]) == 1
        assert set(content["parts"][0]) == {"text"}
        out.append((content["role"], payload_of(content["role"], content["parts"][0]["text"])))
    return out


def full_sources(contents: list[dict]) -> list[str]:
    """Every full document version the contents carry, in order."""
    found = []
    for _, payload in parsed(contents):
        for key in ("currentSource", "proposedSource"):
            if key in payload:
                found.append(payload[key])
    return found


def turn(
    conv: Conversation,
    mode: str,
    source: str | None,
    *,
    prompt: str = "p",
    proposal: str | None = None,
    pieces=(),
    state_mode: str | None = None,
    key: str = "cell-a",
    interaction_id: str | None = None,
):
    """One completed turn: plan then record. Returns (plan, turn)."""
    d = doc(source, key=key) if source is not None else None
    plan = conv.plan_turn(mode, prompt, d, pieces, state_mode)
    if plan.state_mode == "interactions" and interaction_id is None:
        interaction_id = f"int-{len(conv.history) + 1}"
    t = conv.commit(plan, f"reply to {prompt}", proposal_source=proposal, interaction_id=interaction_id)
    return plan, t


# -- turn 1 and follow-ups ---------------------------------------------------


def test_first_turn_carries_current_source_and_secondary_context():
    conv = Conversation("c")
    plan = conv.plan_turn("ask", "what does f do?", doc(S0), [ctx(OTHER)])
    assert plan.synchronized is False
    assert plan.send_source is True
    assert plan.payload["currentSource"] == S0
    assert plan.payload["secondaryContext"] == OTHER
    assert "sourceSynchronized" not in plan.payload
    assert plan.payload["mode"] == "ask" and plan.payload["prompt"] == "what does f do?"
    assert [p.key for p in plan.pieces] == [SECONDARY_FIELD]
    assert plan.omitted == ()


def test_first_turn_without_other_cells_sends_no_secondary_field():
    conv = Conversation("c")
    plan = conv.plan_turn("ask", "q", doc(S0), [])
    assert set(plan.payload) == {"mode", "prompt", "currentSource", "document"}
    assert plan.payload["document"] == "In[1]"


def test_record_of_ask_turn_sets_active_and_context_hash():
    conv = Conversation("c")
    _, t = turn(conv, "ask", S0, pieces=[ctx(OTHER)])
    assert conv.sync.active_document_sha256 == sha(S0)
    assert conv.sync.secondary_context_hash == sha(OTHER)
    assert (t.index, t.sent_source, t.base_sha256, t.outcome) == (1, True, sha(S0), "none")


def test_ask_after_ask_unchanged_sends_neither_source_nor_context():
    conv = Conversation("c")
    turn(conv, "ask", S0, pieces=[ctx(OTHER)])
    plan = conv.plan_turn("ask", "and why?", doc(S0), [ctx(OTHER)])
    assert plan.synchronized is True
    assert plan.send_source is False
    assert plan.payload == {"mode": "ask", "prompt": "and why?", "sourceSynchronized": True}
    assert plan.pieces == ()
    assert [p.key for p in plan.omitted] == [SECONDARY_FIELD]


def test_edit_when_synchronized_sends_only_mode_prompt_and_flag():
    conv = Conversation("c")
    turn(conv, "ask", S0)
    plan = conv.plan_turn("edit", "add one", doc(S0))
    assert plan.payload == {"mode": "edit", "prompt": "add one", "sourceSynchronized": True}


def test_turn_indexes_count_from_one():
    conv = Conversation("c")
    _, t1 = turn(conv, "ask", S0)
    _, t2 = turn(conv, "ask", S0)
    _, t3 = turn(conv, "edit", S0, proposal=S1)
    assert [t1.index, t2.index, t3.index] == [1, 2, 3]


def test_ask_without_document_sends_no_source_and_keeps_active():
    conv = Conversation("c")
    turn(conv, "ask", S0)
    plan = conv.plan_turn("ask", "general question", None)
    assert plan.payload == {"mode": "ask", "prompt": "general question"}
    assert (plan.synchronized, plan.send_source) == (False, False)
    conv.commit(plan, "answer")
    assert conv.sync.active_document_sha256 == sha(S0)
    assert conv.plan_turn("ask", "q", doc(S0)).synchronized is True


# -- edit, apply, discard, undo ------------------------------------------------


def test_edit_record_moves_active_to_proposal():
    conv = Conversation("c")
    _, t = turn(conv, "edit", S0, proposal=S1)
    assert conv.sync.active_document_sha256 == sha(S1)
    assert (t.proposal_sha256, t.outcome, t.base_source) == (sha(S1), "proposed", S0)


def test_edit_apply_next_turn_is_synchronized_on_proposal():
    conv = Conversation("c")
    _, t = turn(conv, "edit", S0, proposal=S1)
    conv.apply(t)
    assert t.outcome == "applied"
    assert conv.sync.active_document_sha256 == sha(S1)
    plan = conv.plan_turn("edit", "more", doc(S1))
    assert plan.synchronized is True
    assert "currentSource" not in plan.payload
    roles = parsed(build_contents(conv.history, plan))
    assert roles[0][1] == {"mode": "edit", "prompt": "p", "supersededSourceSha256": sha(S0)}
    assert roles[1][1] == {
        "kind": "code_proposal",
        "explanation": "reply to p",
        "proposedSource": S1,
        "outcome": "applied",
    }
    assert roles[2][1] == {"mode": "edit", "prompt": "more", "sourceSynchronized": True}


def test_edit_not_applied_next_turn_resends_base():
    conv = Conversation("c")
    turn(conv, "edit", S0, proposal=S1)
    plan = conv.plan_turn("ask", "hm", doc(S0))  # the cell still holds S0
    assert plan.synchronized is False
    assert plan.payload["currentSource"] == S0
    contents = build_contents(conv.history, plan)
    assert full_sources(contents) == [S0]  # only the resent one, in the new turn
    assert parsed(contents)[1][1]["supersededProposalSha256"] == sha(S1)


def test_edit_discard_is_synchronized_on_base_held_by_user_turn():
    conv = Conversation("c")
    _, t = turn(conv, "edit", S0, proposal=S1)
    conv.discard(t)
    assert t.outcome == "discarded"
    assert conv.sync.active_document_sha256 == sha(S0)
    plan = conv.plan_turn("ask", "then what?", doc(S0))
    assert plan.synchronized is True
    roles = parsed(build_contents(conv.history, plan))
    assert roles[0][1] == {"mode": "edit", "prompt": "p", "currentSource": S0, "document": "In[1]"}  # as sent
    assert roles[1][1] == {
        "kind": "code_proposal",
        "explanation": "reply to p",
        "supersededProposalSha256": sha(S1),
        "outcome": "discarded",
    }
    assert roles[2][1] == {"mode": "ask", "prompt": "then what?", "sourceSynchronized": True}


def test_edit_apply_undo_goes_back_to_base():
    conv = Conversation("c")
    _, t = turn(conv, "edit", S0, proposal=S1)
    conv.apply(t)
    conv.undo(t)
    assert t.outcome == "undone"
    assert conv.sync.active_document_sha256 == sha(S0)
    plan = conv.plan_turn("ask", "q", doc(S0))
    assert plan.synchronized is True
    contents = build_contents(conv.history, plan)
    assert full_sources(contents) == [S0]
    assert parsed(contents)[0][1]["currentSource"] == S0
    assert parsed(contents)[1][1]["outcome"] == "undone"


def test_undo_then_the_applied_code_is_out_of_sync():
    conv = Conversation("c")
    _, t = turn(conv, "edit", S0, proposal=S1)
    conv.apply(t)
    conv.undo(t)
    plan = conv.plan_turn("ask", "q", doc(S1))  # the cell still shows S1 (say the write failed)
    assert plan.synchronized is False
    assert plan.payload["currentSource"] == S1


def test_reapply_after_undo_is_allowed_and_synchronizes_on_proposal():
    conv = Conversation("c")
    _, t = turn(conv, "edit", S0, proposal=S1)
    conv.apply(t)
    conv.undo(t)
    conv.apply(t)
    assert t.outcome == "applied"
    assert conv.sync.active_document_sha256 == sha(S1)
    assert conv.plan_turn("ask", "q", doc(S1)).synchronized is True


def test_discard_of_older_proposal_keeps_the_newer_view():
    # the original design says Discard sets active = base (docs/protocol.md, deviations);
    # the engine only does so when the model's view is that proposal (otherwise a newer turn already moved on).
    conv = Conversation("c")
    _, t1 = turn(conv, "edit", S0, proposal=S1)
    _, t2 = turn(conv, "edit", S0, proposal=S2)  # S0 resent (t1 not applied)
    conv.discard(t1)
    assert conv.sync.active_document_sha256 == sha(S2)
    conv.apply(t2)
    assert conv.plan_turn("ask", "q", doc(S2)).synchronized is True


def test_undo_to_a_base_nobody_holds_in_full_resends_in_contents_mode():
    conv = Conversation("c")
    _, t1 = turn(conv, "edit", S0, proposal=S1)
    conv.apply(t1)
    _, t2 = turn(conv, "edit", S1, proposal=S2)  # synchronized: base S1 held by t1's model turn
    conv.undo(t1)  # t2 not applied yet: allowed; S1 is no longer a valid proposal
    conv.apply(t2)
    conv.undo(t2)  # back to t2's base S1, which no turn now holds validly
    assert conv.sync.active_document_sha256 == sha(S1)
    assert version_chain(conv.history, sha(S1)) is None
    plan = conv.plan_turn("ask", "q", doc(S1))
    assert plan.synchronized is False
    assert plan.payload["currentSource"] == S1


# -- manual edits and switching documents -------------------------------------


def test_manual_edit_resends_and_updates_active():
    conv = Conversation("c")
    turn(conv, "ask", S0)
    plan = conv.plan_turn("ask", "q", doc(S2))
    assert plan.synchronized is False
    assert plan.payload["currentSource"] == S2
    conv.commit(plan, "a")
    assert conv.sync.active_document_sha256 == sha(S2)
    assert conv.plan_turn("ask", "q", doc(S2)).synchronized is True


def test_manual_edit_after_applied_proposal_compacts_both_older_versions():
    conv = Conversation("c")
    _, t = turn(conv, "edit", S0, proposal=S1)
    conv.apply(t)
    turn(conv, "ask", S2)  # hand edit S1 -> S2: resent
    plan = conv.plan_turn("ask", "again", doc(S2))
    assert plan.synchronized is True
    contents = build_contents(conv.history, plan)
    assert full_sources(contents) == [S2]
    payloads = [p for _, p in parsed(contents)]
    assert payloads[0]["supersededSourceSha256"] == sha(S0)
    assert payloads[1]["supersededProposalSha256"] == sha(S1)
    assert payloads[2]["currentSource"] == S2


def test_switching_document_resends_with_its_label():
    conv = Conversation("c")
    turn(conv, "ask", S0, key="cell-a")
    plan = conv.plan_turn("ask", "q", Document("cell-b", "In[7]", OTHER))
    assert plan.synchronized is False
    assert plan.payload["currentSource"] == OTHER
    assert plan.payload["document"] == "In[7]"
    conv.commit(plan, "a")
    back = conv.plan_turn("ask", "q", doc(S0, key="cell-a"))
    assert back.synchronized is False
    assert back.payload["currentSource"] == S0


def test_secondary_context_changed_resends_only_the_context():
    conv = Conversation("c")
    turn(conv, "ask", S0, pieces=[ctx(OTHER)])
    changed = ctx(OTHER + "x = 1\n")
    plan = conv.plan_turn("ask", "q", doc(S0), [changed])
    assert plan.synchronized is True
    assert "currentSource" not in plan.payload
    assert plan.payload["secondaryContext"] == OTHER + "x = 1\n"
    assert plan.pieces == (changed,)
    conv.commit(plan, "a")
    assert conv.sync.secondary_context_hash == changed.sha256
    assert conv.plan_turn("ask", "q", doc(S0), [changed]).pieces == ()


def test_secondary_context_changing_back_is_resent():
    conv = Conversation("c")
    turn(conv, "ask", S0, pieces=[ctx("a")])
    turn(conv, "ask", S0, pieces=[ctx("b")])
    plan = conv.plan_turn("ask", "q", doc(S0), [ctx("a")])
    assert plan.payload["secondaryContext"] == "a"


def test_secondary_context_of_real_cells_changes_when_another_cell_does():
    cells = [Cell("a", S0), Cell("b", OTHER), Cell("c", "%%gemini_ask\nhi")]
    first = secondary_context(cells, ["a"], 10_000)
    assert first is not None and "%%gemini_ask" not in first.text and OTHER in first.text
    edited = secondary_context([cells[0], Cell("b", OTHER + "y = 2\n"), cells[2]], ["a"], 10_000)
    assert edited.sha256 != first.sha256
    conv = Conversation("c")
    turn(conv, "ask", S0, pieces=[first])
    assert conv.plan_turn("ask", "q", doc(S0), [first]).pieces == ()
    assert conv.plan_turn("ask", "q", doc(S0), [edited]).pieces == (edited,)


# -- compaction ----------------------------------------------------------------


def test_ten_turn_edit_session_keeps_full_code_once():
    conv = Conversation("c")
    versions = [f"v = {i}\n" + "x = 1\n" * 50 for i in range(11)]
    for i in range(10):
        plan, t = turn(conv, "edit", versions[i], prompt=f"step {i}", proposal=versions[i + 1])
        assert plan.synchronized is (i > 0)
        conv.apply(t)
    plan = conv.plan_turn("edit", "step 10", doc(versions[10]))
    assert plan.synchronized is True
    contents = build_contents(conv.history, plan)
    assert len(contents) == 21
    assert full_sources(contents) == [versions[10]]
    text = json.dumps(contents)
    assert text.count("x = 1") == 50  # one copy of the body, not ten
    payloads = [p for _, p in parsed(contents)]
    assert payloads[0]["supersededSourceSha256"] == sha(versions[0])
    for i in range(10):
        model = payloads[2 * i + 1]
        if i < 9:
            assert model["supersededProposalSha256"] == sha(versions[i + 1])
        else:
            assert model["proposedSource"] == versions[10]
    superseded = {p.get("supersededProposalSha256") for p in payloads} - {None}
    assert superseded == {sha(v) for v in versions[1:10]}
    for i in range(1, 10):  # synchronized turns carried no source: nothing to mark; rendered as sent
        assert payloads[2 * i] == {"mode": "edit", "prompt": payloads[2 * i]["prompt"], "sourceSynchronized": True}


def test_context_compaction_keeps_only_newest_version_in_full():
    conv = Conversation("c")
    texts = ["ctx one\n", "ctx two\n", "ctx three\n"]
    for t in texts:
        turn(conv, "ask", S0, pieces=[ctx(t)])
    plan = conv.plan_turn("ask", "q", doc(S0), [ctx(texts[-1])])
    assert plan.pieces == ()
    payloads = [p for _, p in parsed(build_contents(conv.history, plan))]
    assert payloads[0]["supersededSecondaryContextSha256"] == sha(texts[0])
    assert payloads[2]["supersededSecondaryContextSha256"] == sha(texts[1])
    assert payloads[4]["secondaryContext"] == texts[2]
    assert "supersededSecondaryContextSha256" not in payloads[4]
    assert [p.get("secondaryContext") for p in payloads].count(texts[2]) == 1
    assert all(texts[0] not in json.dumps(p) and texts[1] not in json.dumps(p) for p in payloads)


def test_context_resent_now_supersedes_every_history_version():
    conv = Conversation("c")
    turn(conv, "ask", S0, pieces=[ctx("old\n")])
    plan = conv.plan_turn("ask", "q", doc(S0), [ctx("new\n")])
    payloads = [p for _, p in parsed(build_contents(conv.history, plan))]
    assert payloads[0] == {
        "mode": "ask",
        "prompt": "p",
        "currentSource": S0,
        "supersededSecondaryContextSha256": sha("old\n"),
        "document": "In[1]",
    }
    assert payloads[-1]["secondaryContext"] == "new\n"


def test_named_pieces_compact_per_name():
    conv = Conversation("c")
    a1, b1 = ContextPiece("variables", "1", name="a"), ContextPiece("variables", "2", name="b")
    turn(conv, "ask", S0, pieces=[a1, b1])
    a2 = ContextPiece("variables", "10", name="a")
    plan = conv.plan_turn("ask", "q", doc(S0), [a2, b1])
    assert plan.pieces == (a2,)
    assert plan.payload["variables"] == {"a": "10"}
    payloads = [p for _, p in parsed(build_contents(conv.history, plan))]
    assert payloads[0]["variables"] == {"b": "2"}
    assert payloads[0]["supersededVariablesSha256"] == {"a": sha("1")}


# -- transitions: idempotent, refused with reasons ---------------------------


def _edited(conv=None):
    conv = conv or Conversation("c")
    _, t = turn(conv, "edit", S0, proposal=S1)
    return conv, t


@pytest.mark.parametrize(
    "setup, action, reason",
    [
        (["apply"], "apply", messages.ALREADY_APPLIED.render()),
        (["discard"], "discard", messages.NOTHING_TO_DISCARD.render(outcome="discarded")),
        (["apply"], "discard", messages.NOTHING_TO_DISCARD.render(outcome="applied")),
        ([], "undo", messages.NOTHING_TO_UNDO.render(outcome="proposed")),
        (["discard"], "apply", messages.DISCARDED_SINCE.render()),
        (["discard"], "undo", messages.NOTHING_TO_UNDO.render(outcome="discarded")),
        (["apply", "undo"], "undo", messages.NOTHING_TO_UNDO.render(outcome="undone")),
        (["apply", "undo"], "discard", messages.NOTHING_TO_DISCARD.render(outcome="undone")),
    ],
)
def test_refused_transition_changes_nothing(setup, action, reason):
    conv, t = _edited()
    for step in setup:
        getattr(conv, step)(t)
    before = conv.snapshot()
    assert conv.refusal(action, t) == reason
    with pytest.raises(TransitionRefused, match=re.escape(reason)):
        getattr(conv, action)(t)
    assert conv.snapshot() == before


def test_allowed_transition_has_no_refusal():
    conv, t = _edited()
    assert conv.refusal("apply", t) is None
    assert conv.refusal("discard", t) is None


def test_transition_on_answer_turn_is_refused():
    conv = Conversation("c")
    _, t = turn(conv, "ask", S0)
    before = conv.snapshot()
    for action in ("apply", "discard", "undo"):
        with pytest.raises(TransitionRefused, match=re.escape(messages.NO_PROPOSAL_IN_TURN.render())):
            getattr(conv, action)(t)
    assert conv.snapshot() == before


def test_stale_apply_after_newer_applied_proposal_is_refused():
    conv, t1 = _edited()
    _, t2 = turn(conv, "edit", S0, proposal=S2)
    conv.apply(t2)
    before = conv.snapshot()
    with pytest.raises(TransitionRefused, match=re.escape(messages.NEWER_APPLIED.render(turn=2))):
        conv.apply(t1)
    assert conv.snapshot() == before
    assert t1.outcome == "proposed"


def test_undo_of_earlier_while_later_applied_is_refused():
    conv, t1 = _edited()
    conv.apply(t1)
    _, t2 = turn(conv, "edit", S1, proposal=S2)
    conv.apply(t2)
    before = conv.snapshot()
    with pytest.raises(TransitionRefused, match=re.escape(messages.UNDO_LATER_FIRST.render(turn=2))):
        conv.undo(t1)
    assert conv.snapshot() == before
    conv.undo(t2)
    assert conv.sync.active_document_sha256 == sha(S1)
    conv.undo(t1)
    assert conv.sync.active_document_sha256 == sha(S0)


def test_apply_after_newer_applied_was_undone_is_allowed():
    conv, t1 = _edited()
    _, t2 = turn(conv, "edit", S0, proposal=S2)
    conv.apply(t2)
    conv.undo(t2)
    conv.apply(t1)
    assert (t1.outcome, conv.sync.active_document_sha256) == ("applied", sha(S1))


def test_turn_of_a_reset_conversation_is_refused():
    old, t = _edited()
    fresh = Conversation("c")  # the reset: same name, new object
    _edited(fresh)
    before = fresh.snapshot()
    assert fresh.owns(t) is False
    for action in ("apply", "discard", "undo"):
        with pytest.raises(TransitionRefused, match=re.escape(messages.RESET_SINCE.render())):
            getattr(fresh, action)(t)
    assert fresh.snapshot() == before
    assert t.outcome == "proposed"
    old.closed = True  # what Session.reset does to the conversation it drops
    for action in ("apply", "discard", "undo"):
        assert old.refusal(action, t) == messages.RESET_SINCE.render()


def test_owns_is_identity_not_equality():
    conv, t = _edited()
    twin = conv.snapshot().history[0]
    assert twin == t
    assert conv.owns(twin) is False
    with pytest.raises(TransitionRefused, match="reset"):
        conv.apply(twin)


def test_unknown_action_is_an_error():
    conv, t = _edited()
    with pytest.raises(ValueError):
        conv.refusal("explode", t)


def test_snapshot_is_independent_of_later_changes():
    conv, t = _edited()
    snap = conv.snapshot()
    conv.apply(t)
    turn(conv, "ask", S1, pieces=[ctx("c")])
    assert snap.history[0].outcome == "proposed"
    assert len(snap.history) == 1
    assert snap.sync.active_document_sha256 == sha(S1)
    assert snap.sync.context_hashes == {}


# -- failed turns --------------------------------------------------------------


@pytest.mark.parametrize("state_mode", ["contents", "interactions"])
def test_failed_turn_leaves_state_unchanged(state_mode):
    conv = Conversation("c", state_mode=state_mode)
    _, t = turn(conv, "edit", S0, proposal=S1, pieces=[ctx("a")])
    conv.apply(t)
    before = conv.snapshot()
    plan = conv.plan_turn("edit", "fails", doc(S2), [ctx("b")])  # never recorded
    if state_mode == "contents":
        build_contents(conv.history, plan)
    assert conv.snapshot() == before
    retry = conv.plan_turn("edit", "fails", doc(S2), [ctx("b")])
    assert retry == plan


def test_failed_turn_outcomes_are_told_on_the_retry():
    conv = Conversation("c", state_mode="interactions")
    _, t = turn(conv, "edit", S0, proposal=S1)
    conv.apply(t)
    failed = conv.plan_turn("ask", "q", doc(S1))
    assert failed.proposal_outcomes == {sha(S1)[:12]: "applied"}
    retry = conv.plan_turn("ask", "q", doc(S1))
    assert retry.proposal_outcomes == {sha(S1)[:12]: "applied"}


# -- history is structured, never flattened ----------------------------------


def test_contents_alternate_user_and_model_one_turn_each():
    conv = Conversation("c")
    _, t = turn(conv, "edit", S0, prompt="first", proposal=S1)
    conv.apply(t)
    turn(conv, "ask", S1, prompt="second")
    plan = conv.plan_turn("ask", "third", doc(S1))
    items = parsed(build_contents(conv.history, plan))
    assert [r for r, _ in items] == ["user", "model", "user", "model", "user"]
    assert [p.get("prompt") for r, p in items if r == "user"] == ["first", "second", "third"]
    assert [p["explanation"] for r, p in items if r == "model"] == ["reply to first", "reply to second"]
    assert [p["kind"] for r, p in items if r == "model"] == ["code_proposal", "answer"]
    assert items[-1][1] == plan.payload
    assert "first" not in json.dumps(plan.payload) and "reply to" not in json.dumps(plan.payload)


def test_first_contents_turn_is_one_user_content():
    conv = Conversation("c")
    plan = conv.plan_turn("ask", "q", doc(S0))
    items = parsed(build_contents(conv.history, plan))
    assert items == [("user", plan.payload)]


# -- interactions mode ---------------------------------------------------------


def test_interactions_chain_previous_ids():
    conv = Conversation("c", state_mode="interactions")
    p1, _ = turn(conv, "ask", S0, interaction_id="i1")
    p2, _ = turn(conv, "ask", S0, interaction_id="i2")
    p3 = conv.plan_turn("ask", "q", doc(S0))
    assert [p1.previous_interaction_id, p2.previous_interaction_id, p3.previous_interaction_id] == [None, "i1", "i2"]
    assert p2.synchronized is True and "currentSource" not in p2.payload
    assert (p1.new_chain_digest, p2.new_chain_digest) == ((), ())
    assert "earlierTurns" not in p1.payload


def test_contents_mode_has_no_previous_interaction_id():
    conv = Conversation("c")
    turn(conv, "ask", S0, interaction_id="i1")
    plan = conv.plan_turn("ask", "q", doc(S0))
    assert plan.previous_interaction_id is None
    assert plan.proposal_outcomes == {}


def test_proposal_outcomes_told_exactly_once():
    conv = Conversation("c", state_mode="interactions")
    _, t = turn(conv, "edit", S0, proposal=S1)
    p_before = conv.plan_turn("ask", "q", doc(S0))
    assert "proposalOutcomes" not in p_before.payload
    conv.apply(t)
    p2, _ = turn(conv, "ask", S1)
    assert p2.payload["proposalOutcomes"] == {sha(S1)[:12]: "applied"}
    assert p2.payload["sourceSynchronized"] is True
    p3, _ = turn(conv, "ask", S1)
    assert "proposalOutcomes" not in p3.payload
    assert p3.proposal_outcomes == {}


def test_changed_outcome_is_told_again():
    conv = Conversation("c", state_mode="interactions")
    _, t = turn(conv, "edit", S0, proposal=S1)
    conv.apply(t)
    turn(conv, "ask", S1)
    conv.undo(t)
    plan = conv.plan_turn("ask", "q", doc(S0))
    assert plan.payload["proposalOutcomes"] == {sha(S1)[:12]: "undone"}
    assert plan.synchronized is True


def test_outcomes_only_of_changed_proposals():
    conv = Conversation("c", state_mode="interactions")
    _, t1 = turn(conv, "edit", S0, proposal=S1)
    conv.discard(t1)
    turn(conv, "ask", S0)
    _, t2 = turn(conv, "edit", S0, proposal=S2)
    conv.apply(t2)
    plan = conv.plan_turn("ask", "q", doc(S2))
    assert plan.proposal_outcomes == {sha(S2)[:12]: "applied"}


def test_lost_chain_resends_document_context_and_earlier_turns():
    conv = Conversation("c", state_mode="interactions")
    turn(conv, "ask", S0, prompt="one", pieces=[ctx("a")], interaction_id="i1")
    turn(conv, "ask", S0, prompt="two", pieces=[ctx("a")], interaction_id="i2")
    conv.lose_chain()
    plan = conv.plan_turn("ask", "three", doc(S0), [ctx("a")])
    assert plan.previous_interaction_id is None
    assert plan.synchronized is False
    assert plan.payload["currentSource"] == S0
    assert plan.payload["secondaryContext"] == "a"
    assert plan.payload["earlierTurns"] == [["one", "reply to one"], ["two", "reply to two"]]  # asks: pairs
    assert len(plan.new_chain_digest) == 2
    conv.commit(plan, "r", interaction_id="j1")
    nxt = conv.plan_turn("ask", "four", doc(S0), [ctx("a")])
    assert nxt.previous_interaction_id == "j1"
    assert nxt.synchronized is True
    assert nxt.pieces == ()
    assert "earlierTurns" not in nxt.payload


def test_a_new_chains_seed_begins_as_the_last_one_did_the_turns_own_keys_after_its_earlier_turns():
    """What changes least goes first (the context, then every earlier turn, then this turn's prompt and document),
    so the next seed's text begins with this one's up to its last earlier turn: the prefix implicit caching
    serves (turn/send.py ``restart``). The chain's first turn and a continued chain keep the usual order."""
    conv = Conversation("c", state_mode="interactions")
    first, _ = turn(conv, "ask", S0, prompt="one", pieces=[ctx("a")], interaction_id="i1")
    assert list(first.payload)[:2] == ["mode", "prompt"]
    assert conv.chain_start == first.payload  # what the chain began with
    turn(conv, "ask", S0, prompt="two", pieces=[ctx("a")], interaction_id="i2")
    conv.lose_chain()
    seed, _ = turn(conv, "ask", S0, prompt="three", pieces=[ctx("a")], interaction_id="j1")
    assert list(seed.payload) == ["secondaryContext", "earlierTurns", "mode", "prompt", "currentSource", "document"]
    assert conv.chain_start == seed.payload
    conv.lose_chain()
    again = conv.plan_turn("ask", "four", doc(S0), [ctx("a")])
    before, after = to_text(seed.payload), to_text(again.payload)
    shared = common_prefix(before, after)
    assert before[:shared].endswith('["two","reply to two"]') and after[shared:].startswith(',["three",')


def test_new_chain_record_forgets_context_not_resent():
    conv = Conversation("c", state_mode="interactions")
    turn(conv, "ask", S0, pieces=[ctx("a")])
    conv.lose_chain()
    turn(conv, "ask", S0, pieces=[])  # the new chain was sent no context
    plan = conv.plan_turn("ask", "q", doc(S0), [ctx("a")])
    assert plan.payload["secondaryContext"] == "a"


def test_new_chain_digest_carries_outcomes():
    conv = Conversation("c", state_mode="interactions")
    _, t1 = turn(conv, "edit", S0, prompt="one", proposal=S1)
    conv.apply(t1)
    _, t2 = turn(conv, "edit", S1, prompt="two", proposal=S2)
    turn(conv, "ask", S1, prompt="three")
    conv.lose_chain()
    plan = conv.plan_turn("ask", "four", doc(S1))
    assert [e.get("outcome") for e in earlier_turns(plan.payload)] == ["applied", "proposed", None]
    assert plan.proposal_outcomes == {}
    assert "proposalOutcomes" not in plan.payload


def test_outcome_told_in_new_chain_digest_is_not_told_again():
    """BUG: earlierTurns already told the new chain that S1 was applied; the next
    turn repeats it as proposalOutcomes, keyed by a sha the new chain never saw."""
    conv = Conversation("c", state_mode="interactions")
    _, t1 = turn(conv, "edit", S0, proposal=S1, interaction_id="i1")
    conv.apply(t1)
    conv.lose_chain()
    first, _ = turn(conv, "ask", S1, interaction_id="j1")
    assert first.payload["earlierTurns"][0]["outcome"] == "applied"
    plan = conv.plan_turn("ask", "q", doc(S1))
    assert plan.synchronized is True
    assert plan.proposal_outcomes == {}
    assert "proposalOutcomes" not in plan.payload


def test_outcome_changed_while_new_chain_turn_is_out_is_told():
    """The digest was built before Undo was clicked: it told the chain "applied"."""
    conv = Conversation("c", state_mode="interactions")
    _, t1 = turn(conv, "edit", S0, proposal=S1, interaction_id="i1")
    conv.apply(t1)
    conv.lose_chain()
    plan = conv.plan_turn("ask", "q", doc(S1))
    assert plan.payload["earlierTurns"][0]["outcome"] == "applied"
    conv.undo(t1)  # clicked while the request is out
    conv.commit(plan, "r", interaction_id="j1")
    nxt = conv.plan_turn("ask", "q", doc(S0))
    assert nxt.proposal_outcomes == {sha(S1)[:12]: "undone"}


def test_outcome_changed_while_turn_is_out_is_told_next():
    conv = Conversation("c", state_mode="interactions")
    _, t1 = turn(conv, "edit", S0, proposal=S1, interaction_id="i1")
    conv.apply(t1)
    plan = conv.plan_turn("ask", "q", doc(S1))
    assert plan.proposal_outcomes == {sha(S1)[:12]: "applied"}
    conv.undo(t1)
    conv.commit(plan, "r", interaction_id="i2")
    assert conv.plan_turn("ask", "q", doc(S0)).proposal_outcomes == {sha(S1)[:12]: "undone"}


def test_outcome_changed_after_new_chain_is_told():
    conv = Conversation("c", state_mode="interactions")
    _, t1 = turn(conv, "edit", S0, proposal=S1, interaction_id="i1")
    conv.apply(t1)
    conv.lose_chain()
    turn(conv, "ask", S1, interaction_id="j1")
    conv.undo(t1)
    plan = conv.plan_turn("ask", "q", doc(S0))
    assert plan.proposal_outcomes == {sha(S1)[:12]: "undone"}
    assert plan.synchronized is False  # the new chain was never sent S0
    assert plan.payload["currentSource"] == S0


def test_interactions_chain_holds_its_own_discarded_proposal_text():
    conv = Conversation("c", state_mode="interactions")
    _, t1 = turn(conv, "edit", S0, proposal=S1)
    conv.discard(t1)
    plan = conv.plan_turn("ask", "q", doc(S0))
    assert plan.synchronized is True
    assert plan.payload == {
        "mode": "ask",
        "prompt": "q",
        "sourceSynchronized": True,
        "proposalOutcomes": {sha(S1)[:12]: "discarded"},
    }


def test_earlier_turns_replies_are_clipped():
    conv = Conversation("c", state_mode="interactions")
    plan = conv.plan_turn("ask", "q", doc(S0))
    conv.commit(plan, "y" * 1000, interaction_id="i1")
    conv.lose_chain()
    reply = earlier_turns(conv.plan_turn("ask", "q", doc(S0)).payload)[0]["reply"]
    assert len(reply) == 400
    assert reply == "y" * 399 + "…"


def test_switch_from_contents_to_interactions_starts_a_full_chain():
    conv = Conversation("c")
    turn(conv, "ask", S0, pieces=[ctx("a")])
    plan = conv.plan_turn("ask", "q", doc(S0), [ctx("a")], "interactions")
    assert plan.previous_interaction_id is None
    assert plan.payload["currentSource"] == S0
    assert plan.payload["secondaryContext"] == "a"
    assert len(plan.payload["earlierTurns"]) == 1
    conv.commit(plan, "r", interaction_id="i9")
    assert conv.state_mode == "interactions"
    back = conv.plan_turn("ask", "q", doc(S0), [ctx("a")], "contents")
    assert back.synchronized is True and back.previous_interaction_id is None
    conv.commit(back, "r")
    again = conv.plan_turn("ask", "q", doc(S0), [], "interactions")
    assert again.previous_interaction_id is None  # contents turns are on no chain
    assert again.payload["currentSource"] == S0


def test_interactions_apply_of_proposal_made_before_the_chain_resends():
    """BUG: the new chain never saw the proposal, yet the turn claims sourceSynchronized."""
    conv = Conversation("c")
    _, t1 = turn(conv, "edit", S0, proposal=S1)  # contents turn: proposal S1
    turn(conv, "ask", S0, state_mode="interactions", interaction_id="i2")  # new chain, holds S0 only
    conv.apply(t1)
    plan = conv.plan_turn("ask", "q", doc(S1), state_mode="interactions")
    assert plan.previous_interaction_id == "i2"
    assert plan.synchronized is False
    assert plan.payload.get("currentSource") == S1


def test_interactions_undo_after_lost_chain_resends_base():
    """BUG: after a lost chain the new chain holds only S1; Undo makes the cell S0 again."""
    conv = Conversation("c", state_mode="interactions")
    _, t1 = turn(conv, "edit", S0, proposal=S1, interaction_id="i1")
    conv.apply(t1)
    conv.lose_chain()
    turn(conv, "ask", S1, interaction_id="j1")  # new chain: S1 resent in full
    conv.undo(t1)
    plan = conv.plan_turn("ask", "q", doc(S0))
    assert plan.previous_interaction_id == "j1"
    assert plan.synchronized is False
    assert plan.payload.get("currentSource") == S0


def test_the_whole_notebook_key_is_stored_apart_from_a_cell_called_notebook():
    from genai_magics.engine.cells import WHOLE_NOTEBOOK, key_from_store, stored_key

    assert key_from_store(stored_key(WHOLE_NOTEBOOK)) is WHOLE_NOTEBOOK
    assert key_from_store(stored_key("notebook")) == "notebook" != WHOLE_NOTEBOOK
    assert key_from_store(None) is None
