"""The session's most recent exception as one context piece (``--error``).

IPython keeps the last exception the user saw in ``sys.last_type`` /
``sys.last_value`` / ``sys.last_traceback`` (and ``sys.last_exc`` on 3.12+):
``InteractiveShell.showtraceback`` stores them through ``_get_exc_info``. The
traceback is trimmed to the frames of notebook cells (IPython's own frames,
``run_code`` and friends, say nothing about the user's bug), repeated frames are
collapsed, and the text is capped, all deterministically: the same error gives
the same text and so the same hash, and is never sent twice in a conversation.

No IPython import: the shell is only read through ``getattr``.
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..engine.context import ContextPiece
from ..engine.text import ELLIPSIS, clip, sendable

LAST_ERROR_FIELD = "lastError"
DEFAULT_ERROR_PROMPT = "Explain this error and how to fix it."
MAX_TRACEBACK_CHARS = 4_000

_EXC_CHARS = 1_000  # the exception line(s) at the end of the traceback
_MESSAGE_CHARS = 1_000
_LINE_CHARS = 200  # one source line of a frame
_CAUSE_CHARS = 300
_KEEP_FIRST = 2  # frames kept at the top when the middle is cut

_IPYTHON_INPUT = re.compile(r"<ipython-input-(\d+)-[0-9a-fA-F]+>")
_IPYKERNEL_FILE = re.compile(r"ipykernel_\d+[/\\]\d+\.py$")

CellForFilename = Callable[[str], "tuple[str | None, str | None]"]


@dataclass(frozen=True)
class LastError:
    type: str  # "ZeroDivisionError", "pandas.errors.ParserError"
    message: str
    traceback: str  # trimmed to notebook cells, ending with the exception line
    cell_label: str | None  # the cell that raised it: "In[7]" or a cell id
    cell_id: str | None


# -- cells ----------------------------------------------------------------------
def execution_count_of(shell: Any, filename: str) -> int | None:
    """The execution count of the cell IPython compiled under ``filename``, if it was one.

    The one reader of IPython's private ``shell.compile._filename_map`` (every filename a cell was
    compiled under -> its count), with IPython's public ``<ipython-input-N-…>`` naming as fallback.
    """
    fmap = getattr(getattr(shell, "compile", None), "_filename_map", None)
    number = fmap.get(filename) if isinstance(fmap, dict) else None
    if number is None:
        m = _IPYTHON_INPUT.fullmatch(filename)
        number = int(m.group(1)) if m else None
    return number


def default_cell_for_filename(shell: Any) -> CellForFilename:
    """IPython's own naming: ``<ipython-input-7-…>`` or ipykernel's ``/tmp/ipykernel_*/N.py``.

    The shell's compiler maps every filename it compiled a cell under to the
    cell's execution count (``shell.compile._filename_map``); the result is
    ``(None, "In[7]")`` for a cell, ``(None, None)`` for any other file.
    """

    def mapping(filename: str) -> tuple[str | None, str | None]:
        number = execution_count_of(shell, filename)
        if number is not None:
            return None, f"In[{number}]"
        if _IPYKERNEL_FILE.search(filename):
            return None, f"cell {os.path.basename(filename)}"
        return None, None

    return mapping


def _cell_resolver(shell: Any, cell_for_filename: CellForFilename | None) -> CellForFilename:
    default = default_cell_for_filename(shell)
    cache: dict[str, tuple[str | None, str | None]] = {}

    def resolve(filename: str) -> tuple[str | None, str | None]:
        if filename in cache:
            return cache[filename]
        cell_id = label = None
        if cell_for_filename is not None:
            try:
                found = cell_for_filename(filename)
                if isinstance(found, tuple) and len(found) == 2:
                    cell_id, label = found
            except Exception:  # noqa: BLE001 - a broken mapping must not hide the error
                cell_id = label = None
        if cell_id is None and label is None:
            cell_id, label = default(filename)
        elif label is None:
            label = default(filename)[1] or f"cell {cell_id}"
        cache[filename] = (cell_id, label)
        return cell_id, label

    return resolve


# -- text -------------------------------------------------------------------------
def _type_name(t: type) -> str:
    module = getattr(t, "__module__", None)
    qualname = getattr(t, "__qualname__", t.__name__)
    return qualname if module in (None, "builtins", "__main__") else f"{module}.{qualname}"


def _message(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError) and exc.msg:
        return clip(str(exc.msg), _MESSAGE_CHARS)
    try:
        return clip(str(exc), _MESSAGE_CHARS)
    except Exception as inner:  # noqa: BLE001
        return f"<str() failed: {type(inner).__name__}>"


def _exception_only(exc: BaseException, resolve: CellForFilename) -> str:
    try:
        text = "".join(traceback.format_exception_only(type(exc), exc)).rstrip("\n")
    except Exception:  # noqa: BLE001
        text = f"{_type_name(type(exc))}: {_message(exc)}"
    filename = getattr(exc, "filename", None) if isinstance(exc, SyntaxError) else None
    if isinstance(filename, str):
        label = resolve(filename)[1]
        if label:
            text = text.replace(f'File "{filename}"', label, 1)
    return clip(text, _EXC_CHARS)


def _chained(exc: BaseException) -> str | None:
    if exc.__cause__ is not None:
        how, other = "caused by", exc.__cause__
    elif exc.__context__ is not None and not exc.__suppress_context__:
        how, other = "raised while handling", exc.__context__
    else:
        return None
    return clip(f"({how} {_type_name(type(other))}: {_message(other)})", _CAUSE_CHARS)


def _short_path(path: str) -> str:
    norm = path.replace("\\", "/")
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in norm:
            return norm.rsplit(marker, 1)[1]
    parts = norm.split("/")
    return "/".join(parts[-2:]) if len(parts) > 1 else norm


def _is_shell_internal(path: str) -> bool:
    norm = path.replace("\\", "/")
    return any(f"/{pkg}/" in norm for pkg in ("IPython", "ipykernel"))


def _frame_text(label: str, frame: traceback.FrameSummary) -> str:
    where = f"  {label}, line {frame.lineno}, in {frame.name}"
    line = (frame.line or "").strip()
    return f"{where}\n    {clip(line, _LINE_CHARS)}" if line else where


def _collapse(frames: list[tuple[str, traceback.FrameSummary]]) -> list[str]:
    """Frame texts, with runs of the same frame (recursion) collapsed as Python does."""
    out: list[str] = []
    last_key: tuple | None = None
    repeats = 0
    for label, frame in frames:
        key = (label, frame.lineno, frame.name)
        if key == last_key:
            repeats += 1
            continue
        if repeats:
            out.append(f"  [previous frame repeated {repeats} more times]")
        repeats = 0
        last_key = key
        out.append(_frame_text(label, frame))
    if repeats:
        out.append(f"  [previous frame repeated {repeats} more times]")
    return out


def _fit(blocks: list[str], budget: int) -> list[str]:
    """Keep the first frames and as many of the innermost as fit in ``budget`` chars."""
    if sum(len(b) + 1 for b in blocks) <= budget:
        return blocks
    head = [clip(b, max(budget // 4, 1)) for b in blocks[:_KEEP_FIRST]]
    used = sum(len(b) + 1 for b in head) + 40
    tail: list[str] = []
    for b in reversed(blocks[_KEEP_FIRST:]):
        if used + len(b) + 1 > budget:
            break
        tail.insert(0, b)
        used += len(b) + 1
    left_out = len(blocks) - len(head) - len(tail)
    return head + [f"  {ELLIPSIS} {left_out} frames left out {ELLIPSIS}"] + tail


def _render_traceback(
    exc: BaseException, tb: Any, resolve: CellForFilename, max_chars: int
) -> tuple[str, str | None, str | None]:
    """(trimmed traceback text, cell_id, cell_label) of the cell that raised ``exc``."""
    try:
        summary = traceback.extract_tb(tb) if tb is not None else []
    except Exception:  # noqa: BLE001
        summary = []
    cells: list[tuple[str, traceback.FrameSummary]] = []
    raised_in: tuple[str | None, str | None] = (None, None)
    for frame in summary:
        cell_id, label = resolve(frame.filename)
        if label is not None:
            cells.append((label, frame))
            raised_in = (cell_id, label)
    other = len(summary) - len(cells)
    blocks = _collapse(cells)
    cell_syntax_error = False
    if isinstance(exc, SyntaxError) and isinstance(exc.filename, str):
        cell_id, label = resolve(exc.filename)
        if label is not None:  # the cell did not compile: its line and caret say it all
            raised_in = (cell_id, label)
            cell_syntax_error = True
    inner = summary[-1] if summary else None
    if (
        inner is not None
        and not cell_syntax_error
        and inner is not (cells[-1][1] if cells else None)
        and not _is_shell_internal(inner.filename)
    ):
        # Raised inside a library the cell called: say where, without its source.
        blocks.append(f"  (raised inside {_short_path(inner.filename)}, line {inner.lineno}, in {inner.name})")
        other -= 1

    ending = _exception_only(exc, resolve)
    chained = _chained(exc)
    if chained:
        ending += "\n" + chained
    if not blocks:
        return clip(ending, max_chars), raised_in[0], raised_in[1]
    heading = "Traceback (notebook cells only"
    heading += f"; {other} other frame{'s' if other != 1 else ''} left out):" if other > 0 else "):"
    budget = max_chars - len(heading) - len(ending) - 2
    body = _fit(blocks, budget) if budget > 0 else []
    text = "\n".join([heading, *body, ending])
    return clip(text, max_chars), raised_in[0], raised_in[1]


# -- public API -------------------------------------------------------------------
def _last_exception() -> tuple[BaseException, Any] | None:
    exc = getattr(sys, "last_exc", None) if sys.version_info >= (3, 12) else None
    if not isinstance(exc, BaseException):
        exc = getattr(sys, "last_value", None)
    if not isinstance(exc, BaseException):
        return None
    tb = getattr(sys, "last_traceback", None) if getattr(sys, "last_value", None) is exc else None
    return exc, tb if tb is not None else exc.__traceback__


def capture_last_error(
    shell: Any,
    cell_for_filename: CellForFilename | None = None,
    *,
    max_chars: int = MAX_TRACEBACK_CHARS,
) -> LastError | None:
    """The most recent exception the user saw, or None when there was none yet.

    ``cell_for_filename(filename)`` maps a frame's filename to ``(cell_id, label)``
    or ``(None, None)``; filenames it does not know fall back to IPython's own
    naming (``default_cell_for_filename``). Frames outside notebook cells are
    left out; the exception line is always kept; the traceback is at most
    ``max_chars`` characters.
    """
    found = _last_exception()
    if found is None:
        return None
    exc, tb = found
    resolve = _cell_resolver(shell, cell_for_filename)
    text, cell_id, label = _render_traceback(exc, tb, resolve, max_chars)
    return LastError(
        type=_type_name(type(exc)),
        message=_message(exc),
        traceback=text,
        cell_label=label,
        cell_id=cell_id,
    )


def render_error(err: LastError) -> str:
    """The compact text the model gets: type, message, the cell, the trimmed traceback."""
    where = err.cell_label or "an unknown cell"
    if err.cell_id and err.cell_id != err.cell_label:
        where += f" (cell id {err.cell_id})"
    if err.traceback:  # it ends with the exception line: type and message
        return f"{err.type} raised in {where}\n{err.traceback}"
    return f"{err.type} raised in {where}: {err.message}"


def error_piece(err: LastError) -> ContextPiece:
    """One ``lastError`` piece: the same error gives the same sha, a new error a new one."""
    return ContextPiece(LAST_ERROR_FIELD, sendable(render_error(err)))
