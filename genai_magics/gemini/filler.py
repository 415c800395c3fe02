"""The filler that brings a request's or a cache's head under the model's cache minimum up to it (issue 43.3).

Below the minimum nothing is cached, explicitly or implicitly: a head read twice a turn at the input price
costs more than a head of the minimum's size read at the cached price. The filler goes after the system
instruction; its first line tells the model what it is. Where it pays: ``caching.padding_pays`` (an explicit
cache, contents mode), ``caching.implicit_padding_pays`` (the chain's instruction, interactions mode).
"""

from __future__ import annotations

# The filler's words: said once what it is, then a sentence of plain English words, which tokenizers count at
# about four bytes a token (``estimate_tokens``'s rate); PAD_MARGIN covers a tokenizer that counts fewer.
PAD_NOTE = (
    "The text below fills this prompt up to the model's minimum size for caching, which makes every request of "
    "this conversation cheaper. It is not part of the notebook or of the conversation: ignore it.\n"
)
PAD_SENTENCE = "This line is filler for the cache and carries no meaning. "
PAD_MARGIN = 1.1


def padding(tokens: int) -> str:
    """The filler that brings a head ``tokens`` short of the model's minimum up to it (with ``PAD_MARGIN``),
    appended to the system instruction (the cache's, or the chain's requests'); '' for none."""
    if tokens <= 0:
        return ""
    size = int(tokens * PAD_MARGIN) * 4 + 4
    body = PAD_SENTENCE * (max(0, size - len(PAD_NOTE)) // len(PAD_SENTENCE) + 1)
    return "\n\n" + PAD_NOTE + body
