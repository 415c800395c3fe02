"""The catalogue of user-facing messages, and docs/failures.md held to it."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from genai_magics import messages
from genai_magics.messages import CATALOGUE, PREFIX, Message, Shown

FAILURES_MD = Path(__file__).resolve().parents[2] / "docs" / "failures.md"
STAR = None  # a wildcard token: a field of a template, or "…" / "<what>" in the docs
Tokens = tuple[str | None, ...]

# Quoted in failures.md's "what the user sees" column but not a sentence of ours: commands, and what
# IPython, ipywidgets or the browser say. (A quote without a space is a name or a value: skipped too.)
NOT_OURS = {
    "%gemini_ask explain when I should use --new",
    "%gemini_ask --error",
    "%gemini reset",
    "%gemini forget --all",
    "pointer-events: none",
    "Cannot send",
    "The kernel stopped",  # the extension's words for KERNEL_GONE's {what} (labextension/src/bridge.ts)
    "The kernel changed",
    "Error displaying widget: model not found",  # ipywidgets' words, where a reopened notebook's widget was
    "UsageError: %%gemini_ask is a cell magic, but the cell body is empty. Did you mean the line magic "
    "%gemini_ask (single %)?",
}
GENERIC = 8  # a template with fewer fixed characters matches nearly anything: only as a composite


def _entry_tokens(message: Message, *, prefixed: bool) -> Tokens:
    tokens: list[str | None] = list(PREFIX) if prefixed and message.shown_as is Shown.ERROR else []
    for literal, name in message.segments:
        tokens += list(literal)
        if name is not None:
            tokens.append(STAR)
    return tuple(tokens)


def _quote_tokens(quote: str) -> Tokens:
    tokens: list[str | None] = []
    for piece in re.split(r"(…|<[a-z][a-z ]*>)", quote):
        tokens += [STAR] if piece == "…" or piece.startswith("<") and piece.endswith(">") else list(piece)
    return tuple(tokens)


def _meet(quote: Tokens, entry: Tokens, *, elided_text: bool = True) -> bool:
    """Some text matches both (tokens: characters, or STAR for any run of them). With
    ``elided_text=False`` the quote's elisions stand only for the entry's fields (or nothing)."""

    @cache
    def go(i: int, j: int) -> bool:
        if i == len(entry) and j == len(quote):
            return True
        if i < len(entry) and entry[i] is STAR:
            return go(i + 1, j) or (j < len(quote) and go(i, j + 1))
        if j < len(quote) and quote[j] is STAR:
            return go(i, j + 1) or (elided_text and i < len(entry) and go(i + 1, j))
        return i < len(entry) and j < len(quote) and entry[i] == quote[j] and go(i + 1, j + 1)

    return go(0, 0)


def _fixed(tokens: Tokens) -> int:
    return sum(token is not STAR for token in tokens)


def _shapes() -> list[tuple[str, Tokens]]:
    """Every message as it can be shown: the specific ones (clauses too: the docs quote some alone),
    and the generic ones with one field filled by a clause (``{action}: {reason}.`` with RESET_SINCE)."""
    parts = [m for m in CATALOGUE.values() if m.shown_as is Shown.PART]
    shapes = []
    for message in CATALOGUE.values():
        tokens = _entry_tokens(message, prefixed=True)
        if _fixed(tokens) - len(PREFIX) * (message.shown_as is Shown.ERROR) >= GENERIC:
            shapes.append((message.name, tokens))
            continue
        if message.shown_as is Shown.PART:
            continue
        stars = [i for i, token in enumerate(tokens) if token is STAR]
        for at in stars:
            for part in parts:
                filled = (*tokens[:at], *_entry_tokens(part, prefixed=False), *tokens[at + 1 :])
                shapes.append((f"{message.name}+{part.name}", filled))
    return shapes


def _split_row(line: str) -> list[str]:
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def _quoted_user_sees() -> list[str]:
    """Every `quote` in the second column of failures.md's tables (what the user sees, what holds)."""
    quotes = []
    for line in FAILURES_MD.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|") or set(line) <= set("|- "):
            continue
        cells = _split_row(line)
        if len(cells) < 2 or cells[0] == "Case":
            continue
        quotes += [q.replace("\\|", "|") for q in re.findall(r"`([^`]+)`", cells[1]) if " " in q]
    return quotes


def test_every_message_quoted_in_failures_md_is_one_of_the_catalogue():
    quotes = _quoted_user_sees()
    assert len(quotes) > 60, "the table parser lost the docs' quotes"
    shapes = _shapes()
    strangers = [
        q for q in quotes if q not in NOT_OURS and not any(_meet(_quote_tokens(q), tokens) for _, tokens in shapes)
    ]
    assert strangers == [], f"quoted in docs/failures.md but not in genai_magics/messages.py: {strangers}"


def _undocumented(catalogue: list[Message], quotes: list[str]) -> list[str]:
    """The documented messages no quote holds (a clause may be part of a longer quote)."""
    tokens = [_quote_tokens(q) for q in quotes if q not in NOT_OURS]
    return [
        m.name
        for m in catalogue
        if m.documented
        and not any(
            _meet(quote, (STAR, *_entry_tokens(m, prefixed=False), STAR), elided_text=False) for quote in tokens
        )
    ]


def test_every_documented_message_appears_in_failures_md():
    missing = _undocumented(list(CATALOGUE.values()), _quoted_user_sees())
    assert missing == [], f"marked documented but docs/failures.md does not quote them: {missing}"
    # and the check can fail: a documented sentence the docs do not quote
    unquoted = Message("UNQUOTED", "a sentence nobody quoted ({why})", Shown.ERROR, documented=True)
    assert _undocumented([unquoted, messages.PROMPT_EMPTY], _quoted_user_sees()) == ["UNQUOTED"]


def test_the_docs_check_can_fail():
    shapes = _shapes()
    ours = "genai_magics: the prompt is empty: write your request in the cell body below the magic line"
    worded_otherwise = "genai_magics: the prompt is blank: write your request in the cell body below the magic line"
    assert any(_meet(_quote_tokens(ours), tokens) for _, tokens in shapes)
    assert not any(_meet(_quote_tokens(worded_otherwise), tokens) for _, tokens in shapes)
    # an elision stands for any text, a field for any value
    assert _meet(_quote_tokens("genai_magics: not found (404): …"), _entry_tokens(messages.NOT_FOUND, prefixed=True))
    assert not _meet(
        _quote_tokens("genai_magics: not found (405): …"), _entry_tokens(messages.NOT_FOUND, prefixed=True)
    )


def test_render_fills_named_fields_and_refuses_missing_or_extra_ones():
    assert messages.NO_CONVERSATION.render(name="nosuch") == "no conversation named 'nosuch'"
    assert messages.DOCUMENT_OVER_CAP.shown(size=1_100_010, cap=1_000_000) == (
        "genai_magics: the document is 1,100,010 bytes, over the cap of 1,000,000 "
        "(%config GeminiMagics.max_document_bytes)"
    )
    with pytest.raises(TypeError, match="missing \\['cap'\\]"):
        messages.DOCUMENT_OVER_CAP.render(size=1)
    with pytest.raises(TypeError, match="unexpected \\['extra'\\]"):
        messages.PROMPT_EMPTY.render(extra=1)


def test_matches_takes_any_field_values_but_not_other_wording():
    line = messages.NOTEBOOK_FLAG.shown(why=messages.NOTEBOOK_NOT_FOUND.render(path="/tmp/a b.ipynb"))
    assert messages.NOTEBOOK_FLAG.matches(line)
    assert messages.NOTEBOOK_NOT_FOUND.within(line)
    assert not messages.NOTEBOOK_FLAG.matches(line.removeprefix(PREFIX))  # an ERROR line carries the prefix
    assert not messages.NO_API_KEY.matches(messages.NO_API_KEY.shown() + " and more")
    assert messages.RETRYING.matches("rate limited (429); retrying in ~1 s (2/5)")


def test_names_are_the_module_names_and_templates_parse():
    for name, message in CATALOGUE.items():
        assert getattr(messages, name) is message
        assert message.parts, name  # some fixed text, or it says nothing
        assert all(field.isidentifier() for field in message.fields), name


def test_the_labextensions_stale_line_is_the_catalogues():
    # The extension marks old buttons itself (labextension/src/stale.ts): the same words as the kernel's fallback.
    source = (FAILURES_MD.parents[1] / "labextension" / "src" / "stale.ts").read_text(encoding="utf-8")
    found = re.search(r"STALE_ADVICE =\s*((?:'[^']*'|\"[^\"]*\")(?:\s*\+\s*(?:'[^']*'|\"[^\"]*\"))*);", source)
    assert found is not None, "STALE_ADVICE is no longer a sum of string literals"
    advice = "".join(piece[1:-1] for piece in re.findall(r"'[^']*'|\"[^\"]*\"", found.group(1)))
    assert messages.KERNEL_GONE.render(what="restarted") == f"The kernel restarted: {advice}"


def test_every_message_is_one_the_code_renders():
    # the catalogue holds what the package says, nothing it no longer says
    package = Path(messages.__file__).parent
    used = set()
    for path in package.rglob("*.py"):
        if path.name != "messages.py":
            used |= set(re.findall(r"\bmessages\.([A-Z][A-Z0-9_]*)\b", path.read_text(encoding="utf-8")))
    assert sorted(set(CATALOGUE) - used) == []
