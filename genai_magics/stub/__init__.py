"""A local stand-in for the Gemini API (tests, demo and benchmarks only).

Nothing in the package's real code paths imports this module.
"""

from .server import STATUS_NAMES, StubServer, tokens

__all__ = ["StubServer", "tokens", "STATUS_NAMES"]
