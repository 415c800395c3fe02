"""Bad input in a real kernel: one clear line, nothing sent, no state change.

Also the proposal buttons when the click no longer makes sense (the
conversation was reset, a newer proposal was applied, the cell changed since
the proposal was made).
"""

from __future__ import annotations

import html
import json
import os
import time

import pytest
from helpers.kernel import FAKE_KEY, Kernel
from helpers.lazy import lazy_import
from helpers.wire import api_requests, current_payload

from genai_magics import messages

nbformat = lazy_import("nbformat")

CELL = "def mean(xs):\n    return sum(xs) / len(xs)\n"
MARKDOWN = "# Notes\nSome *markdown* text.\n"
FILE_CODE = "never_run = 42\n"


def write_good_notebook(path, *extra) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell(MARKDOWN, id="md-notes"),
        nbformat.v4.new_code_cell(FILE_CODE, id="file-code"),
        *extra,
    ]
    path.write_text(json.dumps(nb, ensure_ascii=True, indent=1), encoding="ascii")
    bump(path)


def surrogate_cell():
    """Valid JSON (an escaped lone surrogate), not valid text."""
    return nbformat.v4.new_code_cell("x = '\ud800'\n", id="surrogate-cell")


def bump(path) -> None:
    """A new mtime for every version of the file (the kernel caches a parsed file per version)."""
    bump.n = getattr(bump, "n", 0) + 1
    stamp = time.time_ns() + bump.n * 1_000_000_000
    os.utime(path, ns=(stamp, stamp))


@pytest.fixture(scope="module")
def nb_path(tmp_path_factory):
    return tmp_path_factory.mktemp("badinput") / "work.ipynb"


@pytest.fixture(scope="module")
def kern(stub, nb_path):
    """A kernel whose notebook file is known (JPY_SESSION_NAME), with one conversation of one turn."""
    write_good_notebook(nb_path)
    stub.reset()
    k = Kernel(
        env={"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY, "JPY_SESSION_NAME": str(nb_path)},
        cwd=str(nb_path.parent),
    )
    k.run("%load_ext genai_magics", cell_id="setup")
    k.run(CELL, cell_id="cell-mean")
    first = k.run("%%gemini_ask --cell cell-mean\nWhat does it do?", cell_id="m1")
    assert first.stderr == "", first.stderr
    yield k
    k.close()


@pytest.fixture
def bad_input_kernel(kern, nb_path):
    write_good_notebook(nb_path)
    yield kern
    kern.run("%config GeminiMagics.max_document_bytes = 1000000", cell_id="restore")


def status(kernel) -> str:
    return kernel.run("%gemini status", cell_id="status").stdout


def rejected(kernel, stub, source: str, cell_id: str = "bad") -> str:
    """Run a bad cell: exactly one error line, no request, no traceback, status unchanged."""
    before, sent = status(kernel), len(api_requests(stub))
    run = kernel.run(source, cell_id=cell_id)
    assert run.errors == [], run.errors
    assert "Traceback" not in run.plain
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("genai_magics: "), run.stderr
    assert len(api_requests(stub)) == sent, "nothing may be sent"
    assert status(kernel) == before, "bad input changed the conversation"
    return lines[0]


@pytest.mark.parametrize(
    "source",
    ["%%gemini_ask\n   \n", "%%gemini_edit --cell cell-mean\n\n", "%gemini_ask"],
    ids=["ask-blank", "edit-blank", "line-form-no-words"],
)
def test_empty_prompt(bad_input_kernel, stub, source):
    assert rejected(bad_input_kernel, stub, source) == messages.PROMPT_EMPTY.shown()


@pytest.mark.parametrize(
    "source, expected",
    [
        (
            "%%gemini_ask --bogus\nhi",
            messages.USAGE.shown(error="unrecognized arguments: --bogus", magic="%gemini_ask"),
        ),
        (
            "%%gemini_edit --celll cell-mean\nhi",
            messages.USAGE.shown(error="unrecognized arguments: --celll", magic="%gemini_edit"),
        ),
        (
            "%%gemini_edit --cel cell-mean\nhi",
            messages.USAGE.shown(error="unrecognized arguments: --cel", magic="%gemini_edit"),
        ),
        ("%%gemini_ask --state nowhere\nhi", "invalid choice: 'nowhere'"),
        ("%gemini frobnicate", "invalid choice: 'frobnicate'"),
    ],
    ids=["ask-unknown", "edit-typo", "edit-prefix-is-not-a-guess", "bad-state", "gemini-unknown-command"],
)
def test_unknown_flag_or_command(bad_input_kernel, stub, source, expected):
    line = rejected(bad_input_kernel, stub, source)
    assert expected in line
    assert messages.USAGE.matches(line)


@pytest.mark.parametrize(
    "ref, expected",
    [
        ("nosuch", messages.NO_SUCH_CELL.shown(flag="--cell", ref="nosuch")),
        ("999", messages.NO_CELL_WITH_COUNT_OR_ID.shown(flag="--cell", ref="999")),
        ("In[999]", messages.NO_CELL_WITH_COUNT.shown(flag="--cell", ref="In[999]", count=999)),
    ],
)
def test_cell_naming_no_cell(bad_input_kernel, stub, ref, expected):
    assert rejected(bad_input_kernel, stub, f"%%gemini_ask --cell {ref}\nhi") == expected


def test_markdown_cell_is_not_a_document(bad_input_kernel, stub):
    line = rejected(bad_input_kernel, stub, "%%gemini_edit --cell md-notes\nfix the typo")
    assert line == messages.NOT_A_CODE_CELL.shown(named="--cell md-notes", cell_type="markdown")


def test_never_run_file_cell_is_a_valid_target(bad_input_kernel, stub):
    """Control for the markdown case: the same file's code cell works."""
    n = len(api_requests(stub))
    run = bad_input_kernel.run("%%gemini_ask --cell file-code -c filecell\nwhat is it?", cell_id="ok-file")
    assert run.stderr == ""
    assert current_payload(api_requests(stub)[n])["currentSource"] == FILE_CODE
    bad_input_kernel.run("%gemini reset filecell", cell_id="reset")


def test_document_over_the_default_cap_of_about_one_megabyte(bad_input_kernel, stub):
    from genai_magics.kernel.magics import GeminiMagics

    assert 900_000 <= GeminiMagics.class_traits()["max_document_bytes"].default_value <= 1_100_000
    big = "DATA = '" + "x" * 1_100_000 + "'\n"
    bad_input_kernel.run(big, cell_id="cell-big")
    size = len(big.encode())
    try:
        line = rejected(bad_input_kernel, stub, "%%gemini_ask --cell cell-big\nsummarize")
    finally:
        bad_input_kernel.run("DATA = ''", cell_id="cell-big")  # not a megabyte of context for the next tests
    assert line == messages.DOCUMENT_OVER_CAP.shown(size=size, cap=1_000_000)


def test_document_over_a_lowered_cap(bad_input_kernel, stub):
    bad_input_kernel.run("%config GeminiMagics.max_document_bytes = 20", cell_id="cfg")
    size = len(CELL.encode())
    line = rejected(bad_input_kernel, stub, "%%gemini_edit --cell cell-mean\nrename")
    assert line == messages.DOCUMENT_OVER_CAP.shown(size=size, cap=20)


def test_binary_cell_is_not_sent(bad_input_kernel, stub):
    bad_input_kernel.run("blob = 'a\x00b'\n", cell_id="cell-nul")  # the cell fails to compile; it is recorded
    try:
        line = rejected(bad_input_kernel, stub, "%%gemini_ask --cell cell-nul\nwhat is this?")
    finally:
        bad_input_kernel.run("blob = 'ab'", cell_id="cell-nul")
    assert (messages.DOCUMENT_NOT_TEXT.parse(line) or {}).get("at") == "9", line


def test_undecodable_text_is_not_sent(bad_input_kernel, stub, nb_path):
    write_good_notebook(nb_path, surrogate_cell())
    line = rejected(bad_input_kernel, stub, "%%gemini_edit --cell surrogate-cell\nfix")
    assert (messages.DOCUMENT_NOT_TEXT.parse(line) or {}).get("at") == "5", line


def test_undecodable_cell_elsewhere_does_not_break_other_turns(bad_input_kernel, stub, nb_path):
    """A cell that is not text is left out of the secondary context; the turn goes through."""
    write_good_notebook(nb_path, surrogate_cell())
    n = len(api_requests(stub))
    run = bad_input_kernel.run("%%gemini_ask --cell cell-mean -c nottext\nwhat does it do?", cell_id="ok-surrogate")
    assert run.stderr == "", run.stderr
    payload = current_payload(api_requests(stub)[n])
    assert FILE_CODE in payload["secondaryContext"] and "surrogate-cell" not in payload["secondaryContext"]
    bad_input_kernel.run("%gemini reset nottext", cell_id="reset")


def test_notebook_file_missing(bad_input_kernel, stub, nb_path):
    nb_path.unlink()
    line = rejected(bad_input_kernel, stub, "%%gemini_ask --notebook\noverview")
    assert line == messages.NOTEBOOK_FLAG.shown(why=messages.NOTEBOOK_NOT_FOUND.render(path=nb_path))


def test_notebook_file_corrupt(bad_input_kernel, stub, nb_path):
    nb_path.write_text('{"cells": [ this is not json', encoding="utf-8")
    bump(nb_path)
    line = rejected(bad_input_kernel, stub, "%%gemini_edit --notebook\ntidy up")
    assert line.startswith(
        messages.NOTEBOOK_FLAG.shown(why=messages.NOTEBOOK_UNREADABLE.render(name=nb_path.name, error=""))
    )


def test_notebook_file_not_nbformat_4(bad_input_kernel, stub, nb_path):
    v3 = nbformat.v3.new_notebook()
    v3.worksheets = [nbformat.v3.new_worksheet(cells=[nbformat.v3.new_code_cell(input="print(1)")])]
    nb_path.write_text(nbformat.v3.writes_json(v3), encoding="utf-8")
    bump(nb_path)
    assert json.loads(nb_path.read_text())["nbformat"] == 3
    line = rejected(bad_input_kernel, stub, "%%gemini_ask --notebook\noverview")
    assert line == messages.NOTEBOOK_FLAG.shown(why=messages.NOTEBOOK_NOT_V4.render(name=nb_path.name, version=3))


def test_notebook_file_good_is_accepted(bad_input_kernel, stub):
    """Control: the same kernel and magic with a readable file sends the notebook."""
    n = len(api_requests(stub))
    run = bad_input_kernel.run("%%gemini_ask --notebook -c whole\noverview", cell_id="ok-nb")
    assert run.stderr == ""
    assert FILE_CODE in current_payload(api_requests(stub)[n])["currentSource"]
    bad_input_kernel.run("%gemini reset whole", cell_id="reset")


@pytest.mark.parametrize(
    "arg, name",
    [
        ("'a b'", "'a b'"),  # IPython keeps the quotes: still one name, and not a valid one
        ("../etc", "../etc"),
        ("x;rm", "x;rm"),
        ("naïve", "naïve"),
        ("a" * 65, "a" * 65),
        ("we/ird", "we/ird"),
        ("$(id)", "$(id)"),
    ],
)
def test_conversation_name_with_odd_characters(bad_input_kernel, stub, arg, name):
    line = rejected(bad_input_kernel, stub, f"%%gemini_ask -c {arg} --cell cell-mean\nhi")
    assert line == messages.BAD_NAME.shown(name=name)


def test_gemini_subcommands_on_nothing(bad_input_kernel, stub):
    assert rejected(bad_input_kernel, stub, "%gemini history -c nosuch") == messages.NO_CONVERSATION.shown(
        name="nosuch"
    )
    assert rejected(bad_input_kernel, stub, "%gemini apply -c nosuch") == messages.NO_CONVERSATION.shown(name="nosuch")
    assert rejected(bad_input_kernel, stub, "%gemini undo") == messages.NO_PROPOSAL.shown()
    assert rejected(bad_input_kernel, stub, "%gemini state nowhere") == messages.STATE_CHOICES.shown(
        choices="contents, interactions"
    )


@pytest.mark.kernel
def test_fresh_kernel_notebook_without_file_or_live_view_and_nothing_to_work_on(stub, tmp_path):
    stub.reset()
    k = Kernel(
        env={"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY, "JPY_SESSION_NAME": ""}, cwd=str(tmp_path)
    )
    try:
        k.run("%load_ext genai_magics", cell_id="setup")
        assert rejected(k, stub, "%%gemini_edit\nimprove") == messages.NOTHING_TO_EDIT.shown()
        assert rejected(k, stub, "%%gemini_ask --error\nwhy?") == messages.NO_EXCEPTION_YET.shown()
        k.run(CELL, cell_id="cell-mean")
        assert rejected(k, stub, "%%gemini_ask --notebook\noverview") == messages.NOTEBOOK_FLAG.shown(
            why=messages.NO_NOTEBOOK_KNOWN.render()
        )
        assert messages.NO_CONVERSATION_YET.render() in status(k).splitlines()
    finally:
        k.close()


# -- buttons that no longer make sense ----------------------------------------------


def record_source(kernel, cell_id: str) -> str:
    executed = "get_ipython().magics_manager.registry['GeminiMagics'].session.executed"
    code = f"print({executed}.by_id[{cell_id!r}].source, end='')"
    return kernel.run(code, cell_id="peek").stdout


def shown(kernel, message: str) -> bool:
    return any(html.escape(message) in v for v in kernel.html_values())


def new_edit(kernel, conv: str, cell_id: str, prompt: str) -> dict[str, str]:
    """An edit turn; the comm ids of its buttons by label."""
    before = {label: set(kernel.buttons(label)) for label in ("Apply", "Discard")}
    run = kernel.run(f"%%gemini_edit -c {conv} --cell {cell_id}\n{prompt}", cell_id=f"e-{conv}-{prompt[:8]}")
    assert run.stderr == "", run.stderr
    ids = {label: (set(kernel.buttons(label)) - before[label]) for label in before}
    assert all(len(v) == 1 for v in ids.values()), ids
    return {label: v.pop() for label, v in ids.items()}


def conv_line(kernel, conv: str) -> str:
    return next((line for line in status(kernel).splitlines() if line.startswith(f"conversation {conv!r}")), "")


def test_old_proposal_buttons_after_reset_do_nothing_and_say_why(bad_input_kernel, stub):
    bad_input_kernel.run(CELL, cell_id="cell-reset")
    old = new_edit(bad_input_kernel, "resetme", "cell-reset", "add a docstring")
    assert bad_input_kernel.run("%gemini reset resetme", cell_id="reset").stdout.strip() == "reset: resetme"
    before = status(bad_input_kernel)
    bad_input_kernel.click("Apply", comm_id=old["Apply"])
    assert shown(bad_input_kernel, messages.REFUSED.render(action="Apply", reason=messages.RESET_SINCE.render()))
    bad_input_kernel.click("Discard", comm_id=old["Discard"])
    assert shown(bad_input_kernel, messages.REFUSED.render(action="Discard", reason=messages.RESET_SINCE.render()))
    assert record_source(bad_input_kernel, "cell-reset") == CELL
    assert status(bad_input_kernel) == before and "'resetme'" not in before


def test_old_proposal_buttons_after_new_conversation_do_nothing(bad_input_kernel, stub):
    bad_input_kernel.run(CELL, cell_id="cell-new")
    old = new_edit(bad_input_kernel, "restart", "cell-new", "add a docstring")
    run = bad_input_kernel.run("%%gemini_ask --new -c restart --cell cell-new\nstart over", cell_id="restart")
    assert run.stderr == ""
    before = conv_line(bad_input_kernel, "restart")
    bad_input_kernel.click("Apply", comm_id=old["Apply"])
    assert shown(bad_input_kernel, messages.REFUSED.render(action="Apply", reason=messages.RESET_SINCE.render()))
    assert record_source(bad_input_kernel, "cell-new") == CELL
    assert conv_line(bad_input_kernel, "restart") == before


def test_old_proposal_apply_after_a_newer_one_was_applied_does_nothing(bad_input_kernel, stub):
    bad_input_kernel.run(CELL, cell_id="cell-stale")
    first = new_edit(bad_input_kernel, "stale", "cell-stale", "first change")
    second = new_edit(bad_input_kernel, "stale", "cell-stale", "second change")
    bad_input_kernel.click("Apply", comm_id=second["Apply"])
    applied = record_source(bad_input_kernel, "cell-stale")
    assert applied.startswith("# stub edit: second change")
    before = conv_line(bad_input_kernel, "stale")
    bad_input_kernel.click("Apply", comm_id=first["Apply"])
    assert shown(
        bad_input_kernel, messages.REFUSED.render(action="Apply", reason=messages.NEWER_APPLIED.render(turn=2))
    )
    assert record_source(bad_input_kernel, "cell-stale") == applied
    assert conv_line(bad_input_kernel, "stale") == before


def test_apply_on_a_cell_changed_since_the_proposal_asks_before_overwriting(bad_input_kernel, stub):
    bad_input_kernel.run(CELL, cell_id="cell-changed")
    ids = new_edit(bad_input_kernel, "changed", "cell-changed", "add type hints")
    mine = "def mean(xs):\n    # my own change\n    return sum(xs) / max(len(xs), 1)\n"
    bad_input_kernel.run(mine, cell_id="cell-changed")
    before = conv_line(bad_input_kernel, "changed")
    bad_input_kernel.click("Apply", comm_id=ids["Apply"])
    assert shown(bad_input_kernel, messages.CHANGED_SINCE.render(action="Apply", what="the cell", verb="apply"))
    assert record_source(bad_input_kernel, "cell-changed") == mine, "the user's change must not be overwritten"
    assert conv_line(bad_input_kernel, "changed") == before
    assert bad_input_kernel.buttons("Apply anyway"), "an explicit way to overwrite is offered"
    bad_input_kernel.click("Apply anyway")
    assert record_source(bad_input_kernel, "cell-changed").startswith("# stub edit: add type hints")
    assert "[applied]" in bad_input_kernel.run("%gemini history -c changed", cell_id="hist").stdout


def test_undo_on_a_cell_changed_since_apply_asks_before_overwriting(bad_input_kernel, stub):
    bad_input_kernel.run(CELL, cell_id="cell-undo")
    ids = new_edit(bad_input_kernel, "undoing", "cell-undo", "add a guard")
    bad_input_kernel.click("Apply", comm_id=ids["Apply"])
    mine = "# changed after apply\n" + record_source(bad_input_kernel, "cell-undo")
    bad_input_kernel.run(mine, cell_id="cell-undo")
    before = conv_line(bad_input_kernel, "undoing")
    bad_input_kernel.click("Undo")
    assert shown(bad_input_kernel, messages.CHANGED_SINCE.render(action="Undo", what="the cell", verb="undo"))
    assert record_source(bad_input_kernel, "cell-undo") == mine
    assert conv_line(bad_input_kernel, "undoing") == before
    bad_input_kernel.click("Undo anyway")
    assert record_source(bad_input_kernel, "cell-undo") == CELL
