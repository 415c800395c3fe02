"""The context a turn's flags ask for by name: ``--error`` (the last exception), ``--vars`` and
``--interpolate`` (variables of the user's namespace), and the prompt they leave."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import messages
from ..engine.context import ContextPiece
from ..engine.errors import UserError
from .last_error import DEFAULT_ERROR_PROMPT, CellForFilename, capture_last_error, error_piece
from .variables import interpolated_names, parse_var_list, variable_pieces


@dataclass(frozen=True)
class ExplicitContext:
    pieces: tuple[ContextPiece, ...]
    failing_cell: str | None  # --error: the cell the exception was raised in
    prompt: str  # interpolated; --error alone: the default question


def explicit_context(
    shell: Any,
    body: str,
    *,
    error: bool,
    variables: str | None,
    interpolate: bool,
    max_var_chars: int,
    cell_for_filename: CellForFilename,
) -> ExplicitContext:
    """--error and --vars pieces, the failing cell, and the prompt; a UserError when --error finds none."""
    pieces: list[ContextPiece] = []
    failing_cell, prompt = None, body
    if error:
        err = capture_last_error(shell, cell_for_filename)
        if err is None:
            raise UserError(messages.NO_EXCEPTION_YET)
        pieces.append(error_piece(err))
        failing_cell = err.cell_id
        if not prompt.strip():
            prompt = DEFAULT_ERROR_PROMPT
    names = parse_var_list(variables) if variables else []
    if interpolate:
        placeholders = [n for n in interpolated_names(body) if n in shell.user_ns]
        names += [n for n in placeholders if n not in names]
        # {df} names the variable whose summary goes along; its repr could be huge
        for name in placeholders:
            prompt = prompt.replace("{" + name + "}", f"`{name}`")
        prompt = shell.var_expand(prompt, depth=3)
    pieces += variable_pieces(names, shell.user_ns, max_var_chars)
    return ExplicitContext(tuple(pieces), failing_cell, prompt)
