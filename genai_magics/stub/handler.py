"""The stand-in's HTTP plumbing: the server class and the request handler, which reads a request,
answers a control route (``control.py``) or an API request (``api.py``), and writes JSON or a
stream of server-sent events (paced, or cut where a fault says)."""

from __future__ import annotations

import json
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from . import api, control
from .replies import Reply
from .state import StubState


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up (a cancelled stream, a closed keep-alive) is not an error here.
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


def make_handler(stub: StubState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "genai-magics-stub/1"
        # Headers and body (and each streamed event) are separate writes: with Nagle's algorithm
        # each small write after the first waits for the client's delayed ACK, ~40 ms a response.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet by default
            pass

        # -- plumbing -----------------------------------------------------------
        def _read_body(self) -> bytes:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                return self.rfile.read(length)
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                data = bytearray()
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        return bytes(data)
                    data += self.rfile.read(size)
                    self.rfile.readline()
            return b""

        def _send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()

        def _send_events(self, reply: Reply) -> None:
            self.send_response(reply.status)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            if reply.cut:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.flush()
            for i, event in enumerate(reply.events or []):
                if i and stub.chunk_delay:
                    stub.pause(stub.chunk_delay)
                if stub.token_rate and i < len(reply.paced):  # the model writes at a fixed speed
                    stub.pause(reply.paced[i] / stub.token_rate)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                self.wfile.flush()
            if reply.cut:
                # Mid-stream failure: no terminating chunk, the socket just closes.
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _dispatch(self, method: str) -> None:
            try:
                self._dispatch_inner(method)
            except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
                self.close_connection = True

        def _dispatch_inner(self, method: str) -> None:
            split = urlsplit(self.path)
            path = split.path
            query = dict(parse_qsl(split.query, keep_blank_values=True))
            raw = self._read_body()
            if path.startswith(control.PREFIX):
                self._control(method, path, raw)
                return
            has_key = bool((self.headers.get("x-goog-api-key") or "").strip())
            reply, record, fault = api.handle_api(stub, method, path, query, raw, has_key)
            stub.add_record(record)
            if fault and fault["fault"] == "delay":
                stub.pause(fault["seconds"])
            if reply.events is not None:
                self._send_events(reply)
            else:
                self._send_json(reply.status, reply.body, reply.headers)

        def _control(self, method: str, path: str, raw: bytes) -> None:
            try:
                body = json.loads(raw) if raw else {}
            except ValueError:
                self._send_json(400, {"error": "body is not JSON"})
                return
            self._send_json(*control.answer(stub, method, path, body))

        def do_GET(self) -> None:
            self._dispatch("GET")

        def do_POST(self) -> None:
            self._dispatch("POST")

        def do_DELETE(self) -> None:
            self._dispatch("DELETE")

        def do_PUT(self) -> None:
            self._dispatch("PUT")

        def do_PATCH(self) -> None:
            self._dispatch("PATCH")

    return Handler
