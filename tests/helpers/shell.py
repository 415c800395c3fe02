"""The fast layer: the extension in an in-process IPython shell, as ipywidgets and jupyter-ai
test their own code. No kernel: displays are captured from IPython's display publisher and
widgets talk to the ``comm`` package's own dummy comm (the default outside a kernel), so a
widget's state is read from the widget and a click is ``button.click()``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output


@dataclass
class Shown:
    stdout: str
    stderr: str
    bundles: list[dict[str, Any]] = field(default_factory=list)  # every display's mime bundle

    @property
    def plain(self) -> str:
        return "\n".join([self.stdout, *(b.get("text/markdown") or b.get("text/plain", "") for b in self.bundles)])

    def widgets(self) -> list[Any]:
        """The widget objects displayed (ipywidgets keeps every live widget by model id)."""
        from ipywidgets.widgets.widget import _instances

        ids = [
            b["application/vnd.jupyter.widget-view+json"]["model_id"]
            for b in self.bundles
            if "application/vnd.jupyter.widget-view+json" in b
        ]
        return [_instances[i] for i in ids]


class Shell:
    """One InteractiveShell with genai_magics freshly loaded (a new session each time)."""

    def __init__(self):
        self.ip = InteractiveShell.instance()
        if "genai_magics" in self.ip.extension_manager.loaded:
            self.ip.run_line_magic("unload_ext", "genai_magics")
        self.ip.run_line_magic("load_ext", "genai_magics")
        from genai_magics.kernel.shell_state import state_of

        self.magics = state_of(self.ip).magics

    def run(self, source: str, cell_id: str | None = None) -> Shown:
        with capture_output() as out:
            self.ip.run_cell(source, store_history=True, cell_id=cell_id)
        return Shown(out.stdout, out.stderr, [o.data for o in out.outputs])

    def help(self, name: str) -> str:
        """What ``name?`` shows (``%%gemini_edit``, ``%gemini_ask``...): the magic's docstring."""
        kind = "cell" if name.startswith("%%") else "line"
        return self.ip.find_magic(name.lstrip("%"), kind).__doc__

    def close(self) -> None:
        self.ip.run_line_magic("unload_ext", "genai_magics")


# a short cell, a long output (~20,000 characters): what the model fetches is not in the cells a turn sends as
# context, and it takes a request past the 4,096-token cache minimum
BIG = 'print("\\n".join(f"row_{i:05d} = {i * 3}" for i in range(1100)))'


def fetching_notebook(shell: Shell, **cells: str) -> Shell:
    """``shell`` at a new conversation with the default tools, model and cache, outputs kept whole up to 20,000
    characters, ``cells`` (cell id -> source) run, then ``small`` (``total = 1``, the document of the asks)."""
    shell.run("%gemini reset --all", cell_id="reset")
    for name in ("tools", "max_tool_calls", "model", "cache"):
        setattr(shell.magics, name, shell.magics.trait_defaults(name))
    shell.magics.max_output_chars = 20_000
    for cell_id, source in cells.items():
        shell.run(source, cell_id=cell_id)
    shell.run("total = 1", cell_id="small")
    return shell


def emptied(shell: Shell, *cell_ids: str) -> None:
    """The InteractiveShell outlives the test, and with it the cells it ran: these emptied, so that no later test
    finds them (a 20,000-character output, say) in its notebook's context."""
    for cell_id in cell_ids:
        shell.run("pass", cell_id=cell_id)
    shell.magics.max_output_chars = shell.magics.trait_defaults("max_output_chars")
