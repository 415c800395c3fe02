"""The one exception a user sees as a plain line."""

from __future__ import annotations


class UserError(Exception):
    """Bad input or a failed turn: the message is shown as is; nothing changed."""
