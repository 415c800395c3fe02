"""A local stand-in for the Gemini API, for tests, the demo and benchmarks only.

The real ``google-genai`` SDK talks to it over real HTTP on 127.0.0.1 when
``GOOGLE_GEMINI_BASE_URL`` points here.  Replies are deterministic functions of
the request, so tests can assert on them.  Standard library only.

Served routes (what the SDK calls):

* ``POST /v1/models/{model}:generateContent``
* ``POST /v1/models/{model}:streamGenerateContent?alt=sse``
* ``POST /v1/models/{model}:countTokens``
* ``POST /v1/interactions`` (``"stream": true`` answers server-sent events)
* ``GET  /v1/interactions/{id}``
* ``GET  /v1/models`` (``client.models.list()``: the package's default model and three others)
* image parts (``inlineData``; interactions ``{"type": "image"}``) are decoded, recorded by sha256
  and counted as input tokens (``stub/images.py``)
* ``POST /v1/cachedContents``; ``GET``, ``PATCH`` (ttl / expireTime), ``DELETE``
  ``/v1/cachedContents/{id}``: explicit context caches that expire on the
  stand-in's clock

Its modules: ``state.py`` (what it holds and its controls), ``api.py`` (the handlers of the
routes above, and the caching model), ``handler.py`` (the HTTP plumbing), ``control.py``,
``request_record.py``, ``model.py`` and the rest (docs/development.md, Layout).

Control routes (never recorded): ``stub/control.py``, one handler a route in a table.

The API key is only ever checked for presence; its value is never stored.
"""

from __future__ import annotations

import threading
from typing import Any

from .handler import QuietServer, make_handler
from .state import StubState

__all__ = ["StubServer"]

LOOPBACK_HOSTS = ("127.0.0.1", "localhost")


class StubServer(StubState):
    """An in-process Gemini stand-in; ``start()`` serves it from a background thread.

    >>> with StubServer() as stub:          # doctest: +SKIP
    ...     os.environ["GOOGLE_GEMINI_BASE_URL"] = stub.url
    """

    def __init__(
        self,
        port: int = 0,
        host: str = "127.0.0.1",
        chunk_delay: float = 0.0,
        implicit_caching: bool = False,
        token_rate: float = 0.0,
    ):
        if host not in LOOPBACK_HOSTS:
            raise ValueError(f"the stub binds to the loopback interface only, not {host!r}")
        self.host = "127.0.0.1"
        super().__init__(chunk_delay, implicit_caching, token_rate)
        self._httpd = QuietServer((self.host, port), make_handler(self), bind_and_activate=True)
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> StubServer:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.1},
                name=f"genai-stub-{self.port}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes injected delays
        if self._thread is not None:
            self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
