"""How a turn shows up in the notebook: streaming text, notes, footer, errors.

Kept behind one small class so tests and terminals can swap it; everything has
a text/plain form so frontends without HTML or widgets still show it.
"""

from __future__ import annotations

import functools
import html
import json
import re
import sys
import time
import traceback
from typing import Any

from .. import messages
from ..engine.cells import summary
from ..engine.edits import progress as edits_progress
from ..engine.errors import UserError
from ..engine.redaction import redact


def _display(obj: Any, **kwargs: Any) -> Any:
    """Publish an object's mime bundle as it is: IPython's formatters would only find the same bundle, at a
    cost of ~0.3 ms a call (a turn makes about seven)."""
    from IPython.display import display

    return display(obj._repr_mimebundle_(), raw=True, **kwargs)


def _update(handle: Any, obj: Any) -> None:
    handle.update(obj._repr_mimebundle_(), raw=True)


# JupyterLab and Notebook 7 typeset `$…$` in every HTML and Markdown output as math: a footer's
# "~$0.0017 · ~$0.013 saved" lost both dollars. Their MathJax skips what is inside this class (the older
# `tex2jax_ignore` no longer counts); VS Code never typesets HTML.
NO_MATH = "mathjax_ignore"


def no_math(html_text: str) -> str:
    """HTML that no frontend typesets as math (empty stays empty: a placeholder takes no room)."""
    return f'<div class="{NO_MATH}">{html_text}</div>' if html_text else ""


class _Rich:
    """A display object with both an HTML and a plain-text form; the HTML is never typeset as math."""

    def __init__(self, html_text: str, plain: str):
        self._html, self._plain = no_math(html_text), plain

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/html": self._html, "text/plain": self._plain}


_CODE = re.compile(r"(```.*?(?:```|$)|`[^`\n]*`)", re.S)
# Math the model writes on purpose: `$$…$$`, `\(…\)`, `\[…\]`; any other `$` (or `\$`) is a dollar.
_MATH = re.compile(r"(\$\$.+?\$\$|\\\(.+?\\\)|\\\[.+?\\\])", re.S)
_DOLLAR = re.compile(r"\\?\$")
# A dollar as text in JupyterLab, Notebook 7 and VS Code: MathJax pairs `$`s only within one run of text
# (an element of its own ends it; `\$` is typeset all the same), and VS Code's KaTeX reads the Markdown
# source, where an entity is no `$`.
DOLLAR = "<span>&#36;</span>"


def literal_dollars(text: str) -> str:
    r"""Markdown text (no code in it) whose dollars show as dollars; its `$$…$$` and `\(…\)` math stays math."""
    parts = _MATH.split(text)
    return "".join(part if i % 2 else _DOLLAR.sub(DOLLAR, part) for i, part in enumerate(parts))


def safe_markdown(text: str) -> str:
    """Model text as Markdown that cannot carry markup: '<' outside code is escaped, and a `$` outside code
    and math is a dollar (``literal_dollars``).

    Outputs of a cell that just ran are trusted by the frontend, so raw HTML in
    an answer (say an <img onerror=...>) would render; inside code it stays text anyway.
    """
    parts = _CODE.split(text)
    return "".join(part if i % 2 else literal_dollars(part.replace("<", "&lt;")) for i, part in enumerate(parts))


class _Markdown:
    def __init__(self, text: str):
        self.text = text

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/markdown": safe_markdown(self.text), "text/plain": self.text}


def footer_legend() -> str:
    """The footer's hover text: what each part of the line means, a line each."""
    legend = (
        messages.FOOTER_LEGEND_MODE,
        messages.FOOTER_LEGEND_TOKENS,
        messages.FOOTER_LEGEND_REQUEST,
        messages.FOOTER_LEGEND_SENT,
        messages.FOOTER_LEGEND_SAVED,
    )
    return "\n".join(line.render() for line in legend)


@functools.cache
def _escaped_legend() -> str:
    """The footer's hover text as its HTML attribute holds it: the same every turn, made once."""
    return html.escape(footer_legend())


def document_line(label: str | None, source: str) -> str:
    """Which document a turn is about, named at its top: ``document: In[4] · parse()``."""
    if label is None:
        return "document: none"
    what = summary(redact(source))  # the key of a cell like `key = "AIza…"` is no more shown here than sent
    return f"document: {label} · {what}" if what else f"document: {label}"


class NotebookDisplay:
    """Streams into one updatable output; throttled so a fast stream is cheap.

    What streams into the cell is bounded (``max_stream_chars``): a huge answer
    is cut in the output, and kept whole in ``%gemini history``. A note while the
    turn runs (a function call's line, a retry) stands where it happens: below
    what streamed before it, above the answer it led to.
    """

    interval_s = 0.15
    max_stream_chars = 200_000

    def __init__(self, mode: str):
        self.mode = mode
        self._text: list[str] = []
        self._size = 0
        self._handle = None
        self._header = None
        self._last = 0.0
        self._waiting: str | None = None  # the "asking…" line while the turn runs; None before and after

    def document(self, label: str | None, source: str) -> None:
        line = document_line(label, source)
        obj = _Rich(f'<div style="color:#555;font-size:12px">{html.escape(line)}</div>', line)
        if self._header is not None:
            _update(self._header, obj)
        else:
            _display(obj)

    def _show(self, obj: Any) -> None:
        if self._handle is None:
            self._handle = _display(obj, display_id=True)
        else:
            _update(self._handle, obj)

    def start(self, what: str) -> None:
        # a place above the answer for the document line, filled once the document is known
        self._header = _display(_Rich("", ""), display_id=True)
        self._waiting = what
        self._show(self._placeholder())

    def _placeholder(self) -> Any:
        what = self._waiting or ""
        return _Rich(f'<i style="color:#666">{html.escape(what)}…</i>', f"{what}…")

    def chunk(self, text: str) -> None:
        self._text.append(text)
        self._size += len(text)
        now = time.monotonic()
        if now - self._last >= self.interval_s:
            self._last = now
            self._show(self._progress())

    def _progress(self) -> Any:
        if self.mode == "edit":
            form = edits_progress("".join(self._text))  # an edits answer shows how far it got
            line = f"receiving the proposal… {self._size:,} chars" + (f", {form}" if form else "")
            return _Rich(f'<i style="color:#666">{html.escape(line)}</i>', line)
        return _Markdown(self.bounded("".join(self._text)))

    def bounded(self, text: str) -> str:
        """Text for the cell: at most ``max_stream_chars`` of it."""
        if len(text) <= self.max_stream_chars:
            return text
        return (
            text[: self.max_stream_chars] + "\n\n" + messages.ANSWER_CUT.render(more=len(text) - self.max_stream_chars)
        )

    def finish(self, markdown: str) -> None:
        self._waiting = None
        self._show(_Markdown(self.bounded(markdown)))

    def sources(self, markdown: str) -> None:
        """A grounded answer's sources, under it (their titles and addresses escaped already)."""
        self._show(_Markdown(markdown))

    def clear_progress(self) -> None:
        if self._handle is not None:
            _update(self._handle, _Rich("", ""))

    def note(self, text: str) -> None:
        running = self._waiting is not None and self._handle is not None
        if running:  # what streamed so far stays above the note (an edit's progress line goes); the rest below
            self._show(
                _Markdown(self.bounded("".join(self._text))) if self._text and self.mode == "ask" else _Rich("", "")
            )
            self._handle, self._text, self._last = None, [], 0.0
        _display(_Rich(f'<div style="color:#8a6d3b;font-size:12px">{html.escape(text)}</div>', text))
        if running:
            self._show(self._placeholder())

    @staticmethod
    def footer(text: str) -> None:
        legend = _escaped_legend()
        style = "color:#777;font-size:11px;margin-top:4px;cursor:help"
        _display(_Rich(f'<div style="{style}" title="{legend}">{html.escape(text)}</div>', text))

    @staticmethod
    def error(text: str) -> None:
        print(messages.PREFIX + text, file=sys.stderr)

    def failed(self, exc: Exception, debug: bool) -> None:
        """A turn that raised: a UserError's own line, anything else (a bug of ours) one
        'unexpected' line; with debug on, the traceback first (an API failure's own)."""
        self.clear_progress()
        if isinstance(exc, UserError):
            if debug and exc.__cause__ is not None:  # an API failure: its traceback on request
                print(redact("".join(traceback.format_exception(exc.__cause__))), end="", file=sys.stderr)
            self.error(str(exc))
            return
        if debug:
            print(redact("".join(traceback.format_exception(exc))), end="", file=sys.stderr)
        self.error(redact(messages.UNEXPECTED.render(kind=type(exc).__name__, error=exc)))

    @staticmethod
    def request(body: dict[str, Any], state: str, cache_plan: str | None = None) -> None:
        from IPython.display import display

        text = json.dumps(_short_images(body), indent=2, ensure_ascii=False, default=str)
        title = messages.DRY_RUN.render(state=state)
        if cache_plan:
            title += f" · {cache_plan}"
        display(_Rich(f"<b>{html.escape(title)}</b><pre>{html.escape(text)}</pre>", f"{title}\n{text}"))


def _short_images(value: Any) -> Any:
    """The request with each image's base64 data shown by its size (the bytes themselves say nothing to a reader)."""
    if isinstance(value, list):
        return [_short_images(v) for v in value]
    if not isinstance(value, dict):
        return value
    if isinstance(value.get("data"), str) and ("mimeType" in value or value.get("type") == "image"):
        return {**value, "data": f"<{len(value['data']):,} characters of base64>"}
    return {k: _short_images(v) for k, v in value.items()}


class TerminalDisplay(NotebookDisplay):
    """Terminal IPython: no updatable outputs, so the answer streams straight to stdout."""

    def start(self, what: str) -> None:
        print(f"{what}…", flush=True)

    def document(self, label: str | None, source: str) -> None:
        print(document_line(label, source), flush=True)

    def chunk(self, text: str) -> None:
        self._text.append(text)
        shown = self._size
        self._size += len(text)
        if self.mode == "ask" and shown < self.max_stream_chars:
            sys.stdout.write(text[: self.max_stream_chars - shown])
            if self._size > self.max_stream_chars:
                sys.stdout.write("\n" + messages.ANSWER_CUT_TERMINAL.render())
            sys.stdout.flush()

    def sources(self, markdown: str) -> None:
        print(markdown, flush=True)

    def finish(self, markdown: str) -> None:
        if self.mode == "ask":
            print(flush=True)  # the answer itself has streamed already
        else:
            print(self.bounded(markdown), flush=True)

    def clear_progress(self) -> None:
        pass

    def note(self, text: str) -> None:
        if self.mode == "ask" and self._text and not self._text[-1].endswith("\n"):
            print(flush=True)  # the streamed text so far ends its line: the note stands on its own
        self._text.append("\n")
        print(text, flush=True)

    @staticmethod
    def footer(text: str) -> None:
        print(text, flush=True)
