"""The kernel side of the live bridge (the ``genai-magics-bridge`` labextension).

The frontend extension registers the comm target ``genai_magics.bridge`` on
every notebook's kernel; :meth:`Bridge.attach` opens the comm from the kernel.
From then on the frontend pushes snapshots of the live notebook model (cell
ids, types, sources, order; unsaved and unrun edits included) right before
each execute request, and answers requests to edit cells.

The messages (protocol version 1) are described in docs/protocol.md, "The
bridge's comm protocol"; tests/unit/test_comm_schema.py checks that this module,
labextension/src/index.ts and tests/helpers/fake_frontend.py follow that one schema.

Ordering: ipykernel >= 7.4 routes a comm's incoming messages to the thread
(subshell) that last sent on that comm, and JupyterLab 4.6 sends comm messages
on subshells by default. A snapshot handled on a subshell can race the execute
request it precedes. The frontend sends everything on the main shell, and
this module routes every snapshot of its comm to the main shell, so the
snapshot is applied before the cell it precedes runs. Replies go back to the
thread that sent the request. When a snapshot is late all the same,
:meth:`Bridge.is_fresh_for` says so and the caller falls back to the kernel's
record of executed cells.

Without the frontend extension nothing breaks: the comm is closed by
JupyterLab or ignored by nbclient, and :attr:`Bridge.connected` stays False.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import messages
from ..engine.cells import Cell, cell_type_of, code_cell_above
from . import kernel_compat
from .cell_writer import Done
from .live_notebook import LiveWriter, OnRemoved, cell_from_wire

TARGET_NAME = "genai_magics.bridge"
# The key the frontend extension adds to every execute request's metadata: {"path": the notebook's file}.
METADATA_KEY = "genai_magics"
OnOk = Callable[[dict], None]  # gets a successful reply's data
PROTOCOL_VERSION = 1
DEFAULT_TIMEOUT = 10.0
GROUPED_OPS = ("insert_cell", "set_source", "delete_cell")  # what one_undo_step groups (not set_outputs: a run)
KEPT_GROUPS = 8  # one_undo_step's latest requests: the turns that may still be writing


@dataclass(frozen=True)
class _Asked:
    """A request as asked, before it has an id: where its reply goes (the thread that asked) and who hears it."""

    request: dict
    done: Done
    on_ok: OnOk | None
    subshell: str | None


def _new_cell_id() -> str:
    """An nbformat 4.5 cell id (1-64 of [a-zA-Z0-9-_])."""
    return secrets.token_hex(4) + "-" + secrets.token_hex(2) + "-gm"


class Bridge:
    """What the live notebook holds, pushed by the frontend; edits on request (a ``LiveNotebook``)."""

    description = "live notebook (bridge)"

    def __init__(self, shell: Any = None, timeout: float = DEFAULT_TIMEOUT):
        self.shell = shell
        self.timeout = float(timeout)
        self.connected = False  # a snapshot has arrived on the current comm
        # The frontend said (in an execute request's metadata) that it runs the bridge: with the comm open,
        # its first snapshot is on its way, behind the cells already queued (Restart & Run All).
        self.announced = False
        self.on_path: Callable[[str], None] | None = None  # the frontend named another file (a rename, a move)
        # called after each snapshot read while no request waits for its reply (an agent turn's Undo watches)
        self.on_snapshot: list[Callable[[], None]] = []
        self.writer = LiveWriter(self)
        self._lock = threading.RLock()
        self._comm: Any = None
        self._cells: dict[str, Cell] = {}
        self._order: list[str] = []
        self._path: str | None = None
        self._seq: int | None = None
        self._snapshot_count = 0
        self._next_request = 0
        self._pending: dict[int, tuple[dict, Done, threading.Timer | None, OnOk | None]] = {}
        self._reply_routes: dict[int, str | None] = {}
        self._one_step: list[str] = []  # the kernel requests whose edits are one undo step (one_undo_step)
        # asked while the first snapshot was coming: sent when it arrives, or failed after ``timeout`` (never
        # sent later: whoever asked has heard it failed, as an agent turn waits 30 s at most)
        self._waiting: list[tuple[_Asked, threading.Timer]] = []

    # ------------------------------------------------------------------ setup
    @classmethod
    def attach(cls, shell: Any, timeout: float = DEFAULT_TIMEOUT, existing: Bridge | None = None) -> Bridge:
        """A bridge for this shell, its comm opened; given the shell's ``existing`` one, that one.

        Given a bridge whose comm was closed (notebook closed, page gone, or
        :meth:`close` by ``%unload_ext``), it opens a new comm on the same
        bridge: the proposals shown before a ``%reload_ext`` hold this object
        as their writer, so their Apply and Undo keep reaching the notebook.
        Its owner keeps it (``shell_state.ShellState.bridge``); attaching it
        again while its comm is open opens nothing.
        """
        bridge = existing if existing is not None else cls(shell, timeout=timeout)
        if bridge._comm is None:
            bridge._open()
        return bridge

    def _open(self) -> None:
        try:
            from comm import create_comm
        except ImportError:  # no comm package: a terminal IPython without widgets
            return
        try:
            comm = create_comm(target_name=TARGET_NAME, data={"version": PROTOCOL_VERSION})
        except Exception:
            return  # not in a kernel: no frontend to talk to
        with self._lock:
            self._comm = comm
            self._reset_view()
        self._install_routing(comm)
        comm.on_msg(self._on_msg)
        comm.on_close(self._on_close)

    def _install_routing(self, comm: Any) -> None:
        """Snapshots to the main shell, replies to the thread that asked (ipykernel >= 7.4)."""

        def route(data: Any, default: Any) -> Any:
            if isinstance(data, dict):
                kind = data.get("type")
                if kind == "snapshot":
                    return None
                if kind == "reply":
                    request_id = data.get("request_id")
                    with self._lock:
                        sid = self._reply_routes.pop(request_id, None) if isinstance(request_id, int) else None
                    return sid if kernel_compat.subshell_exists(self.shell, sid) else None
            return None

        kernel_compat.set_comm_reply_router(comm, route)

    def _current_subshell(self) -> str | None:
        return kernel_compat.current_subshell(self.shell)

    def _reset_view(self) -> None:
        self.connected = False
        self._cells = {}
        self._order = []
        self._seq = None

    def close(self) -> None:
        """Close the comm and fail pending requests; the view forgets the notebook.

        The bridge stays the shell's: the next :meth:`attach` (``%load_ext``
        after ``%unload_ext``) opens a new comm on it.
        """
        with self._lock:
            comm, self._comm = self._comm, None
            self._reset_view()
        self._fail_pending(messages.BRIDGE_CLOSED.render())
        if comm is not None:
            try:
                comm.close()
            except Exception:
                pass

    # ------------------------------------------------------------ the view
    def cells(self) -> list[Cell]:
        """Cells in live notebook order."""
        with self._lock:
            return [self._cells[i] for i in self._order if i in self._cells]

    def cell(self, cell_id: str) -> Cell | None:
        with self._lock:
            return self._cells.get(cell_id)

    def cell_above(self, cell_id: str) -> Cell | None:
        return code_cell_above(self.cells(), cell_id)

    def is_fresh_for(self, cell_id: str, running_source: str) -> bool:
        """Whether the snapshot has ``cell_id`` holding exactly ``running_source``.

        False means the view may be stale (no snapshot, or one that arrived
        late): fall back to the kernel's record of executed cells.
        """
        with self._lock:
            if not self.connected:
                return False
            cell = self._cells.get(cell_id)
            return cell is not None and cell.source == running_source

    def path(self) -> str | None:
        with self._lock:
            return self._path

    def announced_path(self, metadata: dict) -> str | None:
        """An execute request's metadata: the notebook's file, if the frontend runs the bridge (and then
        its first snapshot will follow the comm this kernel opened)."""
        ours = metadata.get(METADATA_KEY)
        if not isinstance(ours, dict):
            return None
        self.announced = True
        path = ours.get("path")
        return path if isinstance(path, str) else None

    @property
    def coming(self) -> bool:
        """Not connected yet, but the frontend's first snapshot is on its way: an edit asked for at a
        click (after the queued cells ran) finds it connected."""
        with self._lock:
            return not self.connected and self.announced and self._comm is not None

    @property
    def snapshot_count(self) -> int:
        with self._lock:
            return self._snapshot_count

    def status(self) -> str:
        """One line for ``%gemini status``."""
        with self._lock:
            if self._comm is None:
                return messages.BRIDGE_OFF.render()
            if self.coming:  # Restart & Run All: the frontend answers once the cells queued before it ran
                return messages.BRIDGE_COMING.render()
            if not self.connected:
                # The kernel opened its side; nothing says a frontend is listening until it answers.
                return messages.BRIDGE_UNANSWERED.render()
            return messages.BRIDGE_CONNECTED.render(
                cells=len(self._order), path=self._path or "the notebook", seq=self._seq
            )

    # ------------------------------------------------------- incoming messages
    def _on_msg(self, msg: dict) -> None:
        data = (msg.get("content") or {}).get("data") or {}
        if not isinstance(data, dict):
            return
        kind = data.get("type")
        if kind == "snapshot":
            self._on_snapshot(data)
        elif kind == "reply":
            self._on_reply(data)

    def _on_snapshot(self, data: dict) -> None:
        if data.get("version", PROTOCOL_VERSION) != PROTOCOL_VERSION:
            return
        full = bool(data.get("full"))
        seq = data.get("seq")
        need_resync = False
        with self._lock:
            if not full and self._seq is None:
                need_resync = True  # a delta without a base: ask for everything
            else:
                if not full and isinstance(seq, int) and self._seq is not None and seq != self._seq + 1:
                    need_resync = True  # a gap: apply what we have, then ask for everything
                if full:
                    self._cells = {}
                    self._order = []
                for raw in data.get("cells") or ():
                    cell = cell_from_wire(raw)
                    if cell is not None:
                        self._cells[cell.id] = cell
                for removed in data.get("removed") or ():
                    self._cells.pop(removed, None)
                order = data.get("order")
                if isinstance(order, list):
                    self._order = [i for i in order if isinstance(i, str)]
                elif full:
                    self._order = list(self._cells)
                else:
                    removed_ids = set(data.get("removed") or ())
                    self._order = [i for i in self._order if i not in removed_ids]
                    self._order += [i for i in self._cells if i not in self._order]
                self._seq = seq if isinstance(seq, int) else (self._seq or 0) + 1
                moved = isinstance(data.get("path"), str) and data["path"] != self._path
                if moved:
                    self._path = data["path"]
                self._snapshot_count += 1
                self.connected = True
            waiting, self._waiting = self._waiting, []
        for asked, timer in waiting:  # asked before the frontend answered (Restart & Run All): in the order asked
            timer.cancel()
            self._send_request(asked)
        if need_resync:
            self._send({"type": "resync"})
        if moved and self.on_path is not None and self._path is not None:
            self.on_path(self._path)
        with self._lock:
            settled = not self._pending  # else the snapshot may predate a change whose reply is on its way
        for listener in list(self.on_snapshot) if settled else ():
            listener()

    def _on_reply(self, data: dict) -> None:
        request_id = data.get("request_id")
        with self._lock:
            entry = self._pending.pop(request_id, None) if isinstance(request_id, int) else None
        if entry is None:
            return  # late (timed out) or answered already (a second tab)
        request, done, timer, on_ok = entry
        if timer is not None:
            timer.cancel()
        if data.get("ok"):
            self._after_ok(request, data)
            if on_ok is not None:
                on_ok(data)
            done(None)
        else:
            done(str(data.get("error") or messages.FRONTEND_REFUSED.render()))

    def _after_ok(self, request: dict, data: dict) -> None:
        """Keep the view in step with an edit the frontend confirmed."""
        op = request.get("op")
        with self._lock:
            if op == "set_source":
                old = self._cells.get(request["cell_id"])
                if old is not None:
                    self._cells[old.id] = Cell(old.id, request.get("source", ""), old.cell_type)
            elif op == "insert_cell":
                new_id = data.get("cell_id") or request.get("cell_id")
                if isinstance(new_id, str) and new_id not in self._cells:
                    self._cells[new_id] = Cell(
                        new_id, request.get("source", ""), cell_type_of(request.get("cell_type"))
                    )
                    after = request.get("after_id")
                    index = self._order.index(after) + 1 if after in self._order else 0
                    self._order.insert(index, new_id)
            elif op == "delete_cell":
                cell_id = request["cell_id"]
                self._cells.pop(cell_id, None)
                if cell_id in self._order:
                    self._order.remove(cell_id)

    def _on_close(self, msg: dict) -> None:
        with self._lock:
            self._comm = None
            self._reset_view()
        self._fail_pending(messages.NOTEBOOK_CLOSED.render())

    # ------------------------------------------------------------- requests
    def _send(self, data: dict) -> bool:
        with self._lock:
            comm = self._comm
        if comm is None:
            return False
        try:
            comm.send(data)
            return True
        except Exception:
            return False

    def _request(self, op: str, fields: dict, done: Done, on_ok: OnOk | None = None) -> None:
        """Send a request; while the frontend's first snapshot is on its way (``coming``: Restart & Run All,
        whose queued cells run before it arrives) keep it and send it when the snapshot arrives, at most
        ``timeout`` s after it was asked."""
        group = kernel_compat.request_id(self.shell) if op in GROUPED_OPS else None
        with self._lock:
            request = {"type": "request", "op": op, **fields}
            if group is not None and group in self._one_step:
                request["undo_group"] = group
            asked = _Asked(request, done, on_ok, self._current_subshell())
            if self.coming:
                timer = threading.Timer(self.timeout, self._waited_too_long, args=(asked,))
                timer.daemon = True
                self._waiting.append((asked, timer))
                timer.start()
                return
            connected = self._comm is not None and self.connected
        if connected:
            self._send_request(asked)
        else:
            done(messages.BRIDGE_NOT_CONNECTED.render())

    def _send_request(self, asked: _Asked) -> None:
        with self._lock:
            self._next_request += 1
            request_id = self._next_request
            timer = threading.Timer(self.timeout, self._on_timeout, args=(request_id,))
            timer.daemon = True
            request = {**asked.request, "request_id": request_id}
            self._pending[request_id] = (request, asked.done, timer, asked.on_ok)
            self._reply_routes[request_id] = asked.subshell
        timer.start()
        if not self._send(request):
            with self._lock:
                entry = self._pending.pop(request_id, None)
                self._reply_routes.pop(request_id, None)
            if entry is not None:
                timer.cancel()
                asked.done(messages.BRIDGE_SEND_FAILED.render())

    def _waited_too_long(self, asked: _Asked) -> None:
        with self._lock:
            waited = [w for w in self._waiting if w[0] is asked]
            self._waiting = [w for w in self._waiting if w[0] is not asked]
        if waited:
            self._call_soon(asked.done, messages.FRONTEND_NO_REPLY.render(timeout=self.timeout, op=asked.request["op"]))

    def _on_timeout(self, request_id: int) -> None:
        with self._lock:
            entry = self._pending.pop(request_id, None)
            self._reply_routes.pop(request_id, None)
        if entry is None:
            return
        request, done, _, _ = entry
        message = messages.FRONTEND_NO_REPLY.render(timeout=self.timeout, op=request["op"])
        self._call_soon(done, message)

    def _call_soon(self, func: Callable, *args: Any) -> None:
        kernel_compat.call_soon(self.shell, func, *args)

    def _fail_pending(self, error: str) -> None:
        with self._lock:
            pending, self._pending = self._pending, {}
            waiting, self._waiting = self._waiting, []
            self._reply_routes.clear()
        for _request, done, timer, _ in pending.values():
            if timer is not None:
                timer.cancel()
            done(error)
        for asked, timer in waiting:
            timer.cancel()
            asked.done(error)

    def one_undo_step(self) -> None:
        """Every insert, edit and delete asked from now on while handling the kernel request being handled now
        (an agent turn's cell) is one step of the notebook's undo: each names that request (``undo_group``).
        A later request (the Undo button's click, ``%gemini undo``) makes steps of its own."""
        group = kernel_compat.request_id(self.shell)
        if group is not None:
            with self._lock:
                self._one_step = [*self._one_step[-(KEPT_GROUPS - 1) :], group]

    def set_source(self, cell_id: str, source: str, done: Done) -> None:
        self._request("set_source", {"cell_id": cell_id, "source": source}, done)

    def insert_cell(
        self, after_id: str | None, source: str, cell_type: str, done: Done, cell: dict[str, Any] | None = None
    ) -> str:
        """Insert a cell right below ``after_id`` (None: at the top). Returns the new cell's id.

        ``cell``: a removed cell's nbformat JSON to put back as it was (its id,
        metadata, outputs and execution count).
        """
        fields: dict[str, Any] = {"after_id": after_id, "source": source, "cell_type": cell_type}
        if cell is not None:
            fields["cell"] = cell
        new_id = cell["id"] if cell is not None and isinstance(cell.get("id"), str) else _new_cell_id()
        self._request("insert_cell", {**fields, "cell_id": new_id}, done)
        return new_id

    def delete_cell(self, cell_id: str, done: Done, on_removed: OnRemoved | None = None) -> None:
        """Delete a cell; ``on_removed`` gets its nbformat JSON (from the frontend's reply) before ``done``."""

        def keep(data: dict) -> None:
            if on_removed is not None and isinstance(data.get("cell"), dict):
                on_removed(data["cell"])

        self._request("delete_cell", {"cell_id": cell_id}, done, keep)

    def set_outputs(self, cell_id: str, outputs: list[dict[str, Any]], execution_count: int | None, done: Done) -> None:
        self._request("set_outputs", {"cell_id": cell_id, "outputs": outputs, "execution_count": execution_count}, done)

    def save_view(self, model_id: str, data: dict[str, str]) -> None:
        self._send({"type": "saved_view", "model_id": model_id, "data": data})
