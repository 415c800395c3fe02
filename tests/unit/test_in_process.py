"""The fast layer: the magics' parsing and help, the proposal widget's states and the proposal
controller, in an in-process IPython shell against the stand-in (real SDK, real HTTP, no kernel).

The same behaviours are covered end to end in real kernels (test_wire, test_bad_input, ...);
these run in well under a second each, so a maintainer can run them on every change.
"""

from __future__ import annotations

import copy
import html
import json
import re

import pytest
from helpers.wire import api_requests, current_payload

from genai_magics import messages
from genai_magics.ui.display import footer_legend

CODE = "def parse(s):\n    return int(s)\n"


def buttons(widget) -> dict[str, object]:
    """The proposal widget's visible buttons by description."""
    return {b.description: b for b in widget.children[1:] if hasattr(b, "description") and b.layout.display != "none"}


def edit(magic_shell, instruction: str = "Add validation", cell_id: str = "m1"):
    magic_shell.run(CODE, cell_id="code")
    shown = magic_shell.run(f"%%gemini_edit\n{instruction}", cell_id=cell_id)
    (widget,) = shown.widgets()
    return shown, widget


# -- parsing and help ----------------------------------------------------------------


def test_flags_reach_the_request(magic_shell, stub):
    magic_shell.run(CODE, cell_id="code")
    shown = magic_shell.run("%%gemini_ask --dry-run --no-context -c other --state interactions\nwhy?", cell_id="m")
    assert stub.requests == []  # a dry run sends nothing
    (bundle,) = [b for b in shown.bundles if "dry run" in b.get("text/plain", "")]
    title, body = bundle["text/plain"].split("\n", 1)
    assert title.startswith(messages.DRY_RUN.render(state="interactions"))
    assert json.loads(json.loads(body)["input"])["prompt"] == "why?"
    assert "other" not in magic_shell.magics.session.conversations  # and changes nothing


def test_one_line_form_takes_the_words_after_the_flags(magic_shell, stub):
    magic_shell.run(CODE, cell_id="code")
    magic_shell.run("%gemini_ask --cell code what does parse do", cell_id="m")
    (request,) = api_requests(stub)
    assert current_payload(request)["prompt"] == "what does parse do"


@pytest.mark.parametrize(
    "source, form",
    [
        ("%%gemini_ask --bogus\nq", "%%gemini_ask?"),
        ("%gemini_edit --bogus q", "%gemini_edit?"),
        ("%%gemini_ask --cel 1\nq", "%%gemini_ask?"),
    ],
)
def test_a_bad_flag_is_one_line_naming_the_right_help(magic_shell, stub, source, form):
    shown = magic_shell.run(source, cell_id="m")
    assert shown.stderr.count("\n") == 1 and "Traceback" not in shown.stderr
    assert shown.stderr.startswith("genai_magics: unrecognized arguments") and f"(see {form})" in shown.stderr
    assert stub.requests == []


@pytest.mark.parametrize("magic", ["gemini_ask", "gemini_edit"])
def test_help_is_plain_text_for_each_form(magic_shell, magic):
    cell, line = magic_shell.help(f"%%{magic}"), magic_shell.help(f"%{magic}")
    for text in (cell, line):
        assert "::" not in text and "<{" not in text and "{contents,interactions}" not in text
        assert "--state MODE" in text and "--dry-run" in text
    assert cell.startswith(f"usage: %%{magic} [options]\n")
    assert "in the cell body" in cell and "words" not in cell and "one line" not in cell
    assert line.startswith(f"usage: %{magic} [options] prompt words\n")
    assert "the cell body" not in line


def test_gemini_help_lists_every_subcommand_of_the_table(magic_shell):
    from genai_magics.kernel.line_commands import COMMANDS

    shown = magic_shell.run("%gemini help", cell_id="m")
    for name, command in COMMANDS.items():
        assert f"%gemini {name}" in shown.stdout and command.help in shown.stdout
    assert "--conversation NAME" in shown.stdout  # and every flag's help (magic_arguments)
    assert (
        magic_shell.run("%gemini debug on", cell_id="m2").stdout == messages.DEBUG_IS.render(on="on") + "\n"
    )  # a handler, looked up by name
    assert magic_shell.magics.debug


# -- the proposal widget and its controller ------------------------------------------


def test_a_proposal_shows_the_diff_as_text_where_widgets_do_not_render(magic_shell, stub):
    shown, widget = edit(magic_shell)
    (bundle,) = [b for b in shown.bundles if "application/vnd.jupyter.widget-view+json" in b]
    assert not bundle["text/plain"].startswith("VBox(")
    assert re.match(r"--- In\[\d+\] \(current\)\n\+\+\+ In\[\d+\] \(proposed\)\n", bundle["text/plain"])
    assert "+# stub edit: Add validation" in bundle["text/plain"]
    # what Apply will do here, then where the model is gone (a reopened notebook) that the buttons come back
    assert bundle["text/plain"].endswith(f"{messages.KERNEL_STATE_APPLY.render()}\n{messages.SAVED_VIEW.render()}")
    assert bundle["text/html"].endswith(f"{html.escape(messages.SAVED_VIEW.render())}</div>")
    assert "<pre" in bundle["text/html"] and "+# stub edit: Add validation" in bundle["text/html"]


def test_only_a_widget_with_buttons_saves_the_line_that_they_come_back():
    """A proposal, an agent's question, an agent turn's Undo button: the line; a line of text alone: none."""
    from genai_magics.ui.widgets import widget_bundle

    view = {"version_major": 2, "version_minor": 0, "model_id": "m"}
    line = messages.SAVED_VIEW.render()
    assert widget_bundle("m", "Run In[3]?") == {
        "text/plain": f"Run In[3]?\n{line}",
        "application/vnd.jupyter.widget-view+json": view,
    }
    with_html = widget_bundle("m", "diff", "<pre>diff</pre>")
    assert with_html["text/html"].startswith("<pre>diff</pre><div") and with_html["text/html"].endswith(f"{line}</div>")
    assert widget_bundle("m", "Applied: …", buttons=False) == {
        "text/plain": "Applied: …",
        "application/vnd.jupyter.widget-view+json": view,
    }


def test_apply_undo_discard_states(magic_shell, stub):
    _, widget = edit(magic_shell)
    controller = magic_shell.magics.latest["default"]
    assert set(buttons(widget)) == {"Apply", "Discard", "Copy"}
    buttons(widget)["Apply"].click()
    assert controller.turn.outcome == "applied"
    assert (messages.KERNEL_STATE_DONE.parse(controller.message) or {}).get("verb") == "Applied"
    state = buttons(widget)
    assert state["Apply"].disabled and state["Discard"].disabled and not state["Undo"].disabled
    assert controller.message in widget.children[0].value
    state["Undo"].click()
    assert controller.turn.outcome == "undone"
    assert buttons(widget)["Undo"].disabled
    # the next ask holds the code from before the proposal again
    magic_shell.run("%%gemini_ask\nand now?", cell_id="m2")
    assert current_payload(api_requests(stub)[-1]).get("sourceSynchronized") is True


def test_the_diff_header_says_what_each_text_is_after_apply_and_undo(magic_shell, stub):
    shown, widget = edit(magic_shell)
    controller = magic_shell.magics.latest["default"]
    label = controller.turn.document_label

    def headers() -> list[str]:
        """The diff's header lines as the widget shows them."""
        return [html.unescape(h) for h in re.findall(r">((?:---|\+\+\+) [^<]*)</span>", widget.children[0].value)]

    assert headers() == [f"--- {label} (current)", f"+++ {label} (proposed)"]
    buttons(widget)["Apply"].click()
    # the cell holds the proposal now: the old text is no longer "current"
    assert headers() == [f"--- {label} (before Apply)", f"+++ {label} (applied)"]
    buttons(widget)["Undo"].click()
    assert headers() == [f"--- {label} (current)", f"+++ {label} (proposed)"]


def test_the_footer_explains_itself_on_hover(magic_shell, stub):
    magic_shell.run(CODE, cell_id="code")
    shown = magic_shell.run("%%gemini_ask -c legend\nwhy?", cell_id="m")
    (footer,) = [b for b in shown.bundles if re.match(r"turn \d+ · ask", b.get("text/plain", ""))]
    legend = html.escape(footer_legend())
    assert f'title="{legend}"' in footer["text/html"]
    assert "not re-sent" in legend and "cached" in legend


def test_a_cell_whose_id_is_notebook_is_a_cell_not_the_whole_notebook(magic_shell, stub):
    """ "notebook" is a legal nbformat cell id: the whole notebook's key is of its own type."""
    magic_shell.run(CODE, cell_id="notebook")
    # a conversation of its own: the in-process shell keeps conversations from test to test (reload_ext)
    (widget,) = magic_shell.run("%%gemini_edit -c cell-id\nAdd validation", cell_id="m1").widgets()
    controller = magic_shell.magics.latest["cell-id"]
    assert controller.diff.startswith("--- ")  # one cell's diff, not the notebook's cell by cell
    buttons(widget)["Apply"].click()
    assert magic_shell.magics.session.executed.by_id["notebook"].source.startswith("# stub edit: Add validation")
    # the follow-up keeps that cell as its document and sends nothing again
    shown = magic_shell.run("%%gemini_ask -c cell-id\nand now?", cell_id="m2")
    assert current_payload(api_requests(stub)[-1]).get("sourceSynchronized") is True, shown.plain


def test_discard_then_apply_is_refused_and_said(magic_shell, stub):
    _, widget = edit(magic_shell)
    controller = magic_shell.magics.latest["default"]
    buttons(widget)["Discard"].click()
    assert controller.turn.outcome == "discarded" and controller.message.startswith("Discarded")
    assert buttons(widget)["Apply"].disabled
    controller.apply()  # as %gemini apply would
    assert controller.turn.outcome == "discarded" and controller.message.startswith("Apply: ")


def test_a_cell_changed_since_the_proposal_needs_apply_anyway(magic_shell, stub):
    _, widget = edit(magic_shell)
    controller = magic_shell.magics.latest["default"]
    mine = CODE + "# my own change\n"
    magic_shell.run(mine, cell_id="code")
    buttons(widget)["Apply"].click()
    assert controller.turn.outcome == "proposed"
    assert magic_shell.magics.session.executed.by_id["code"].source == mine  # not overwritten
    buttons(widget)["Apply anyway"].click()
    assert controller.turn.outcome == "applied"
    assert magic_shell.magics.session.executed.by_id["code"].source.startswith("# stub edit: Add validation")
    assert "Apply anyway" not in buttons(widget)


def test_a_failed_write_changes_nothing_and_says_so(magic_shell, stub):
    _, widget = edit(magic_shell)
    controller = magic_shell.magics.latest["default"]

    class FailingWriter:
        kind = "live"

        def describe_apply(self) -> str:
            return "Apply writes the cell."

        def write(self, cell_id, source, done):
            done("the notebook is read-only")

    controller.replace_writer(FailingWriter(), "Apply writes the cell.")
    held = copy.deepcopy(magic_shell.magics.session.conversations["default"].sync)
    buttons(widget)["Apply"].click()
    assert controller.turn.outcome == "proposed"
    assert controller.message == messages.WRITE_FAILED.render(action="Apply", error="the notebook is read-only")
    assert magic_shell.magics.session.conversations["default"].sync == held
    assert not buttons(widget)["Apply"].disabled  # still possible once the cause is fixed
