"""The package's own background threads: a type, so the output capture can tell their writes from a cell's."""

from __future__ import annotations

import threading
from collections.abc import Callable


class BackgroundThread(threading.Thread):
    """A daemon thread of the package's (the SDK's warm-up, the record's flush). What it
    prints (a library's log line from the warm-up, say) is no cell's output: counted as one it would reach the
    model as context and make a restarted kernel's replay miss, whenever the thread happened to print while a
    user's cell ran."""

    def __init__(self, target: Callable[[], object], name: str) -> None:
        super().__init__(target=target, name=f"genai_magics {name}", daemon=True)


def in_background() -> bool:
    """The calling thread is one of the package's own."""
    return isinstance(threading.current_thread(), BackgroundThread)
