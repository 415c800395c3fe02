"""The agent's approval in its cell: what it approves (a run's code, an insert's text, an edit's diff, a
deleted cell's text) with every invisible or bidirectional character marked (engine/invisible.py), the risk
line (engine/code_risks.py), and Run / Run all / Stop (Write / Write all / Stop).

Rendering only: a click answers the ``Asked`` (frontends/cell_runner.py), which keeps the turn's
approvals. The buttons are the only way to approve: nothing the model sends or a cell shows can.
"""

from __future__ import annotations

import html
from typing import Any

from .. import messages
from ..engine.invisible import hidden_count, marked_html, marked_text
from ..frontends.cell_runner import Asked, Choice
from .widgets import SaveView, save_bundle, shared_styles, widget_bundle

_CODE = "margin:2px 0;font-size:12px;max-height:24em;overflow:auto"  # the whole text, scrolled
_WARNING = "font-size:12px;margin-top:4px;color:#9a3412;font-weight:bold"
_BUTTONS: dict[str, tuple[tuple[str, Choice, str, str], ...]] = {
    "run": (
        ("Run", "once", "success", "play"),
        ("Run all", "all", "", "forward"),
        ("Stop", "stop", "danger", "stop"),
    ),
    "write": (
        ("Write", "once", "success", "check"),
        ("Write all", "all", "", "forward"),
        ("Stop", "stop", "danger", "stop"),
    ),
}


def warnings(asked: Asked) -> list[str]:
    """The lines above the status line: the risks of the code, the hidden characters the text holds."""
    lines = [messages.APPROVAL_RISKS.render(risks=", ".join(asked.risks))] if asked.risks else []
    count = hidden_count(asked.lines)
    if count:
        lines.append(messages.APPROVAL_HIDDEN.render(count=count))
    return lines


def shown_text(asked: Asked) -> str:
    """The approval as text (a saved notebook, nbconvert): what it approves, marked, its warnings and status."""
    return "\n".join([asked.label, marked_text(asked.lines), *warnings(asked), said(asked)])


def said(asked: Asked) -> str:
    """The status line under the cell's lines: what it waits for, or how it was answered."""
    label = asked.label
    if asked.choice is None:
        asks = messages.APPROVAL_ASKS if asked.kind == "run" else messages.APPROVAL_ASKS_WRITE
        return asks.render(label=label)
    if asked.choice == "once":
        return messages.APPROVED_ONCE.render(label=label)
    if asked.choice == "all":
        return messages.APPROVED_ALL.render(label=label, what="runs" if asked.kind == "run" else "writes")
    if asked.choice == "stop":
        return messages.APPROVAL_STOPPED.render(label=label)
    if asked.choice == "ended":
        return messages.APPROVAL_ENDED.render(label=label, done="run" if asked.kind == "run" else "written")
    return messages.APPROVAL_UNANSWERED.render(label=label)


class ApprovalWidget:
    """One run (or write) waiting in the agent cell; the buttons go grey once it is answered, and its saved text
    (``save_view``, the live notebook's) says how."""

    def __init__(self, asked: Asked, save_view: SaveView | None = None):
        import ipywidgets as w

        styles = shared_styles(w)
        self.asked = asked
        self._save_view = save_view
        self.view = w.HTML(value=self._html(), layout=styles.row, style=styles.html_style)
        self.buttons: list[Any] = []
        for description, choice, style, icon in _BUTTONS[asked.kind]:
            button = w.Button(description=description, button_style=style, icon=icon, layout=styles.button)
            button.on_click(lambda _b, c=choice: self.asked.choose(c))
            self.buttons.append(button)
        self.box = w.Box([self.view, *self.buttons], layout=styles.box, _dom_classes=("genai-magics-approval",))
        asked.listeners.append(self._answered)

    def _html(self) -> str:
        lines = self.asked.lines
        code = f'<pre style="{_CODE}">{marked_html(lines)}</pre>' if lines else ""
        warned = "".join(f'<div style="{_WARNING}">{html.escape(w)}</div>' for w in warnings(self.asked))
        line = f'<div style="font-size:12px;margin-top:4px">{html.escape(said(self.asked))}</div>'
        return f"<b>{html.escape(self.asked.label)}</b>{code}{warned}{line}"

    def _answered(self, asked: Asked) -> None:
        for button in self.buttons:
            button.disabled = True
        self.view.value = self._html()
        save_bundle(self._save_view, self._repr_mimebundle_())

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        # where no widget manager renders it (a saved notebook), the text of what was asked and answered; the
        # line that the buttons come back only while they wait (an answer is not asked again)
        return widget_bundle(self.box.model_id, shown_text(self.asked), buttons=self.asked.choice is None)


def show_approval(asked: Asked, save_view: SaveView | None = None) -> None:
    """The ``ShowAsked`` of a notebook (given the live notebook's ``save_view``): the widget displayed in the
    running agent cell."""
    from IPython.display import display

    display(ApprovalWidget(asked, save_view))
