"""The kernel's view of the notebook, from whichever source of truth is there.

Three sources, freshest first: the live bridge (a frontend extension pushing
the notebook model, unsaved edits included), the cells the kernel
executed (``ExecutedCells``, by ``cellId`` from the execute request), and the notebook file
on disk (nbformat) for cells never run. The engine never knows which.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from .. import messages
from ..engine.cells import Cell, CellType, cell_type_of, is_genai_magic


class NotebookView(Protocol):
    """What the magics need to know about the notebook."""

    @property
    def description(self) -> str:  # shown in %gemini status: where the cells come from
        ...

    def cells(self) -> Sequence[Cell]:
        """Cells in notebook order (as far as this source knows the order)."""

    def cell_above(self, cell_id: str) -> Cell | None:
        """The code cell directly above ``cell_id``, or None when the layout is unknown."""


@dataclass
class ExecutedCells:
    """Every executed cell's latest source, keyed by the frontend's cell id.

    JupyterLab and Notebook 7 send the nbformat id as ``cellId``; VS Code a
    ``vscode-notebook-cell:`` URI; without one the execution count stands in.
    """

    by_id: dict[str, Cell] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)  # ids by last execution, oldest first
    running_id: str | None = None
    description: str = "executed cells"
    # every text a cell held in this session (by SHA-256): a saved file's copy of it is the same cell
    sources: dict[str, set[str]] = field(default_factory=dict)
    ran: dict[str, str] = field(default_factory=dict)  # cell id -> the code it ran last (set_source leaves it)
    # the ids of the cells changed below, in order: the last merge with a file is made again only where they stand
    # where it can be (``merged``); a new list once long, its ``epoch`` bumped
    changed: list[str] = field(default_factory=list)
    epoch: int = 0
    merge: Merge | None = field(default=None, repr=False, compare=False)  # the last merge with a file (``merged``)

    def add(self, cell_id: str | None, source: str, execution_count: int | None) -> Cell:
        # Without a frontend cell id each run is its own cell, named as IPython names it.
        key = cell_id or (f"In[{execution_count}]" if execution_count is not None else f"run-{len(self.by_id) + 1}")
        cell = Cell(id=key, source=source, cell_type="code", execution_count=execution_count)
        self.by_id[key] = cell
        self.ran[key] = source
        self.sources.setdefault(key, set()).add(cell.sha256)
        if key in self.order:
            self.order.remove(key)
        self.order.append(key)
        self.running_id = key
        self._changed(key)
        return cell

    def set_source(self, cell_id: str, source: str) -> None:
        """What the kernel believes a cell holds after an Apply/Undo it performed."""
        old = self.by_id.get(cell_id)
        if old is not None:
            self.by_id[cell_id] = Cell(old.id, source, old.cell_type, old.execution_count)
            self.sources.setdefault(cell_id, set()).add(self.by_id[cell_id].sha256)
            self._changed(cell_id)

    def set_count(self, cell_id: str, execution_count: int) -> None:
        old = self.by_id.get(cell_id)
        if old is not None and old.execution_count != execution_count:
            self.by_id[cell_id] = Cell(old.id, old.source, old.cell_type, execution_count)
            self._changed(cell_id)

    def _changed(self, cell_id: str) -> None:
        if len(self.changed) >= MAX_CHANGED:
            self.changed, self.epoch = [], self.epoch + 1
        self.changed.append(cell_id)

    def cells(self) -> Sequence[Cell]:
        return [self.by_id[k] for k in self.order]

    def cell_above(self, cell_id: str) -> Cell | None:
        return None  # execution order says nothing about layout

    def notebook_cells(self) -> Sequence[Cell]:
        raise NotebookFileError(messages.NO_NOTEBOOK_KNOWN.render())

    def by_execution_count(self, count: int) -> Cell | None:
        return next((c for c in self.by_id.values() if c.execution_count == count), None)

    def latest_document(self, exclude: str | None = None) -> Cell | None:
        """The most recently executed code cell that is not a genai magic cell."""
        for key in reversed(self.order):
            cell = self.by_id[key]
            if key != exclude and not is_genai_magic(cell.source) and cell.source.strip():
                return cell
        return None


MAX_CHANGED = 1000  # cell changes listed (ExecutedCells.changed); then a new list, and a whole merge


@dataclass
class Merge:
    """A file version merged with the executed cells (``merge_file_and_executed``), as of the ``seen`` first
    changes of ``epoch``."""

    file_cells: tuple[Cell, ...]
    epoch: int
    seen: int
    cells: tuple[Cell, ...]

    @functools.cached_property
    def index(self) -> tuple[dict[str, int], frozenset[str]]:
        """Each executed cell the file's cell of its id was matched with -> that place; and the texts (SHA-256)
        of the file's cells looked for among the executed cells' (not matched by id)."""
        file_cells, cells = self.file_cells, self.cells
        own = {cells[i].id: i for i, f in enumerate(file_cells) if cells[i] is not f and cells[i].id == f.id}
        places = set(own.values())
        return own, frozenset(f.sha256 for i, f in enumerate(file_cells) if i not in places)

    def patched(self, executed: ExecutedCells) -> bool:
        """Brought up to the executed cells' changes since where each changed cell was matched by its id and holds
        no text a file's cell was looked for by: then its order and texts match nothing else, and every cell stands
        where it stood. False: the merge must be made whole."""
        since = executed.changed[self.seen :]
        if not since:
            return True
        own, looked_for = self.index
        if not all(c in own and looked_for.isdisjoint(executed.sources.get(c, ())) for c in since):
            return False
        cells = list(self.cells)
        for cell_id in since:
            at = own[cell_id]
            cells[at] = _of_type(executed.by_id[cell_id], self.file_cells[at].cell_type)
        self.cells, self.seen = tuple(cells), len(executed.changed)
        return True


def merged(file_cells: tuple[Cell, ...], executed: ExecutedCells) -> tuple[Cell, ...]:
    """``merge_file_and_executed``, the last one with the same file version brought up to date where it can be: a
    turn runs its magic cell again, and the 200-cell notebook's merge (~0.05 ms) is a copy with that cell new."""
    last = executed.merge
    if last is None or last.epoch != executed.epoch or last.file_cells != file_cells or not last.patched(executed):
        last = executed.merge = Merge(
            file_cells, executed.epoch, len(executed.changed), tuple(merge_file_and_executed(file_cells, executed))
        )
    return last.cells


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


def path_of_cell_uri(cell_id: str | None) -> str | None:
    """The notebook file a VS Code cell URI (``vscode-notebook-cell:/home/me/work.ipynb#W1s…``) names:
    its path, the same before any snapshot (a renamed notebook's cells get new URIs); None for any other
    id, or an untitled notebook's (no file yet)."""
    if not cell_id or not cell_id.startswith("vscode-notebook-cell:"):
        return None
    from urllib.parse import unquote, urlsplit

    path = unquote(urlsplit(cell_id).path)
    if len(path) > 2 and path[0] == "/" and path[2] == ":":  # /c:/Users/… on Windows
        path = path[1:]
    return path if os.path.isabs(path) and path.endswith(".ipynb") else None


def reported_path(reported: str, start: Path | None) -> Path | None:
    """The notebook file a live frontend names now, made absolute. VS Code names it whole; JupyterLab
    and Notebook 7 relative to the server's root, above the folder the kernel started in (the start
    path's), so it is the nearest folder from there up that holds that file. None: no such file."""
    if not reported.endswith(".ipynb"):
        return None
    path = Path(reported)
    if path.is_absolute():
        return path
    base = start.parent if start is not None else Path(os.getcwd())
    return next((folder / path for folder in (base, *base.parents) if (folder / path).is_file()), None)


@dataclass
class NotebookLocation:
    """Where the notebook is now: the path the kernel started with (its environment, which a kernel
    restart keeps, also after a rename) until a live frontend names the file it is now."""

    reported: str | None = None  # what a frontend named last (relative in JupyterLab, absolute in VS Code)
    _resolved: tuple[str, Path] | None = field(default=None, repr=False)

    def report(self, path: object) -> bool:
        """A frontend named the notebook's file; whether that is news."""
        if not isinstance(path, str) or not path or path == self.reported:
            return False
        self.reported = path
        return True

    def path(self, start: Path | None) -> Path | None:
        if self.reported is None:
            return start
        if self._resolved is None or self._resolved[0] != self.reported:
            found = reported_path(self.reported, start)
            if found is None:
                return start
            self._resolved = (self.reported, found)
        return self._resolved[1]


def read_notebook_cells(path: Path) -> tuple[Cell, ...]:
    """Cells of an nbformat 4 file, in order; a clear error otherwise (parsed once per file version)."""
    try:
        stat = path.stat()
    except OSError:
        raise NotebookFileError(messages.NOTEBOOK_NOT_FOUND.render(path=path)) from None
    return _read_cells(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _read_cells(path_text: str, mtime_ns: int, size: int) -> tuple[Cell, ...]:
    # Plain JSON, not nbformat: importing nbformat pulls in jsonschema's format checkers
    # (2.5 s here), which the first turn in VS Code would pay for.
    path = Path(path_text)
    try:
        with open(path, encoding="utf-8") as file:
            nb = json.load(file)
    except FileNotFoundError:
        raise NotebookFileError(messages.NOTEBOOK_NOT_FOUND.render(path=path)) from None
    except (OSError, ValueError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise NotebookFileError(
            messages.NOTEBOOK_UNREADABLE.render(name=path.name, error=f"{type(exc).__name__}: {exc}")
        ) from None
    if not isinstance(nb, dict) or nb.get("nbformat") != 4 or not isinstance(nb.get("cells"), list):
        version = nb.get("nbformat") if isinstance(nb, dict) else None
        raise NotebookFileError(messages.NOTEBOOK_NOT_V4.render(name=path.name, version=version))
    # Execution counts in a saved file belong to whichever session saved it: never this session's In[n].
    return tuple(
        Cell(
            id=c.get("id") or f"file-{i}",
            source=source_text(c.get("source", "")),
            cell_type=cell_type_of(c.get("cell_type")),
        )
        for i, c in enumerate(nb["cells"])
        if isinstance(c, dict)
    )


def source_text(source: object) -> str:
    """A cell's source as nbformat stores it: a string or a list of lines."""
    return "".join(source) if isinstance(source, list) else str(source)


@dataclass
class MergedView:
    """File order and never-run cells from disk, sources from the executed cells when fresher.

    One per turn (the turn's frontend holds it); the merge is the executed cells' last one with the
    file's version, reused, or made again only where cells changed (``merged``): a turn asks the
    view several times, and most turns change only the magic cell."""

    executed: ExecutedCells
    path: Path | None

    @property
    def description(self) -> str:
        return f"executed cells + file {self.path.name}" if self.path else self.executed.description

    def cells(self) -> Sequence[Cell]:
        if self.path is None:
            return self.executed.cells()
        try:
            file_cells = read_notebook_cells(self.path)
        except NotebookFileError:
            return self.executed.cells()
        return merged(file_cells, self.executed)

    def cell_above(self, cell_id: str) -> Cell | None:
        return None  # a saved file may be stale about layout: only the bridge knows

    def notebook_cells(self) -> Sequence[Cell]:
        """The whole notebook (for --notebook): the file must be readable."""
        if self.path is None:
            return self.executed.notebook_cells()
        read_notebook_cells(self.path)  # a clear error for a missing, corrupt or old file
        return self.cells()


def merge_file_and_executed(file_cells: Sequence[Cell], executed: ExecutedCells) -> list[Cell]:
    """File order, each cell once: a file cell and an executed cell are the same cell when they
    share an id (JupyterLab) or when the file holds a text the executed cell had in this session
    (VS Code's ids are URIs the file never holds; files without ids get positional ones). The
    executed cell's source wins: it is at least as fresh as the last save."""
    unmatched = dict.fromkeys(executed.order)  # in execution order: the first run that held a text wins
    by_text: dict[str, list[str]] | None = None  # sha -> unmatched executed ids that held it, on the first need
    merged: list[Cell] = []
    for c in file_cells:
        match: str | None = c.id if c.id in unmatched else None
        if match is None:
            if by_text is None:  # from the cells not matched yet: only they can match from here on
                by_text = {}
                for cid in unmatched:
                    for sha in executed.sources.get(cid, ()):
                        by_text.setdefault(sha, []).append(cid)
            match = next((cid for cid in by_text.get(c.sha256, ()) if cid in unmatched), None)
        if match is None:
            merged.append(c)
            continue
        del unmatched[match]
        merged.append(_of_type(executed.by_id[match], c.cell_type))
    merged.extend(executed.by_id[cid] for cid in unmatched)  # run but not in the saved file (yet)
    return merged


def _of_type(ran: Cell, cell_type: CellType) -> Cell:
    """An executed cell as the file's cell of ``cell_type`` it is: the executed cell itself where it is the same
    kind (its hash is computed once, not on every merge)."""
    return ran if ran.cell_type == cell_type else Cell(ran.id, ran.source, cell_type, ran.execution_count)
