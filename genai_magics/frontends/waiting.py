"""Letting a running magic cell wait for a click.

Where the frontend honours ``set_next_input(replace=True)`` only for the cell
that is running (VS Code), Apply must happen while the magic cell still runs.
ipykernel >= 7.4 dispatches comm messages while an async cell awaits, so an
``%%gemini_edit`` cell is made async by a post input transformer; on
ipykernel 6 jupyter-ui-poll pumps the messages instead. Elsewhere there is no
way to wait and Apply is staged for the next run of the same cell.
"""
from __future__ import annotations

import inspect
import re
import time
from typing import Any, Callable, Literal

Mechanism = Literal["async", "poll"]
_EDIT_CALL = "get_ipython().run_cell_magic('gemini_edit'"


def mechanism() -> Mechanism | None:
    try:
        import ipykernel
    except ImportError:
        return None
    major, minor = (int(x) for x in re.findall(r"\d+", ipykernel.__version__)[:2])
    if (major, minor) >= (7, 4):
        return "async"
    if major < 7:
        try:
            import jupyter_ui_poll  # noqa: F401
        except ImportError:
            return None
        return "poll"
    return None  # ipykernel 7.0-7.3: comm messages are not processed while a cell waits


async def settle(value: Any) -> Any:
    """Await what the magic returned if it has to wait; otherwise pass it through."""
    return await value if inspect.isawaitable(value) else value


def await_edit_magic(lines: list[str]) -> list[str]:
    """IPython post transformer: run %%gemini_edit cells as async cells."""
    if lines and lines[0].startswith(_EDIT_CALL):
        call = "".join(lines).rstrip("\n")
        return [f"await __import__('genai_magics.frontends.waiting', fromlist=['settle']).settle({call})\n"]
    return lines


async def wait_async(decided: Callable[[], bool], timeout_s: float) -> bool:
    import asyncio  # only here: %load_ext must not pay for it

    deadline = time.monotonic() + timeout_s
    while not decided():
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.05)
    return True


def wait_poll(decided: Callable[[], bool], timeout_s: float) -> bool:
    from jupyter_ui_poll import ui_events

    deadline = time.monotonic() + timeout_s
    with ui_events() as poll:
        while not decided():
            if time.monotonic() >= deadline:
                return False
            poll(10)
            time.sleep(0.05)
    return True
