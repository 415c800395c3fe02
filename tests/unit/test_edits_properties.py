"""Edit answers as ``edits``: the stand-in model's edits, applied by the kernel, give exactly the intended text.

Random documents (lines from a small alphabet, so lines repeat and a ``find``
must grow context to be unique) and random small changes; then the engine's
transcript of a session of edits, read back by the stand-in's model, holds
exactly the version the engine thinks it holds.
"""

from __future__ import annotations

import json

from helpers.properties import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from genai_magics.engine.cells import Document
from genai_magics.engine.contents import build_contents
from genai_magics.engine.conversation import PATCH_SHARE, Conversation
from genai_magics.engine.edits import Edit, EditRefused, apply_edits, edits_chars, parse_edits
from genai_magics.engine.hashing import sha256_text
from genai_magics.engine.payloads import EDIT_RESPONSE_SCHEMA
from genai_magics.engine.record import NotebookRecord, dumps
from genai_magics.engine.replay import RecordedConversation
from genai_magics.persistence.schema import loads
from genai_magics.stub.edits import EDITS_MIN_LINES, answer, make_edits, offers_edits
from genai_magics.stub.model import held_document

LINES = st.sampled_from(["x = 1\n", "y = 2\n", "    pass\n", "\n", "def f():\n", "return x\n", "# note\n"])
documents = st.lists(LINES, min_size=1, max_size=40).map("".join)


@st.composite
def small_changes(draw, base: str) -> str:
    """``base`` with up to three lines replaced, inserted or deleted (and maybe the last newline dropped)."""
    lines = base.splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(lines)))
        what = draw(st.sampled_from(["insert", "replace", "delete"]))
        new = draw(st.sampled_from(["z = 3\n", "x = 1\n", "    return y\n", "\n"]))
        if what == "insert" or at == len(lines):
            lines.insert(at, new)
        elif what == "replace":
            lines[at] = new
        else:
            del lines[at]
    text = "".join(lines)
    return text[:-1] if text.endswith("\n") and draw(st.booleans()) else text


@st.composite
def document_and_change(draw) -> tuple[str, str]:
    base = draw(documents)
    return base, draw(small_changes(base))


@settings(max_examples=examples(400), deadline=None)
@given(document_and_change())
def test_the_stand_ins_edits_applied_by_the_kernel_give_exactly_the_intended_text(case):
    base, target = case
    edits = make_edits(base, target)
    assert edits is not None
    parsed = parse_edits(json.loads(json.dumps(edits)))  # as they travel: JSON
    assert parsed is not None
    assert apply_edits(base, parsed) == target


@settings(max_examples=examples(200), deadline=None)
@given(documents, st.data())
def test_an_edit_whose_find_matches_twice_or_not_at_all_is_refused_whole(base, data):
    lines = base.splitlines(keepends=True)
    twice = data.draw(st.sampled_from(lines))
    good = Edit(base, base + "# appended\n")  # the whole text occurs once: applies
    if base.count(twice) < 2:
        base += twice  # now it does occur twice
        good = Edit(base, base + "# appended\n")
    refused = apply_edits(base, (Edit(twice, "changed\n"),))
    assert refused == EditRefused(1, 1, "found more than once")
    missing = "# not in the document: " + sha256_text(base) + "\n"
    assert apply_edits(base, (good, Edit(missing, ""))) == EditRefused(2, 2, "not found")
    assert apply_edits(base, (Edit("", "x"),)) == EditRefused(1, 1, "empty find")
    assert apply_edits(base, (good,)) == base + "# appended\n"  # the refusals above did not stop a good edit


def test_overlapping_matches_count_as_twice():
    assert apply_edits("aaa", (Edit("aa", "b"),)) == EditRefused(1, 1, "found more than once")
    assert apply_edits("aab", (Edit("aa", "c"),)) == "cb"


def test_edits_apply_in_order_each_to_the_result_of_the_one_before():
    text = "a = 1\nb = 2\n"
    edits = (Edit("a = 1\n", "a = 1\nc = 3\n"), Edit("c = 3\nb", "c = 4\nb"))  # the second finds what the first wrote
    assert apply_edits(text, edits) == "a = 1\nc = 4\nb = 2\n"


def test_the_schema_offers_edits_beside_the_whole_text_and_requires_neither():
    props = EDIT_RESPONSE_SCHEMA["properties"]
    assert props["edits"]["items"]["properties"] == {"find": {"type": "string"}, "replace": {"type": "string"}}
    assert props["edits"]["items"]["required"] == ["find", "replace"]
    assert "proposedSource" in props and EDIT_RESPONSE_SCHEMA["required"] == ["explanation"]
    assert offers_edits(EDIT_RESPONSE_SCHEMA)


def big(n: int) -> str:
    return "".join(f"value_{i} = compute({i})\n" for i in range(n))


def stand_in_edit(doc: Document, prompt: str) -> tuple[str, str | None, tuple[Edit, ...] | None]:
    """What the stand-in answers for a document: (explanation, proposal, edits), the proposal built by the kernel."""
    whole = json.dumps({"explanation": "e", "proposedSource": f"# {prompt}\n{doc.source}"})
    data = json.loads(answer(whole, doc.source, offered=True, bad=False))
    if "edits" in data:
        edits = parse_edits(data["edits"])
        assert edits is not None
        built = apply_edits(doc.source, edits)
        assert isinstance(built, str)
        return data["explanation"], built, edits
    return data["explanation"], data["proposedSource"], None


def held(contents: list[dict]) -> str | None:
    return held_document([(c["role"], c["parts"][0]["text"]) for c in contents])


@settings(max_examples=examples(40), deadline=None)
@given(
    st.integers(EDITS_MIN_LINES, 80), st.lists(st.sampled_from(["apply", "discard", "undo"]), min_size=1, max_size=8)
)
def test_a_session_of_edits_keeps_the_model_holding_what_the_engine_says(size, clicks):
    conv = Conversation("p")
    cell = big(size)
    for n, click in enumerate(clicks):
        doc = Document("c", "In[1]", cell)
        plan = conv.plan_turn("edit", f"change {n}", doc)
        assert held(build_contents(conv.history, plan)) == cell  # the model holds the cell, whatever the plan sends
        carried = sum(edits_chars(t.proposal_edits or ()) for t in conv.history)
        if conv.history and conv.history[-1].outcome == "applied" and carried <= PATCH_SHARE * len(cell):
            assert plan.synchronized and "currentSource" not in plan.payload
        explanation, proposal, edits = stand_in_edit(doc, f"change {n}")
        turn = conv.commit(plan, explanation, proposal_source=proposal, proposal_edits=edits)
        assert edits is not None and turn.proposal_edits == edits  # a big document: answered as edits
        # before any click the model holds the proposal: base plus its edits, kept as the model sent them
        ask = conv.plan_turn("ask", "and?", Document("c", "In[1]", proposal))
        contents = build_contents(conv.history, ask)
        assert held(contents) == proposal
        sent = json.loads(contents[-2]["parts"][0]["text"])
        assert ask.synchronized or n  # the first edit is small against the document: it is never resent
        if ask.synchronized:  # else the edits on the full version outgrew a tenth of it: the proposal goes whole
            assert "proposedSource" not in sent and parse_edits(sent["edits"]) == edits
        if click == "apply":
            conv.apply(turn)
            cell = proposal
        elif click == "discard":
            conv.discard(turn)
        else:
            conv.apply(turn)
            conv.undo(turn)
        restored = loads(dumps(NotebookRecord("nb.ipynb", 0.0, conversations={"p": RecordedConversation(conv)})))
        assert [t.proposal_edits for t in restored.conversations["p"].conversation.history] == [
            t.proposal_edits for t in conv.history
        ]
    final = Document("c", "In[1]", cell)
    assert held(build_contents(conv.history, conv.plan_turn("ask", "done?", final))) == cell


def test_a_streaming_edit_answer_shows_how_many_edits_and_which_cell_so_far():
    from genai_magics.engine.edits import progress

    assert progress('{"explanation": "Adds a') is None
    assert progress('{"explanation": "x", "proposedSource": "def f') == "the whole text"
    partial = '{"explanation": "x", "edits": [{"find": "# %% id=ab12\\nx = 1", "replace": "y"}, {"find": "z'
    assert progress(partial) == "2 edits so far, the last in cell ab12"
    assert progress('{"explanation": "x", "edits": [{"find": "a = 1') == "1 edit so far"
