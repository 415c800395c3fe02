"""Implicit caching: the deterministic model of a repeated prompt prefix counted as cached."""

from __future__ import annotations

from ..engine.text import common_prefix
from .model import tokens

IMPLICIT_TTL_S = 300.0


def implicit_minimum(model: str) -> int:
    """The stand-in's smallest prefix implicit caching counts: 4,096 tokens for pro models, else 2,048."""
    return 4096 if "pro" in model else 2048


def common_tokens(a: list[tuple[str, str]], b: list[tuple[str, str]]) -> int:
    """Tokens of the longest common prefix of two (role, text) sequences.

    Whole equal pieces count their own tokens; inside the first differing piece of
    the same role, only whole 4-byte tokens of the common prefix count.
    """
    total = 0
    for (role_a, text_a), (role_b, text_b) in zip(a, b, strict=False):
        if (role_a, text_a) == (role_b, text_b):
            total += tokens(text_a)
            continue
        if role_a == role_b:
            total += len(text_a[: common_prefix(text_a, text_b)].encode("utf-8", "surrogatepass")) // 4
        break
    return total
