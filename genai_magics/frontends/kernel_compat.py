"""Every reliance on ipykernel's and IPython's private or version-bound behaviour, but one, in one place.

(The one: IPython's ``shell.compile._filename_map``, read by ``sources/last_error.py``'s
``execution_count_of`` alone, since the sources layer cannot import this one.)

Each function checks the version it was written for and answers "not
available" elsewhere, so a kernel upgrade degrades (staged Apply, default
routing) instead of breaking a cell.
"""

from __future__ import annotations

import functools
import re
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


@functools.lru_cache(maxsize=1)
def ipykernel_version() -> tuple[int, int] | None:
    try:
        import ipykernel
    except ImportError:
        return None
    major, minor = (int(x) for x in re.findall(r"\d+", ipykernel.__version__)[:2])
    return major, minor


def dispatches_comms_while_awaiting() -> bool:
    """ipykernel >= 7.4 handles comm messages (widget clicks) while an async cell awaits."""
    version = ipykernel_version()
    return version is not None and version >= (7, 4)


def can_poll_comms() -> bool:
    """ipykernel 6 with jupyter-ui-poll can pump comm messages from a blocking wait
    (7.0-7.3 cannot: jupyter-ui-poll does not process comm messages there)."""
    version = ipykernel_version()
    if version is None or version[0] >= 7:
        return False
    try:
        import jupyter_ui_poll  # noqa: F401
    except ImportError:
        return False
    return True


def runs_async_cells(shell: Any) -> bool:
    """A cell with top-level ``await`` runs on the kernel's asyncio loop (not with
    ``%autoawait off``, not with a trio/curio runner, not outside a kernel)."""
    if getattr(shell, "kernel", None) is None or not getattr(shell, "autoawait", False):
        return False
    try:
        from IPython.core.interactiveshell import _asyncio_runner  # private, used by ipykernel the same way
    except ImportError:
        return False
    return shell.loop_runner is _asyncio_runner


@contextmanager
def interruptible() -> Iterator[None]:
    """The stop button raises KeyboardInterrupt in the blocking request, also in an async
    (%%gemini_edit) cell, where ipykernel's own SIGINT handler waits for the coroutine to yield."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)


# -- comm routing on kernel subshells (ipykernel >= 7.4) --------------------------------------------


def set_comm_reply_router(comm: Any, route: Callable[[Any, Any], Any]) -> bool:
    """Choose the subshell each incoming message of ``comm`` is handled on.

    ipykernel 7.4 routes a comm's messages to the thread that last sent on it
    (``Comm._reply_subshell_for``, measured on 7.4); older kernels use the
    message header. False where the hook is not known to work.
    """
    version = ipykernel_version()
    if version is None or version < (7, 4) or not hasattr(comm, "_reply_subshell_for"):
        return False
    comm._reply_subshell_for = route
    return True


def subshell_exists(shell: Any, subshell_id: str | None) -> bool:
    """Whether a kernel subshell is still there (None: the main shell, always)."""
    if subshell_id is None:
        return True
    try:
        shell.kernel.shell_channel_thread.manager.get_shell_channel_to_subshell_socket(subshell_id)
        return True
    except Exception:  # no subshells in this ipykernel, or that one was deleted
        return False


def current_subshell(shell: Any) -> str | None:
    """The subshell of the message being handled now (None: the main shell)."""
    try:
        parent = shell.kernel.get_parent()
        return (parent.get("header") or {}).get("subshell_id")
    except Exception:  # ipykernel < 7 has no subshells
        return None


def request_id(shell: Any) -> str | None:
    """The msg_id of the request being handled now (None outside a kernel): the parent every output of the
    running cell is sent with."""
    try:
        msg_id = (shell.kernel.get_parent().get("header") or {}).get("msg_id")
    except Exception:  # not in a kernel
        return None
    return msg_id if isinstance(msg_id, str) else None


def call_soon(shell: Any, func: Callable, *args: Any) -> None:
    """Run on the kernel's main event loop when there is one (thread-safe), else now."""
    loop = getattr(getattr(shell, "kernel", None), "io_loop", None)
    if loop is not None:
        try:
            loop.add_callback(func, *args)
            return
        except Exception:
            pass
    func(*args)


def request_metadata(shell: Any) -> dict:
    """The metadata of the execute request being handled now ({} outside a kernel): JupyterLab's and
    Notebook 7's bridge adds the notebook's path there, known before any comm message of this kernel."""
    try:
        metadata = shell.kernel.get_parent().get("metadata")
    except Exception:  # not in a kernel
        return {}
    return metadata if isinstance(metadata, dict) else {}
