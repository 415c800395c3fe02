"""Dollar amounts are text (issue 41), on screen in a real JupyterLab 4 and Notebook 7.

Both typeset `$…$` in HTML and Markdown outputs as math: an answer "costs $5 and shipping is $10" showed
"costs *5andshippingis*10" in italics, a footer's two amounts lost both dollars. An answer's dollars, a
footer's, a step line's and the ``%gemini`` tables' show as dollars; the math the model writes in `$$…$$`
is still typeset (and so is an HTML output of the user's own: MathJax is on in these outputs).
The pure functions: tests/unit/test_dollars.py.
"""

from __future__ import annotations

import pytest
from test_lab_bridge import NotebookPage, write_notebook

pytestmark = pytest.mark.stand_in  # the server's kernels talk to the stand-in (browser/conftest.py: server_env)

MATH = "mjx-container"  # what MathJax puts where it typeset something
ANSWER = "If an order costs $5 and shipping is $10, what is $$5+10$$?"
FOOTER = "turn 9 · ask · ~$0.0017 · ~$0.013 saved vs resending"
STEP = "step: read a cell that costs $5 and $10"


@pytest.mark.parametrize("jupyter_server", ["lab", "notebook"], indirect=True)
def test_dollars_show_as_dollars_and_math_stays_math(jupyter_server, page, artifacts):
    from playwright.sync_api import expect

    write_notebook(
        jupyter_server.root / "dollars.ipynb",
        [
            ("setup", "%load_ext genai_magics"),
            ("ask", f"%%gemini_ask\n{ANSWER}"),
            (
                "shown",
                "from IPython.display import HTML, display\n"
                "from genai_magics.ui.display import NotebookDisplay\n"
                f"NotebookDisplay.footer({FOOTER!r})\n"
                f"NotebookDisplay('agent').note({STEP!r})\n"
                "display(HTML('<div>the control: $x^2$ and $y$</div>'))",
            ),
            ("tables", "%gemini cost\n%gemini tokens\n%gemini prices"),
        ],
    )
    nb = NotebookPage(page, artifacts)
    nb.open(jupyter_server.notebook_url("dollars.ipynb"), 4)
    for i in range(4):
        nb.run(i)
    answer, shown, tables = nb.cell(1).locator(".jp-OutputArea"), nb.output(2), nb.cell(3).locator(".jp-OutputArea")
    expect(answer).to_contain_text("Stub answer to: If an order costs $5 and shipping is $10, what is", timeout=30_000)
    expect(answer.locator(MATH)).to_have_count(1, timeout=10_000)  # `$$5+10$$`, and nothing else
    nb.shot("answer")

    control = shown.filter(has_text="the control")
    expect(control.locator(MATH)).to_have_count(2, timeout=10_000)  # an HTML output is typeset here
    for text in (FOOTER, STEP):
        line = shown.filter(has_text=text.split(" · ")[0])
        expect(line).to_have_text(text)
        expect(line.locator(MATH)).to_have_count(0)
    footer = shown.locator("div[title]")
    expect(footer).to_have_text(FOOTER)

    expect(tables).to_contain_text("this session: $")
    expect(tables).to_contain_text("cost $")
    expect(tables.locator(MATH)).to_have_count(0)
    nb.shot("dollars")
