"""Terminal IPython: no widgets; the proposal pre-fills the next prompt (driven through tmux)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from helpers.kernel import FAKE_KEY
from helpers.wire import api_requests, current_payload

from genai_magics import messages

IPYTHON = str(Path(sys.executable).with_name("ipython"))


class Tmux:
    def __init__(self, env: dict[str, str]):
        self.socket = f"genai-{uuid.uuid4().hex[:8]}"
        full = {**os.environ, **env}
        self._tmux(
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            "160",
            "-y",
            "60",
            f"{IPYTHON} --no-banner --colors=NoColor --no-confirm-exit",
            env=full,
        )

    def _tmux(self, *args: str, env=None) -> str:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], env=env, check=True, capture_output=True, text=True
        ).stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-t", "t", "-p", "-S", "-200")

    def wait_for(self, text: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{text!r} not on screen:\n{self.screen()}")

    def type(self, line: str, *keys: str) -> None:
        self._tmux("send-keys", "-t", "t", "-l", line)
        self._tmux("send-keys", "-t", "t", *(keys or ("Enter",)))

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


@pytest.fixture
def term(stub):
    if shutil.which("tmux") is None:
        reason = "tmux is not installed (apt-get install tmux, as root: scripts/setup.sh does it)"
        if os.environ.get("CI"):  # in CI the terminal test must run
            pytest.fail(reason)
        pytest.skip(reason)
    stub.reset()
    t = Tmux({"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY})
    try:
        t.wait_for("In [1]:")
        yield t
    finally:
        t.close()


def test_the_proposal_prefills_the_next_prompt_and_running_it_syncs(term, stub):
    term.type("%load_ext genai_magics")
    term.wait_for("In [2]:")
    term.type("def parse(s): return int(s)", "Enter", "Enter")
    term.wait_for("In [3]:")
    term.type("%gemini_edit add validation")
    screen = term.wait_for("pre-filled at the next prompt")
    assert "+# stub edit: add validation" in screen  # the diff, as text
    screen = term.wait_for("In [4]: # stub edit: add validation")
    assert "...: def parse(s): return int(s)" in screen
    term.type("", "Enter")  # run the pre-filled proposal
    term.wait_for("In [5]:")
    term.type("%gemini_ask why this way")
    screen = term.wait_for(messages.DOCUMENT_SYNCHRONIZED.parts[-1].strip())
    assert "Stub answer to: why this way" in screen
    edit, ask = api_requests(stub)
    assert current_payload(ask).get("sourceSynchronized") is True
    term.type("%gemini apply")  # recording it: the words say what happened here
    screen = term.wait_for(messages.PREFILLED_APPLIED.render())
    assert "paste" not in screen


def test_what_a_cell_printed_and_returned_goes_with_it_in_the_terminal(term, stub):
    term.type("%load_ext genai_magics")
    term.wait_for("In [2]:")
    term.type("print('total', 6 * 7); 'the result'")
    term.wait_for("In [3]:")
    term.type("%gemini_ask what did it show")
    term.wait_for("Stub answer to: what did it show")
    [ask] = api_requests(stub)
    [text] = current_payload(ask)["outputs"]
    assert text["label"] == "In[2]" and text["text"] == "total 42\n'the result'\n"


def test_a_function_typed_over_two_lines_is_a_two_line_document(term, stub):
    term.type("%load_ext genai_magics")
    term.wait_for("In [2]:")
    term.type("def parse(s):", "Enter")
    term.type("return int(s)", "Enter", "Enter")  # IPython indents the third line; that Enter runs the cell
    term.wait_for("In [3]:")
    term.type("%gemini_edit add validation")
    screen = term.wait_for("pre-filled at the next prompt")
    assert "on top of the 2-line document" in screen
    (edit,) = api_requests(stub)
    assert current_payload(edit)["currentSource"] == "def parse(s):\n    return int(s)"
