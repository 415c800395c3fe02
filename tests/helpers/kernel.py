"""A real IPython kernel driven the way a notebook frontend drives it.

Execute requests carry ``metadata.cellId`` as JupyterLab sends it; widget
models are tracked from iopub ``comm_open``/``comm_msg``; a button click is the
comm message a browser sends. No SDK or IPython internals are touched.
"""

from __future__ import annotations

import os
import queue
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from jupyter_client.manager import KernelManager

FAKE_KEY = "AIzaFAKE-test-key-0123456789"  # the key every test kernel gets: it must never show up anywhere


def point_sdk_at(mp: Any, url: str, key: str = FAKE_KEY) -> None:
    """Make this process's SDK talk to ``url`` with ``key`` and no other key (``mp``: a pytest MonkeyPatch)."""
    mp.setenv("GOOGLE_GEMINI_BASE_URL", url)
    mp.setenv("GEMINI_API_KEY", key)
    mp.delenv("GOOGLE_API_KEY", raising=False)


@dataclass
class Run:
    reply: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def stdout(self) -> str:
        return "".join(
            m["content"]["text"]
            for m in self.messages
            if m["msg_type"] == "stream" and m["content"]["name"] == "stdout"
        )

    @property
    def stderr(self) -> str:
        return "".join(
            m["content"]["text"]
            for m in self.messages
            if m["msg_type"] == "stream" and m["content"]["name"] == "stderr"
        )

    @property
    def plain(self) -> str:
        """All text an output area shows: streams and every text/plain or markdown."""
        chunks = []
        for m in self.messages:
            if m["msg_type"] == "stream":
                chunks.append(m["content"]["text"])
            elif m["msg_type"] in ("display_data", "update_display_data", "execute_result"):
                data = m["content"]["data"]
                chunks.append(data.get("text/markdown") or data.get("text/plain", ""))
            elif m["msg_type"] == "error":
                chunks.append("\n".join(m["content"]["traceback"]))
        return "\n".join(chunks)

    @property
    def area(self) -> list[str]:
        """The cell's outputs as a frontend shows them at the end: each in its place, display updates applied."""
        area: list[str] = []
        where: dict[str, int] = {}
        for m in self.messages:
            if m["msg_type"] not in ("display_data", "update_display_data", "stream"):
                continue
            content = m["content"]
            text = content["text"] if m["msg_type"] == "stream" else content["data"].get("text/plain", "")
            display_id = content.get("transient", {}).get("display_id")
            if m["msg_type"] == "update_display_data":
                area[where[display_id]] = text
                continue
            if display_id:
                where[display_id] = len(area)
            area.append(text)
        return area

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [m for m in self.messages if m["msg_type"] == "error"]


def start_kernel(env: dict[str, str] | None, cwd: str | None, timeout: float = 60):
    """A real ipykernel (this interpreter's), with ``env`` on top of ours; its manager and client."""
    km = KernelManager(kernel_name="python3")
    km.start_kernel(env={**os.environ, **(env or {})}, cwd=cwd)
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=timeout)
    return km, kc


def stop_kernel(km: KernelManager) -> None:
    # Under coverage (.ci/run) a kernel is asked to exit, so it writes its coverage data; a killed one cannot.
    # A kernel that already exited (a test ended it) is cleaned up as before.
    graceful = bool(os.environ.get("COVERAGE_PROCESS_START")) and km.is_alive()
    km.shutdown_kernel(now=not graceful)


class Kernel:
    def __init__(self, env: dict[str, str] | None = None, cwd: str | None = None):
        self.km, self.kc = start_kernel(env, cwd)
        self.models: dict[str, dict[str, Any]] = {}  # widget comm id -> state
        self.comm_messages: list[dict[str, Any]] = []  # every comm message from the kernel
        self._pending: dict[str, list[dict[str, Any]]] = {}  # running cells' iopub so far

    def close(self) -> None:
        self.kc.stop_channels()
        stop_kernel(self.km)

    def _collect(self, msg_id: str, timeout: float) -> list[dict[str, Any]]:
        messages = []
        while True:
            try:
                msg = self.kc.get_iopub_msg(timeout=timeout)
            except queue.Empty:
                raise TimeoutError(f"no idle from the kernel within {timeout} s") from None
            self._track(msg)
            parent = msg["parent_header"].get("msg_id")
            if parent != msg_id:
                if parent in self._pending:
                    self._pending[parent].append(msg)
                continue
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                return messages
            messages.append(msg)

    def _track(self, msg: dict[str, Any]) -> None:
        kind = msg["msg_type"]
        content = msg["content"]
        if kind == "comm_open":
            self.comm_messages.append(msg)
            if content.get("target_name") == "jupyter.widget":
                self.models[content["comm_id"]] = dict(content["data"].get("state", {}))
        elif kind == "comm_msg":
            self.comm_messages.append(msg)
            data = content["data"]
            if content["comm_id"] in self.models and data.get("method") == "update":
                self.models[content["comm_id"]].update(data.get("state", {}))

    def run(self, source: str, cell_id: str | None = None, timeout: float = 60) -> Run:
        return self.finish(self.start(source, cell_id), timeout)

    def start(self, source: str, cell_id: str | None = None) -> str:
        """Send an execute request without waiting for it (the cell keeps running)."""
        cell_id = cell_id or f"cell-{uuid.uuid4().hex[:8]}"
        content = {
            "code": source,
            "silent": False,
            "store_history": True,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": True,
        }
        return self.send_execute(content, {"cellId": cell_id})

    def send_execute(self, content: dict[str, Any], metadata: dict[str, Any]) -> str:
        """Send an execute request shaped by the caller (another frontend's fields); its msg id."""
        msg = self.kc.session.msg("execute_request", content, metadata=metadata)
        self.kc.shell_channel.send(msg)
        self._pending[msg["header"]["msg_id"]] = []
        return msg["header"]["msg_id"]

    def finish(self, msg_id: str, timeout: float = 60) -> Run:
        messages = self._pending.pop(msg_id) + self._collect(msg_id, timeout)
        reply = self.kc.get_shell_msg(timeout=timeout)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = self.kc.get_shell_msg(timeout=timeout)
        return Run(reply=reply, messages=messages)

    def wait_until(self, predicate, msg_id: str, timeout: float = 60) -> None:
        """Pump iopub of a running cell until ``predicate(self)`` holds."""
        deadline = time.monotonic() + timeout
        while not predicate(self):
            if time.monotonic() > deadline:
                raise TimeoutError(f"condition not met within {timeout} s")
            try:
                msg = self.kc.get_iopub_msg(timeout=1)
            except queue.Empty:
                continue
            self._track(msg)
            if msg["parent_header"].get("msg_id") == msg_id:
                self._pending[msg_id].append(msg)

    def so_far(self, msg_id: str) -> Run:
        """What a running cell has shown so far (pumped by ``wait_until``)."""
        return Run({}, list(self._pending[msg_id]))

    def wait_for_button(self, description: str, msg_id: str, timeout: float = 60) -> str:
        self.wait_until(lambda k: k.buttons(description), msg_id, timeout)
        return self.buttons(description)[-1]

    def buttons(self, description: str) -> list[str]:
        return [
            cid
            for cid, s in self.models.items()
            if s.get("_model_name") == "ButtonModel" and s.get("description") == description
        ]

    def click(
        self, description: str, index: int = -1, timeout: float = 30, wait: bool = True, comm_id: str | None = None
    ) -> Run:
        """Click the button (the most recent one by default, or the one of ``comm_id``) as a browser does.

        ``wait=False`` while a cell is running: the kernel handles the click
        inside that cell's execution, so the cell's reply is what to wait for.
        """
        if comm_id is None:
            comm_id = self.buttons(description)[index]
        elif comm_id not in self.buttons(description):
            raise ValueError(f"no {description!r} button {comm_id}")
        data = {"method": "custom", "content": {"event": "click"}}
        msg = self.kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
        self.kc.shell_channel.send(msg)
        if not wait:
            return Run(reply={})
        return Run(reply={}, messages=self._collect(msg["header"]["msg_id"], timeout))

    def state(self, comm_id: str) -> dict[str, Any]:
        return self.models[comm_id]

    def html_values(self) -> list[str]:
        return [s.get("value", "") for s in self.models.values() if s.get("_model_name") == "HTMLModel"]


def notebook_kernel(stub: Any, nb: Any, key: str | None = FAKE_KEY, **extra: str) -> Kernel:
    """A kernel with the extension loaded whose notebook is ``nb`` (JPY_SESSION_NAME): it keeps a record."""
    env = {"GOOGLE_GEMINI_BASE_URL": stub.url, "JPY_SESSION_NAME": str(nb), **extra}
    env["GEMINI_API_KEY"] = key or ""
    k = Kernel(env=env, cwd=str(nb.parent))
    k.run("%load_ext genai_magics", cell_id="setup")
    return k


def restart(k: Kernel) -> None:
    """Kill the kernel (its record holds what it wrote) and start it again with the extension loaded."""
    k.km.restart_kernel(now=True)
    k.kc.wait_for_ready(timeout=60)
    k.models.clear()
    k.run("%load_ext genai_magics", cell_id="setup")
