"""The kernel side of the VS Code companion (``vscode-extension/``): the live notebook through a private directory.

In VS Code a kernel's output reaches the notebook only while its cell runs
(output sent from a widget's click handler after the cell finished never
arrives), and VS Code offers kernels no comm to an extension. So the
companion and the kernel talk through files in a directory both can name
(``$GENAI_MAGICS_COMPANION_DIR``, default ``~/.cache/genai-magics/companion``,
mode 0700), which works at any time, from a running cell or a click:

* the companion keeps ``companion-<pid>.json`` up to date: its inbox and the
  notebooks its window has open, each named by its cells' URI without the
  fragment (the kernel knows a cell's ``vscode-notebook-cell:`` URI from the
  execute request);
* the kernel writes a request into that inbox and waits for the reply file
  it named (``out-<kernel pid>/rep-<n>.json``), up to :data:`DEFAULT_TIMEOUT`.

The messages (protocol version 1) are ``companion_protocol.schema.json`` (prose: docs/protocol.md,
"The VS Code companion's protocol"); ``vscode-extension/src/extension.ts`` is the other side, its
types generated from that schema, and tests/helpers/companion.py holds the kernel's side to it.
The kernel and the extension host must share the machine (local kernels,
Remote-SSH, WSL, containers); elsewhere no presence file is seen and the
running-cell behaviour stays.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import messages
from ..engine.cells import Cell, cell_type_of, code_cell_above
from ..engine.hashing import sha256_text
from . import kernel_compat
from .cell_writer import Done
from .live_notebook import LiveWriter, OnRemoved, cell_from_wire

PROTOCOL_VERSION = 1
DEFAULT_TIMEOUT = 5.0
VSCODE_CELL = "vscode-notebook-cell:"
INSTALL = "code --install-extension genai-magics-companion-<version>.vsix (see the README)"


class CompanionError(Exception):
    """A request the companion did not answer, or refused (the message is one line for the user)."""


def channel_dir(env: Mapping[str, str] = os.environ) -> Path:
    return Path(env.get("GENAI_MAGICS_COMPANION_DIR") or Path.home() / ".cache" / "genai-magics" / "companion")


def notebook_key(cell_id: str) -> str:
    """The notebook a ``vscode-notebook-cell:`` URI belongs to: the URI without its fragment."""
    return cell_id.split("#", 1)[0]


@dataclass(frozen=True)
class Presence:
    pid: int
    inbox: Path
    notebooks: frozenset[str]
    version: str
    # the files and folders renamed in this window, oldest first (from, to): a renamed notebook's kernel ends
    # with its old document, and the kernel of the new one learns here which file it was
    renamed: tuple[tuple[str, str], ...] = ()


def former_paths(path: Path, renamed: list[tuple[str, str]]) -> tuple[Path, ...]:
    """The names ``path`` had before, newest first, by the renames of files and folders (oldest first)
    that led to it: ``a.ipynb`` renamed to ``b.ipynb``, then ``b.ipynb`` to ``c.ipynb``, or its folder
    renamed."""
    found: list[Path] = []
    at, left = path, list(renamed)
    while left:
        for i in range(len(left) - 1, -1, -1):
            old, new = Path(left[i][0]), Path(left[i][1])
            if at == new or new in at.parents:
                at = old / at.relative_to(new)
                found.append(at)
                del left[i:]  # a rename before this one may have led here
                break
        else:
            break
    return tuple(found)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def presences(directory: Path) -> list[Presence]:
    """The companions whose VS Code is still running (a crashed one leaves its file behind)."""
    found = []
    for path in sorted(directory.glob("companion-*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            presence = Presence(
                int(data["pid"]),
                Path(data["inbox"]),
                frozenset(data["notebooks"]),
                str(data.get("companion", "")),
                tuple((str(r["from"]), str(r["to"])) for r in data.get("renamed") or ()),
            )
        except (OSError, ValueError, KeyError, TypeError):
            continue  # being replaced, or not ours
        if data.get("version") == PROTOCOL_VERSION and _alive(presence.pid):
            found.append(presence)
    return found


class Companion:
    """The notebook as VS Code holds it (unsaved edits included), and cell edits, through the companion
    (a ``LiveNotebook``)."""

    description = "live notebook (VS Code companion)"
    SNAPSHOT_AGE = 0.3  # s: one magic run asks for the cells several times; one snapshot serves them

    def __init__(self, shell: Any = None, directory: Path | None = None, timeout: float = DEFAULT_TIMEOUT):
        self.shell = shell
        self.dir = directory or channel_dir()
        self.timeout = timeout
        self.notebook: str | None = None  # the key of the notebook whose cells this kernel runs
        self.writer = CompanionWriter(self)
        self._cells: dict[str, Cell] = {}
        self._order: list[str] = []
        self._path: str | None = None
        self._taken = -1.0  # monotonic time of the last snapshot
        self._next = 0
        # a removed cell put back (Undo) gets a new URI from VS Code; the kernel keeps calling it by its old one
        self._real: dict[str, str] = {}  # old id -> the cell's URI now

    # ------------------------------------------------------------ presence
    def follow(self, cell_id: str | None) -> None:
        """A cell ran: a VS Code cell names the notebook this kernel belongs to."""
        if cell_id and cell_id.startswith(VSCODE_CELL):
            key = notebook_key(cell_id)
            if key != self.notebook:
                self.notebook = key
                self._taken = -1.0

    def _presence(self) -> Presence | None:
        if self.notebook is None:
            return None
        return next((p for p in presences(self.dir) if self.notebook in p.notebooks), None)

    @property
    def connected(self) -> bool:
        return self._presence() is not None

    def former_paths(self, path: Path | None) -> tuple[Path, ...]:
        """The names the notebook at ``path`` had before, newest first, as the companions saw it renamed in
        VS Code (which ends the kernel of a renamed notebook: this kernel started with the new name). Only
        once a VS Code cell ran in this kernel."""
        if path is None or self.notebook is None:
            return ()
        return former_paths(path, [r for p in presences(self.dir) for r in p.renamed])

    def status(self) -> str:
        """One line for ``%gemini status``."""
        if self.notebook is None:
            return messages.COMPANION_NOT_IN_VSCODE.render()
        presence = self._presence()
        if presence is None:
            return messages.COMPANION_ABSENT.render(install=INSTALL)
        return messages.COMPANION_CONNECTED.render(version=presence.version, pid=presence.pid)

    # ------------------------------------------------------------ requests
    def _request(self, op: str, fields: dict[str, Any]) -> dict[str, Any]:
        presence = self._presence()
        if presence is None:
            raise CompanionError(messages.COMPANION_NOT_CONNECTED.render())
        out = self.dir / f"out-{os.getpid()}"
        out.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._next += 1
        reply_to = out / f"rep-{self._next}.json"
        envelope = {
            "version": PROTOCOL_VERSION,
            "request_id": self._next,
            "notebook": self.notebook,
            "reply_to": str(reply_to),
            "op": op,
            **fields,
        }
        request = presence.inbox / f"req-{os.getpid()}-{self._next:08d}.json"
        tmp = request.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(envelope), encoding="utf-8")
            tmp.replace(request)  # the companion reads only whole files
        except OSError as exc:
            raise CompanionError(messages.COMPANION_UNWRITABLE.render(error=exc.strerror)) from None
        deadline = time.monotonic() + self.timeout
        pause = 0.002
        while time.monotonic() < deadline:
            try:
                data = json.loads(reply_to.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                time.sleep(pause)
                pause = min(pause * 1.5, 0.05)
                continue
            reply_to.unlink(missing_ok=True)
            if not isinstance(data, dict) or data.get("request_id") != self._next:
                raise CompanionError(messages.COMPANION_CONFUSED.render())
            if not data.get("ok"):
                raise CompanionError(str(data.get("error") or messages.COMPANION_REFUSED.render()))
            return data
        request.unlink(missing_ok=True)  # never taken: it must not be done later
        raise CompanionError(messages.COMPANION_NO_REPLY.render(timeout=self.timeout, op=op))

    def _call(self, func: Callable[[str | None], Any], error: str | None) -> None:
        # after the caller's own bookkeeping, like a reply arriving on the bridge's comm
        kernel_compat.call_soon(self.shell, func, error)

    # ------------------------------------------------------------ the view
    def refresh(self) -> bool:
        """A new snapshot of the notebook; False (and an empty view) when the companion did not give one."""
        try:
            data = self._request("snapshot", {})
        except CompanionError:
            self._cells, self._order, self._taken = {}, [], -1.0
            return False
        known = {uri: old for old, uri in self._real.items()}
        cells = [c for c in (cell_from_wire(raw) for raw in data.get("cells") or ()) if c is not None]
        cells = [Cell(known[c.id], c.source, c.cell_type) if c.id in known else c for c in cells]
        self._cells = {c.id: c for c in cells}
        self._order = [c.id for c in cells]
        self._path = data.get("path") if isinstance(data.get("path"), str) else self._path
        self._taken = time.monotonic()
        return True

    def _fresh(self) -> None:
        if time.monotonic() - self._taken > self.SNAPSHOT_AGE:
            self.refresh()

    def cells(self) -> list[Cell]:
        self._fresh()
        return [self._cells[i] for i in self._order]

    def cell(self, cell_id: str) -> Cell | None:
        self._fresh()
        return self._cells.get(cell_id)

    def cell_above(self, cell_id: str) -> Cell | None:
        return code_cell_above(self.cells(), cell_id)

    def is_fresh_for(self, cell_id: str, running_source: str) -> bool:
        cell = self.cell(cell_id)
        return cell is not None and cell.source == running_source

    def path(self) -> str | None:
        return self._path

    # -------------------------------------------------------------- edits
    def set_source(self, cell_id: str, source: str, done: Done) -> None:
        known = self._cells.get(cell_id)
        fields: dict[str, Any] = {"cell_id": self._real.get(cell_id, cell_id), "source": source}
        if known is not None:  # the text the kernel last saw: the companion refuses to overwrite another
            fields["expect_sha256"] = sha256_text(known.source)
        try:
            self._request("set_source", fields)
        except CompanionError as exc:
            self._taken = -1.0
            self._call(done, str(exc))
            return
        if known is not None:
            self._cells[cell_id] = Cell(cell_id, source, known.cell_type)
        self._call(done, None)

    def insert_cell(
        self, after_id: str | None, source: str, cell_type: str, done: Done, cell: dict[str, Any] | None = None
    ) -> str:
        """Insert a cell right below ``after_id`` (None: at the top); returns its URI (VS Code names cells).

        ``cell``: what ``delete_cell`` returned for a removed cell, to put it back as it was.
        """
        anchor = self._real.get(after_id, after_id) if after_id is not None else None
        fields: dict[str, Any] = {"after_id": anchor, "source": source, "cell_type": cell_type}
        if cell is not None:
            fields["cell"] = cell
        try:
            data = self._request("insert_cell", fields)
        except CompanionError as exc:
            self._call(done, str(exc))
            return ""
        new_id = str(data.get("cell_id", ""))
        old_id = cell.get("id") if cell is not None else None
        if isinstance(old_id, str):
            new_id = self._call_by(old_id, new_id)
        self._cells[new_id] = Cell(new_id, source, cell_type_of(cell_type))
        index = self._order.index(after_id) + 1 if after_id in self._order else 0
        self._order.insert(index, new_id)
        self._call(done, None)
        return new_id

    def delete_cell(self, cell_id: str, done: Done, on_removed: OnRemoved | None = None) -> None:
        try:
            data = self._request("delete_cell", {"cell_id": self._real.get(cell_id, cell_id)})
        except CompanionError as exc:
            self._call(done, str(exc))
            return
        self._cells.pop(cell_id, None)
        if cell_id in self._order:
            self._order.remove(cell_id)
        if on_removed is not None and isinstance(data.get("cell"), dict):
            on_removed({**data["cell"], "id": cell_id})  # so that putting it back keeps its id for the kernel
        self._call(done, None)

    def set_outputs(self, cell_id: str, outputs: list[dict[str, Any]], execution_count: int | None, done: Done) -> None:
        """VS Code sets outputs only by replacing the cell (a new URI); the kernel keeps calling it ``cell_id``."""
        fields = {"cell_id": self._real.get(cell_id, cell_id), "outputs": outputs, "execution_count": execution_count}
        try:
            data = self._request("set_outputs", fields)
        except CompanionError as exc:
            self._call(done, str(exc))
            return
        self._call_by(cell_id, str(data.get("cell_id", "")))
        self._call(done, None)

    def save_view(self, model_id: str, data: dict[str, str]) -> None:
        """Nothing: VS Code sets a cell's outputs only by replacing the cell, too much for a line of text; its
        saved text stays the one shown first (docs/frontends.md)."""

    def _call_by(self, kernel_id: str, uri: str) -> str:
        """The cell VS Code now names ``uri`` stays ``kernel_id`` for the kernel; returns ``kernel_id``."""
        if uri and uri != kernel_id:
            self._real[kernel_id] = uri
        return kernel_id


class CompanionWriter(LiveWriter):
    """Apply writes into the cell the conversation is about, through the companion."""

    def describe_apply(self) -> str:
        return messages.COMPANION_APPLY.render()
