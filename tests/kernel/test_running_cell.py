"""VS Code style frontends: only the running cell can be written, in its execute reply."""

from __future__ import annotations

import html

from helpers.wire import api_requests, current_payload

from genai_magics import messages

CELL_A = "def parse(s):\n    return int(s)\n"
NB = "vscode-notebook-cell:/home/u/work/nb.ipynb#"


def next_input(run):
    payloads = run.reply["content"].get("payload", [])
    return [p for p in payloads if p.get("source") == "set_next_input"]


def test_apply_while_the_magic_cell_waits_replaces_it_in_the_execute_reply(kernel, stub):
    kernel.run(CELL_A, cell_id=NB + "W1sZmlsZQ==")
    msg_id = kernel.start("%%gemini_edit\nAdd input validation.", cell_id=NB + "W2sZmlsZQ==")
    kernel.wait_for_button("Apply", msg_id)
    # said before the click:
    kernel.wait_until(lambda k: any("Apply replaces this magic cell" in v for v in k.html_values()), msg_id)
    kernel.click("Apply", wait=False)
    run = kernel.finish(msg_id)
    (payload,) = next_input(run)
    assert payload["replace"] is True
    assert payload["text"].startswith("# gemini_edit: Add input validation.\n# stub edit")
    assert payload["text"].endswith(CELL_A)
    assert any(messages.RUNNING_CELL_APPLIED.render() in v for v in kernel.html_values())
    # the applied cell is now the conversation's code: the follow-up is synchronized
    kernel.run("%%gemini_ask\nWhy?", cell_id=NB + "W3sZmlsZQ==")
    ask = current_payload(api_requests(stub)[-1])
    assert ask.get("sourceSynchronized") is True and "currentSource" not in ask
    # Undo after the cell finished: nothing to write; the conversation goes back to the base
    kernel.click("Undo")
    assert any("Undone for the conversation" in v for v in kernel.html_values())
    kernel.run("%%gemini_ask\nAnd now?", cell_id=NB + "W4sZmlsZQ==")
    again = current_payload(api_requests(stub)[-1])
    assert again["currentSource"] == payload["text"].split("\n", 1)[1]  # the applied cell, sent again


def test_discard_releases_the_cell_without_writing(kernel, stub):
    kernel.run(CELL_A, cell_id=NB + "A")
    msg_id = kernel.start("%%gemini_edit\nAdd input validation.", cell_id=NB + "B")
    kernel.wait_for_button("Discard", msg_id)
    kernel.click("Discard", wait=False)
    run = kernel.finish(msg_id)
    assert next_input(run) == []


def test_no_choice_in_time_stages_apply_for_the_next_run(kernel, stub):
    kernel.run("%config GeminiMagics.apply_wait = 1.0", cell_id="cfg")
    kernel.run(CELL_A, cell_id=NB + "A")
    first = kernel.run("%%gemini_edit\nAdd input validation.", cell_id=NB + "B")
    assert next_input(first) == []
    assert any(messages.NO_CHOICE_STAGED.within(html.unescape(v)) for v in kernel.html_values())
    kernel.click("Apply")
    assert any(messages.STAGED.render() in v for v in kernel.html_values())
    sent_before = len(api_requests(stub))
    again = kernel.run("%%gemini_edit\nAdd input validation.", cell_id=NB + "B")
    (payload,) = next_input(again)
    assert payload["replace"] is True and payload["text"].endswith(CELL_A)
    assert len(api_requests(stub)) == sent_before, "a staged Apply sends no new request"
    assert any(messages.RUNNING_CELL_APPLIED.render() in v for v in kernel.html_values())


def test_the_wait_mechanism_matches_the_kernel(kernel):
    """ipykernel >= 7.4 waits in an async cell; 6.x pumps comm messages with jupyter-ui-poll."""
    run = kernel.run(
        "import ipykernel, genai_magics.frontends.waiting as w\nprint(ipykernel.__version__, w.mechanism())"
    )
    version, mechanism = run.stdout.split()
    major, minor = (int(x) for x in version.split(".")[:2])
    expected = "async" if (major, minor) >= (7, 4) else ("poll" if major < 7 else "None")
    assert mechanism == expected


def test_a_magic_typed_back_into_the_applied_cell_names_the_real_cause(kernel, stub):
    """Apply replaced the magic cell W2 with the proposal, so W2 became the conversation's
    document; a magic typed back into W2 leaves no cell with the code the model has."""
    kernel.run(CELL_A, cell_id=NB + "W1sZmlsZQ==")
    msg_id = kernel.start("%%gemini_edit\nAdd input validation.", cell_id=NB + "W2sZmlsZQ==")
    kernel.wait_for_button("Apply", msg_id)
    kernel.click("Apply", wait=False)
    (payload,) = next_input(kernel.finish(msg_id))
    sent = len(api_requests(stub))
    again = kernel.run("%%gemini_ask\nWhy?", cell_id=NB + "W2sZmlsZQ==")
    said = again.stdout + again.stderr + "".join(kernel.html_values())
    assert "--cell None" not in said
    assert messages.MAGIC_IN_DOCUMENT.within(said)
    assert len(api_requests(stub)) == sent, "nothing was sent"
    # the code pasted back into a cell and run there: the follow-up works on it, synchronized
    kernel.run(payload["text"], cell_id=NB + "W3sZmlsZQ==")
    kernel.run("%%gemini_ask\nWhy?", cell_id=NB + "W2sZmlsZQ==")
    ask = current_payload(api_requests(stub)[-1])
    assert ask.get("sourceSynchronized") is True and "currentSource" not in ask
