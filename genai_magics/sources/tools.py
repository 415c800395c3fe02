"""The six read-only functions the model may call, run in the kernel (engine/tools.py declares them).

Each returns the context pieces ``--vars``, ``--outputs``, ``--error`` and ``--cell`` would
send, made by the same code: ``inspect_variable(df)`` is ``--vars df``'s piece, ``cell_outputs(3)``
``--outputs 3``'s. None runs user code beyond what ``--vars`` does to summarize a value, none
writes anything. A bad argument or any failure is an error result the model reads, never a
traceback; an interrupt ends the turn.

Each is bounded in what it reveals (it reads the cells as the model may see them: every API key
masked, also where a pattern is matched, so a search cannot answer yes/no about a key) and in
time (``CALL_SECONDS``, sources/bounds.py; ``search_cells``' matcher is the ``regex`` module's,
whose work stops at the call's deadline, where ``re`` can backtrack for hours on one line).
Labels (``In[4]``) are shown beside a result, never hashed into it: a re-run that renumbers
the cells leaves every result, and so a replay, as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import messages
from ..engine.cells import Cell, is_genai_magic
from ..engine.context import ContextPiece, LabelledPiece
from ..engine.errors import UserError
from ..engine.redaction import redact
from ..engine.text import clip, one_line
from ..engine.tools import CALL_SECONDS, Holdings, ToolCall, ToolResult, ToolRound, bad_call, error_result
from .bounds import Deadline, PastBound, bounded
from .last_error import CellForFilename, capture_last_error, error_piece
from .outputs import OutputCapture, shown_pieces
from .variables import variable_list, variable_pieces

CELL_FIELD = "cells"  # read_cell: a cell's source, keyed by its id
SEARCH_FIELD = "search"  # search_cells: keyed by the pattern
_SEARCH_CELLS = 20
_SEARCH_LINES = 5  # matching lines shown per cell


@dataclass(frozen=True)
class ShellReader:
    """The kernel's side the functions read: its shell (namespace, last exception) and traceback files."""

    shell: Any
    cell_for_filename: CellForFilename


@dataclass(frozen=True)
class NotebookTools:
    """What the functions read: the shell's namespace, the notebook as this turn sees it, the caps."""

    shell: Any
    cells: Callable[[], Sequence[Cell]]  # the notebook's cells, in order
    find: Callable[[str, str], Cell]  # a REF as --cell reads it (ref, the name errors give it)
    label: Callable[[Cell], str]  # In[n], or the cell's place in the notebook
    outputs: OutputCapture
    cell_for_filename: CellForFilename
    offered: tuple[str, ...]
    max_var_chars: int
    max_output_chars: int
    max_images: int
    max_image_bytes: int
    max_chars: int  # read_cell, search_cells, list_variables

    def answer(self, call: ToolCall, holdings: Holdings) -> ToolResult:
        """The call run and answered (whole, unchanged, or an error the model reads)."""
        found = self._found(call)
        return error_result(call, found) if isinstance(found, str) else holdings.answer(call, found)

    def same_as_recorded(self, rounds: Sequence[ToolRound]) -> bool:
        """Whether every recorded call would find the same now (a replay needs its results unchanged)."""
        for result in (r for round_ in rounds for r in round_.results):
            found = self._found(result.call)
            now = (
                error_result(result.call, found).identity
                if isinstance(found, str)
                else tuple((p.key, p.sha256) for p in found)
            )
            if now != result.identity:
                return False
        return True

    def _found(self, call: ToolCall) -> list[ContextPiece] | str:
        """What the call finds, or why it cannot (a bad call, a bad argument, any failure: never a traceback)."""
        why = bad_call(call, self.offered)
        if why is not None:
            return why
        try:
            with bounded(CALL_SECONDS) as deadline:
                return self._run(call.name, call.args, deadline)
        except PastBound:
            return messages.TOOL_PAST_BOUND.render(name=call.name, seconds=CALL_SECONDS)
        except UserError as exc:
            return str(exc)
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # noqa: BLE001 - a failure is a result the model reads
            return f"{call.name} failed: {type(exc).__name__}: {one_line(str(exc), 200)}"

    def _run(self, name: str, args: dict[str, Any], deadline: Deadline) -> list[ContextPiece]:
        if name == "list_variables":
            hidden = getattr(self.shell, "user_ns_hidden", {}) or {}
            return [variable_list(self.shell.user_ns, hidden, self.max_chars, deadline)]
        if name == "inspect_variable":
            if args["name"] not in self.shell.user_ns:
                raise UserError(messages.TOOL_NO_VARIABLE, name=args["name"])
            return variable_pieces([args["name"]], self.shell.user_ns, self.max_var_chars)
        if name == "read_cell":
            cell = self.find(args["ref"], name)
            text = clip(redact(f"id={cell.id}\n{cell.source}"), self.max_chars)
            return [LabelledPiece(CELL_FIELD, text, cell.id, label=self.label(cell))]
        if name == "cell_outputs":
            return self._outputs(self.find(args["ref"], name))
        if name == "last_error":
            err = capture_last_error(self.shell, self.cell_for_filename)
            if err is None:
                raise UserError(messages.TOOL_NO_EXCEPTION)
            return [error_piece(err)]
        return [self._search(args["pattern"], deadline)]

    def _outputs(self, cell: Cell) -> list[ContextPiece]:
        """As --outputs sends them: the text, and the images under max_images / max_image_bytes."""
        return shown_pieces(
            self.outputs, cell.id, self.label(cell), self.max_output_chars, self.max_images, self.max_image_bytes
        )

    def _search(self, pattern: str, deadline: Deadline) -> ContextPiece:
        """Cells whose source, as the model may see it (keys masked), holds the pattern: a regular
        expression if it compiles, else the text; the work stops at the deadline (PastBound)."""
        import regex  # ~90 ms to import: paid by the first search, not by %load_ext

        try:
            compiled = regex.compile(pattern, regex.IGNORECASE | regex.VERSION0)
            how = "regular expression"
        except regex.error as exc:
            compiled = regex.compile(regex.escape(pattern), regex.IGNORECASE)
            how = f"text (not a regular expression: {exc})"

        def found(line: str) -> bool:
            try:
                return compiled.search(line, timeout=max(deadline.remaining(), 0.001)) is not None
            except TimeoutError:
                raise PastBound from None

        blocks: list[str] = []
        labels: list[str] = []
        matched = 0
        for cell in self.cells():
            if is_genai_magic(cell.source):
                continue
            lines = [
                f"  {n}: {clip(line, 200)}" for n, line in enumerate(redact(cell.source).splitlines(), 1) if found(line)
            ]
            if not lines:
                continue
            matched += 1
            if matched <= _SEARCH_CELLS:
                more = [f"  … {len(lines) - _SEARCH_LINES} more lines"] if len(lines) > _SEARCH_LINES else []
                blocks.append("\n".join([f"id={cell.id}", *lines[:_SEARCH_LINES], *more]))
                labels.append(f"{self.label(cell)} id={cell.id}")
        head = f"searched as {how}: {matched} cell(s)" + (
            f", the first {_SEARCH_CELLS} shown" if matched > _SEARCH_CELLS else ""
        )
        text = clip("\n\n".join([head, *blocks]), self.max_chars)
        return LabelledPiece(SEARCH_FIELD, text, pattern, label=", ".join(labels))
