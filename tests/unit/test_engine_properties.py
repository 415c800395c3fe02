"""Property tests of the conversation engine against a small reference model.

Random sequences of what a notebook user does (ask, edit, Apply/Discard/Undo on
any earlier proposal, hand edits, pasting an old version, switching cells,
changing other cells, failed requests, a lost server chain, switching state
mode) run against the engine and against a reference written here from
docs/protocol.md. After every step the next turn is planned and compared:

* what the model holds: in contents mode the one full version the built
  ``contents`` show, replayed turn by turn; in interactions mode the versions
  the current server chain was sent or proposed itself;
* synchronized iff the model holds the cell's current source (in interactions
  mode a version the chain only saw as a discarded/undone proposal may go
  either way; a version the chain never saw must be resent);
* no ``currentSource`` when synchronized, the current source when not;
* the built contents hold at most one full version, and it is the cell's;
  every other version is a sha marker;
* ``active_document_sha256`` follows docs/protocol.md's transitions;
* refused transitions change nothing; secondary context is resent iff its hash
  changed since it was last sent (to this chain).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from helpers.hashing import sha
from helpers.properties import examples
from helpers.wire import USER_KEYS, earlier_turns, payload_of
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from genai_magics.engine.cells import Cell, Document
from genai_magics.engine.contents import build_contents
from genai_magics.engine.context import SECONDARY_FIELD, ContextPiece, secondary_context
from genai_magics.engine.conversation import DIGEST_TURNS, Conversation, TransitionRefused, Turn

CELL_IDS = ("a", "b", "c")
SHOWN = ("applied", "discarded", "undone")  # outcomes the model is told about


@dataclass
class RefTurn:
    engine: Turn
    mode: str
    prompt: str
    state_mode: str
    doc_key: str | None
    base: str | None
    sent: bool
    response: str
    proposal: str | None
    outcome: str
    context: str | None  # secondary context text sent in full with this turn


@dataclass
class Ref:
    """The reference: cells, the turns, and what the model holds."""

    cells: dict[str, str]
    target: str
    state_mode: str
    turns: list[RefTurn] = field(default_factory=list)
    active: str | None = None  # docs/protocol.md's active document, as text
    chain_alive: bool = False  # interactions: a server chain holds our turns
    chain_start: int = 0
    last_id: str | None = None
    ctx_sent: dict[str, str] = field(default_factory=dict)
    told: dict[str, str] = field(default_factory=dict)
    seen_texts: list[str] = field(default_factory=list)
    ids: int = 0

    def document(self) -> Document:
        return Document(key=self.target, label=f"cell {self.target}", source=self.cells[self.target])

    def pieces(self):
        cells = [Cell(cid, self.cells[cid]) for cid in CELL_IDS]
        piece = secondary_context(cells, [self.target], 100_000)
        assert piece is not None  # the other cells are never empty here
        return [piece]

    def new_chain(self, state_mode: str) -> bool:
        return state_mode == "interactions" and not self.chain_alive and bool(self.turns)

    def chain_turns(self, state_mode: str) -> list[RefTurn]:
        """The turns whose full versions the model can see."""
        if state_mode == "contents":
            return self.turns
        return self.turns[self.chain_start :] if self.chain_alive else []

    def expected_outcomes(self, state_mode: str) -> dict[str, str]:
        if state_mode != "interactions" or self.new_chain(state_mode):
            return {}
        now = {sha(t.proposal)[:12]: t.outcome for t in self.turns if t.proposal is not None and t.outcome in SHOWN}
        return {k: v for k, v in now.items() if self.told.get(k) != v}

    def sync_bounds(self, state_mode: str, text: str) -> tuple[bool, bool]:
        """(must be synchronized, may be synchronized) for a document ``text``."""
        if self.active != text:
            return False, False
        turns = self.chain_turns(state_mode)
        valid = any(t.sent and t.base == text for t in turns) or any(
            t.proposal == text and t.outcome in ("proposed", "applied") for t in turns
        )
        if state_mode == "contents":
            return valid, valid
        # interactions: the model takes the newest full version on the chain that was not
        # discarded or undone as the code; only that one is synchronized
        head = None
        for t in reversed(turns):
            if t.proposal is not None and t.outcome in ("proposed", "applied"):
                head = t.proposal
            elif t.sent:
                head = t.base
            else:
                continue
            break
        return head == text, head == text

    def later_applied(self, i: int) -> bool:
        return any(t.outcome == "applied" for t in self.turns[i + 1 :])

    def allowed(self, action: str, i: int) -> bool:
        t = self.turns[i]
        if t.proposal is None:
            return False
        if action == "apply":
            return t.outcome in ("proposed", "undone") and not self.later_applied(i)
        if action == "discard":
            return t.outcome == "proposed"
        return t.outcome == "applied" and not self.later_applied(i)


def parsed(contents):
    out = []
    for content in contents:
        assert set(content) == {"role", "parts"} and len(content["parts"]) == 1
        out.append((content["role"], payload_of(content["role"], content["parts"][0]["text"])))
    return out


# -- checks ----------------------------------------------------------------------


def check_plan(conv: Conversation, ref: Ref, plan, doc: Document | None, pieces, state_mode: str) -> None:
    payload = plan.payload
    new_chain = ref.new_chain(state_mode)
    assert set(payload) <= USER_KEYS
    if doc is None:
        assert plan.synchronized is False and plan.send_source is False
        assert "currentSource" not in payload and "sourceSynchronized" not in payload
    else:
        must, may = ref.sync_bounds(state_mode, doc.source)
        if must:
            assert plan.synchronized is True, "the model holds the document: it must not be resent"
        if not may:
            assert plan.synchronized is False, "the model does not hold this document: it must be resent"
        if plan.synchronized:
            assert plan.send_source is False
            assert payload["sourceSynchronized"] is True
            assert "currentSource" not in payload and "document" not in payload
        else:
            assert plan.send_source is True
            assert payload["currentSource"] == doc.source
            assert payload["document"] == doc.label
            assert "sourceSynchronized" not in payload
    holds = {} if new_chain else ref.ctx_sent
    expected_sent = [p for p in pieces if holds.get(p.key) != p.sha256]
    assert list(plan.pieces) == expected_sent
    assert list(plan.omitted) == [p for p in pieces if p not in expected_sent]
    if expected_sent:
        assert payload[SECONDARY_FIELD] == expected_sent[0].text
    else:
        assert SECONDARY_FIELD not in payload
    outcomes = ref.expected_outcomes(state_mode)
    assert plan.proposal_outcomes == outcomes
    assert payload.get("proposalOutcomes") == (outcomes or None)
    if state_mode == "interactions":
        assert plan.previous_interaction_id == (ref.last_id if ref.chain_alive else None)
    else:
        assert plan.previous_interaction_id is None
    if new_chain:
        digest = ref.turns[-DIGEST_TURNS:]  # a new chain learns the latest turns only
        assert [(e["mode"], e["prompt"]) for e in earlier_turns(payload)] == [(t.mode, t.prompt) for t in digest]
        assert [e.get("outcome") for e in earlier_turns(payload)] == [
            None if t.outcome == "none" else t.outcome for t in digest
        ]
        assert len(plan.new_chain_digest) == len(digest)
    else:
        assert "earlierTurns" not in payload and plan.new_chain_digest == ()


def check_contents(conv: Conversation, ref: Ref, plan, doc: Document | None) -> None:
    items = parsed(build_contents(conv.history, plan))
    assert len(items) == 2 * len(ref.turns) + 1
    assert [r for r, _ in items] == ["user", "model"] * len(ref.turns) + ["user"]
    assert items[-1][1] == plan.payload
    fulls = []
    for i, t in enumerate(ref.turns):
        user, model = items[2 * i][1], items[2 * i + 1][1]
        assert (user["mode"], user["prompt"]) == (t.mode, t.prompt)
        # rendered as sent: sourceSynchronized stays on a turn that said it, never with a source
        assert "proposalOutcomes" not in user and not ("sourceSynchronized" in user and t.sent)
        if t.sent:
            if "currentSource" in user:
                assert user["currentSource"] == t.base and "supersededSourceSha256" not in user
                fulls.append((i, "user", t.base))
            else:
                assert user["supersededSourceSha256"] == sha(t.base)
        else:
            assert "currentSource" not in user and "supersededSourceSha256" not in user
        assert model["kind"] == ("answer" if t.proposal is None else "code_proposal")
        assert model["explanation"] == t.response
        if t.proposal is not None:
            if "proposedSource" in model:
                assert model["proposedSource"] == t.proposal and "supersededProposalSha256" not in model
                fulls.append((i, "model", t.proposal))
            else:
                assert model["supersededProposalSha256"] == sha(t.proposal)
        else:
            assert "proposedSource" not in model and "supersededProposalSha256" not in model
        assert model.get("outcome") == (t.outcome if t.outcome in SHOWN else None)
    # What the model holds: replay the transcript, the last valid full version.
    if plan.synchronized:
        assert len(fulls) == 1, fulls
        i, side, text = fulls[0]
        assert text == doc.source
        if side == "model":
            assert ref.turns[i].outcome in ("proposed", "applied")
    else:
        assert fulls == []
    # Secondary context: only the newest version in full, all older ones as markers.
    sent_at = [i for i, t in enumerate(ref.turns) if t.context is not None]
    resent_now = SECONDARY_FIELD in plan.payload
    in_full = [i for i, (_, p) in enumerate(items) if SECONDARY_FIELD in p]
    if resent_now:
        assert in_full == [len(items) - 1]
    elif sent_at:
        newest = sent_at[-1]
        assert in_full == [2 * newest]
        assert sha(ref.turns[newest].context) == ref.ctx_sent[SECONDARY_FIELD]
    else:
        assert in_full == []
    for i in sent_at:
        if 2 * i not in in_full:
            assert items[2 * i][1]["supersededSecondaryContextSha256"] == sha(ref.turns[i].context)


def check_state(conv: Conversation, ref: Ref) -> None:
    assert conv.sync.active_document_sha256 == (sha(ref.active) if ref.active is not None else None)
    assert [t.outcome for t in conv.history] == [t.outcome for t in ref.turns]
    assert len(conv.history) == len(ref.turns)
    assert all(e is t.engine for e, t in zip(conv.history, ref.turns, strict=True))
    assert conv.last_interaction_id == (ref.last_id if ref.chain_alive else None)


def probe(conv: Conversation, ref: Ref) -> None:
    """Plan the next turn (not sent) and check it against the reference."""
    before = conv.snapshot()
    doc, pieces = ref.document(), ref.pieces()
    plan = conv.plan_turn("ask", "probe", doc, pieces, ref.state_mode)
    check_plan(conv, ref, plan, doc, pieces, ref.state_mode)
    if ref.state_mode == "contents":
        check_contents(conv, ref, plan, doc)
    assert conv.snapshot() == before  # planning changes nothing


# -- the interpreter -----------------------------------------------------------


def do_turn(
    conv: Conversation, ref: Ref, mode: str, *, with_doc: bool = True, propose: bool = True, in_flight=None
) -> None:
    """One turn; ``in_flight`` runs while the request is out (a button click), before the record."""
    doc = ref.document() if with_doc else None
    pieces = ref.pieces()
    state_mode = ref.state_mode
    prompt = f"{mode} #{len(ref.turns) + 1}"
    plan = conv.plan_turn(mode, prompt, doc, pieces, state_mode)
    check_plan(conv, ref, plan, doc, pieces, state_mode)
    if state_mode == "contents":
        check_contents(conv, ref, plan, doc)
    proposal = None
    if mode == "edit" and propose and doc is not None:
        # The model edits the document it holds: what was sent, else its own latest version.
        held = plan.payload["currentSource"] if "currentSource" in plan.payload else ref.active
        proposal = f"{held}\n# edit t{len(ref.turns) + 1}"
    response = f"reply {len(ref.turns) + 1}"
    interaction_id = None
    if state_mode == "interactions":
        ref.ids += 1
        interaction_id = f"int-{ref.ids}"
    outcomes = ref.expected_outcomes(state_mode)
    new_chain = ref.new_chain(state_mode)
    # what earlierTurns told a new chain, as sent
    digest_told = {
        sha(t.proposal)[:12]: t.outcome
        for t in ref.turns[-DIGEST_TURNS:]
        if t.proposal is not None and t.outcome in SHOWN
    }
    if in_flight is not None:
        in_flight()
    turn = conv.commit(plan, response, proposal_source=proposal, interaction_id=interaction_id)
    assert turn.index == len(ref.turns) + 1
    assert turn.sent_source is plan.send_source
    assert turn.outcome == ("proposed" if proposal is not None else "none")
    if state_mode == "interactions":
        if not ref.chain_alive:
            ref.chain_start = len(ref.turns)
        if new_chain:  # the new chain holds only what this turn sends
            ref.ctx_sent = {}
            ref.active = None
            # earlierTurns told it every outcome so far: proposalOutcomes must not repeat them
            ref.told.update(digest_told)
        ref.chain_alive = True
        ref.last_id = interaction_id
        ref.told.update(outcomes)
    else:
        ref.chain_alive = False
        ref.last_id = None
    ref.turns.append(
        RefTurn(
            engine=turn,
            mode=mode,
            prompt=prompt,
            state_mode=state_mode,
            doc_key=doc.key if doc else None,
            base=doc.source if doc else None,
            sent=plan.send_source,
            response=response,
            proposal=proposal,
            outcome=turn.outcome,
            context=plan.pieces[0].text if plan.pieces else None,
        )
    )
    for p in plan.pieces:
        ref.ctx_sent[p.key] = p.sha256
    if proposal is not None:
        ref.active = proposal
        ref.seen_texts.append(proposal)
    elif doc is not None:
        ref.active = doc.source


def do_transition(conv: Conversation, ref: Ref, action: str, pick: int) -> None:
    if not ref.turns:
        return
    with_proposal = [i for i, t in enumerate(ref.turns) if t.proposal is not None]
    pool = with_proposal if (with_proposal and pick < 45) else list(range(len(ref.turns)))
    i = pool[pick % len(pool)]
    t = ref.turns[i]
    if not ref.allowed(action, i):
        before = conv.snapshot()
        reason = conv.refusal(action, t.engine)
        assert isinstance(reason, str) and reason != ""
        with pytest.raises(TransitionRefused) as refused:
            getattr(conv, action)(t.engine)
        assert str(refused.value) == reason
        assert conv.snapshot() == before
        return
    assert conv.refusal(action, t.engine) is None
    getattr(conv, action)(t.engine)
    if action == "apply":
        t.outcome = "applied"
        ref.active = t.proposal
        ref.cells[t.doc_key] = t.proposal  # Apply writes the proposal into its target cell
    elif action == "discard":
        t.outcome = "discarded"
        # the original design: back to the base (docs/protocol.md, deviations); the engine
        # (rightly) only when the model's view was this proposal - a newer turn may have moved on.
        if ref.active == t.proposal:
            ref.active = t.base
    else:
        t.outcome = "undone"
        ref.active = t.base
        ref.cells[t.doc_key] = t.base  # Undo puts the base back


def run(ops, initial_mode: str) -> None:
    conv = Conversation("prop", state_mode=initial_mode)
    ref = Ref(cells={cid: f"# cell {cid}\nx_{cid} = 0" for cid in CELL_IDS}, target="a", state_mode=initial_mode)
    ref.seen_texts.extend(ref.cells.values())
    foreign = Conversation("prop")  # a conversation that was reset: its turns are not ours
    fplan = foreign.plan_turn("edit", "f", ref.document())
    foreign_turn = foreign.commit(fplan, "f", proposal_source="foreign")
    probe(conv, ref)
    for op in ops:
        kind = op[0]
        if kind in ("ask", "edit"):
            do_turn(conv, ref, kind)
        elif kind == "edit_none":
            do_turn(conv, ref, "edit", propose=False)
        elif kind == "ask_nodoc":
            do_turn(conv, ref, "ask", with_doc=False)
        elif kind in ("apply", "discard", "undo"):
            do_transition(conv, ref, kind, op[1])
        elif kind == "in_flight":  # a button clicked while a request is out
            do_turn(conv, ref, op[1], in_flight=lambda op=op: do_transition(conv, ref, op[2], op[3]))
        elif kind == "manual":
            ref.cells[ref.target] += f"\n# manual {op[1]}"
            ref.seen_texts.append(ref.cells[ref.target])
        elif kind == "paste":  # the user pastes some earlier version by hand
            ref.cells[ref.target] = ref.seen_texts[op[1] % len(ref.seen_texts)]
        elif kind == "switch":
            ref.target = CELL_IDS[op[1]]
        elif kind == "other":
            others = [c for c in CELL_IDS if c != ref.target]
            ref.cells[others[op[1]]] += f"\n# other {op[2]}"
        elif kind == "fail":  # the request fails: planned (and built), never recorded
            before = conv.snapshot()
            plan = conv.plan_turn(op[1], "fails", ref.document(), ref.pieces(), ref.state_mode)
            if plan.state_mode == "contents":
                build_contents(conv.history, plan)
            assert conv.snapshot() == before
        elif kind == "lose_chain":
            conv.lose_chain()
            ref.chain_alive = False
            ref.last_id = None
        elif kind == "foreign":
            before = conv.snapshot()
            with pytest.raises(TransitionRefused, match="reset"):
                getattr(conv, op[1])(foreign_turn)
            assert conv.snapshot() == before
        elif kind == "toggle":
            ref.state_mode = "interactions" if ref.state_mode == "contents" else "contents"
        else:  # pragma: no cover
            raise AssertionError(op)
        check_state(conv, ref)
        probe(conv, ref)


def operations(mixed: bool):
    transition = st.tuples(st.sampled_from(["apply", "discard", "undo"]), st.integers(0, 50))
    choices = [
        st.just(("ask",)),
        st.just(("edit",)),
        st.just(("edit",)),
        st.just(("edit",)),
        st.just(("edit_none",)),
        st.just(("ask_nodoc",)),
        transition,
        transition,
        transition,
        transition,
        st.tuples(
            st.just("in_flight"),
            st.sampled_from(["ask", "edit"]),
            st.sampled_from(["apply", "discard", "undo"]),
            st.integers(0, 50),
        ),
        st.tuples(st.just("manual"), st.integers(0, 3)),
        st.tuples(st.just("paste"), st.integers(0, 50)),
        st.tuples(st.just("switch"), st.integers(0, 2)),
        st.tuples(st.just("other"), st.integers(0, 1), st.integers(0, 3)),
        st.tuples(st.just("fail"), st.sampled_from(["ask", "edit"])),
        st.just(("lose_chain",)),
        st.tuples(st.just("foreign"), st.sampled_from(["apply", "discard", "undo"])),
    ]
    if mixed:
        choices += [st.just(("toggle",)), st.just(("toggle",))]
    return st.lists(st.one_of(choices), min_size=8, max_size=40)


PROPS = settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(ops=operations(mixed=False))
def test_contents_mode_matches_reference(ops):
    run(ops, "contents")


@PROPS
@given(ops=operations(mixed=False))
# A proposal (or a base) from before a lost chain: the new chain never saw it.
@example(ops=[("edit",), ("lose_chain",), ("ask",), ("apply", 0)])
@example(ops=[("edit",), ("apply", 0), ("lose_chain",), ("ask",), ("undo", 0)])
# Undo clicked while the first turn of a new chain is out: its digest said "applied".
@example(ops=[("edit",), ("apply", 0), ("lose_chain",), ("in_flight", "ask", "undo", 0)])
def test_interactions_mode_matches_reference(ops):
    run(ops, "interactions")


@PROPS
@given(ops=operations(mixed=True), initial=st.sampled_from(["contents", "interactions"]))
@example(ops=[("edit",), ("toggle",), ("ask",), ("apply", 0)], initial="contents")
def test_switching_state_modes_matches_reference(ops, initial):
    run(ops, initial)


def test_long_applied_edit_session_through_the_interpreter():
    ops = [("ask",)]
    for k in range(10):
        ops += [("edit",), ("apply", k)]  # the k-th proposal is the newest one
    run(ops, "contents")
    run(ops, "interactions")


def _session_with_undo():
    return [("edit",), ("apply", 0), ("edit",), ("apply", 1), ("undo", 1), ("ask",), ("manual", 1), ("ask",)]


def test_interpreter_catches_an_engine_that_never_synchronizes(monkeypatch):
    import genai_magics.engine.conversation as conversation

    monkeypatch.setattr(conversation, "version_chain", lambda history, sha: None)
    with pytest.raises(AssertionError, match="must not be resent"):
        run(_session_with_undo(), "contents")


def test_interpreter_catches_an_undo_that_keeps_the_proposal_active(monkeypatch):
    def undo(self, turn):
        self._transition("undo", turn, "undone")
        return turn

    monkeypatch.setattr(Conversation, "undo", undo)
    with pytest.raises(AssertionError):
        run(_session_with_undo(), "contents")


@settings(max_examples=examples(200), deadline=None)
@given(
    sources=st.lists(st.text(max_size=40), min_size=1, max_size=4),
    context=st.text(max_size=40),
    prompt=st.text(max_size=20),
)
def test_any_text_survives_the_wire_payloads(sources, context, prompt):
    """Quotes, newlines, U+2028, NUL...: every source and prompt comes back exactly."""
    conv = Conversation("wire")
    for i, source in enumerate(sources):
        plan = conv.plan_turn("edit", prompt, Document("k", "cell k", source), [ContextPiece(SECONDARY_FIELD, context)])
        items = parsed(build_contents(conv.history, plan))
        assert items[-1][1]["prompt"] == prompt
        assert items[-1][1].get("currentSource", source) == source
        if i == 0:
            assert items[-1][1][SECONDARY_FIELD] == context
        turn = conv.commit(plan, prompt, proposal_source=source + prompt)
        conv.apply(turn)
    plan = conv.plan_turn("ask", prompt, Document("k", "cell k", sources[-1] + prompt))
    assert plan.synchronized is True
    items = parsed(build_contents(conv.history, plan))
    assert items[-2][1]["proposedSource"] == sources[-1] + prompt


def test_interpreter_catches_an_engine_that_trusts_a_lost_chain(monkeypatch):
    """The pre-fix interactions engine: whatever the sync state says, the chain is assumed to hold it."""

    def trusting(self):
        return self.sync.active_document_sha256

    monkeypatch.setattr(Conversation, "chain_head", trusting)
    with pytest.raises(AssertionError, match="must be resent"):
        run([("edit",), ("lose_chain",), ("ask",), ("apply", 0)], "interactions")
