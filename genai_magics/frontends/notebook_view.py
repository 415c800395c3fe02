"""The kernel's view of the notebook, from whichever source of truth is there.

Three sources, freshest first: the live bridge (a frontend extension pushing
the notebook model, unsaved edits included), the kernel's own record of the
cells it executed (``cellId`` from the execute request), and the notebook file
on disk (nbformat) for cells never run. The engine never knows which.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Protocol, Sequence

from ..engine.cells import Cell, is_genai_magic


class NotebookView(Protocol):
    """What the magics need to know about the notebook."""

    description: str  # shown in %gemini status: where the cells come from

    def cells(self) -> Sequence[Cell]:
        """Cells in notebook order (as far as this source knows the order)."""

    def cell_above(self, cell_id: str) -> Cell | None:
        """The code cell directly above ``cell_id``, or None when the layout is unknown."""


@dataclass
class ExecutionRecord:
    """Every executed cell's latest source, keyed by the frontend's cell id.

    JupyterLab and Notebook 7 send the nbformat id as ``cellId``; VS Code a
    ``vscode-notebook-cell:`` URI; without one the execution count stands in.
    """

    by_id: dict[str, Cell] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)  # ids by last execution, oldest first
    running_id: str | None = None
    description: str = "executed cells (kernel record)"

    def record(self, cell_id: str | None, source: str, execution_count: int | None) -> Cell:
        # Without a frontend cell id each run is its own cell, named as IPython names it.
        key = cell_id or (f"In[{execution_count}]" if execution_count is not None else f"run-{len(self.by_id) + 1}")
        cell = Cell(id=key, source=source, cell_type="code", execution_count=execution_count)
        self.by_id[key] = cell
        if key in self.order:
            self.order.remove(key)
        self.order.append(key)
        self.running_id = key
        return cell

    def set_source(self, cell_id: str, source: str) -> None:
        """What the kernel believes a cell holds after an Apply/Undo it performed."""
        old = self.by_id.get(cell_id)
        if old is not None:
            self.by_id[cell_id] = Cell(old.id, source, old.cell_type, old.execution_count)

    def set_count(self, cell_id: str, execution_count: int) -> None:
        old = self.by_id.get(cell_id)
        if old is not None and old.execution_count != execution_count:
            self.by_id[cell_id] = Cell(old.id, old.source, old.cell_type, execution_count)

    def cells(self) -> Sequence[Cell]:
        return [self.by_id[k] for k in self.order]

    def cell_above(self, cell_id: str) -> Cell | None:
        return None  # execution order says nothing about layout

    def notebook_cells(self) -> Sequence[Cell]:
        raise NotebookFileError("no notebook file is known to this kernel and no live notebook view is connected")

    def by_execution_count(self, count: int) -> Cell | None:
        return next((c for c in self.by_id.values() if c.execution_count == count), None)

    def latest_document(self, exclude: str | None = None) -> Cell | None:
        """The most recently executed code cell that is not a genai magic cell."""
        for key in reversed(self.order):
            cell = self.by_id[key]
            if key != exclude and not is_genai_magic(cell.source) and cell.source.strip():
                return cell
        return None


class NotebookFileError(Exception):
    pass


def notebook_path_from(env: Mapping[str, str], user_ns: Mapping[str, object]) -> Path | None:
    """Where the kernel's notebook lives, if the frontend told it."""
    for candidate in (user_ns.get("__vsc_ipynb_file__"), user_ns.get("__session__"), env.get("JPY_SESSION_NAME")):
        if isinstance(candidate, str) and candidate.endswith(".ipynb"):
            path = Path(candidate)
            if not path.is_absolute():
                path = Path(os.getcwd()) / path
            return path
    return None


def read_notebook_cells(path: Path) -> list[Cell]:
    """Cells of an nbformat 4 file, in order; a clear error otherwise (parsed once per file version)."""
    try:
        stat = path.stat()
    except OSError:
        raise NotebookFileError(f"notebook file not found: {path}") from None
    return list(_read_cells(str(path), stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=8)
def _read_cells(path_text: str, mtime_ns: int, size: int) -> tuple[Cell, ...]:
    import nbformat

    path = Path(path_text)

    try:
        nb = nbformat.read(str(path), as_version=nbformat.NO_CONVERT)
    except FileNotFoundError:
        raise NotebookFileError(f"notebook file not found: {path}") from None
    except Exception as exc:  # nbformat raises several kinds for bad files
        raise NotebookFileError(f"cannot read notebook {path.name}: {type(exc).__name__}: {exc}") from None
    if nb.get("nbformat") != 4:
        raise NotebookFileError(f"{path.name} is nbformat {nb.get('nbformat')}, not 4")
    cells: list[Cell] = []
    for i, c in enumerate(nb.cells):
        cells.append(
            Cell(
                id=c.get("id") or f"file-{i}",
                source=c.source,
                cell_type=c.cell_type if c.cell_type in ("code", "markdown", "raw") else "raw",
                execution_count=c.get("execution_count"),
            )
        )
    return tuple(cells)


@dataclass
class MergedView:
    """File order and never-run cells from disk, sources from the kernel record when fresher."""

    record: ExecutionRecord
    path: Path | None

    @property
    def description(self) -> str:
        return f"executed cells + file {self.path.name}" if self.path else self.record.description

    def cells(self) -> Sequence[Cell]:
        if self.path is None:
            return self.record.cells()
        try:
            file_cells = read_notebook_cells(self.path)
        except NotebookFileError:
            return self.record.cells()
        seen = set()
        merged = []
        for c in file_cells:
            live = self.record.by_id.get(c.id)
            merged.append(live or c)
            seen.add(c.id)
        merged.extend(c for c in self.record.cells() if c.id not in seen)
        return merged

    def cell_above(self, cell_id: str) -> Cell | None:
        return None  # a saved file may be stale about layout: only the bridge knows

    def notebook_cells(self) -> Sequence[Cell]:
        """The whole notebook (for --notebook): the file must be readable."""
        if self.path is None:
            return self.record.notebook_cells()
        read_notebook_cells(self.path)  # a clear error for a missing, corrupt or old file
        return self.cells()
