"""Reading the notebook's rules: the AGENTS.md files from its folder up to the project root, and its own.

The project root is the nearest folder holding ``.git`` or ``pyproject.toml`` (else the filesystem
root). The folder is the notebook's where the kernel knows its file, else the working directory (a
terminal IPython). The notebook's own rules live in its metadata (``metadata.genai_magics.rules``),
so they travel with the .ipynb; ``%gemini rules`` shows, sets and clears them.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..engine.context import ContextPiece
from ..engine.rules import FILE_NAME, NOTEBOOK_RULES, RuleText, rule_pieces

METADATA_KEY = "genai_magics"  # the notebook metadata's entry of this package
ROOT_MARKERS = (".git", "pyproject.toml")


@dataclass(frozen=True)
class FoundRules:
    """What a turn reads: the files (farthest first) and the notebook's own rules ('' : none)."""

    folder: Path
    files: tuple[Path, ...]
    notebook: str

    def texts(self) -> list[RuleText]:
        out = []
        for path in self.files:
            text = _read(path)
            if text is not None:
                out.append(RuleText(Path(os.path.relpath(path, self.folder)).as_posix(), text))
        if self.notebook.strip():
            out.append(RuleText(NOTEBOOK_RULES, self.notebook))
        return out


def folder_of(notebook: Path | None) -> Path:
    return notebook.parent if notebook is not None else Path.cwd()


def rule_files(folder: Path) -> tuple[Path, ...]:
    """The AGENTS.md files from ``folder`` up to the project root, the root's first (nearer ones win)."""
    # os.path on strings, not pathlib: every turn walks these folders, and Path's objects cost ~5x the stats;
    # os.access(F_OK) is os.path.exists without the exception a missing path's stat raises (half the walk's cost:
    # nearly every look finds nothing)
    found = []
    here = os.path.realpath(folder)
    while True:
        candidate = os.path.join(here, FILE_NAME)
        if os.access(candidate, os.F_OK) and os.path.isfile(candidate):
            found.append(Path(candidate))
        parent = os.path.dirname(here)
        if parent == here or any(os.access(os.path.join(here, marker), os.F_OK) for marker in ROOT_MARKERS):
            break
        here = parent
    return tuple(reversed(found))


def _read(path: Path) -> str | None:
    """A file's text (undecodable bytes replaced), or None when it cannot be read: a turn goes on without it."""
    try:
        return path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return None


def find(notebook: Path | None) -> FoundRules:
    folder = folder_of(notebook)
    return FoundRules(folder, rule_files(folder), notebook_rules(notebook))


def pieces(notebook: Path | None, max_chars: int) -> tuple[ContextPiece, ...]:
    """The rules a turn sends, each a piece (engine/rules.py)."""
    return rule_pieces(find(notebook).texts(), max_chars)


def _metadata(notebook: Path) -> dict[str, Any] | None:
    try:
        stat = notebook.stat()
    except OSError:
        return None
    return _metadata_at(str(notebook), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _metadata_at(path: str, mtime_ns: int, size: int) -> dict[str, Any] | None:
    """The notebook's metadata, read again only when the file changed (a notebook may be megabytes)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    metadata = data.get("metadata") if isinstance(data, dict) else None
    return metadata if isinstance(metadata, dict) else None


def notebook_rules(notebook: Path | None) -> str:
    """The notebook's own rules as its file holds them ('' : none, or no file)."""
    metadata = _metadata(notebook) if notebook is not None else None
    ours = (metadata or {}).get(METADATA_KEY)
    rules = ours.get("rules") if isinstance(ours, dict) else None
    return rules if isinstance(rules, str) else ""


def set_notebook_rules(notebook: Path, rules: str) -> None:
    """The notebook file's own rules set ('' : cleared), the rest of the file as it was; written whole, in
    one rename, so a failure leaves the file as it was."""
    data = json.loads(notebook.read_text(encoding="utf-8"))
    ours = data.setdefault("metadata", {}).setdefault(METADATA_KEY, {})
    if rules:
        ours["rules"] = rules
    else:
        ours.pop("rules", None)
        if not ours:
            del data["metadata"][METADATA_KEY]
    partial = notebook.with_name(f".{notebook.name}.rules-tmp")
    partial.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    os.replace(partial, notebook)
