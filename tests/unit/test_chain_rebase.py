"""Interactions mode: a server chain that holds too many versions of the code is started over."""

from __future__ import annotations

from helpers.wire import earlier_turns

from genai_magics.engine.cells import Document
from genai_magics.engine.conversation import DIGEST_TURNS, Conversation


def edit_and_apply(conv: Conversation, source: str, n: int, limit: int) -> str:
    plan = conv.plan_turn("edit", f"change {n}", Document("a", "In[1]", source), (), "interactions", limit)
    turn = conv.commit(plan, f"did {n}", proposal_source=f"{source}# {n}\n", interaction_id=f"i{n}")
    conv.apply(turn)
    return turn.proposal_source


def test_a_crowded_chain_starts_over_with_the_current_code_and_a_digest():
    conv = Conversation("c", state_mode="interactions")
    source = "x = 1\n"
    for n in range(3):
        source = edit_and_apply(conv, source, n, limit=3)
    assert len(conv.chain_versions) == 4  # the base and three proposals
    plan = conv.plan_turn("ask", "why?", Document("a", "In[1]", source), (), "interactions", 3)
    assert plan.previous_interaction_id is None
    assert plan.payload["currentSource"] == source
    assert [t["prompt"] for t in earlier_turns(plan.payload)] == ["change 0", "change 1", "change 2"]
    conv.commit(plan, "because", interaction_id="j1")
    assert conv.chain_versions == [(Document("a", "", source).sha256, None)]
    follow = conv.plan_turn("ask", "and?", Document("a", "In[1]", source), (), "interactions", 3)
    assert follow.previous_interaction_id == "j1" and follow.synchronized is True


def test_without_a_limit_the_chain_grows_and_the_digest_is_capped():
    conv = Conversation("c", state_mode="interactions")
    source = "x = 1\n"
    for n in range(DIGEST_TURNS + 4):
        source = edit_and_apply(conv, source, n, limit=0)
    plan = conv.plan_turn("ask", "q", Document("a", "In[1]", source), (), "interactions", 0)
    assert plan.previous_interaction_id == f"i{DIGEST_TURNS + 3}" and plan.synchronized is True
    conv.lose_chain()
    fresh = conv.plan_turn("ask", "q", Document("a", "In[1]", source), (), "interactions", 0)
    assert len(fresh.payload["earlierTurns"]) == DIGEST_TURNS
    assert earlier_turns(fresh.payload)[-1]["prompt"] == f"change {DIGEST_TURNS + 3}"
