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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from .cells import Cell, CellType
from .diff import unified_diff
from .redaction import MASK, redact, unmask

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
