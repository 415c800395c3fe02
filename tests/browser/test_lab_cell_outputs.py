"""Outputs set by the kernel (``set_outputs``, the agent's ``run_cell``) in a real JupyterLab 4 and Notebook 7.

The kernel runs a cell's code itself and sets what it showed under that cell through the bridge: the
page shows the outputs and the execution count under the cell, as if it had been run there, also
under a cell the kernel inserted a moment before (named at once by the id the kernel gave it, in
set_outputs, set_source and delete_cell); the saved file holds them as nbformat.
"""

from __future__ import annotations

import pytest
from helpers import protocol
from helpers.agent_scenario import RAN, RAN_NEW, SHOWN, set_outputs_code
from test_lab_bridge import NotebookPage, write_notebook
from test_lab_notebook_edit import save


@pytest.mark.parametrize("jupyter_server", ["lab", "notebook"], indirect=True)
def test_outputs_set_by_the_kernel_show_under_the_cell_and_a_new_one(jupyter_server, page, artifacts):
    from playwright.sync_api import expect

    path = jupyter_server.root / "outputs.ipynb"
    attach = (
        protocol.check_in_kernel()
        + "from genai_magics.frontends.bridge import Bridge\nB = Bridge.attach(get_ipython())"
    )
    write_notebook(
        path,
        [
            ("setup", attach),
            ("target", "y = 1"),
            ("runner", "target = 'target'\n" + set_outputs_code("B")),
            ("check", "print('RES', res, 'OUTSIDE THE SCHEMA', _bridge_bad)"),
        ],
    )
    nb = NotebookPage(page, artifacts)
    nb.open(jupyter_server.notebook_url("outputs.ipynb"), 4)
    nb.run(0)
    nb.run(2)
    expect(page.locator(".jp-Notebook .jp-Cell")).to_have_count(5, timeout=10_000)
    target, new = nb.cell(1), nb.cell(2)
    expect(target.locator(".jp-InputPrompt")).to_have_text("[42]:", timeout=10_000)
    for shown in SHOWN:
        expect(target.locator(".jp-OutputArea")).to_contain_text(shown)
    expect(target.locator(".jp-OutputArea img")).to_have_count(1)
    expect(nb.editor(2)).to_have_text("print(2)")
    expect(new.locator(".jp-InputPrompt")).to_have_text("[43]:")
    expect(nb.output(2)).to_have_text("2")
    nb.shot("outputs-set")
    nb.run(4)
    expect(nb.output(4)).to_contain_text(f"RES {[None] * 6} OUTSIDE THE SCHEMA []")

    cells = {c["id"]: c for c in save(page, nb, path)}
    assert cells["target"]["execution_count"] == 42 and cells["target"]["source"] == "y = 1"
    assert [dict(o) for o in cells["target"]["outputs"]] == RAN
    inserted = [c for c in cells.values() if c["source"] == "print(2)"]
    assert [(c["execution_count"], [dict(o) for o in c["outputs"]]) for c in inserted] == [(43, RAN_NEW)]
