"""The line under a turn whose changes were sent without waiting (frontends/landed.py): how many wait for the
notebook's answer, then a line per change that did not land, or that every one did. A widget, because the
answers come after the agent cell has ended."""

from __future__ import annotations

import html
from typing import Any

from .. import messages
from ..engine.text import counted
from ..frontends.landed import LandedCheck
from .widgets import shared_styles, widget_bundle


class LandedLine:
    def __init__(self, check: LandedCheck):
        import ipywidgets as w

        styles = shared_styles(w)
        self.check = check
        self.view = w.HTML(value=self._html(), layout=styles.row, style=styles.html_style)
        check.listeners.append(lambda _check: setattr(self.view, "value", self._html()))

    def text(self) -> str:
        check = self.check
        lines = list(check.not_made)
        if check.sent:
            lines.insert(0, messages.LANDED_WAITING.render(count=counted(len(check.sent), "change")))
        elif not check.not_made:
            lines.append(messages.LANDED_ALL.render(count=counted(check.checked, "change")))
        return "\n".join(lines)

    def _html(self) -> str:
        lines = "".join(f"<div>{html.escape(line)}</div>" for line in self.text().splitlines())
        return f'<div style="font-size:12px" class="genai-magics-landed">{lines}</div>'

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        return widget_bundle(self.view.model_id, self.text())


def show_landed_line(check: LandedCheck) -> None:
    from IPython.display import display

    display(LandedLine(check))
