"""--error and --vars in a real kernel: each piece goes once, again only when it changed."""

from __future__ import annotations

from helpers.wire import api_requests, current_payload

from genai_magics import messages


def test_last_error_goes_once_and_a_new_error_goes_again(kernel, stub):
    kernel.run("def parse(s):\n    return int(s)", cell_id="a")
    kernel.run("parse('x')", cell_id="b")
    first = kernel.run("%gemini_ask --error", cell_id="m1")
    p1 = current_payload(api_requests(stub)[-1])
    assert p1["prompt"] == "Explain this error and how to fix it."
    assert p1["lastError"].startswith("ValueError raised in In[")
    assert "invalid literal for int()" in p1["lastError"] and "ipykernel" not in p1["lastError"]
    assert "Traceback" not in first.stderr
    kernel.run("%%gemini_ask --error\nand how do I test it?", cell_id="m2")
    p2 = current_payload(api_requests(stub)[-1])
    assert "lastError" not in p2
    kernel.run("parse(None)", cell_id="c")
    kernel.run("%%gemini_ask --error\nand this one?", cell_id="m3")
    p3 = current_payload(api_requests(stub)[-1])
    assert p3["lastError"].startswith("TypeError raised in In[")


def test_edit_with_error_targets_the_failing_cell(kernel, stub):
    kernel.run("def parse(s):\n    return int(s)\nparse('x')", cell_id="bad")
    kernel.run("y = 1", cell_id="later")
    kernel.run("%gemini_edit --error", cell_id="m1")
    sent = current_payload(api_requests(stub)[-1])
    assert sent["currentSource"].startswith("def parse(s):") and "lastError" in sent
    assert kernel.buttons("Apply")


def test_no_error_yet_is_one_clear_line(kernel, stub):
    run = kernel.run("%%gemini_ask --error\nwhy?", cell_id="m1")
    assert run.stderr.strip() == messages.NO_EXCEPTION_YET.shown()
    assert api_requests(stub) == []


def test_variable_summaries_are_sent_when_they_change(kernel, stub):
    kernel.run("import pandas as pd\ndf = pd.DataFrame({'a': range(5), 'b': list('vwxyz')})", cell_id="a")
    kernel.run("%%gemini_ask --vars df\nwhat columns?", cell_id="m1")
    p1 = current_payload(api_requests(stub)[-1])
    assert p1["variables"]["df"].startswith("pandas.DataFrame shape=(5, 2)\ncolumns: a:int64, b:")
    second = kernel.run("%%gemini_ask --vars df\nand the dtypes?", cell_id="m2")
    assert "variables" not in current_payload(api_requests(stub)[-1])
    assert messages.PIECE_UNCHANGED.render(name=messages.PIECE_VARIABLE.render(name="df")) in second.plain
    kernel.run("df['c'] = 1", cell_id="b")
    kernel.run("%%gemini_ask --vars df\nnow?", cell_id="m3")
    p3 = current_payload(api_requests(stub)[-1])
    assert p3["variables"]["df"].startswith("pandas.DataFrame shape=(5, 3)\n") and ", c:int64" in p3["variables"]["df"]


def test_interpolate_sends_a_summary_instead_of_the_repr(kernel, stub):
    kernel.run("big = list(range(100000))", cell_id="a")
    kernel.run("%%gemini_ask --interpolate\nsummarize {big} please", cell_id="m1")
    sent = current_payload(api_requests(stub)[-1])
    assert sent["prompt"].strip() == "summarize `big` please"
    assert sent["variables"]["big"].startswith("list") and len(sent["variables"]["big"]) <= 2000


def test_unknown_variable_is_one_clear_line(kernel, stub):
    run = kernel.run("%%gemini_ask --vars nope\nwhat?", cell_id="m1")
    assert run.stderr.strip() == messages.NO_SUCH_VARIABLE.shown(name="nope")
    assert api_requests(stub) == []
