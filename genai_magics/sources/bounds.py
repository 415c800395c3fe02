"""The bound on one function call's time: a deadline the loops check, and an alarm for user code.

The loops of the functions (lines searched, variables listed) check the deadline between steps;
a step that runs user code (a ``__repr__``, a lazy object's ``__sizeof__``) cannot be checked from
outside, so in the main thread a ``SIGALRM`` timer raises :class:`PastBound` inside it when the
deadline passes (Python code only: a C loop that never returns to the interpreter is not stopped,
the stop button still is). The timer is used only when nobody else's is: a user's own ``SIGALRM``
handler or running interval timer is left alone, and the checks alone bound the call.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


class PastBound(Exception):
    """The call used up its time: an error result the model reads, one line in the cell."""


@dataclass(frozen=True)
class Deadline:
    at: float  # time.monotonic()

    def remaining(self) -> float:
        return self.at - time.monotonic()

    def check(self) -> None:
        if self.remaining() <= 0:
            raise PastBound


def _raise(_signum: int, _frame: object) -> None:
    raise PastBound


def _alarm_free() -> bool:
    """Whether this thread may set SIGALRM's timer: the main thread, with no handler or timer of the user's."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        return False
    return signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None) and signal.getitimer(signal.ITIMER_REAL) == (
        0.0,
        0.0,
    )


@contextmanager
def bounded(seconds: float) -> Iterator[Deadline]:
    """A deadline ``seconds`` from now, with the alarm set for it where it may be."""
    deadline = Deadline(time.monotonic() + seconds)
    alarm = _alarm_free()
    if alarm:
        signal.signal(signal.SIGALRM, _raise)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield deadline
    finally:
        if alarm:
            try:  # an alarm firing right here still leaves the handler restored
                signal.setitimer(signal.ITIMER_REAL, 0)
            finally:
                signal.signal(signal.SIGALRM, signal.SIG_DFL)
