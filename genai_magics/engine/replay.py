"""Which recorded turn a cell replays after a kernel restart: every rule of it, in this one file.

Rule 0: everything that decides whether a cell replays a recorded turn, and what the
conversation is after a replay, a branch or the end of the record, lives here. The file,
its lock and its location are ``persistence/``'s; the record's JSON is ``engine/record.py``'s;
the record's mode (``auto``, ``off``, ``only``) and a turn's function calls answered again
are ``persistence/keeper.py``'s, which applies these rules. Everything here is pure data.

The cursor. A conversation read from the record holds ``loaded`` turns; the first
``replayable`` of them may be replayed, and ``cursor`` counts how many this kernel has
replayed. Each recorded turn replays at most once, in order: running a cell again in the
same kernel is always live.

1. A turn's identity is its ``TurnKey``: mode, prompt, model, state mode, flags (their
   order aside), the magic cell's id when the frontend names cells, the SHA-256 of the
   document, of each piece of explicit context (last error, variables, what the document
   showed) and of the settings that shape the answer (system instruction, schema,
   temperature...). Not the other cells: they grow as the notebook does and Run All sees
   their final state. Never the execution count: a restarted kernel counts from 1 again.
2. Seek: where the frontend names cells, the replay position jumps to this magic cell's
   recorded turn among those still to replay (after a restart cells may run in another
   order); the turns skipped stay in the record. A cell the record does not name, when
   the record names its cells, is a new turn after the last recorded one: replay ends
   and every recorded turn is kept (rule 6). A record without cell ids: the order alone
   decides.
3. While replaying, the conversation's document is the one it had before the turn at
   the cursor, so a follow-up without ``--cell`` resolves to the cell it resolved to then.
   Where the frontend names cells (the turn's magic cell id is recorded) it is the turn's own
   document cell, by its id, while that cell exists: a cell inserted right above the magic
   since (by an agent turn) does not make the turn about another cell.
4. Match: the turn at the cursor replays this cell when its key is this cell's key
   (rule 1) with three allowances: a magic cell id missing on either side is not
   compared; a recorded key with no settings hash (a record written before it was kept)
   matches any settings; and the document may be any version of the turn's document the
   conversation knew from that turn on (its base, a proposal later applied), as Run All
   runs the code cells as they are now; for an agent turn (``agent`` among its flags) also a
   text its own ``edit_cell`` or ``insert_cell`` calls wrote (their results carry its short SHA-256:
   the cell above the agent cell may be one it inserted), and its
   function calls are not answered again (they read what the turn itself changed; its inserts,
   edits, deletes and runs are never made again by a replay). A document on one side only never
   matches. An agent turn named by its magic cell on both sides matches whatever its document
   and explicit context are now: the turn itself may have deleted or rewritten the cell above
   it, or fixed the error it was given, and going live would make its changes a second time.
5. A replayed turn moves the cursor on; after the last turn the record holds, the
   conversation's document is the one it had after it.
6. Continue: replay ends at the cursor and the conversation goes on after its last
   recorded turn, every recorded turn kept (a cell the record does not name, rule 2; the
   mode ``off``). Reset in this kernel, a conversation stops replaying where it is.
7. Branch: a cell that does not match at the cursor goes live there, as re-running the
   notebook from that cell would: the recorded turns from the cursor on are dropped and
   the conversation continues from the last replayed turn, with the state recorded right
   after it (none recorded: a fresh state); a kept proposal discarded or undone later in
   this kernel stays so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .cells import DocumentKey, key_from_store, stored_key
from .context import SECONDARY_FIELD, ContextPiece
from .conversation import ChainRent, Conversation, SyncState, Turn
from .hashing import short
from .outputs import held_after_restore
from .rules import RULES_FIELD


# -- rule 1: a turn's identity ----------------------------------------------
@dataclass(frozen=True)
class TurnKey:
    """What makes a cell's turn the same turn as a recorded one."""

    mode: str
    prompt: str
    model: str
    state_mode: str
    flags: tuple[str, ...]  # --cell REF, --notebook, --no-context, --new
    magic_cell: str | None  # the frontend's id of the magic cell (nbformat id, VS Code URI) when known
    document_sha256: str | None
    pieces: tuple[tuple[str, str], ...]  # (key, sha256) of the explicit context: last error, variables
    # the sha256 of everything else that shapes the answer: system instruction, response schema,
    # generation settings (temperature...); None in a record written before it was kept
    settings: str | None = None

    @staticmethod
    def of(
        mode: str,
        prompt: str,
        model: str,
        state_mode: str,
        flags: tuple[str, ...],
        magic_cell: str | None,
        document_sha256: str | None,
        pieces: tuple[ContextPiece, ...],
        settings: str | None = None,
    ) -> TurnKey:
        # The other cells are background that grows as the notebook does: Run All sees
        # its final state, so they are not part of a turn's identity (see README).
        # the rules are in ``settings`` (engine/rules.py), as the system instruction is
        explicit = tuple(sorted((p.key, p.sha256) for p in pieces if p.field not in (SECONDARY_FIELD, RULES_FIELD)))
        return TurnKey(
            mode, prompt, model, state_mode, tuple(sorted(flags)), magic_cell, document_sha256, explicit, settings
        )

    def to_dict(self) -> dict[str, Any]:
        # field by field: dataclasses.asdict's recursive deep copy was a third of a record's write
        d = dict(vars(self))
        d["flags"], d["pieces"] = list(self.flags), [list(p) for p in self.pieces]
        return d

    @staticmethod
    def from_dict(d: dict[str, Any]) -> TurnKey:
        pieces = d["pieces"]
        return TurnKey(
            d["mode"],
            d["prompt"],
            d["model"],
            d["state_mode"],
            tuple(d["flags"]),
            d["magic_cell"],
            d["document_sha256"],
            tuple(map(tuple, pieces)) if pieces else (),
            d.get("settings"),
        )


@dataclass
class TurnMeta:
    key: TurnKey
    at: float  # when the turn finished, epoch seconds
    after: dict[str, Any]  # the conversation's state right after the turn (to branch from it, rule 7)


# -- the cursor ---------------------------------------------------------------
@dataclass
class RecordedConversation:
    """One conversation as the record holds it, plus this kernel's replay position."""

    conversation: Conversation
    meta: dict[int, TurnMeta] = field(default_factory=dict)  # turn index -> meta
    created: float = 0.0
    loaded: int = 0  # turns read from the file
    replayable: int = 0  # the first this many turns came from an earlier kernel and may be replayed
    cursor: int = 0  # how many of them this kernel has replayed, in order
    told: dict[str, str] = field(default_factory=dict)  # outcomes told up to the newest meta
    resume_document_key: DocumentKey | None = None  # the conversation's document once every recorded turn replayed
    cache: dict[str, Any] | None = None  # its explicit context cache when the record was written (name, expiry...)
    continued: bool = False  # went live after its last recorded turn, every recorded turn kept


# -- the state a turn leaves, which a branch restores (rule 7) ----------------
def conversation_state(conv: Conversation) -> dict[str, Any]:
    """The conversation's state as plain data: what the record holds of it and of each turn's meta."""
    return {
        "state_mode": conv.state_mode,
        "active_document_sha256": conv.sync.active_document_sha256,
        "context_hashes": dict(conv.sync.context_hashes),
        "last_interaction_id": conv.last_interaction_id,
        "outcomes_told": dict(conv.outcomes_told),
        "chain_versions": [list(v) for v in conv.chain_versions],
        "document_key": stored_key(conv.document_key),
    }


def restore_state(conv: Conversation, s: dict[str, Any]) -> None:
    """The conversation's state set back from ``conversation_state``'s data."""
    conv.state_mode = s["state_mode"]
    pieces = [p for t in conv.history for p in t.pieces]
    conv.sync = SyncState(s["active_document_sha256"], held_after_restore(s["context_hashes"], s["state_mode"], pieces))
    conv.last_interaction_id = s["last_interaction_id"]
    conv.outcomes_told = dict(s["outcomes_told"])
    conv.chain_versions = [(sha, proposer) for sha, proposer in s["chain_versions"]]
    conv.chain_rent = ChainRent()  # the rent of the chain it was on: counted again on the one restored
    conv.document_key = key_from_store(s.get("document_key"))


def state_after(conv: Conversation, told: dict[str, str]) -> dict[str, Any]:
    """The conversation's state now, for the meta of the turn it just recorded.

    The outcomes the server was told only grow, so each turn keeps what is new
    since ``told`` (updated here): a 500-turn record stays linear in size.
    """
    state = conversation_state(conv)
    everything = state.pop("outcomes_told")
    state["outcomes_told_new"] = {k: v for k, v in everything.items() if told.get(k) != v}
    told.update(state["outcomes_told_new"])
    return state


def told_until(rec: RecordedConversation, turns: list[Turn]) -> dict[str, str]:
    """The outcomes the server was told up to the last of ``turns`` (each meta keeps what was new)."""
    told: dict[str, str] = {}
    for t in turns:
        if t.index in rec.meta:
            told.update(rec.meta[t.index].after["outcomes_told_new"])
    return told


# -- rule 2: seek -------------------------------------------------------------
def seek(rec: RecordedConversation, magic_cell: str | None) -> bool:
    """This magic cell's recorded turn becomes the replay position. False: the record names
    its cells and none still to replay is this one, so the cell continues after the record."""
    if magic_cell is None or rec.cursor >= rec.replayable:
        return True
    ahead = rec.conversation.history[rec.cursor : rec.replayable]
    cells = [rec.meta[t.index].key.magic_cell if t.index in rec.meta else None for t in ahead]
    if magic_cell in cells:
        rec.cursor += cells.index(magic_cell)
        return True
    return not any(cells)  # recorded without cell ids: the order alone decides (replay_match)


# -- rule 3: the document while replaying -------------------------------------
def document_at_cursor(rec: RecordedConversation) -> None:
    """The conversation's document is the one it had before the turn at the cursor; where the frontend names
    cells, the turn's own document cell, by its id."""
    conv, at = rec.conversation, rec.cursor
    if at >= rec.replayable:
        return
    meta = rec.meta.get(conv.history[at].index)
    own = conv.history[at].document_key
    if meta is not None and meta.key.magic_cell and isinstance(own, str):
        conv.document_key = own  # a cell inserted above the magic since (an agent's) is not what it was about
        return
    before = rec.meta.get(conv.history[at - 1].index) if at else None
    conv.document_key = key_from_store(before.after.get("document_key")) if before else None


# -- rule 4: match ------------------------------------------------------------
def _versions_from(history: list[Turn], position: int) -> set[str]:
    """Every version of the turn's document the conversation knew from this turn on."""
    key = history[position].document_key
    versions: set[str] = set()
    for t in history[position:]:
        if t.document_key != key:
            continue
        if t.base_sha256:
            versions.add(t.base_sha256)
        if t.proposal_sha256 and t.outcome == "applied":
            versions.add(t.proposal_sha256)
        versions.update(
            r.response["sha256"]
            for round_ in t.tool_rounds
            for r in round_.results
            if r.call.name in ("edit_cell", "insert_cell")
            and r.status == "whole"
            and isinstance(r.response.get("sha256"), str)
        )
    return versions


def replay_match(rec: RecordedConversation, key: TurnKey) -> Turn | None:
    """The recorded turn this cell replays, or None (the cell goes live)."""
    if rec.cursor >= rec.replayable:
        return None
    turn = rec.conversation.history[rec.cursor]
    meta = rec.meta.get(turn.index)
    if meta is None:
        return None
    was = meta.key
    same = (was.mode, was.prompt, was.model, was.state_mode, was.flags) == (
        key.mode,
        key.prompt,
        key.model,
        key.state_mode,
        key.flags,
    )
    if not same or (was.magic_cell and key.magic_cell and was.magic_cell != key.magic_cell):
        return None
    if was.settings is not None and was.settings != key.settings:  # another temperature, instruction...
        return None
    if "agent" in was.flags and was.magic_cell and was.magic_cell == key.magic_cell:
        return turn  # its own changes made the notebook what it is now
    if was.pieces != key.pieces:
        return None
    if (key.document_sha256 is None) != (was.document_sha256 is None):
        return None
    if key.document_sha256 is not None and not {key.document_sha256, short(key.document_sha256)} & _versions_from(
        rec.conversation.history, rec.cursor
    ):
        return None
    return turn


# -- rule 5: replayed ---------------------------------------------------------
def replayed(rec: RecordedConversation) -> None:
    """One more recorded turn was shown; after the last one the conversation resumes as recorded."""
    rec.cursor += 1
    if rec.cursor == rec.replayable == rec.loaded:
        rec.conversation.document_key = rec.resume_document_key


# -- rule 6: continue ---------------------------------------------------------
def continue_after_record(rec: RecordedConversation) -> None:
    """Replay ends here; the conversation goes on from its last recorded turn, all of them kept."""
    rec.replayable = rec.cursor
    rec.continued = True
    rec.conversation.document_key = rec.resume_document_key


def stop(rec: RecordedConversation) -> None:
    """The conversation was reset in this kernel: its recorded turns are not replayed any more."""
    rec.replayable = rec.cursor


# -- rule 7: branch -----------------------------------------------------------
def branch(rec: RecordedConversation) -> None:
    """A cell went live at the replay position: the recorded turns from there on are
    replaced; the conversation continues from the last replayed turn (its state, its
    interaction id)."""
    conv, keep = rec.conversation, rec.cursor
    rec.replayable = keep
    if keep >= len(conv.history):
        conv.document_key = rec.resume_document_key
        return  # every recorded turn was replayed: continue from the end
    dropped = conv.history[keep:]
    conv.history = conv.history[:keep]
    for t in dropped:
        rec.meta.pop(t.index, None)
    # the state after the last kept turn the record has it for (a turn recorded before
    # the record was on has none)
    last = next((rec.meta[t.index] for t in reversed(conv.history) if t.index in rec.meta), None)
    if last is None:
        rec.told = {}
        restore_state(conv, conversation_state(Conversation(conv.name, conv.state_mode)))
        return
    rec.told = told_until(rec, conv.history)
    restore_state(conv, last.after | {"outcomes_told": rec.told})
    # What happened to a kept proposal later (Discard, Undo) still holds.
    for t in conv.history:
        if t.outcome in ("discarded", "undone") and conv.sync.active_document_sha256 == t.proposal_sha256:
            conv.sync.active_document_sha256 = t.base_sha256
