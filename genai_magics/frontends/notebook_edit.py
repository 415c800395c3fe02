"""The notebook as the document: cells as percent-style text, and the edits a proposal means.

The model sees ``# %% id=...`` blocks; its proposal may change, add or remove
cells (a block without a known id is a new cell). Reordering existing cells
and changing a cell's type are not edits we make: the cell keeps its place and
type.

The text round-trips any cell source exactly. Each block is its header line,
the cell's text and a newline; blocks are separated by one blank line. A cell
line that starts with ``# %%`` (a script's own cell marker, or a line reading
``# %% id=b``) is written with one more leading backslash (``\\# %%``), and
a line of backslashes followed by ``# %%`` gets one more too, so no text
inside a cell can end it or name another cell. CRLF, blank lines and trailing
newlines pass through as they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .. import messages
from ..engine.cells import Cell, CellType
from ..engine.diff import unified_diff
from ..engine.redaction import MASK, redact, unmask
from .cell_writer import Done, live_done

_HEADER = re.compile(r"^# %%(?: \[(markdown|raw)\])?(?: id=(\S+))?[ \t\r]*$")
_MARKER_LINE = re.compile(r"^\\*# %%")  # a cell line that must be escaped (one more backslash)


@dataclass(frozen=True)
class Block:
    id: str | None
    cell_type: CellType
    source: str


def _escape(source: str) -> str:
    return "\n".join("\\" + line if _MARKER_LINE.match(line) else line for line in source.split("\n"))


def _unescape(lines: list[str]) -> str:
    return "\n".join(line[1:] if line.startswith("\\") and _MARKER_LINE.match(line) else line for line in lines)


def _header(cell_type: str, cell_id: str | None) -> str:
    kind = "" if cell_type == "code" else f" [{cell_type}]"
    return f"# %%{kind}" + (f" id={cell_id}" if cell_id is not None else "")


def blocks_text(blocks: Iterable[Block]) -> str:
    return "\n".join(f"{_header(b.cell_type, b.id)}\n{_escape(b.source)}\n" for b in blocks)


def notebook_text(cells: Iterable[Cell]) -> str:
    """The document text: each cell headed only by its type and id (stable under Apply)."""
    return blocks_text(Block(c.id, c.cell_type, c.source) for c in cells)


def unmask_cells(base_text: str, proposal_text: str) -> tuple[str, list[str]]:
    """The proposal with the API key back in each cell where the model kept its mask in place.

    Returns the text and the ids of cells whose key line the model changed
    around the mask: those cells are left as they were (their base text).
    """
    if MASK not in proposal_text or redact(base_text) == base_text:  # no key was masked
        return proposal_text, []
    base = {b.id: b for b in parse_blocks(base_text) if b.id}
    blocks: list[Block] = []
    untouched: list[str] = []
    for block in parse_blocks(proposal_text):
        old = base.get(block.id) if block.id else None
        if old is not None and block.id:
            text, placed = unmask(old.source, block.source)
            if not placed:
                untouched.append(block.id)
                text = old.source
            block = replace(block, source=text)
        blocks.append(block)
    return blocks_text(blocks), untouched


def parse_blocks(text: str) -> list[Block]:
    """The blocks of a document text; ``parse_blocks(notebook_text(cells))`` gives the cells back exactly."""
    blocks: list[Block] = []
    current: tuple[str | None, CellType] | None = None
    lines: list[str] = []

    def close() -> None:
        body = _unescape(lines)
        # The newline that ends each block's text is the format's, not the cell's.
        body = body[:-1] if body.endswith("\n") else body
        if current is not None or body.strip():
            cid, ctype = current if current is not None else (None, "code")
            blocks.append(Block(cid, ctype, body))

    for line in text.split("\n"):
        match = _HEADER.match(line)
        if match:
            close()
            kind: CellType = "markdown" if match.group(1) == "markdown" else "raw" if match.group(1) else "code"
            current, lines = (match.group(2), kind), []
        else:
            lines.append(line)
    close()
    return blocks


@dataclass(frozen=True)
class Op:
    kind: Literal["set", "insert", "delete"]
    cell_id: str | None  # set/delete: the cell; insert: the id the proposal named, if any (the bridge names new cells)
    after: int | str | None  # insert: an existing id, the index of an earlier op's new cell, or None (top)
    cell_type: str
    source: str
    old_source: str = ""


def plan_ops(target: Sequence[Block], live: Sequence[Cell], managed: set[str]) -> list[Op]:
    """Edits that make the managed cells of ``live`` read as ``target``."""
    by_id = {c.id: c for c in live}
    ops: list[Op] = []
    kept: set[str] = set()
    anchor: int | str | None = None
    for block in target:
        cell = by_id.get(block.id) if block.id in managed else None
        if cell is not None and block.id not in kept:
            kept.add(cell.id)
            if cell.source.rstrip("\n") != block.source.rstrip("\n"):
                ops.append(Op("set", cell.id, None, cell.cell_type, block.source, cell.source))
            anchor = cell.id
        else:
            ops.append(Op("insert", block.id, anchor, block.cell_type, block.source))
            anchor = len(ops) - 1
    for cell in live:
        if cell.id in managed and cell.id not in kept:
            ops.append(Op("delete", cell.id, None, cell.cell_type, "", cell.source))
    return ops


def describe_ops(ops: Sequence[Op]) -> str:
    count = {k: sum(1 for o in ops if o.kind == k) for k in ("set", "insert", "delete")}
    return f"{count['set']} changed, {count['insert']} new, {count['delete']} removed"


def proposal_ops(base_text: str, proposal_text: str) -> list[Op]:
    """The edits a proposal means against the notebook text it was made from."""
    base = [Cell(b.id or f"new-{i}", b.source, b.cell_type) for i, b in enumerate(parse_blocks(base_text))]
    return plan_ops(parse_blocks(proposal_text), base, {c.id for c in base})


def notebook_diff(base_text: str, proposal_text: str) -> str:
    """The proposal per cell: a unified diff for each changed, new or removed cell."""
    ops = proposal_ops(base_text, proposal_text)
    positions = {b.id: i + 1 for i, b in enumerate(parse_blocks(base_text)) if b.id}

    def label(cell_id: str | None) -> str:
        # a VS Code cell id is a long vscode-notebook-cell: URI: its place in the notebook says more
        if cell_id and ":" in cell_id and cell_id in positions:
            return f"cell #{positions[cell_id]}"
        return f"cell {cell_id}"

    parts = []
    for op in ops:
        if op.kind == "set":
            parts.append(unified_diff(op.old_source, op.source, label(op.cell_id)))
        elif op.kind == "insert":
            where = (
                "at the top"
                if op.after is None
                else (f"after {label(op.after)}" if isinstance(op.after, str) else "after the new cell above")
            )
            parts.append(unified_diff("", op.source, f"new {op.cell_type} cell {where}"))
        else:
            parts.append(unified_diff(op.old_source, "", f"{label(op.cell_id)} (removed)"))
    return "".join(parts)


@dataclass(frozen=True)
class _Removed:
    cell: dict[str, Any]  # the cell as the frontend held it: nbformat JSON with id, metadata, outputs
    above: str | None  # the cell directly above it before the edits that removed it (None: it was first)


@dataclass
class NotebookWriter:
    """Apply/Undo for a notebook proposal: several cell edits through the live bridge.

    A cell that Apply removed comes back on Undo as it was (id, type, text,
    metadata, outputs), right below the cell that was above it.
    """

    bridge: Any
    base_text: str
    proposal_text: str
    live_cells: Callable[[], Sequence[Cell]]  # the cells a proposal may touch, in notebook order
    inserted: set[str] = field(default_factory=set)
    removed: dict[str, _Removed] = field(default_factory=dict)
    # text written (the proposal, or the base on Undo) -> the managed cells' text right after the write
    written: dict[str, str] = field(default_factory=dict)
    target_must_exist = False  # the document is the notebook, not one cell
    describe_done = staticmethod(live_done)

    def __post_init__(self) -> None:
        self.base_ids = {b.id for b in parse_blocks(self.base_text) if b.id}
        self.preview = describe_ops(proposal_ops(self.base_text, self.proposal_text))

    def holder(self, cell_id: str) -> str:
        return cell_id

    def _managed_text(self) -> str:
        managed = self.base_ids | self.inserted
        return notebook_text(c for c in self.live_cells() if c.id in managed)

    def current_source(self, _cell_id: str) -> str:
        """The document now, for the 'changed since' check: the text last written while the cells are
        as that write left them (new cells have the frontend's ids, not the proposal's), else as they are."""
        now = self._managed_text()
        return next((text for text, after in self.written.items() if after == now), now)

    def describe_apply(self) -> str:
        return messages.NOTEBOOK_EDITS_APPLY.render(preview=self.preview)

    def write(self, cell_id: str, source: str, done: Done) -> str | None:
        managed = self.base_ids | self.inserted
        ops = plan_ops(parse_blocks(source), list(self.live_cells()), managed)
        order = [c.id for c in self.bridge.cells()]
        above = {cid: (order[i - 1] if i else None) for i, cid in enumerate(order)}
        first = next((cid for cid in order if cid in managed), None)
        top = above.get(first) if first else None  # a new first cell goes right above the document's first cell
        present = set(order)
        new_ids: dict[int, str] = {}

        def step(i: int, error: str | None) -> None:
            if error:
                done(f"{error} (after {i - 1} of {len(ops)} cell edits)")
                return
            if i == len(ops):
                self.written[source] = self._managed_text()
                done(None)
                return
            op = ops[i]
            after = new_ids.get(op.after) if isinstance(op.after, int) else op.after
            after = top if op.after is None else after
            then = lambda e: step(i + 1, e)  # noqa: E731
            if op.kind == "set":
                self.bridge.set_source(op.cell_id, op.source, then)
            elif op.kind == "delete":
                deleted = op.cell_id
                assert deleted is not None  # plan_ops names the cell of every delete
                self.inserted.discard(deleted)
                present.discard(deleted)
                self.bridge.delete_cell(deleted, then, on_removed=lambda cell: self._keep(deleted, cell, above))
            elif op.cell_id in self.removed and op.cell_id not in present:
                gone = self.removed.pop(op.cell_id)
                cell = dict(gone.cell)
                if str(cell.get("source", "")).rstrip("\n") != op.source.rstrip("\n"):
                    cell["source"] = op.source
                where = gone.above if gone.above is None or gone.above in present else after
                self.bridge.insert_cell(
                    where, cell.get("source", op.source), cell.get("cell_type", op.cell_type), then, cell=cell
                )
                new_ids[i] = op.cell_id
                present.add(op.cell_id)
            else:
                new_id = self.bridge.insert_cell(after, op.source, op.cell_type, then)
                new_ids[i] = new_id
                present.add(new_id)
                self.inserted.add(new_id)

        step(0, None)
        return None

    def _keep(self, cell_id: str, cell: dict[str, Any], above: dict[str, str | None]) -> None:
        self.removed[cell_id] = _Removed(cell, above.get(cell_id))


class NotebookCopyWriter:
    """Where only the running cell can be written (VS Code without the bridge): nothing is written.

    The whole notebook as percent text must never land in the magic cell; the
    diff shows each cell's change and Copy gives the text to paste by hand.
    """

    target_must_exist = False

    def describe_apply(self) -> str:
        return messages.NOTEBOOK_RECORD_ONLY_APPLY.render()

    def describe_done(self, verb: str, what: str, label: str) -> str:
        return messages.KERNEL_STATE_DONE.render(verb=verb, what=what, label=label)

    def holder(self, cell_id: str) -> str:
        return cell_id

    def write(self, cell_id: str, source: str, done: Done) -> str | None:
        done(None)
        return None
