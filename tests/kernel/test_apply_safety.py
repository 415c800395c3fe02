"""Adversarial audit of Apply / Discard / Undo (issue 8's work): each test is a way a user could
make Apply write the wrong thing or Undo clobber a hand edit, found by trying it. Real kernels
(jupyter_client), VS Code's request shapes from tests/helpers/vscode.py, the fake live frontend
(tests/helpers/fake_frontend.py), proposals scripted with the stand-in's ``script_edit``."""

from __future__ import annotations

import contextlib
import html

import pytest
from helpers.fake_frontend import FakeCell, FakeFrontend
from helpers.kernel import FAKE_KEY
from helpers.vscode import VSCode, set_next_input
from helpers.wire import api_requests

from genai_magics import messages
from genai_magics.engine.cells import Cell
from genai_magics.engine.notebook_text import notebook_text

pytestmark = pytest.mark.kernel  # every test here starts a kernel (fixture or fake frontend)

CELL_A = "def parse(s):\n    return int(s)\n"
LOOP = "for _ in range(1):\n    get_ipython().run_cell_magic('gemini_edit', '', 'Add input validation.')"


def _staged(kernel, vscode):
    """VS Code, a magic that cannot wait (run_cell_magic in a loop): Apply clicked, so staged."""
    vscode.run(CELL_A, 1)
    vscode.run(LOOP, 2)
    kernel.click("Apply")
    assert any(messages.STAGED.render() in v for v in kernel.html_values())


# -- staged Apply (VS Code, a cell that cannot wait) ------------------------------------------------


def test_discard_after_a_staged_apply_writes_nothing_on_the_next_run(kernel, stub):
    vscode = VSCode(kernel)
    _staged(kernel, vscode)
    kernel.click("Discard")
    assert any("Discarded" in v for v in kernel.html_values())
    n = len(api_requests(stub))
    again = vscode.run(LOOP, 2)
    assert all(not p["text"].startswith("# gemini_edit:") for p in set_next_input(again)), (
        "a discarded proposal must never replace the cell"
    )
    assert messages.STAGED_WRITTEN.render() not in again.stdout
    assert len(api_requests(stub)) == n + 1, "the run is a normal turn again"


def test_reset_after_a_staged_apply_writes_nothing_on_the_next_run(kernel, stub):
    vscode = VSCode(kernel)
    _staged(kernel, vscode)
    kernel.run("%gemini reset", cell_id="reset")
    again = vscode.run(LOOP, 2)
    assert all(not p["text"].startswith("# gemini_edit:") for p in set_next_input(again))
    assert messages.STAGED_WRITTEN.render() not in again.stdout


def test_a_magic_cell_edited_after_a_staged_apply_runs_as_written(kernel, stub):
    """The user changed the instruction before running the cell again: that is a new request,
    not the old proposal over the new instruction."""
    vscode = VSCode(kernel)
    _staged(kernel, vscode)
    n = len(api_requests(stub))
    edited = LOOP.replace("Add input validation.", "Add a docstring instead.")
    again = vscode.run(edited, 2)
    assert set_next_input(again) == [], "the edited cell must not be overwritten by the old proposal"
    assert len(api_requests(stub)) == n + 1
    assert any(messages.EDITED_BEFORE_RERUN.within(html.unescape(v)) for v in kernel.html_values())


def test_undo_after_a_staged_apply_was_written_is_not_staged_again(kernel, stub):
    """Undo after the staged proposal replaced the cell: the conversation goes back and the widget
    says the original cell still holds the old code; nothing is staged (no 'Apply staged' for an
    Undo, no old code written over the magic cell on its next run)."""
    vscode = VSCode(kernel)
    _staged(kernel, vscode)
    written = vscode.run(LOOP, 2)
    (payload,) = set_next_input(written)
    kernel.click("Undo")
    said = kernel.html_values()
    assert any(messages.RUNNING_CELL_UNDONE.within(html.unescape(v)) for v in said), said
    assert not any("Apply staged" in v for v in said[-1:])
    again = vscode.run(payload["text"], 2)  # the cell as VS Code now holds it, run again
    assert set_next_input(again) == []


# -- --notebook through the live bridge: a hand edit is never clobbered silently -------------------


def _lab(stub, tmp_path, cells):
    stub.reset()
    return FakeFrontend(
        cells=cells, env={"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY}, cwd=str(tmp_path)
    )


@contextlib.contextmanager
def _proposed(stub, tmp_path, cells, proposal: str = ""):
    """The extension loaded and the magic cell ``m`` run: its proposal (``proposal``, else NB_PROPOSAL) shown."""
    with _lab(stub, tmp_path, cells) as ff:
        ff.execute("setup")
        stub.script_edit(proposal or NB_PROPOSAL)
        ff.execute("m")
        yield ff


def _statuses(ff) -> list[str]:
    return [s.get("value", "") for s in ff.widget_models.values() if s.get("_model_name") == "HTMLModel"]


def _click(ff, label: str, expect: str) -> None:
    ff.click(ff.buttons()[label])
    assert ff.pump_until(lambda: any(expect in v for v in _statuses(ff)), timeout=15), _statuses(ff)


NB_CELLS = [
    ("setup", "%load_ext genai_magics"),
    ("a", "x = 1\n"),
    ("b", "y = 2\n"),
    ("m", "%%gemini_edit --notebook\nDouble them and add a total."),
]
NB_PROPOSAL = notebook_text([Cell("a", "x = 2\n"), Cell("b", "y = 4\n")]) + "\n# %%\ntotal = x + y\n"


def test_notebook_undo_after_a_hand_edit_of_a_changed_cell_asks_first(stub, tmp_path):
    with _proposed(stub, tmp_path, NB_CELLS) as ff:
        _click(ff, "Apply", "Applied")
        assert ff.source("a") == "x = 2\n"
        ff.edit("a", "x = 2  # checked by hand\n")
        ff.push_snapshot()  # the extension pushes an edit a moment after it is typed
        _click(ff, "Undo", "changed since")
        assert ff.source("a") == "x = 2  # checked by hand\n", "Undo clobbered the hand edit"
        _click(ff, "Undo anyway", "Undone")
        assert [(c.id, c.source) for c in ff.cells] == [
            ("setup", "%load_ext genai_magics"),
            ("a", "x = 1\n"),
            ("b", "y = 2\n"),
            ("m", NB_CELLS[-1][1]),
        ]


def test_notebook_undo_after_typing_into_a_new_cell_asks_first(stub, tmp_path):
    with _proposed(stub, tmp_path, NB_CELLS) as ff:
        _click(ff, "Apply", "Applied")
        (new,) = [c for c in ff.cells if c.source == "total = x + y"]
        ff.edit(new.id, "total = x + y\nprint(total)  # my own line\n")
        ff.push_snapshot()
        _click(ff, "Undo", "changed since")
        assert any(c.id == new.id for c in ff.cells), "Undo deleted a cell the user typed into"


def test_notebook_apply_after_a_hand_edit_since_the_proposal_asks_first(stub, tmp_path):
    with _proposed(stub, tmp_path, NB_CELLS) as ff:
        ff.edit("b", "y = 3  # changed my mind\n")
        ff.push_snapshot()
        _click(ff, "Apply", "changed since")
        assert ff.source("b") == "y = 3  # changed my mind\n" and ff.requests_received == []
        _click(ff, "Apply anyway", "Applied")
        assert ff.source("b") == "y = 4\n"


def test_a_double_click_on_notebook_apply_makes_the_edits_once(stub, tmp_path):
    """Two Apply clicks before the frontend answered the first one's cell edits (a double click):
    one new cell, not two, and Undo leaves the notebook as it was."""
    with _proposed(stub, tmp_path, NB_CELLS) as ff:
        before = [(c.id, c.source) for c in ff.cells]
        apply_id = ff.buttons()["Apply"]
        ff.click(apply_id, wait=False)
        ff.click(apply_id, wait=False)
        assert ff.pump_until(lambda: any("Applied" in v for v in _statuses(ff)), timeout=15), _statuses(ff)
        ff.pump(1.0)
        assert [c.source for c in ff.cells].count("total = x + y") == 1, [c.source for c in ff.cells]
        _click(ff, "Undo", "Undone")
        assert [(c.id, c.source) for c in ff.cells] == before


def _apply_then_undo(stub, tmp_path, cells, proposal, expect_after):
    with _lab(stub, tmp_path, cells) as ff:
        ff.execute("setup")
        before = [c.to_json() for c in ff.cells]
        stub.script_edit(proposal)
        ff.execute("m")
        _click(ff, "Apply", "Applied")
        assert [(c.cell_type, c.source) for c in ff.cells] == expect_after
        _click(ff, "Undo", "Undone")
        assert [c.to_json() for c in ff.cells] == before


def test_notebook_new_cells_at_the_very_top_and_bottom_and_undo(stub, tmp_path):
    cells = [
        ("a", "x = 1\n"),
        FakeCell("md", "# Title", "markdown"),
        ("setup", "%load_ext genai_magics"),
        ("m", "%%gemini_edit --notebook\nWrap it."),
    ]
    proposal = (
        "# %%\nimport os\n\n"
        + notebook_text([Cell("a", "x = 1\n"), Cell("md", "# Title", "markdown")])
        + "\n# %% [markdown]\nThe end.\n"
    )
    _apply_then_undo(
        stub,
        tmp_path,
        cells,
        proposal,
        [
            ("code", "import os"),
            ("code", "x = 1\n"),
            ("markdown", "# Title"),
            ("markdown", "The end."),
            ("code", "%load_ext genai_magics"),
            ("code", "%%gemini_edit --notebook\nWrap it."),
        ],
    )


def test_notebook_removing_every_cell_but_the_magic_and_undo(stub, tmp_path):
    cells = [
        FakeCell(
            "a", "x = 1\n", "code", {"tags": ["t"]}, [{"output_type": "stream", "name": "stdout", "text": "1\n"}], 4
        ),
        ("setup", "%load_ext genai_magics"),
        FakeCell("r", "raw\n", "raw"),
        ("m", "%%gemini_edit --notebook\nRemove everything."),
        FakeCell("z", "## end", "markdown"),
    ]
    _apply_then_undo(
        stub,
        tmp_path,
        cells,
        "",
        [("code", "%load_ext genai_magics"), ("code", "%%gemini_edit --notebook\nRemove everything.")],
    )


def test_two_conversations_on_one_cell_apply_both_and_undo_in_either_order(stub, tmp_path):
    """Conversations one and two both propose for cell c from the same code. Applying the second
    over the first asks first; Undo of the one applied first, while the other's text is in the
    cell, asks first too; Undo of the second puts back what its 'Apply anyway' overwrote (the
    first's code, not the second's base); undoing in reverse order restores the original."""
    cells = [
        ("setup", "%load_ext genai_magics"),
        ("c", "v = 1\n"),
        ("m1", "%%gemini_edit -c one\nMake it two."),
        ("m2", "%%gemini_edit -c two\nMake it three."),
    ]
    with _lab(stub, tmp_path, cells) as ff:
        ff.execute("setup")
        stub.script_edit("v = 2\n")
        ff.execute("m1")
        stub.script_edit("v = 3\n")
        run = ff.execute("m2")
        assert not run.stderr, run.stderr
        ids = [
            mid
            for mid, s in ff.widget_models.items()
            if s.get("_model_name") == "ButtonModel" and s.get("description") == "Apply"
        ]
        first, second = ids
        ff.click(first)
        assert ff.pump_until(lambda: ff.source("c") == "v = 2\n")
        ff.click(second)
        assert ff.pump_until(lambda: any("changed since" in v for v in _statuses(ff)))
        assert ff.source("c") == "v = 2\n"
        ff.click(ff.buttons()["Apply anyway"])

        def undo_buttons() -> list[str]:
            return [
                mid
                for mid, s in ff.widget_models.items()
                if s.get("_model_name") == "ButtonModel" and s.get("description") == "Undo"
            ]

        assert ff.pump_until(lambda: len(undo_buttons()) == 2)
        assert ff.source("c") == "v = 3\n"
        undo = undo_buttons()
        ff.click(undo[0])  # the first conversation's Undo: the cell holds the second's text
        assert ff.pump_until(lambda: sum("Undo not done" in v for v in _statuses(ff)) == 1)
        assert ff.source("c") == "v = 3\n"
        ff.click(undo[1])
        assert ff.pump_until(lambda: ff.source("c") == "v = 2\n")
        ff.click(undo[0])
        assert ff.pump_until(lambda: ff.source("c") == "v = 1\n"), ff.source("c")


def test_undo_after_apply_anyway_puts_back_the_hand_edit(stub, tmp_path):
    """Apply anyway over a hand edit, then Undo: the hand edit comes back, not the code the
    proposal was made from (that would silently lose what the user typed)."""
    cells = [("setup", "%load_ext genai_magics"), ("c", "v = 1\n"), ("m", "%%gemini_edit\nMake it two.")]
    with _proposed(stub, tmp_path, cells, "v = 2\n") as ff:
        ff.edit("c", "v = 1  # my note\n")
        ff.push_snapshot()
        _click(ff, "Apply", "changed since")
        _click(ff, "Apply anyway", "Applied")
        assert ff.source("c") == "v = 2\n"
        _click(ff, "Undo", "Undone")
        assert ff.source("c") == "v = 1  # my note\n"


# -- VS Code one-line forms ---------------------------------------------------------------------------


def test_vscode_one_line_edit_ending_in_a_question_mark_with_dollar_and_braces_waits(kernel, stub):
    """`%gemini_edit can you guard {s} and $s?`: IPython's help and var expansion do not touch it,
    the cell still waits for the click, and Apply replaces that cell in its own reply."""
    vscode = VSCode(kernel)
    vscode.run(CELL_A, 1)
    line = "%gemini_edit can you guard {s} and $s?"
    msg_id = vscode.start(line, 2)
    kernel.wait_for_button("Apply", msg_id)  # the proposal's text is opened before its buttons
    kernel.wait_until(lambda k: any("Apply replaces this magic cell" in v for v in k.html_values()), msg_id)
    kernel.click("Apply", wait=False)
    run = kernel.finish(msg_id)
    assert run.errors == [] and "coroutine" not in run.plain
    (payload,) = set_next_input(run)
    assert payload["replace"] is True and payload["text"].startswith("# gemini_edit: can you guard {s} and $s?\n")
    assert [r for r in api_requests(stub)][-1]["json"]["contents"][-1]["parts"][0]["text"].count("{s} and $s?") == 1
    assert set_next_input(vscode.run("y = 1", 3)) == []


def test_notebook_undo_after_apply_anyway_puts_back_the_hand_edits(stub, tmp_path):
    with _proposed(stub, tmp_path, NB_CELLS) as ff:
        ff.edit("b", "y = 3  # changed my mind\n")
        ff.push_snapshot()
        before = [c.to_json() for c in ff.cells]
        _click(ff, "Apply", "changed since")
        _click(ff, "Apply anyway", "Applied")
        assert ff.source("b") == "y = 4\n" and any(c.source == "total = x + y" for c in ff.cells)
        _click(ff, "Undo", "Undone")
        assert [c.to_json() for c in ff.cells] == before
