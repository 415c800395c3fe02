"""Small hand edits sent as patches (contents mode), pure: no kernel, no network.

What the model holds is read from the built ``contents`` by the stand-in's model
(``genai_magics.stub.model.held_document``, which applies ``sourcePatch`` hunks
strictly), not by the engine's own bookkeeping: a patch that does not turn the
version the model holds into the cell's source leaves the model holding nothing.
"""

from __future__ import annotations

import json

import pytest
from helpers.properties import examples
from helpers.wire import payload_of
from hypothesis import example, given, settings
from hypothesis import strategies as st

from genai_magics.engine.cells import Document
from genai_magics.engine.contents import build_contents, cacheable
from genai_magics.engine.conversation import PATCH_SHARE, Conversation, TransitionRefused, version_chain
from genai_magics.engine.hashing import sha256_text
from genai_magics.engine.payloads import to_text
from genai_magics.stub.model import held_document

BASE = "".join(f"def f{i}(x):\n    return x * {i}\n\n" for i in range(400))  # 1,200 lines, ~14 kB


def doc(source: str, key: str = "a") -> Document:
    return Document(key=key, label=f"cell {key}", source=source)


def texts(contents) -> list[tuple[str, str]]:
    return [(c["role"], c["parts"][0]["text"]) for c in contents]


def model_holds(conv: Conversation, plan) -> str | None:
    return held_document(texts(build_contents(conv.history, plan)))


def full_versions(contents) -> int:
    payloads = [payload_of(r, t) for r, t in texts(contents)]
    return sum(("currentSource" in p) + ("proposedSource" in p) for p in payloads)


def hand_edit(source: str, at: int, line: str = "THRESHOLD = 0.75") -> str:
    lines = source.split("\n")
    lines[at:at] = [line]
    return "\n".join(lines)


def ask(conv: Conversation, source: str, prompt: str = "q", key: str = "a", **kw):
    plan = conv.plan_turn("ask", prompt, doc(source, key), **kw)
    assert model_holds(conv, plan) == source
    conv.commit(plan, "answer")
    return plan


def test_a_small_hand_edit_is_a_patch_and_the_head_stays_as_it_was_sent():
    conv = Conversation("p")
    first = ask(conv, BASE)
    first_contents, first_head = cacheable([], first)
    edited = hand_edit(BASE, 30)
    plan = conv.plan_turn("ask", "what changed?", doc(edited))
    assert plan.source_patch is not None and not plan.send_source and not plan.synchronized
    assert set(plan.payload) == {"mode", "prompt", "document", "sourcePatch"}
    assert plan.payload["sourcePatch"].splitlines() == [
        "@@ -29,4 +29,5 @@",
        "     return x * 9",
        " ",
        "+THRESHOLD = 0.75",
        " def f10(x):",
        "     return x * 10",
    ]
    assert plan.patch_base_sha256 == sha256_text(BASE)
    contents, head = cacheable(conv.history, plan)
    # the material of turn 1 is unchanged: an explicit cache of it stays valid; the head may take the finished
    # turn after it, never the patch, which goes in the current turn
    assert contents[:first_head] == first_contents[:first_head] and head == first_head + 2
    assert "sourcePatch" in json.loads(contents[head]["parts"][0]["text"])
    assert model_holds(conv, plan) == edited
    conv.commit(plan, "answer")
    follow = conv.plan_turn("ask", "and now?", doc(edited))
    assert follow.synchronized and model_holds(conv, follow) == edited
    assert version_chain(conv.history, sha256_text(edited)) == ((0, "user"), (1, "user"))
    assert conv.history[1].source_patch == plan.source_patch


def test_patches_chain_until_they_pass_a_tenth_of_the_document_then_the_whole_document_goes():
    conv = Conversation("p")
    ask(conv, BASE)
    source, sent = BASE, []
    for n in range(40):
        source = hand_edit(source, 10 + 9 * n, f"LIMIT_{n} = {n}")
        plan = ask(conv, source, f"q{n}")
        sent.append("patch" if plan.source_patch is not None else "full" if plan.send_source else "synced")
        chain = version_chain(conv.history, sha256_text(source))
        patched = sum(len(conv.history[i].source_patch or "") for i, _ in chain)
        assert patched <= PATCH_SHARE * len(source)
    first_full = sent.index("full")
    assert first_full >= 1 and set(sent[:first_full]) == {"patch"}
    # once the whole document went again, the first version and its patches are sha markers
    plan = conv.plan_turn("ask", "last", doc(source))
    assert plan.synchronized and full_versions(build_contents(conv.history, plan)) == 1


def test_no_patch_for_another_cell_a_new_server_chain_when_switched_off_or_when_large():
    for kwargs, source, key in (
        ({}, hand_edit(BASE, 3), "b"),  # another cell: its own document, sent whole
        ({"state_mode": "interactions"}, hand_edit(BASE, 3), "a"),  # contents turns before: a new chain
        ({"patches": False}, hand_edit(BASE, 3), "a"),
        ({}, BASE.replace("return x", "return -x"), "a"),  # every function changed
    ):
        conv = Conversation("p")
        conv.commit(conv.plan_turn("ask", "q", doc(BASE)), "a")
        plan = conv.plan_turn("ask", "q2", doc(source, key), **kwargs)
        assert plan.source_patch is None and plan.send_source and "currentSource" in plan.payload, kwargs


def test_an_edit_applied_after_a_patch_is_the_new_full_version_and_undo_goes_back_to_the_patched_one():
    conv = Conversation("p")
    ask(conv, BASE)
    edited = hand_edit(BASE, 60)
    ask(conv, edited, "what changed?")
    plan = conv.plan_turn("edit", "add a docstring", doc(edited))
    assert plan.synchronized
    proposal = '"""Doc."""\n' + edited
    turn = conv.commit(plan, "added", proposal_source=proposal)
    conv.apply(turn)
    after = conv.plan_turn("ask", "ok?", doc(proposal))
    assert after.synchronized and model_holds(conv, after) == proposal
    assert full_versions(build_contents(conv.history, after)) == 1  # the first version compacted
    conv.commit(after, "fine")
    conv.undo(turn)
    back = conv.plan_turn("ask", "and back?", doc(edited))
    assert model_holds(conv, back) == edited and (back.synchronized or back.send_source)


# hand edits and asks most often, so chains of several patches come up
KINDS = ("hand", "hand", "hand", "ask", "ask", "big", "edit", "apply", "discard", "undo", "fail", "other")


class ServerChain:
    """What an interactions server stores: each turn's input and output, in order, per chain."""

    def __init__(self) -> None:
        self.turns: list[tuple[str, str]] = []

    def holds(self, plan) -> str | None:
        stored = [] if plan.previous_interaction_id is None else self.turns
        return held_document([*stored, ("user", to_text(plan.payload))])

    def record(self, conv: Conversation, plan, reply: str, proposal: str | None = None):
        if plan.previous_interaction_id is None:
            self.turns = []
        output = json.dumps({"explanation": reply, "proposedSource": proposal}) if proposal is not None else reply
        self.turns += [("user", to_text(plan.payload)), ("model", output)]
        return conv.commit(plan, reply, proposal_source=proposal, interaction_id=f"i{len(self.turns)}")


def test_interactions_mode_sends_a_small_hand_edit_as_a_patch_on_the_chain():
    conv, server = Conversation("p", state_mode="interactions"), ServerChain()
    server.record(conv, conv.plan_turn("ask", "q", doc(BASE)), "a")
    edited = hand_edit(BASE, 30)
    plan = conv.plan_turn("ask", "what changed?", doc(edited))
    assert plan.previous_interaction_id and set(plan.payload) == {"mode", "prompt", "document", "sourcePatch"}
    assert server.holds(plan) == edited
    server.record(conv, plan, "a")
    follow = conv.plan_turn("ask", "and now?", doc(edited))
    assert follow.synchronized and server.holds(follow) == edited
    assert conv.chain_head() == sha256_text(edited)


OPS = st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 2_000)), min_size=1, max_size=25)


@pytest.mark.parametrize("state_mode", ["contents", "interactions"])
@settings(max_examples=examples(300), deadline=None)
@given(ops=OPS)
@example([("ask", 0), ("hand", 5), ("ask", 0), ("hand", 700), ("ask", 0), ("edit", 0), ("apply", 0), ("ask", 0)])
@example([("edit", 0), ("ask", 0), ("discard", 0), ("ask", 0)])  # a patch on a proposal discarded afterwards
# applied again after an Undo: the server is told "undone", then "applied"; the newest outcome holds
@example([("edit", 0), ("apply", 0), ("undo", 0), ("ask", 0), ("apply", 0), ("fail", 0)])
def test_the_model_always_holds_the_cell_with_patches(state_mode, ops):
    """After any mix of hand edits (small and large), asks, edits, Apply, Discard, Undo,
    failed requests and a turn on another cell, the next turn's contents make the
    stand-in's model hold exactly the cell's source, with at most one full version."""
    conv, server = Conversation("p", state_mode=state_mode), ServerChain()
    cell = BASE
    proposals = []
    for op in ops:
        kind = op[0]
        if kind == "hand":
            lines = cell.split("\n")
            cell = hand_edit(cell, op[1] % (len(lines) + 1), f"hand_{op[1]} = 1")
            continue
        if kind == "big":
            cell = cell.replace("return x", f"return {op[1] % 4} + x")
            continue
        if kind in ("apply", "discard", "undo"):
            if not proposals:
                continue
            turn = proposals[-1]
            try:
                getattr(conv, kind)(turn)
            except TransitionRefused:
                continue
            if kind == "apply":
                cell = turn.proposal_source
            elif kind == "undo":
                cell = turn.base_source
            continue
        key = "b" if kind == "other" else "a"
        source = "print('other')\n" if key == "b" else cell
        plan = conv.plan_turn("edit" if kind == "edit" else "ask", f"t{len(conv.history)}", doc(source, key))
        if state_mode == "contents":
            contents = build_contents(conv.history, plan)
            assert held_document(texts(contents)) == source
            assert full_versions(contents) <= 1
        else:
            assert server.holds(plan) == source
        if plan.source_patch is not None:
            assert "currentSource" not in plan.payload and not plan.synchronized
        if kind == "fail":
            continue  # the request failed: nothing recorded
        if kind == "edit":
            proposals.append(server.record(conv, plan, "x", f"# edit {len(conv.history)}\n{source}"))
        else:
            server.record(conv, plan, "answer")
