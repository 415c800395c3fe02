"""A fake notebook frontend on jupyter_client that speaks the live-bridge protocol.

It starts a real ipykernel and drives it the way JupyterLab with the
``genai-magics-bridge`` extension does:

- it keeps an in-memory notebook (ids, types, sources, order);
- it registers the comm target ``genai_magics.frontends.bridge``: when the kernel opens
  that comm (iopub ``comm_open``), it pushes a full snapshot;
- before each ``execute_request`` it pushes a snapshot of the cells that
  changed, as a shell ``comm_msg`` with no subshell id (the extension's
  behaviour), then sends the execute request with ``metadata.cellId``;
- it answers ``set_source`` / ``insert_cell`` / ``delete_cell`` / ``set_outputs``
  requests by editing its notebook and replying ``ok`` or an error, as the extension does:
  ``delete_cell`` replies with the removed cell's nbformat JSON (id, metadata,
  outputs, execution count), ``insert_cell`` with a ``cell`` puts that JSON
  back as it was, right below ``after_id``, ``set_outputs`` replaces a code
  cell's outputs and execution count;
- it tracks ipywidgets models (``jupyter.widget`` comm_open / comm_msg) so a
  test can click a button with :meth:`FakeFrontend.click`.

Single-threaded: iopub is read only inside the calls (``execute``,
``comm_msg``, ``pump``), so everything happens in a predictable order.

Usage::

    with FakeFrontend(cells=[("a", "x = 1"), ("m", "%%gemini_edit\\n...")]) as ff:
        ff.execute_code("from genai_magics.frontends.bridge import Bridge; Bridge.attach(get_ipython())")
        ff.edit("a", "x = 2")            # a hand edit, not run
        run = ff.execute("m")           # snapshot with the edit goes first
        run.stdout, run.reply, ff.requests_received, ff.widget_models
"""

from __future__ import annotations

import copy
import queue
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from helpers import protocol
from helpers.kernel import Run as KernelRun
from helpers.kernel import start_kernel, stop_kernel

TARGET = "genai_magics.bridge"
WIDGET_TARGET = "jupyter.widget"


@dataclass
class FakeCell:
    id: str
    source: str
    cell_type: str = "code"
    metadata: dict[str, Any] = field(default_factory=dict)
    outputs: list[dict[str, Any]] = field(default_factory=list)
    execution_count: int | None = None

    def as_dict(self) -> dict[str, str]:
        """What a snapshot carries."""
        return {"id": self.id, "cell_type": self.cell_type, "source": self.source}

    def to_json(self) -> dict[str, Any]:
        """The cell as nbformat JSON (what the extension's ``cell.toJSON()`` gives)."""
        cell: dict[str, Any] = {
            "id": self.id,
            "cell_type": self.cell_type,
            "source": self.source,
            "metadata": copy.deepcopy(self.metadata),
        }
        if self.cell_type == "code":
            cell.update(outputs=copy.deepcopy(self.outputs), execution_count=self.execution_count)
        return cell

    @classmethod
    def from_json(cls, cell: dict[str, Any]) -> FakeCell:
        source = cell.get("source", "")
        return cls(
            cell["id"],
            "".join(source) if isinstance(source, list) else source,
            cell.get("cell_type", "code"),
            copy.deepcopy(cell.get("metadata") or {}),
            copy.deepcopy(cell.get("outputs") or []),
            cell.get("execution_count"),
        )


@dataclass
class Run(KernelRun):
    """What one execute produced (the harness's Run, plus the cell it ran)."""

    cell_id: str | None = None

    @property
    def status(self) -> str:
        return self.reply["content"]["status"]

    @property
    def outputs(self) -> list[dict[str, Any]]:
        kinds = ("stream", "display_data", "update_display_data", "execute_result", "error")
        return [m for m in self.messages if m["msg_type"] in kinds]

    @property
    def error(self) -> str | None:
        errs = [m for m in self.messages if m["msg_type"] == "error"]
        if not errs:
            return None
        return "\n".join(errs[-1]["content"]["traceback"])

    @property
    def widget_model_ids(self) -> list[str]:
        ids = []
        for m in self.messages:
            if m["msg_type"] in ("display_data", "execute_result"):
                view = m["content"]["data"].get("application/vnd.jupyter.widget-view+json")
                if view:
                    ids.append(view["model_id"])
        return ids


class FakeFrontend:
    """A notebook frontend with the live-bridge extension, on a real kernel."""

    def __init__(
        self,
        cells: Iterable[tuple[str, str] | tuple[str, str, str] | FakeCell] = (),
        *,
        bridge: bool = True,
        close_unknown_comms: bool = False,
        comm_subshell: bool = False,
        push_before_execute: bool = True,
        path: str = "fake.ipynb",
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        timeout: float = 60.0,
    ):
        """
        bridge: register the ``genai_magics.frontends.bridge`` target (False: a frontend
            without the extension).
        close_unknown_comms: answer a comm_open for an unregistered target with
            comm_close, as JupyterLab does (False: ignore it, as nbclient does).
        comm_subshell: send bridge comm messages on a kernel subshell, as
            JupyterLab 4.6 does for comms by default (the ordering trap).
        push_before_execute: push a snapshot before each execute request.
        """
        self.notebook: list[FakeCell] = [self._as_cell(c) for c in cells]
        self.bridge = bridge
        self.close_unknown_comms = close_unknown_comms
        self.comm_subshell = comm_subshell
        self.push_before_execute = push_before_execute
        self.path = path
        self.timeout = timeout
        self.requests_received: list[dict[str, Any]] = []  # bridge requests from the kernel
        self.saved_views: list[dict[str, Any]] = []  # the kernel's saved_view messages (a widget's saved text)
        self.snapshots_sent: list[dict[str, Any]] = []
        self.widget_models: dict[str, dict[str, Any]] = {}  # widget model id -> state
        self.comm_messages: list[dict[str, Any]] = []  # every comm_open/msg/close from the kernel
        self.bridge_comm_id: str | None = None
        self.refuse_requests: str | None = None  # set to an error text to refuse every request
        self.answer_requests = True  # False: never reply (to test timeouts)
        self._sent: dict[str, FakeCell] | None = None
        self._sent_order: list[str] = []
        self._seq = 0
        self._subshell_id: str | None = None
        self._orphans: dict[str, list[dict[str, Any]]] = {}

        self.km, self.kc = start_kernel(env, cwd, timeout)
        self.kc.kernel_info()
        info = self.kc.get_shell_msg(timeout=timeout)
        self.supported_features: list[str] = info["content"].get("supported_features", [])

    @property
    def supports_subshells(self) -> bool:
        return "kernel subshells" in self.supported_features

    # ------------------------------------------------------------ lifecycle
    def __enter__(self) -> FakeFrontend:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.kc.stop_channels()
        finally:
            stop_kernel(self.km)

    def restart(self) -> None:
        """Restart the kernel: the comm and the widget models are gone."""
        self.km.restart_kernel(now=True)
        self.kc.wait_for_ready(timeout=self.timeout)
        self.bridge_comm_id = None
        self._sent = None
        self._subshell_id = None
        self.widget_models.clear()
        self.pump(0.3)

    # ------------------------------------------------------------- notebook
    @staticmethod
    def _as_cell(c: Any) -> FakeCell:
        if isinstance(c, FakeCell):
            return c
        return FakeCell(*c)

    @property
    def cells(self) -> list[FakeCell]:
        return list(self.notebook)

    def cell(self, cell_id: str) -> FakeCell:
        for c in self.notebook:
            if c.id == cell_id:
                return c
        raise KeyError(cell_id)

    def source(self, cell_id: str) -> str:
        return self.cell(cell_id).source

    def edit(self, cell_id: str, source: str) -> None:
        """A hand edit in the notebook, not run (and not pushed until the next execute)."""
        self.cell(cell_id).source = source

    def add_cell(self, cell_id: str, source: str, cell_type: str = "code", after: str | None = None) -> FakeCell:
        cell = FakeCell(cell_id, source, cell_type)
        if after is None:
            self.notebook.append(cell)
        else:
            self.notebook.insert(self._index(after) + 1, cell)
        return cell

    def remove_cell(self, cell_id: str) -> None:
        self.notebook.pop(self._index(cell_id))

    def move_cell(self, cell_id: str, to_index: int) -> None:
        cell = self.notebook.pop(self._index(cell_id))
        self.notebook.insert(to_index, cell)

    def _index(self, cell_id: str) -> int:
        for i, c in enumerate(self.notebook):
            if c.id == cell_id:
                return i
        raise KeyError(cell_id)

    # ------------------------------------------------------------- sending
    def _send_shell(
        self, msg_type: str, content: dict, metadata: dict | None = None, subshell_id: str | None = None
    ) -> str:
        msg = self.kc.session.msg(msg_type, content, metadata=metadata or {})
        if subshell_id is not None:
            msg["header"]["subshell_id"] = subshell_id
        self.kc.shell_channel.send(msg)
        return msg["header"]["msg_id"]

    def send_helper_code(self, code: str, subshell_id: str | None = None) -> str:
        """Send code that is no notebook cell (``store_history`` off, no cellId), on a subshell if given,
        without waiting: the msg_id."""
        content = {"code": code, "silent": False, "store_history": False, "user_expressions": {}, "allow_stdin": False}
        return self._send_shell("execute_request", content, subshell_id=subshell_id)

    def create_subshell(self) -> str:
        msg = self.kc.session.msg("create_subshell_request", {})
        self.kc.control_channel.send(msg)
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self.kc.get_control_msg(timeout=max(0.1, deadline - time.monotonic()))
            if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                return reply["content"]["subshell_id"]

    def _bridge_subshell(self) -> str | None:
        if not self.comm_subshell:
            return None
        if self._subshell_id is None:
            self._subshell_id = self.create_subshell()
        return self._subshell_id

    def comm_msg(self, comm_id: str, data: dict, *, subshell_id: str | None = None, wait: bool = True) -> str:
        """Send a comm_msg on the shell; with ``wait``, pump iopub until the kernel handled it."""
        msg_id = self._send_shell("comm_msg", {"comm_id": comm_id, "data": data}, subshell_id=subshell_id)
        if wait:
            self._wait_idle(msg_id)
        return msg_id

    def click(self, model_id: str, *, subshell_id: str | None = None, wait: bool = True) -> str:
        """Click an ipywidgets Button the way the browser does."""
        return self.comm_msg(
            model_id, {"method": "custom", "content": {"event": "click"}}, subshell_id=subshell_id, wait=wait
        )

    def buttons(self) -> dict[str, str]:
        """Button description -> model id, for the widget models seen so far."""
        return {
            s.get("description", ""): mid
            for mid, s in self.widget_models.items()
            if s.get("_model_name") == "ButtonModel"
        }

    def statuses(self) -> list[str]:
        """The text of every HTML widget seen so far (a proposal's diff and status line)."""
        return [s.get("value", "") for s in self.widget_models.values() if s.get("_model_name") == "HTMLModel"]

    def click_until(self, label: str, expect: str, timeout: float = 30) -> None:
        """Click the newest button ``label``; wait until one more status line says ``expect``."""
        seen = sum(expect in v for v in self.statuses())
        self.click(self.buttons()[label])
        assert self.pump_until(lambda: sum(expect in v for v in self.statuses()) > seen, timeout=timeout), (
            self.statuses()[-3:]
        )

    def snapshot(self) -> list[dict]:
        """Every cell as notebook JSON."""
        return [c.to_json() for c in self.cells]

    def push_snapshot(self, full: bool = False) -> dict | None:
        """Send the cells that changed since the last push (everything when ``full``)."""
        if self.bridge_comm_id is None:
            return None
        order = [c.id for c in self.notebook]
        data: dict[str, Any] = {"type": "snapshot", "version": 1, "path": self.path}
        if full or self._sent is None:
            data.update(full=True, order=order, cells=[c.as_dict() for c in self.notebook], removed=[])
        else:
            changed = [
                c.as_dict()
                for c in self.notebook
                if c.id not in self._sent
                or self._sent[c.id].source != c.source
                or self._sent[c.id].cell_type != c.cell_type
            ]
            removed = [i for i in self._sent if i not in order]
            data.update(full=False, cells=changed, removed=removed)
            if order != self._sent_order:
                data["order"] = order
        self._seq += 1
        data["seq"] = self._seq
        protocol.check("Snapshot", data)
        self._send_shell(
            "comm_msg", {"comm_id": self.bridge_comm_id, "data": data}, subshell_id=self._bridge_subshell()
        )
        self._sent = {c.id: FakeCell(c.id, c.source, c.cell_type) for c in self.notebook}
        self._sent_order = order
        self.snapshots_sent.append(data)
        return data

    # ------------------------------------------------------------- execute
    def execute(self, cell_id: str, *, timeout: float | None = None) -> Run:
        """Run a notebook cell as JupyterLab does: snapshot first, then the execute request."""
        cell = self.cell(cell_id)
        if self.push_before_execute:
            self.push_snapshot()
        return self._execute(cell.source, cell_id, timeout)

    def execute_code(self, code: str, cell_id: str | None = None, *, timeout: float | None = None) -> Run:
        """Run code that is not a notebook cell (no snapshot pushed)."""
        return self._execute(code, cell_id or f"scratch-{uuid.uuid4().hex[:8]}", timeout)

    def run_all(self, *, timeout: float | None = None) -> list[Run]:
        """Run All as JupyterLab with the extension does it on a fresh kernel (Restart & Run All): every cell's
        execute request sent at once, each naming the notebook in its metadata (``genai_magics.path``: the
        extension is there), no snapshot before them (no comm is open yet); the snapshot answering the
        kernel's comm_open so arrives behind the queued cells."""
        announced = {"genai_magics": {"path": self.path}}
        sent = [
            (c.id, self._send_shell("execute_request", _execute_content(c.source), {"cellId": c.id, **announced}))
            for c in self.notebook
            if c.cell_type == "code"
        ]
        runs = [(cell_id, msg_id, self._wait_idle(msg_id, timeout)) for cell_id, msg_id in sent]
        return [
            Run(reply=self._shell_reply(msg_id, timeout), messages=messages, cell_id=cell_id)
            for cell_id, msg_id, messages in runs
        ]

    def _execute(self, code: str, cell_id: str, timeout: float | None) -> Run:
        msg_id = self._send_shell("execute_request", _execute_content(code), metadata={"cellId": cell_id})
        messages = self._wait_idle(msg_id, timeout)
        reply = self._shell_reply(msg_id, timeout)
        return Run(reply=reply, messages=messages, cell_id=cell_id)

    def _shell_reply(self, msg_id: str, timeout: float | None) -> dict:
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no execute_reply")
            reply = self.kc.get_shell_msg(timeout=remaining)
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply

    def _wait_idle(self, msg_id: str, timeout: float | None = None) -> list[dict]:
        """Handle iopub until the kernel is idle for ``msg_id``; return that parent's messages."""
        deadline = time.monotonic() + (timeout or self.timeout)
        mine = self._orphans.pop(msg_id, [])
        if any(_is_idle(m) for m in mine):
            return mine
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"kernel not idle for {msg_id} within the timeout")
            try:
                msg = self.kc.get_iopub_msg(timeout=remaining)
            except queue.Empty:
                continue
            self._handle(msg)
            parent = msg["parent_header"].get("msg_id")
            if parent == msg_id:
                mine.append(msg)
                if _is_idle(msg):
                    return mine
            elif parent:
                self._orphans.setdefault(parent, []).append(msg)
                if len(self._orphans) > 200:
                    self._orphans.pop(next(iter(self._orphans)))

    def pump(self, duration: float = 0.2) -> list[dict]:
        """Handle whatever iopub messages arrive within ``duration`` seconds."""
        seen = []
        deadline = time.monotonic() + duration
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return seen
            try:
                msg = self.kc.get_iopub_msg(timeout=remaining)
            except queue.Empty:
                return seen
            self._handle(msg)
            parent = msg["parent_header"].get("msg_id")
            if parent:
                self._orphans.setdefault(parent, []).append(msg)
            seen.append(msg)

    def pump_until(self, predicate, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            self.pump(0.05)
        return predicate()

    # ------------------------------------------------------------- iopub
    def _handle(self, msg: dict) -> None:
        kind = msg["msg_type"]
        if kind not in ("comm_open", "comm_msg", "comm_close"):
            return
        self.comm_messages.append(msg)
        content = msg["content"]
        comm_id = content["comm_id"]
        if kind == "comm_open":
            target = content.get("target_name")
            if target == TARGET and self.bridge:
                protocol.check("CommOpen", content["data"])
                self.bridge_comm_id = comm_id
                self._sent = None
                self.push_snapshot(full=True)
            elif target == WIDGET_TARGET:
                self.widget_models[comm_id] = dict(content["data"].get("state", {}))
            elif self.close_unknown_comms:
                self._send_shell("comm_close", {"comm_id": comm_id, "data": {}})
        elif kind == "comm_msg":
            data = content.get("data") or {}
            if comm_id == self.bridge_comm_id:
                self._on_bridge_msg(data)
            elif comm_id in self.widget_models and data.get("method") in ("update", "echo_update"):
                self.widget_models[comm_id].update(data.get("state", {}))
        elif kind == "comm_close":
            if comm_id == self.bridge_comm_id:
                self.bridge_comm_id = None
                self._sent = None
            self.widget_models.pop(comm_id, None)

    def _on_bridge_msg(self, data: dict) -> None:
        protocol.check("ToFrontend", data)  # what the kernel side sends, at run time
        if data.get("type") == "resync":
            self.push_snapshot(full=True)
            return
        if data.get("type") == "saved_view":
            self.saved_views.append(data)
            return
        if data.get("type") != "request":
            return
        self.requests_received.append(data)
        if not self.answer_requests:
            return
        reply: dict[str, Any] = {"type": "reply", "request_id": data.get("request_id")}
        try:
            if self.refuse_requests:
                raise ValueError(self.refuse_requests)
            reply.update(ok=True, **self._perform(data))
        except (KeyError, ValueError) as exc:
            reply.update(ok=False, error=str(exc.args[0]) if exc.args else str(exc))
        protocol.check("Reply", reply)
        self._send_shell(
            "comm_msg", {"comm_id": self.bridge_comm_id, "data": reply}, subshell_id=self._bridge_subshell()
        )

    def _perform(self, req: dict) -> dict:
        op = req.get("op")
        if op == "set_source":
            cell = self._find(req.get("cell_id"))
            cell.source = req["source"]
            return {"cell_id": cell.id}
        if op == "insert_cell":
            index = 0
            new_id = req.get("cell_id") or uuid.uuid4().hex[:8]
            if any(c.id == new_id for c in self.notebook):
                raise ValueError(f"a cell with id {new_id} exists already")
            if req.get("after_id") is not None:
                index = self.notebook.index(self._find(req["after_id"], "the cell to insert below")) + 1
            if isinstance(req.get("cell"), dict):
                cell = FakeCell.from_json({**req["cell"], "id": new_id})
            else:
                cell = FakeCell(new_id, req.get("source", ""), req.get("cell_type", "code"))
            self.notebook.insert(index, cell)
            return {"cell_id": new_id}
        if op == "delete_cell":
            cell = self._find(req.get("cell_id"))
            self.notebook.remove(cell)
            return {"cell_id": cell.id, "cell": cell.to_json()}
        if op == "set_outputs":
            cell = self._find(req.get("cell_id"))
            if cell.cell_type != "code":
                raise ValueError("only a code cell has outputs")  # the words of labextension/src/cells.ts
            cell.outputs = copy.deepcopy(req["outputs"])
            cell.execution_count = req["execution_count"]
            return {"cell_id": cell.id}
        raise ValueError(f"unknown request {op}")

    def _find(self, cell_id: Any, what: str = "the cell") -> FakeCell:
        for c in self.notebook:
            if c.id == cell_id:
                return c
        raise KeyError(f"{what} is no longer in the notebook")  # the words of labextension/src/cells.ts


def _execute_content(code: str) -> dict[str, Any]:
    return {
        "code": code,
        "silent": False,
        "store_history": True,
        "user_expressions": {},
        "allow_stdin": False,
        "stop_on_error": True,
    }


def _is_idle(msg: dict) -> bool:
    return msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle"
