"""Yesterday's notebook in a real VS Code: a proposal saved by a kernel that is gone.

The notebook is run by nbclient (a real kernel on the stand-in), saved without its widget state, as
JupyterLab saves by default, and opened in VS Code, whose kernel never had the widget: VS Code's widget
renderer hands the output to its next mime type, and the saved text shows (the diff, what the proposal
said, the line that the buttons come back when the cell runs)."""

from __future__ import annotations

import os

import nbclient
import nbformat
from notebook_page import Notebook, write_notebook
from vscode_server import KERNEL_DISPLAY, KERNEL_NAME

from genai_magics import messages

CELLS = ["%load_ext genai_magics", "t = 1", "%%gemini_edit\nAdd a comment"]


def run_and_save(path, stub) -> None:
    """Run the notebook with nbclient (its own kernel, which then ends) and save it without widget state."""
    write_notebook(path, CELLS)
    nb = nbformat.read(str(path), as_version=4)
    env = {"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": "fake-key-for-the-stand-in"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    nb.metadata.pop("widgets", None)  # as JupyterLab saves it: no widget state
    nb.metadata["kernelspec"] = {"name": KERNEL_NAME, "display_name": KERNEL_DISPLAY, "language": "python"}
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in nb.cells[2].outputs)
    nbformat.write(nb, str(path))


def test_a_reopened_notebook_shows_the_saved_diff_where_the_widget_was(page, code_server, workspace, artifacts, stub):
    run_and_save(workspace / "yesterday.ipynb", stub)
    nb = Notebook(page, code_server, workspace, "yesterday.ipynb", artifacts)
    nb.open(len(CELLS))
    text = nb.wait_output(messages.SAVED_VIEW.render().replace(".", r"\."))
    nb.shot("reopened")
    assert "+# stub edit: Add a comment" in text  # the diff
    assert "Error displaying widget" not in text
    for frame in nb.frames():
        assert frame.locator("button.jupyter-button, button.widget-button").count() == 0
