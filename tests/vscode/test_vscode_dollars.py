"""Dollar amounts are text in a real VS Code too (issue 41): the bundle that keeps JupyterLab's MathJax off an
answer's dollars (each `$` an element of its own, as an entity) shows plain `$` in VS Code's Markdown renderer,
whose KaTeX still typesets the `$$…$$` the model wrote. JupyterLab and Notebook 7: tests/browser/test_lab_dollars.py.
"""

from __future__ import annotations

import time

import pytest
from notebook_page import open_notebook

pytestmark = pytest.mark.usefixtures("code_server")

ANSWER = "If an order costs $5 and shipping is $10, what is $$5+10$$?"
# each output webview's text as a reader sees it (Markdown renders in shadow roots) and what KaTeX typeset there
_SHOWN_JS = """() => {
  const shown = {texts: [], katex: 0, markup: 0};
  const walk = (root) => {
    shown.katex += root.querySelectorAll('.katex').length;
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) walk(el.shadowRoot);
    if (root !== document) shown.texts.push(root.textContent);
  };
  walk(document);
  shown.texts.push(document.body ? document.body.textContent : '');
  return shown;
}"""


def test_an_answers_dollars_show_as_dollars_and_its_math_as_math(page, code_server, workspace, artifacts, stub):
    nb = open_notebook(page, code_server, workspace, artifacts, ["%load_ext genai_magics", f"%%gemini_ask\n{ANSWER}"])
    nb.run(0)
    nb.run(1)
    nb.wait_output("Stub answer to")
    deadline = time.monotonic() + 30
    while True:
        frames = [f.evaluate(_SHOWN_JS) for f in nb.frames() if not f.is_detached()]
        text = " ".join(t for f in frames for t in f["texts"])
        katex = sum(f["katex"] for f in frames)
        if katex or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    nb.shot("answer")
    assert "Stub answer to: If an order costs $5 and shipping is $10, what is" in text
    assert "<span>" not in text and "&#36;" not in text  # the markup is rendered, never shown
    assert katex == 1  # `$$5+10$$`, and nothing else
