"""The notebook as the document: cells as percent-style text, and the edits a proposal means.

The model sees ``# %% id=...`` blocks; its proposal may change, add or remove
cells (a block without a known id is a new cell). Reordering existing cells
and changing a cell's type are not edits we make: the cell keeps its place and
type.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable, Literal, Sequence

from .cell_writer import Done
from ..engine.cells import Cell
from ..engine.diff import unified_diff

_HEADER = re.compile(r"^# %%(?: \[(markdown|raw)\])?(?: id=(\S+))?\s*$")


@dataclass(frozen=True)
class Block:
    id: str | None
    cell_type: str
    source: str


def notebook_text(cells: Iterable[Cell]) -> str:
    """The document text: each cell headed only by its type and id (stable under Apply)."""
    blocks = []
    for c in cells:
        kind = "" if c.cell_type == "code" else f" [{c.cell_type}]"
        blocks.append(f"# %%{kind} id={c.id}\n{c.source}")
    return "\n\n".join(blocks)


def parse_blocks(text: str) -> list[Block]:
    blocks: list[Block] = []
    current: tuple[str | None, str] | None = None
    lines: list[str] = []

    def close() -> None:
        body = "\n".join(lines).rstrip("\n")
        if current is not None or body.strip():
            cid, ctype = current if current is not None else (None, "code")
            blocks.append(Block(cid, ctype, body))

    for line in text.split("\n"):
        match = _HEADER.match(line)
        if match:
            close()
            current, lines = (match.group(2), match.group(1) or "code"), []
        else:
            lines.append(line)
    close()
    return blocks


@dataclass(frozen=True)
class Op:
    kind: Literal["set", "insert", "delete"]
    cell_id: str | None  # set/delete: the cell; insert: None (the bridge names it)
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
            ops.append(Op("insert", None, anchor, block.cell_type, block.source))
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
    parts = []
    for op in ops:
        if op.kind == "set":
            parts.append(unified_diff(op.old_source, op.source, f"cell {op.cell_id}"))
        elif op.kind == "insert":
            where = "at the top" if op.after is None else (
                f"after cell {op.after}" if isinstance(op.after, str) else "after the new cell above")
            parts.append(unified_diff("", op.source, f"new {op.cell_type} cell {where}"))
        else:
            parts.append(unified_diff(op.old_source, "", f"cell {op.cell_id} (removed)"))
    return "".join(parts)


class NotebookWriter:
    """Apply/Undo for a notebook proposal: several cell edits through the live bridge."""

    kind = "live"

    def __init__(self, bridge, base_text: str, proposal_text: str, live_cells: Callable[[], Sequence[Cell]]):
        self.bridge = bridge
        self.base_ids = {b.id for b in parse_blocks(base_text) if b.id}
        self.inserted: set[str] = set()
        self.live_cells = live_cells
        self.preview = describe_ops(proposal_ops(base_text, proposal_text))

    def describe_apply(self) -> str:
        return f"Apply makes these cell edits in the notebook: {self.preview}. Undo reverts all of them."

    def write(self, cell_id: str, source: str, done: Done) -> str | None:
        managed = self.base_ids | self.inserted
        ops = plan_ops(parse_blocks(source), list(self.live_cells()), managed)
        new_ids: dict[int, str] = {}

        def step(i: int, error: str | None) -> None:
            if error:
                done(f"{error} (after {i - 1} of {len(ops)} cell edits)")
                return
            if i == len(ops):
                done(None)
                return
            op = ops[i]
            after = new_ids.get(op.after) if isinstance(op.after, int) else op.after
            if op.kind == "set":
                self.bridge.set_source(op.cell_id, op.source, lambda e: step(i + 1, e))
            elif op.kind == "delete":
                self.inserted.discard(op.cell_id)
                self.bridge.delete_cell(op.cell_id, lambda e: step(i + 1, e))
            else:
                new_id = self.bridge.insert_cell(after, op.source, op.cell_type, lambda e: step(i + 1, e))
                new_ids[i] = new_id
                self.inserted.add(new_id)

        step(0, None)
        return None
