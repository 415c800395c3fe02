"""The proposal's buttons: rendering only; ProposalController does the work.

Every widget is a comm to the frontend, so the view starts with the few it
needs (one box holding the diff with its status line, Apply, Discard, Copy: the
diff takes the box's first row, the buttons wrap to the next) and adds Undo, the
'… anyway' button and the copy box only when they apply.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import messages
from ..engine.outputs import WIDGET_TYPE
from ..engine.redaction import redact
from .diff import diff_html, diff_text
from .proposal import ProposalController

# After a kernel restart ipywidgets marks each view of the old kernel `jupyter-widgets-disconnected`
# (a broken-link icon, nothing else; a click then goes nowhere). Keyed on that class, this shows one
# line and stops the clicks even where the labextension is missing; where it is there, it marks the
# proposal `genai-magics-stale` with its own line (also after a crash, a shutdown, another kernel).
RESTART_NOTE = (
    "<style>.genai-magics-restart-note{display:none}"
    ".jupyter-widgets-disconnected .genai-magics-restart-note{display:block}"
    ".genai-magics-stale .genai-magics-restart-note{display:none}"
    ".genai-magics-proposal.jupyter-widgets-disconnected button{pointer-events:none;opacity:.5}</style>"
    '<div class="genai-magics-restart-note" style="font-size:12px;margin-top:4px;font-weight:600;color:#b45309">'
    f"{html.escape(messages.KERNEL_GONE.render(what='restarted'), quote=False)}</div>"
)


def widget_bundle(model_id: str, text: str, html_text: str | None = None, *, buttons: bool = True) -> dict[str, Any]:
    """A widget's display bundle with our own text (and HTML) for where no widget manager renders it (a saved
    notebook, nbconvert, a console): ipywidgets' own text/plain is a repr of the whole widget tree. A widget
    with buttons ends it in one line saying they come back when its cell runs: a reopened notebook shows this
    text where the widget's model is gone (JupyterLab and Notebook 7 through the extension, VS Code)."""
    saved = messages.SAVED_VIEW.render() if buttons else None
    bundle: dict[str, Any] = {"text/plain": text if saved is None else f"{text}\n{saved}"}
    if html_text is not None:
        line = (
            ""
            if saved is None
            else f'<div style="font-size:12px;margin-top:4px;font-style:italic">{html.escape(saved)}</div>'
        )
        bundle["text/html"] = html_text + line
    bundle[WIDGET_TYPE] = {"version_major": 2, "version_minor": 0, "model_id": model_id}
    return bundle


@dataclass(frozen=True)
class _Shared:
    button: Any  # a button's Layout (the default one)
    button_style: Any
    html_style: Any
    row: Any  # the diff's Layout: a row of its own
    box: Any  # the proposal's Layout: rows that wrap


SaveView = Callable[[str, dict[str, str]], None]  # (widget model id, its saved text): LiveNotebook.save_view


def save_bundle(save_view: SaveView | None, bundle: dict[str, Any]) -> None:
    """A widget's state changed (what happened to it): its display bundle (``widget_bundle``) sent as its saved
    text, for the outputs showing it, so a reopened notebook says what happened and not what was first shown."""
    if save_view is not None:
        save_view(bundle[WIDGET_TYPE]["model_id"], {k: v for k, v in bundle.items() if k != WIDGET_TYPE})


_SHARED: list[_Shared] = []  # made by the first proposal of this kernel


def shared_styles(w: Any) -> _Shared:
    """The layouts and styles of every view that never changes its own: each default one is a widget of
    its own (a comm_open with its state), most of what a proposal takes to show. Shared across proposals,
    as ipywidgets allows; nothing here ever changes or closes them."""
    if not _SHARED:
        html_style = w.HTML.class_traits()["style"].klass  # HTMLStyle, which ipywidgets does not export
        _SHARED.append(
            _Shared(
                w.Layout(),
                w.ButtonStyle(),
                html_style(),
                w.Layout(width="100%"),
                w.Layout(display="flex", flex_flow="row wrap", align_items="center"),
            )
        )
    return _SHARED[0]


def undo_button(w: Any, tooltip: str) -> Any:
    """An Undo button (a proposal's, an agent turn's), in the shared styles."""
    styles = shared_styles(w)
    return w.Button(
        description="Undo",
        button_style="warning",
        icon="undo",
        tooltip=tooltip,
        layout=styles.button,
        style=styles.button_style,
    )


class ProposalWidget:
    def __init__(self, controller: ProposalController, save_view: SaveView | None = None):
        import ipywidgets as w

        self._w = w
        self.controller = controller
        self._save_view = save_view  # the live notebook's: what happened goes into the saved text too
        self._sides = controller.diff_sides
        self._show_diff(controller.diff)
        styles = shared_styles(w)
        shared = {"layout": styles.button, "style": styles.button_style}
        # Each widget opens with its first state (a later change would be one more comm message each).
        self.view = w.HTML(value=self._view_html(), layout=styles.row, style=styles.html_style)
        self.apply_button = w.Button(
            description="Apply",
            button_style="success",
            icon="check",
            tooltip=controller.writer.describe_apply(),
            disabled=not controller.enabled("apply"),
            **shared,
        )
        self.discard_button = w.Button(
            description="Discard",
            icon="times",
            tooltip="Keep the cell as it is",
            disabled=not controller.enabled("discard"),
            **shared,
        )
        self.copy_button = w.Button(
            description="Copy", icon="copy", tooltip="Show the proposal as text to copy", **shared
        )
        self.undo_button: Any = None  # ipywidgets.Button once there is something to undo
        self.force_button: Any = None
        self._pending_force: str | None = None
        self.apply_button.on_click(lambda _: self.controller.apply())
        self.discard_button.on_click(lambda _: self.controller.discard())
        self.copy_button.on_click(self._copy)
        self.buttons: list[Any] = [self.apply_button, self.discard_button, self.copy_button]
        self._area: Any = None  # the copy box, below the buttons once Copy was clicked
        # The class is what the labextension looks for to mark the buttons stale after a kernel restart
        # (our own, never ipywidgets' internal ones: labextension/src/stale.ts).
        self.box = w.Box([self.view, *self.buttons], layout=styles.box, _dom_classes=("genai-magics-proposal",))
        controller.listeners.append(lambda c: self._changed())
        self._extra_buttons()  # the rest of refresh holds already: each widget opened with it

    def _show_diff(self, diff: str) -> None:
        self._diff_text = diff_text(diff)  # the text form (see _repr_mimebundle_), capped like the HTML
        self._diff = diff_html(diff)

    def _lay_out(self) -> None:
        self.box.children = (self.view, *self.buttons, *([self._area] if self._area is not None else []))

    def _add_button(self, button) -> None:
        self.buttons.append(button)
        self._lay_out()

    def _copy(self, _button) -> None:
        self.copy_button.disabled = True
        self._area = self._w.Textarea(
            value=redact(self.controller.turn.proposal_source or ""), layout=self._w.Layout(width="100%", height="12em")
        )
        self._lay_out()

    def _force(self, _button) -> None:
        action, self._pending_force = self._pending_force, None
        if action == "apply":
            self.controller.apply(force=True)
        elif action == "undo":
            self.controller.undo(force=True)

    def refresh(self) -> None:
        c = self.controller
        self.apply_button.disabled = not c.enabled("apply")
        self.discard_button.disabled = not c.enabled("discard")
        self._extra_buttons()
        if c.diff_sides != self._sides:  # Apply or its Undo: the header says what each text is now
            self._sides = c.diff_sides
            self._show_diff(c.diff)
        self.view.value = self._view_html()

    def _extra_buttons(self) -> None:
        """Undo once there is something to undo, '… anyway' while an action needs forcing (shown or hidden)."""
        c = self.controller
        if self.undo_button is None and c.turn.outcome in ("applied", "undone"):
            self.undo_button = undo_button(self._w, "Put back the code from before the proposal")
            self.undo_button.on_click(lambda _: self.controller.undo())
            self._add_button(self.undo_button)
        if self.undo_button is not None:
            self.undo_button.disabled = not c.enabled("undo")
        self._pending_force = c.status.needs_force
        changed = self._pending_force is not None
        if changed and self.force_button is None:
            self.force_button = self._w.Button(button_style="danger")
            self.force_button.on_click(self._force)
            self._add_button(self.force_button)
        if self.force_button is not None:
            self.force_button.description = f"{(self._pending_force or 'apply').capitalize()} anyway"
            self.force_button.layout.display = None if changed else "none"

    def _changed(self) -> None:
        self.refresh()
        save_bundle(self._save_view, self._repr_mimebundle_())

    def _view_html(self) -> str:
        status = f'<div style="font-size:12px;margin-top:4px">{html.escape(self.controller.status.text)}</div>'
        self._html = self._diff + "\n" + status
        return self._html + RESTART_NOTE

    def _repr_mimebundle_(self, **kwargs):
        # Where no widget manager renders the view (a saved notebook on GitHub or nbviewer,
        # nbconvert, a console), the same bundle shows the diff and what Apply will do, as
        # they were when the proposal appeared.
        return widget_bundle(self.box.model_id, f"{self._diff_text}\n{self.controller.message}", self._html)


class OutcomeLine:
    """A ``%gemini apply / discard / undo`` line whose write completes after its cell (a live write,
    answered by the frontend once the kernel is free): one HTML widget that says what is being done,
    then the outcome, as the proposal's status line says it."""

    def __init__(self, controller: ProposalController, action: str):
        import ipywidgets as w

        label = controller.turn.document_label or "the cell"
        self._text = messages.WRITING.render(action=action.capitalize(), label=label)
        self.view = w.HTML(value=self._html(), style=shared_styles(w).html_style)
        self._controller = controller
        controller.listeners.append(self._said)

    def _html(self) -> str:
        return f'<div style="font-size:12px">{html.escape(self._text)}</div>'

    def _said(self, controller: ProposalController) -> None:
        """The write's outcome (the first status after it): shown, and no later ones."""
        controller.listeners.remove(self._said)
        self._text = controller.message
        self.view.value = self._html()

    def _repr_mimebundle_(self, **kwargs):
        return widget_bundle(self.view.model_id, self._text, buttons=False)
