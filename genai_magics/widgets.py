"""The proposal's buttons: rendering only; ProposalController does the work."""
from __future__ import annotations

import html

from .proposal import ProposalController, diff_html


class ProposalWidget:
    """Diff, Apply / Discard / Undo (and '… anyway' when the cell changed), a status line."""

    def __init__(self, controller: ProposalController):
        import ipywidgets as w

        self.controller = controller
        self.diff = w.HTML(diff_html(controller.diff))
        self.status = w.HTML()
        self.apply_button = w.Button(description="Apply", button_style="success", icon="check",
                                     tooltip="Write the proposal into the cell")
        self.discard_button = w.Button(description="Discard", icon="times", tooltip="Keep the cell as it is")
        self.undo_button = w.Button(description="Undo", button_style="warning", icon="undo",
                                    tooltip="Put back the code from before the proposal")
        self.force_button = w.Button(description="Overwrite anyway", button_style="danger", layout=w.Layout(display="none"))
        self.copy_area = w.Textarea(value=controller.turn.proposal_source or "", layout=w.Layout(width="100%", display="none"))
        self.copy_button = w.Button(description="Copy", icon="copy", tooltip="Show the proposal as text to copy")
        self._pending_force: str | None = None
        self.apply_button.on_click(lambda _: self.controller.apply())
        self.discard_button.on_click(lambda _: self.controller.discard())
        self.undo_button.on_click(lambda _: self.controller.undo())
        self.force_button.on_click(self._force)
        self.copy_button.on_click(self._copy)
        self.box = w.VBox([
            self.diff,
            w.HBox([self.apply_button, self.discard_button, self.undo_button, self.copy_button, self.force_button]),
            self.status,
            self.copy_area,
        ])
        controller.listeners.append(lambda c: self.refresh())
        self.refresh()

    def _copy(self, _button) -> None:
        self.copy_area.layout.display = None

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
        self.undo_button.disabled = not c.enabled("undo")
        self.undo_button.layout.display = None if c.turn.outcome in ("applied", "undone") else "none"
        changed = "the cell changed since" in c.message
        self._pending_force = c.message.split(" ", 1)[0].lower() if changed else None
        self.force_button.layout.display = None if changed else "none"
        self.force_button.description = f"{(self._pending_force or 'apply').capitalize()} anyway"
        self.status.value = f'<span style="font-size:12px">{html.escape(c.message)}</span>'

    def _repr_mimebundle_(self, **kwargs):
        return self.box._repr_mimebundle_(**kwargs)
