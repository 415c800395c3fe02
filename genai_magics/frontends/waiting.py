"""Letting a running magic cell wait for a click, or saying plainly that it cannot.

Where the frontend honours ``set_next_input(replace=True)`` only for the cell
that is running (VS Code), Apply must happen while the magic cell still runs.
Two ways exist:

* ipykernel >= 7.4 dispatches comm messages while an async cell awaits. A cell
  becomes async only if its code awaits, so a post input transformer rewrites a
  cell that is *exactly one* ``%gemini_edit`` / ``%%gemini_edit`` call, or
  one ``%gemini_agent`` / ``%%gemini_agent`` call (as IPython spells it)
  into ``await awaited_call(lambda: <that call>)``, and only
  when the shell will run it on asyncio (autoawait on). ``awaited_call`` marks
  the call as awaited; the magic returns something to await only when it sees
  that mark. Any other spelling (a ``for`` loop, more statements, ``%autoawait
  off``) is never rewritten, the magic sees no mark, and Apply is staged.
* ipykernel 6 with jupyter-ui-poll: a blocking wait pumps the messages, in any
  spelling.

ipykernel 7.0-7.3 process no comm message while a cell waits: Apply is staged. An agent cell that
is not awaited still writes, but cannot wait for an approval or a frontend's reply (its ``run_cell``
gets an error result the model reads).
"""

from __future__ import annotations

import ast
import contextvars
import inspect
import time
from collections.abc import Callable
from typing import Any, Literal

from . import kernel_compat

Mechanism = Literal["async", "poll"]
_AWAITED_MAGICS = ("gemini_edit", "gemini_agent")  # the magics whose lone call is awaited
_MAGIC_CALLS = ("run_cell_magic", "run_line_magic")
_awaited: contextvars.ContextVar[bool] = contextvars.ContextVar("genai_magics_awaited", default=False)


def mechanism() -> Mechanism | None:
    """How this kernel can let a running cell see a click, if at all."""
    if kernel_compat.dispatches_comms_while_awaiting():
        return "async"
    if kernel_compat.can_poll_comms():
        return "poll"
    return None


def will_be_awaited() -> bool:
    """The magic running now was called by :func:`awaited_call`: what it returns is awaited."""
    return _awaited.get()


async def awaited_call(call: Callable[[], Any]) -> Any:
    """Run the magic call with the awaited mark set; await what it returned if it has to wait."""
    token = _awaited.set(True)
    try:
        value = call()
    finally:
        _awaited.reset(token)
    return await value if inspect.isawaitable(value) else value


def _is_awaited_call(node: ast.AST) -> bool:
    """``get_ipython().run_cell_magic('gemini_edit', ...)`` (or ``'gemini_agent'``) or the ``run_line_magic`` form."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _MAGIC_CALLS
        and isinstance(node.func.value, ast.Call)
        and isinstance(node.func.value.func, ast.Name)
        and node.func.value.func.id == "get_ipython"
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value in _AWAITED_MAGICS
    )


def sole_awaited_call(code: str) -> str | None:
    """The call's source when ``code`` is one statement that is exactly an edit or agent magic call."""
    if not any(f"'{name}'" in code for name in _AWAITED_MAGICS):  # cheap: most cells are not
        return None
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Expr) or not _is_awaited_call(tree.body[0].value):
        return None
    return ast.get_source_segment(code, tree.body[0].value)


def await_lone_magic(shell: Any) -> Callable[[list[str]], list[str]]:
    """An IPython post input transformer making a lone edit or agent magic call an awaited one."""

    def transform(lines: list[str]) -> list[str]:
        call = sole_awaited_call("".join(lines))
        if call is None or not kernel_compat.runs_async_cells(shell):
            return lines
        return [
            f"await __import__('genai_magics.frontends.waiting', fromlist=['awaited_call'])"
            f".awaited_call(lambda: {call})\n"
        ]

    return transform


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
