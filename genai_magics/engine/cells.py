"""Plain data for notebook cells and the document a turn is about."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal, get_args

from .hashing import sha256_text
from .text import clip

CellType = Literal["code", "markdown", "raw"]
_BY_NAME: dict[str, CellType] = {name: name for name in get_args(CellType)}

MAGIC_PREFIXES = ("%%gemini_ask", "%%gemini_edit", "%%gemini_agent")
# Lines that only steer the assistant; a cell made of nothing else is not code to work on.
_STEERING_LINES = ("%gemini", "%load_ext genai_magics", "%reload_ext genai_magics", "%config GeminiMagics")


def cell_type_of(value: object) -> CellType:
    """A cell's type as a file or a frontend gives it: nbformat's three as they are; anything else
    (missing included) is raw, as nbformat's "unrecognized cell from a future minor-revision" and
    JupyterLab, which opens one as a raw cell: never taken for code to edit, run or send as context."""
    return _BY_NAME.get(value, "raw") if isinstance(value, str) else "raw"


def undecodable_at(text: str) -> int | None:
    """Where text stops being sendable UTF-8 text (a NUL or a lone surrogate), if anywhere."""
    nul = text.find("\x00")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start if nul < 0 else min(nul, exc.start)
    return nul if nul >= 0 else None


@functools.lru_cache(maxsize=8192)  # asked for every cell on every turn; sources rarely change
def is_genai_magic(source: str) -> bool:
    """A cell that talks to or steers the assistant is never a document or context itself."""
    text = source.lstrip()
    if text.startswith(MAGIC_PREFIXES):
        return True
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return bool(lines) and all(line.startswith(_STEERING_LINES) for line in lines)


def code_cell_above(cells: Iterable[Cell], cell_id: str) -> Cell | None:
    """The nearest code cell above ``cell_id`` in ``cells`` (in notebook order) that is not a genai magic
    cell; None when there is none or ``cell_id`` is not among them."""
    above = None
    for cell in cells:
        if cell.id == cell_id:
            return above
        if cell.cell_type == "code" and not is_genai_magic(cell.source):
            above = cell
    return None


@dataclass(frozen=True)
class Cell:
    id: str
    source: str
    cell_type: CellType = "code"
    execution_count: int | None = None

    @functools.cached_property
    def sha256(self) -> str:
        return sha256_text(self.source)

    @functools.cached_property
    def usable(self) -> bool:
        """Context may carry it: not a genai magic cell, not empty, and sendable (a cell with a NUL or a lone
        surrogate is left out rather than break every turn); made once, as ``sha256``."""
        return bool(self.source.strip()) and not is_genai_magic(self.source) and undecodable_at(self.source) is None

    @property
    def label(self) -> str:
        if self.execution_count is not None:
            return f"In[{self.execution_count}]"
        return f"cell {self.id[:12]}"


@dataclass(frozen=True)
class WholeNotebook:
    """The key of the whole notebook as a turn's document (``--notebook``): of its own type, so no
    cell is taken for it whatever its id (``notebook`` is a legal nbformat cell id)."""

    def __str__(self) -> str:
        return STORED_NOTEBOOK_KEY


WHOLE_NOTEBOOK = WholeNotebook()
DocumentKey = str | WholeNotebook
# In the record: a string no cell key can be (nbformat ids are [A-Za-z0-9_-]; the kernel's own are
# In[n] and run-n; VS Code's are vscode-notebook-cell: URIs).
STORED_NOTEBOOK_KEY = "<notebook>"


def stored_key(key: DocumentKey | None) -> str | None:
    return STORED_NOTEBOOK_KEY if isinstance(key, WholeNotebook) else key


def key_from_store(value: str | None) -> DocumentKey | None:
    return WHOLE_NOTEBOOK if value == STORED_NOTEBOOK_KEY else value


@dataclass(frozen=True)
class Document:
    """What a turn is about: one cell, or the whole notebook serialized."""

    key: DocumentKey  # stable identity: a cell id, or WHOLE_NOTEBOOK
    label: str  # for people and the model: "In[3]", "cell 1a2b", "notebook x.ipynb"
    source: str
    sha256: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sha256", sha256_text(self.source))


def defined_names(source: str) -> frozenset[str]:
    """The names a cell defines at its top level (def, class, assignment, import); none if it
    does not parse as Python. Without cell ids, a later run defining them all is that cell edited."""
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return frozenset()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
    return frozenset(names)


def summary(source: str, width: int = 40) -> str:
    """A few words that name a cell for people: its first def or class, else its first code line."""
    first = ""
    for line in source.splitlines():
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        for keyword, suffix in (("def ", "()"), ("async def ", "()"), ("class ", "")):
            if text.startswith(keyword):
                name = text[len(keyword) :].split("(")[0].split(":")[0].strip()
                if name.isidentifier():
                    return name + suffix
        first = first or text
    return clip(first, width)
