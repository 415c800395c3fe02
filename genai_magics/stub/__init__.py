"""A local stand-in for the Gemini API (tests, demo and benchmarks only).

Nothing in the package's real code paths imports this module.
May import: the standard library, `engine`, and `gemini.models` (the default model name it serves).
"""

from .model import tokens
from .replies import STATUS_NAMES
from .server import StubServer

__all__ = ["StubServer", "tokens", "STATUS_NAMES"]
