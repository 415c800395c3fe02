"""Dollar amounts are text (issue 41): what the magics show in HTML and Markdown is never typeset as math.

The pure rendering functions here; on screen, in a real JupyterLab: tests/browser/test_lab_dollars.py.
"""

from __future__ import annotations

import html
import re

from hypothesis import assume, example, given
from hypothesis import strategies as st

from genai_magics.ui.display import DOLLAR, NO_MATH, _Markdown, _Rich, literal_dollars, safe_markdown

ANSWER = "If an order costs $5 and shipping is $10, the total is $15."


def shown(markdown: str) -> str:
    """The text a reader sees of our Markdown's dollars (the entity in its span is one `$`)."""
    return html.unescape(markdown.replace(DOLLAR, "$"))


def test_an_answers_dollars_are_each_an_element_of_their_own():
    out = safe_markdown(ANSWER)
    assert "$" not in out  # MathJax pairs `$`s in a run of text, VS Code's KaTeX in the source: none left
    assert out.count(DOLLAR) == 3
    assert shown(out) == ANSWER


def test_math_the_model_writes_on_purpose_stays_math():
    text = r"Costs $5. Area: $$\pi r^2$$, inline \(x^2\) and \[e^{i\pi}\]; also \$3."
    out = safe_markdown(text)
    for math in (r"$$\pi r^2$$", r"\(x^2\)", r"\[e^{i\pi}\]"):
        assert math in out
    assert out.count(DOLLAR) == 2  # `$5` and the escaped `\$3`: both dollars
    assert r"\$" not in out


def test_dollars_in_code_stay_as_written():
    text = "Use `price = $5` or\n\n```sh\necho $HOME\n```\nfor $5."
    out = safe_markdown(text)
    assert "`price = $5`" in out and "echo $HOME" in out
    assert out.endswith(f"for {DOLLAR}5.")


def test_the_markdown_bundle_keeps_its_plain_text():
    bundle = _Markdown(ANSWER)._repr_mimebundle_()
    assert bundle["text/plain"] == ANSWER
    assert "$" not in bundle["text/markdown"]


def test_html_outputs_are_inside_the_class_mathjax_skips():
    footer = "in 894 tok · out 12 · ~$0.0017 · ~$0.013 saved vs resending"
    bundle = _Rich(f"<div>{html.escape(footer)}</div>", footer)._repr_mimebundle_()
    assert re.fullmatch(rf'<div class="{NO_MATH}"><div>.*</div></div>', bundle["text/html"])
    assert footer in bundle["text/html"] and bundle["text/plain"] == footer
    assert _Rich("", "")._repr_mimebundle_()["text/html"] == ""  # a placeholder takes no room


@given(st.text(alphabet="$\\ab5 (){}[]", max_size=30))
@example(r"\$$$")
@example(r"\\$")
@example("$$a$$$")
def test_no_lone_dollar_is_left_outside_math(text):
    outside = re.sub(r"\$\$.+?\$\$|\\\(.+?\\\)|\\\[.+?\\\]", "", literal_dollars(text), flags=re.S)
    assert "$" not in outside


@given(st.text(alphabet="$ab5 .,\n", max_size=30))
@example("$$")
def test_without_math_a_reader_sees_the_text_as_written(text):
    """With no `$$…$$` in it (this alphabet has no backslash: no `\\(…\\)`), every `$` is a dollar."""
    assume(not re.search(r"\$\$.+?\$\$", text, re.S))  # that would be math
    assert shown(literal_dollars(text)) == text
