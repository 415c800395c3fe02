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
def kernel(kern, nb_path):
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
    "source, expected",
    [
        (
            "%%gemini_ask\n   \n",
            "genai_magics: the prompt is empty: write your request in the cell body below the magic line",
        ),
        (
            "%%gemini_edit --cell cell-mean\n\n",
            "genai_magics: the prompt is empty: write your request in the cell body below the magic line",
        ),
        ("%gemini_ask", "genai_magics: the prompt is empty: write your request in the cell body below the magic line"),
    ],
    ids=["ask-blank", "edit-blank", "line-form-no-words"],
)
def test_empty_prompt(kernel, stub, source, expected):
    assert rejected(kernel, stub, source) == expected


@pytest.mark.parametrize(
    "source, expected",
    [
        ("%%gemini_ask --bogus\nhi", "genai_magics: unrecognized arguments: --bogus (see %%gemini_ask?)"),
        ("%%gemini_edit --celll cell-mean\nhi", "genai_magics: unrecognized arguments: --celll (see %%gemini_edit?)"),
        ("%%gemini_edit --cel cell-mean\nhi", "genai_magics: unrecognized arguments: --cel (see %%gemini_edit?)"),
        ("%%gemini_ask --state nowhere\nhi", "invalid choice: 'nowhere'"),
        ("%gemini frobnicate", "invalid choice: 'frobnicate'"),
    ],
    ids=["ask-unknown", "edit-typo", "edit-prefix-is-not-a-guess", "bad-state", "gemini-unknown-command"],
)
def test_unknown_flag_or_command(kernel, stub, source, expected):
    line = rejected(kernel, stub, source)
    assert expected in line
    assert line.startswith("genai_magics: ")


@pytest.mark.parametrize(
    "ref, expected",
    [
        (
            "nosuch",
            "genai_magics: --cell nosuch: no such cell (use an execution count like 5 or In[5], a cell id, or -1)",
        ),
        (
            "999",
            "genai_magics: --cell 999: no cell with execution count 999 in this session "
            "and no cell id starting with it",
        ),
        ("In[999]", "genai_magics: --cell In[999]: no cell with execution count 999 in this session"),
    ],
)
def test_cell_naming_no_cell(kernel, stub, ref, expected):
    assert rejected(kernel, stub, f"%%gemini_ask --cell {ref}\nhi") == expected


def test_markdown_cell_is_not_a_document(kernel, stub):
    line = rejected(kernel, stub, "%%gemini_edit --cell md-notes\nfix the typo")
    assert line == "genai_magics: --cell md-notes: that is a markdown cell; only code cells can be the document"


def test_never_run_file_cell_is_a_valid_target(kernel, stub):
    """Control for the markdown case: the same file's code cell works."""
    n = len(api_requests(stub))
    run = kernel.run("%%gemini_ask --cell file-code -c filecell\nwhat is it?", cell_id="ok-file")
    assert run.stderr == ""
    assert current_payload(api_requests(stub)[n])["currentSource"] == FILE_CODE
    kernel.run("%gemini reset filecell", cell_id="reset")


def test_document_over_the_default_cap_of_about_one_megabyte(kernel, stub):
    from genai_magics.magics import GeminiMagics

    assert 900_000 <= GeminiMagics.class_traits()["max_document_bytes"].default_value <= 1_100_000
    big = "DATA = '" + "x" * 1_100_000 + "'\n"
    kernel.run(big, cell_id="cell-big")
    size = len(big.encode())
    try:
        line = rejected(kernel, stub, "%%gemini_ask --cell cell-big\nsummarize")
    finally:
        kernel.run("DATA = ''", cell_id="cell-big")  # not a megabyte of context for the next tests
    assert line == (
        f"genai_magics: the document is {size:,} bytes, over the cap of 1,000,000 "
        "(%config GeminiMagics.max_document_bytes)"
    )


def test_document_over_a_lowered_cap(kernel, stub):
    kernel.run("%config GeminiMagics.max_document_bytes = 20", cell_id="cfg")
    size = len(CELL.encode())
    line = rejected(kernel, stub, "%%gemini_edit --cell cell-mean\nrename")
    assert line == (
        f"genai_magics: the document is {size:,} bytes, over the cap of 20 (%config GeminiMagics.max_document_bytes)"
    )


def test_binary_cell_is_not_sent(kernel, stub):
    kernel.run("blob = 'a\x00b'\n", cell_id="cell-nul")  # the cell fails to compile; it is recorded
    try:
        line = rejected(kernel, stub, "%%gemini_ask --cell cell-nul\nwhat is this?")
    finally:
        kernel.run("blob = 'ab'", cell_id="cell-nul")
    assert line.startswith("genai_magics: ")
    assert "holds binary or undecodable text (at character 9); nothing was sent - only text can be the document" in line


def test_undecodable_text_is_not_sent(kernel, stub, nb_path):
    write_good_notebook(nb_path, surrogate_cell())
    line = rejected(kernel, stub, "%%gemini_edit --cell surrogate-cell\nfix")
    assert "holds binary or undecodable text (at character 5); nothing was sent" in line


def test_undecodable_cell_elsewhere_does_not_break_other_turns(kernel, stub, nb_path):
    """A cell that is not text is left out of the secondary context; the turn goes through."""
    write_good_notebook(nb_path, surrogate_cell())
    n = len(api_requests(stub))
    run = kernel.run("%%gemini_ask --cell cell-mean -c nottext\nwhat does it do?", cell_id="ok-surrogate")
    assert run.stderr == "", run.stderr
    payload = current_payload(api_requests(stub)[n])
    assert FILE_CODE in payload["secondaryContext"] and "surrogate-cell" not in payload["secondaryContext"]
    kernel.run("%gemini reset nottext", cell_id="reset")


def test_notebook_file_missing(kernel, stub, nb_path):
    nb_path.unlink()
    line = rejected(kernel, stub, "%%gemini_ask --notebook\noverview")
    assert line == f"genai_magics: --notebook: notebook file not found: {nb_path}"


def test_notebook_file_corrupt(kernel, stub, nb_path):
    nb_path.write_text('{"cells": [ this is not json', encoding="utf-8")
    bump(nb_path)
    line = rejected(kernel, stub, "%%gemini_edit --notebook\ntidy up")
    assert line.startswith(f"genai_magics: --notebook: cannot read notebook {nb_path.name}: ")


def test_notebook_file_not_nbformat_4(kernel, stub, nb_path):
    v3 = nbformat.v3.new_notebook()
    v3.worksheets = [nbformat.v3.new_worksheet(cells=[nbformat.v3.new_code_cell(input="print(1)")])]
    nb_path.write_text(nbformat.v3.writes_json(v3), encoding="utf-8")
    bump(nb_path)
    assert json.loads(nb_path.read_text())["nbformat"] == 3
    line = rejected(kernel, stub, "%%gemini_ask --notebook\noverview")
    assert line == f"genai_magics: --notebook: {nb_path.name} is nbformat 3, not 4"


def test_notebook_file_good_is_accepted(kernel, stub):
    """Control: the same kernel and magic with a readable file sends the notebook."""
    n = len(api_requests(stub))
    run = kernel.run("%%gemini_ask --notebook -c whole\noverview", cell_id="ok-nb")
    assert run.stderr == ""
    assert FILE_CODE in current_payload(api_requests(stub)[n])["currentSource"]
    kernel.run("%gemini reset whole", cell_id="reset")


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
def test_conversation_name_with_odd_characters(kernel, stub, arg, name):
    line = rejected(kernel, stub, f"%%gemini_ask -c {arg} --cell cell-mean\nhi")
    assert line == (
        f"genai_magics: conversation name {name!r} is not allowed: use 1-64 letters, digits, '_', '-' or '.'"
    )


def test_gemini_subcommands_on_nothing(kernel, stub):
    assert rejected(kernel, stub, "%gemini history -c nosuch") == "genai_magics: no conversation named 'nosuch'"
    assert rejected(kernel, stub, "%gemini apply -c nosuch") == "genai_magics: no conversation named 'nosuch'"
    assert rejected(kernel, stub, "%gemini undo") == "genai_magics: no proposal to act on in this conversation"
    assert (
        rejected(kernel, stub, "%gemini state nowhere") == "genai_magics: state must be one of contents, interactions"
    )


@pytest.mark.kernel
def test_fresh_kernel_notebook_without_file_or_live_view_and_nothing_to_work_on(stub, tmp_path):
    stub.reset()
    k = Kernel(
        env={"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY, "JPY_SESSION_NAME": ""}, cwd=str(tmp_path)
    )
    try:
        k.run("%load_ext genai_magics", cell_id="setup")
        assert rejected(k, stub, "%%gemini_edit\nimprove") == (
            "genai_magics: nothing to edit yet: run a code cell first, or name one with --cell"
        )
        assert rejected(k, stub, "%%gemini_ask --error\nwhy?") == (
            "genai_magics: --error: no exception has been raised in this session yet"
        )
        k.run(CELL, cell_id="cell-mean")
        assert rejected(k, stub, "%%gemini_ask --notebook\noverview") == (
            "genai_magics: --notebook: no notebook file is known to this kernel and no live notebook view is connected"
        )
        assert "no conversation yet" in status(k)
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


def click(kernel, comm_id: str, label: str):
    return kernel.click(label, index=kernel.buttons(label).index(comm_id))


def conv_line(kernel, conv: str) -> str:
    return next((line for line in status(kernel).splitlines() if line.startswith(f"conversation {conv!r}")), "")


def test_old_proposal_buttons_after_reset_do_nothing_and_say_why(kernel, stub):
    kernel.run(CELL, cell_id="cell-reset")
    old = new_edit(kernel, "resetme", "cell-reset", "add a docstring")
    assert kernel.run("%gemini reset resetme", cell_id="reset").stdout.strip() == "reset: resetme"
    before = status(kernel)
    click(kernel, old["Apply"], "Apply")
    assert shown(kernel, "Apply: this proposal belongs to a conversation that was reset; nothing changed.")
    click(kernel, old["Discard"], "Discard")
    assert shown(kernel, "Discard: this proposal belongs to a conversation that was reset; nothing changed.")
    assert record_source(kernel, "cell-reset") == CELL
    assert status(kernel) == before and "'resetme'" not in before


def test_old_proposal_buttons_after_new_conversation_do_nothing(kernel, stub):
    kernel.run(CELL, cell_id="cell-new")
    old = new_edit(kernel, "restart", "cell-new", "add a docstring")
    run = kernel.run("%%gemini_ask --new -c restart --cell cell-new\nstart over", cell_id="restart")
    assert run.stderr == ""
    before = conv_line(kernel, "restart")
    click(kernel, old["Apply"], "Apply")
    assert shown(kernel, "Apply: this proposal belongs to a conversation that was reset; nothing changed.")
    assert record_source(kernel, "cell-new") == CELL
    assert conv_line(kernel, "restart") == before


def test_old_proposal_apply_after_a_newer_one_was_applied_does_nothing(kernel, stub):
    kernel.run(CELL, cell_id="cell-stale")
    first = new_edit(kernel, "stale", "cell-stale", "first change")
    second = new_edit(kernel, "stale", "cell-stale", "second change")
    click(kernel, second["Apply"], "Apply")
    applied = record_source(kernel, "cell-stale")
    assert applied.startswith("# stub edit: second change")
    before = conv_line(kernel, "stale")
    click(kernel, first["Apply"], "Apply")
    assert shown(kernel, "Apply: a newer proposal (turn 2) was applied; this one is stale.")
    assert record_source(kernel, "cell-stale") == applied
    assert conv_line(kernel, "stale") == before


def test_apply_on_a_cell_changed_since_the_proposal_asks_before_overwriting(kernel, stub):
    kernel.run(CELL, cell_id="cell-changed")
    ids = new_edit(kernel, "changed", "cell-changed", "add type hints")
    mine = "def mean(xs):\n    # my own change\n    return sum(xs) / max(len(xs), 1)\n"
    kernel.run(mine, cell_id="cell-changed")
    before = conv_line(kernel, "changed")
    click(kernel, ids["Apply"], "Apply")
    assert shown(
        kernel, "Apply not done: the cell changed since this proposal was made. Use 'apply anyway' to overwrite it."
    )
    assert record_source(kernel, "cell-changed") == mine, "the user's change must not be overwritten"
    assert conv_line(kernel, "changed") == before
    assert kernel.buttons("Apply anyway"), "an explicit way to overwrite is offered"
    kernel.click("Apply anyway")
    assert record_source(kernel, "cell-changed").startswith("# stub edit: add type hints")
    assert "[applied]" in kernel.run("%gemini history -c changed", cell_id="hist").stdout


def test_undo_on_a_cell_changed_since_apply_asks_before_overwriting(kernel, stub):
    kernel.run(CELL, cell_id="cell-undo")
    ids = new_edit(kernel, "undoing", "cell-undo", "add a guard")
    click(kernel, ids["Apply"], "Apply")
    mine = "# changed after apply\n" + record_source(kernel, "cell-undo")
    kernel.run(mine, cell_id="cell-undo")
    before = conv_line(kernel, "undoing")
    kernel.click("Undo")
    assert shown(
        kernel, "Undo not done: the cell changed since this proposal was made. Use 'undo anyway' to overwrite it."
    )
    assert record_source(kernel, "cell-undo") == mine
    assert conv_line(kernel, "undoing") == before
    kernel.click("Undo anyway")
    assert record_source(kernel, "cell-undo") == CELL
