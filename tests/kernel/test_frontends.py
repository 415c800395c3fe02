"""Issue 8: Apply and Undo never touch the wrong cell, whatever the frontend and however the
magic is spelled. Real kernels (jupyter_client), VS Code's requests as vscode-jupyter sends
them (tests/helpers/vscode.py names the source of each shape), the real SDK against the stand-in."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import pytest
from helpers.lazy import lazy_import
from helpers.vscode import VARIABLE_VIEWER, VSCode, cell_text_after, set_next_input
from helpers.wire import api_requests, current_payload

from genai_magics import messages
from genai_magics.engine.hashing import sha256_text

nbformat = lazy_import("nbformat")

CELL_A = "def parse(s):\n    return int(s)\n"
CORPUS = Path(__file__).parents[1] / "corpus"
BLOCK = re.compile(r"^# %%(?: \[\w+\])?(?: (In\[\d+\]))? id=(\S+) sha256=", re.M)


@pytest.fixture
def vscode(kernel):
    return VSCode(kernel)


def sent(stub, index: int = -1) -> dict:
    return current_payload(api_requests(stub)[index])


def blocks(payload: dict) -> list[tuple[str | None, str]]:
    """(In[n] label or None, cell id) of each cell in the secondary context."""
    return BLOCK.findall(payload.get("secondaryContext", ""))


def statuses(kernel) -> list[str]:
    return kernel.html_values()


def first_output(run) -> str:
    """The top output of the cell as a frontend shows it (display updates applied in place)."""
    return next(text for text in run.area if text.strip()).splitlines()[0]


# -- case 1: the one-line form and run_cell_magic in a loop --------------------------------------


def test_line_form_waits_and_apply_replaces_that_cell_in_its_own_reply(kernel, vscode, stub):
    vscode.run(CELL_A, 1)
    vscode.run("parse('x')", 2)  # the error the edit is about
    msg_id = vscode.start("%gemini_edit --error fix it", 3)
    kernel.wait_for_button("Apply", msg_id)
    kernel.wait_until(lambda k: any("Apply replaces this magic cell" in v for v in k.html_values()), msg_id)
    kernel.click("Apply", wait=False)
    run = kernel.finish(msg_id)
    assert "coroutine" not in run.plain
    (payload,) = set_next_input(run)
    assert payload["replace"] is True
    assert cell_text_after(run, "%gemini_edit --error fix it").startswith("# gemini_edit: fix it\n")


def test_run_cell_magic_in_a_loop_stages_apply_and_never_writes_another_cell(kernel, vscode, stub):
    magic = "for _ in range(1):\n    get_ipython().run_cell_magic('gemini_edit', '', 'Add input validation.')"
    vscode.run(CELL_A, 1)
    first = vscode.run(magic, 2)
    assert first.errors == [] and "never awaited" not in first.plain and "coroutine" not in first.plain
    assert set_next_input(first) == []
    assert any(messages.STAGED_APPLY.render() in v for v in statuses(kernel))
    assert not any(messages.RUNNING_CELL_APPLY.within(v) for v in statuses(kernel))
    kernel.click("Apply")
    assert any(messages.STAGED.render() in v for v in statuses(kernel))
    other = vscode.run("y = 2", 3)
    assert set_next_input(other) == [], "Apply's text must never land on the next cell that runs"
    again = vscode.run(magic, 2)
    (payload,) = set_next_input(again)
    assert payload["replace"] is True and payload["text"].endswith(CELL_A)


# -- case 2: the waiting machinery never breaks a valid cell ----------------------------------------


def test_autoawait_off_stages_apply_instead_of_a_syntax_error(kernel, vscode, stub):
    vscode.run(CELL_A, 1)
    vscode.run("%autoawait off", 2)
    run = vscode.run(f"%%gemini_edit --cell {vscode.uri(1)}\nAdd input validation.", 3)
    assert run.errors == [], run.plain
    assert any(messages.STAGED_APPLY.render() in v for v in statuses(kernel))
    kernel.click("Apply")
    assert set_next_input(vscode.run("z = 3", 4)) == []


def test_run_cell_magic_followed_by_other_statements_runs_them(kernel, vscode, stub):
    vscode.run(CELL_A, 1)
    run = vscode.run("get_ipython().run_cell_magic('gemini_edit', '', 'Add input validation.')\nprint('after')", 2)
    assert run.errors == [], run.plain
    assert "after" in run.stdout
    assert any(messages.STAGED_APPLY.render() in v for v in statuses(kernel))


# -- case 6: one cell whether known from the file or from running it ------------------------------


def test_file_and_executed_cells_are_one_cell_and_the_document_is_not_its_own_context(kernel, stub, tmp_path):
    path = tmp_path / "strings.ipynb"
    shutil.copy(CORPUS / "wtop_14_strings_and_regular_expressions.ipynb", path)  # nbformat 4.0, no ids
    nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    vs = VSCode(kernel, str(path))
    vs.open_notebook()
    kernel.run("%config GeminiMagics.secondary_context_chars = 1000000", cell_id="cfg")
    # the document and the context go out inside the request, not into an explicit context cache
    kernel.run('%config GeminiMagics.cache = "off"', cell_id="nocache")
    ran = {4: 1, 6: 2, 10: 3}  # file position -> VS Code handle
    for position, handle in ran.items():
        vs.run(nb.cells[position].source, handle)
    vs.run("%%gemini_ask\nWhat does fox hold?", 9)
    first = sent(stub)
    assert first["currentSource"] == nb.cells[10].source
    ids = [cid for _, cid in blocks(first)]
    assert len(ids) == len(set(ids))
    wanted = [c for i, c in enumerate(nb.cells) if c.source.strip() and i != 10]
    assert len(ids) == len(wanted), "each cell once: no duplicate (file id and URI), no extra helper code"
    assert vs.uri(3) not in ids and "file-10" not in ids, "the document is not in its own context"
    assert vs.uri(1) in ids and "file-4" not in ids, "a run file cell is one cell, under its frontend id"
    context = first["secondaryContext"]
    assert context.count(nb.cells[4].source) == 1
    # a hand edit of the document (run again, file not saved): no stale copy anywhere
    vs.run('fox = "tHe qUICk bROWn fOx!!"', 3)
    vs.run("%%gemini_ask\nAnd now?", 10)
    second = sent(stub)
    assert second["currentSource"] == 'fox = "tHe qUICk bROWn fOx!!"'
    assert nb.cells[10].source not in second.get("secondaryContext", ""), "the old copy stayed in context"


# -- case 7: VS Code's helper code is not a cell ----------------------------------------------------


def test_variable_viewer_requests_never_become_the_document(kernel, vscode, stub):
    vscode.run(CELL_A, 1)
    vscode.run_silently(VARIABLE_VIEWER)
    vscode.run("%%gemini_ask\nWhat does it do?", 2)
    payload = sent(stub)
    assert payload["currentSource"] == CELL_A
    assert "_VSCODE_getVariable" not in json.dumps(payload)


# -- case 8: the context is what is nearest to the document ---------------------------------------


def test_context_cap_keeps_the_cells_nearest_the_document(kernel, stub, tmp_path):
    path = tmp_path / "unsupervised.ipynb"
    shutil.copy(CORPUS / "handson-ml2_09_unsupervised_learning.ipynb", path)  # 366 cells, no ids
    nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    vs = VSCode(kernel, str(path))
    vs.open_notebook()
    # the document and the context go out inside the request, not into an explicit context cache
    kernel.run('%config GeminiMagics.cache = "off"', cell_id="nocache")
    vs.run("%%gemini_ask --cell file-12\nWhat does this cell do?", 1)
    payload = sent(stub)
    assert payload["currentSource"] == nb.cells[12].source
    kept = sorted(int(cid.split("-")[1]) for _, cid in blocks(payload))
    assert kept, payload
    window = [i for i in range(min(kept), max(kept) + 1) if i != 12 and nb.cells[i].source.strip()]
    assert kept == window, "the kept cells are one unbroken stretch"
    assert min(kept) <= 11 and max(kept) >= 13 and max(kept) < 100, f"kept {min(kept)}..{max(kept)}"
    assert "farther cells left out" in payload["secondaryContext"]


# -- case 9: the one-line form does not expand variables unless asked --------------------------------


def test_line_form_sends_braces_and_dollars_as_written(kernel, stub):
    kernel.run("secret_list = ['hunter2']\nname = 'zed'", cell_id="vars")
    kernel.run("secret_list.missing", cell_id="boom")
    run = kernel.run("%gemini_ask --error why does {secret_list} fail for $name", cell_id="ask")
    assert run.errors == [], run.plain
    payload = sent(stub)
    assert payload["prompt"] == "why does {secret_list} fail for $name"
    assert "hunter2" not in payload["prompt"] and "zed" not in payload["prompt"]
    assert set(payload) <= {
        "mode",
        "prompt",
        "currentSource",
        "secondaryContext",
        "lastError",
        "document",
        "sourceSynchronized",
    }, "no variable summary was asked for"
    kernel.run("%gemini_ask --interpolate what about $name", cell_id="ask2")
    assert sent(stub)["prompt"] == "what about zed"


# -- case 10: a saved file's execution counts are another session's ---------------------------------


def test_saved_execution_counts_are_not_this_sessions(kernel, stub, tmp_path):
    path = tmp_path / "old.ipynb"  # saved by an earlier session: counts 1..8, nbformat 4.4 (no ids)
    cells = [
        {"cell_type": "code", "execution_count": n, "metadata": {}, "outputs": [], "source": f"step_{n} = {n}\n"}
        for n in range(1, 9)
    ]
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 4}))
    vs = VSCode(kernel, str(path))
    vs.open_notebook()
    vs.run("a = 1\n", 1)  # In[2] (In[1] is %load_ext)
    vs.run("b = 2\n", 2)  # In[3]
    n = len(api_requests(stub))
    run = vs.run("%%gemini_ask --cell 6\nWhat is it?", 3)
    assert len(api_requests(stub)) == n, "--cell 6 must not pick a file cell never run in this session"
    assert run.stderr.strip() == messages.NO_CELL_WITH_COUNT_OR_ID.shown(flag="--cell", ref="6"), run.stderr
    vs.run("%%gemini_ask\nAnd the others?", 4)
    labels = {label: cid for label, cid in blocks(sent(stub)) if label}
    assert labels == {"In[2]": vs.uri(1)}, labels  # In[3] is the document; file cells carry no In[n]


# -- case 11: %reload_ext keeps the conversations and their buttons ----------------------------------


def test_reload_ext_keeps_conversations_and_old_buttons_work(kernel, stub):
    kernel.run(CELL_A, cell_id="cell-a")
    kernel.run("%%gemini_edit\nAdd input validation.", cell_id="m1")
    kernel.run("%reload_ext genai_magics", cell_id="reload")
    status = kernel.run("%gemini status", cell_id="status")
    assert "default" in status.stdout
    kernel.click("Apply")
    lines = [line for v in statuses(kernel) for line in html.unescape(re.sub("<[^>]+>", "\n", v)).splitlines()]
    assert any((messages.KERNEL_STATE_DONE.parse(line) or {}).get("verb") == "Applied" for line in lines), lines
    kernel.run("%%gemini_ask\nWhy?", cell_id="m2")
    follow = sent(stub)
    assert follow.get("sourceSynchronized") is True and "currentSource" not in follow


# -- case 12: proposal edge cases ---------------------------------------------------------------------


def test_identical_proposal_offers_no_apply(kernel, stub):
    kernel.run(CELL_A, cell_id="cell-a")
    stub.script_edit(CELL_A)
    kernel.run("%%gemini_edit\nChange nothing.", cell_id="m1")
    apply_id = kernel.buttons("Apply")[-1]
    assert kernel.state(apply_id)["disabled"] is True
    assert any("No change" in v for v in statuses(kernel))
    kernel.click("Apply")
    assert not any("Applied" in v for v in statuses(kernel))


def test_a_change_of_only_the_final_newline_is_visible(kernel, stub):
    kernel.run(CELL_A, cell_id="cell-a")
    stub.script_edit(CELL_A.rstrip("\n"))
    kernel.run("%%gemini_edit\nDrop the final newline.", cell_id="m1")
    assert any("No newline at end of file" in v for v in statuses(kernel))
    assert kernel.state(kernel.buttons("Apply")[-1])["disabled"] is False


def test_a_huge_diff_is_summarized_not_rendered(kernel, stub):
    big = "".join(f"value_{i} = {i} * 2  # a line of a long generated table\n" for i in range(6_000))
    kernel.run(big, cell_id="big")
    stub.script_edit(big.upper())  # every line changes
    kernel.run("%%gemini_edit\nUppercase everything.", cell_id="m1")
    (view,) = [v for v in statuses(kernel) if "too large to show" in v]
    assert len(view.encode()) < 210_000
    assert kernel.buttons("Copy")


def test_a_prompt_over_the_cap_is_refused_in_one_line(kernel, stub):
    kernel.run(CELL_A, cell_id="cell-a")
    n = len(api_requests(stub))
    run = kernel.run("%%gemini_ask\n" + "why? " * 40_000, cell_id="m1")
    assert len(api_requests(stub)) == n
    (line,) = run.stderr.strip().splitlines()
    assert (messages.PROMPT_OVER_CAP.parse(line) or {}).get("cap") == "100,000", line


def test_a_huge_answer_is_bounded_in_the_cell(kernel, stub):
    kernel.run("%config GeminiMagics.max_prompt_bytes = 2000000", cell_id="cfg")
    kernel.run(CELL_A, cell_id="cell-a")
    run = kernel.run("%%gemini_ask\n" + "echo this " * 60_000, cell_id="m1")  # the stand-in echoes the prompt
    shown = [
        m["content"]["data"].get("text/markdown", "")
        for m in run.messages
        if m["msg_type"] in ("display_data", "update_display_data")
    ]
    assert max(len(s) for s in shown) < 210_000
    assert any(messages.ANSWER_CUT.within(s) for s in shown)


def test_a_digit_prefix_of_a_cell_id_is_that_cell_unless_a_run_has_that_number(kernel, stub):
    kernel.run(CELL_A, cell_id="3872f0c1-5a9e-4c61-9b1d-0d5c2f7e8a11")
    kernel.run("%%gemini_ask --cell 3872\nWhat is it?", cell_id="m1")
    assert sent(stub)["currentSource"] == CELL_A
    kernel.run("get_ipython().execution_count = 3872", cell_id="jump")
    kernel.run("other = 1\n", cell_id="c-3872")  # In[3872]
    n = len(api_requests(stub))
    run = kernel.run("%%gemini_ask --cell 3872 -c two\nWhat is it?", cell_id="m2")
    assert len(api_requests(stub)) == n
    fields = messages.AMBIGUOUS_COUNT_OR_ID.parse(run.stderr.strip()) or {}
    assert (fields.get("ref"), fields.get("cell")) == ("3872", "3872f0c1-5a9"), run.stderr


# -- issue 11, items 3 and 4 ------------------------------------------------------------------------


def test_the_document_does_not_drift_and_is_named_on_top(kernel, stub):
    kernel.run(CELL_A, cell_id="cell-a")
    first = kernel.run("%%gemini_ask\nWhat does it do?", cell_id="m1")
    assert first_output(first) == "document: In[2] · parse()"
    kernel.run("x = 5\nx", cell_id="just-x")
    kernel.run("clear", cell_id="clear")
    follow = kernel.run("%%gemini_ask\nAnd the edge cases?", cell_id="m2")
    assert first_output(follow) == "document: In[2] · parse()"
    payload = sent(stub)
    assert payload.get("sourceSynchronized") is True and "currentSource" not in payload
    fresh = kernel.run("%%gemini_ask -c fresh\nWhat is this?", cell_id="m3")
    assert first_output(fresh) == "document: In[5] · clear"
    assert sent(stub)["currentSource"] == "clear"


def test_a_one_line_question_may_end_with_a_question_mark(kernel, stub):
    kernel.run(CELL_A, cell_id="cell-a")
    run = kernel.run("%gemini_ask what does parse do?", cell_id="q")
    assert "not found" not in run.plain and run.errors == []
    assert sent(stub)["prompt"] == "what does parse do?"
    help_run = kernel.run("%gemini_ask?", cell_id="help")  # help on the magic still works
    (page,) = help_run.reply["content"]["payload"]
    assert "Ask Gemini" in page["data"]["text/plain"]


@pytest.mark.kernel
def test_in_the_live_notebook_the_document_is_kept_until_its_cell_is_deleted(stub, tmp_path):
    from helpers.fake_frontend import FakeFrontend
    from helpers.kernel import FAKE_KEY

    stub.reset()
    cells = [
        ("setup", "%load_ext genai_magics"),
        ("a", CELL_A),
        ("m1", "%%gemini_ask\nWhat does it do?"),
        ("b", "def double(x):\n    return 2 * x\n"),
        ("m2", "%%gemini_ask\nAnd edge cases?"),
    ]
    with FakeFrontend(
        cells=cells, env={"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY}, cwd=str(tmp_path)
    ) as ff:
        ff.execute("setup")
        ff.execute("m1")
        assert sent(stub)["currentSource"] == CELL_A
        ff.execute("m2")  # below b, but a follow-up: the conversation's document stays a
        follow = sent(stub)
        assert follow.get("sourceSynchronized") is True and "currentSource" not in follow
        ff.remove_cell("a")
        ff.execute("m2")  # its document is gone: the default, the cell above
        assert sent(stub)["currentSource"] == "def double(x):\n    return 2 * x\n"


def test_vscode_hand_edit_of_a_public_cell_goes_as_a_patch_the_model_applies(kernel, stub):
    """VS Code's request shapes, a public notebook's longest code cell: run, ask, the cell edited by hand and run
    again under the same URI, ask: the change goes as a patch and the stand-in's model holds exactly the new cell."""
    nb = nbformat.read(CORPUS / "hf_annotated_diffusion.ipynb", as_version=nbformat.NO_CONVERT)
    source = nb.cells[19].source
    lines = source.split("\n")
    lines[len(lines) // 2 : len(lines) // 2] = ["    # checked by hand"]
    edited = "\n".join(lines)
    vs = VSCode(kernel)
    vs.run(source, 1)
    vs.run("%%gemini_ask\nWhat does this cell do?", 2)
    vs.run(edited, 1)
    vs.run("%%gemini_ask\nWhat changed?", 3)
    request = api_requests(stub)[-1]
    payload = current_payload(request)
    assert "currentSource" not in payload and "+    # checked by hand\n" in payload["sourcePatch"]
    assert request["held_document_sha256"] == sha256_text(edited)
