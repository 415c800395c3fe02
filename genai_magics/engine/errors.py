"""The one exception a user sees as a plain line: a message of the catalogue with its fields."""

from __future__ import annotations

from .. import messages


class UserError(Exception):
    """Bad input or a failed turn: its message is shown as is; nothing changed.

    It carries which message it is (``message``) and its fields, so a test asks for the
    message, never for its words."""

    def __init__(self, message: messages.Message, **fields: object) -> None:
        super().__init__(message.render(**fields))
        self.message = message
        self.fields = fields
