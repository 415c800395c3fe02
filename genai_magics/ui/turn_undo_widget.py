"""The Undo button at the end of an agent turn, and the line ``%gemini undo`` shows: rendering only
(frontends/turn_undo_steps.py does the work). The line is a widget because the frontend's replies, and
so the outcome, may come after the cell that asked has finished."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from .. import messages
from ..engine.agent import TurnChanges
from ..frontends.live_notebook import LiveNotebook
from ..frontends.turn_undo_steps import TurnUndo
from .widgets import save_bundle, shared_styles, undo_button, widget_bundle


class TurnUndoWidget:
    """An HTML line saying what Undo did, with the Undo button before it (``button=False``: the line only)."""

    def __init__(self, undo: TurnUndo, button: bool = True):
        import ipywidgets as w

        styles = shared_styles(w)
        self.undo = undo
        self.view = w.HTML(value=self._html(), layout=styles.row, style=styles.html_style)
        self.button: Any = None
        children = [self.view]
        if button:
            self.button = undo_button(w, "Undo every change of this agent turn (what ran stays run)")
            self.button.on_click(lambda _b: self.undo.undo())
            children.insert(0, self.button)
        self.box = w.Box(children, layout=styles.box, _dom_classes=("genai-magics-turn-undo",))
        undo.listeners.append(self._said)

    def _html(self) -> str:
        lines = "".join(f"<div>{html.escape(line)}</div>" for line in self.undo.message.splitlines())
        return f'<div style="font-size:12px">{lines}</div>'

    def _said(self, undo: TurnUndo) -> None:
        if self.button is not None:
            self.button.disabled = undo.state != "ready"
        self.view.value = self._html()
        save_bundle(undo.notebook.save_view, self._repr_mimebundle_())  # a reopened notebook says what Undo did

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        return widget_bundle(
            self.box.model_id,
            self.undo.message or "Undo: every change of this agent turn",
            buttons=self.button is not None and self.undo.state == "ready",  # an undone turn's Undo is gone for good
        )


def offer_undo(
    notebook: LiveNotebook,
    changes: TurnChanges,
    ran: list[str],
    label: Callable[[str], str],
    turns: list[TurnUndo] | None = None,
) -> TurnUndo | None:
    """At the end of an agent turn that changed cells: its Undo button in the cell; the ``TurnUndo`` for the
    shell to keep (``%gemini undo``), added to ``turns`` (every agent turn's, oldest first). None when the turn
    changed nothing."""
    if not changes:
        return None
    from IPython.display import display

    undo = TurnUndo(notebook, changes, ran, label, turns=turns if turns is not None else [])
    undo.turns.append(undo)
    display(TurnUndoWidget(undo))
    return undo


def undo_latest(undo: TurnUndo | None) -> None:
    """``%gemini undo``: the latest agent turn undone, its outcome in a line that updates when the frontend answers."""
    from IPython.display import display

    if undo is None:
        print(messages.NO_AGENT_TURN.render())
        return
    line = TurnUndoWidget(undo, button=False)
    undo.undo()
    display(line)
