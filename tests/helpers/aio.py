"""A coroutine run to its end from a test, whatever the main thread's event loop is doing.

The browser tests' Playwright (sync API, session-wide) keeps an event loop running in the main
thread for the rest of the session, where ``asyncio.run`` refuses to start; a thread of its own has none.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
