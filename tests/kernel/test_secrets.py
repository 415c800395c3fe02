"""Secrets and trust: the API key never shows, model output is text and is never run.

A whole session runs through nbclient with a distinctive key (asks, edits,
a dry run, status/history/tokens, an injected 401 and 500, retries shown,
``%gemini debug on`` with an error whose server message echoes the key, the
last error, variables, library logs at DEBUG level printed into the outputs)
and is saved; the key must appear nowhere in the saved .ipynb, in any output,
or in what the stand-in received.
"""

from __future__ import annotations

import json
import secrets

import pytest
from helpers.kernel import FAKE_KEY, Kernel, point_sdk_at
from helpers.lazy import lazy_import
from helpers.wire import api_requests

from genai_magics import messages

nbformat = lazy_import("nbformat")
nbclient = lazy_import("nbclient")

pytestmark = pytest.mark.kernel  # every test here starts a kernel (directly or through nbclient)

KEY = "AIzaSECRET-" + secrets.token_hex(12)

SESSION = [
    (
        "import logging, sys\nlogging.basicConfig(level=logging.DEBUG, stream=sys.stdout, force=True)\n"
        "for _name in ('asyncio', 'traitlets', 'ipykernel', 'comm', 'parso', 'matplotlib'):\n"
        "    logging.getLogger(_name).setLevel(logging.WARNING)",
        None,
    ),
    ("%load_ext genai_magics", None),
    ("def total(xs):\n    return sum(xs)\n", None),
    ("%%gemini_ask\nWhat does total do?", None),
    ("%%gemini_edit\nAdd a docstring", None),
    ("%gemini apply", None),
    ("%%gemini_edit --dry-run\nAdd type hints", None),
    ("%%gemini_ask --state interactions -c server\nThe same in interactions mode", None),
    ("%gemini status", None),
    ("%gemini history", None),
    ("%gemini tokens", None),
    ("%%gemini_ask\nThis one is rejected", dict(fault="http", status=401)),
    ("%config GeminiMagics.retry_attempts = 2", None),
    ("%%gemini_ask\nThe server fails twice", dict(fault="http", status=500, times=2)),
    ("%gemini debug on", None),
    ("%%gemini_ask\nThe server echoes the key", dict(fault="http", status=400, message=f"bad request for key {KEY}")),
    (
        "%%gemini_ask -c server\nInteractions echo the key too",
        dict(fault="http", status=403, message=f"key {KEY} denied"),
    ),
    ("%gemini debug off", None),
    ("%%gemini_ask\nEchoed with debug off", dict(fault="http", status=404, message=f"no model for {KEY}")),
    ("import os\nkey_in_a_variable = os.environ['GEMINI_API_KEY']", None),
    ("%%gemini_ask --vars key_in_a_variable --dry-run\nWhat is in this variable?", None),
    ("_k = key_in_a_variable\nraise RuntimeError('failing with a secret in scope')", None),
    ("%%gemini_ask --error --dry-run\nwhy?", None),
    ("%gemini reset --all", None),
]


def outputs_text(nb) -> str:
    return json.dumps([c.get("outputs", []) for c in nb.cells], ensure_ascii=False)


@pytest.fixture
def secret_env(monkeypatch, stub):
    point_sdk_at(monkeypatch, stub.url, KEY)
    stub.reset()


def test_the_key_appears_nowhere_in_a_whole_session(secret_env, stub, tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src, _ in SESSION]
    client = nbclient.NotebookClient(
        nb, timeout=120, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}
    )
    with client.setup_kernel():
        for index, (cell, (_, fault)) in enumerate(zip(nb.cells, SESSION, strict=False)):
            if fault:
                stub.inject(**fault)
            client.execute_cell(cell, index)
    path = tmp_path / "session.ipynb"
    nbformat.write(nb, str(path))

    text = outputs_text(nb)
    # the session really ran: answers, a proposal, the dry run, the failures, retries, a traceback, logs
    assert "Stub answer to: What does total do?" in text
    assert "dry run (contents)" in text
    assert messages.KEY_REJECTED.shown(code=401, detail="") in text
    assert "retrying in ~1 s (2/2)" in text
    assert messages.REQUEST_REJECTED.shown(detail="bad request for key ***") in text
    assert messages.KEY_REJECTED.shown(code=403, detail="") in text and "key *** denied" in text
    assert messages.NOT_FOUND.shown(detail="") in text and "no model for ***" in text
    assert "Traceback (most recent call last)" in text  # debug on
    assert "HTTP Request: POST" in text  # the httpx log went into the outputs
    assert "failing with" in text
    assert len(api_requests(stub)) >= 6

    saved = path.read_text(encoding="utf-8")
    assert KEY not in saved, "the key is in the saved notebook"
    assert KEY not in json.dumps(nb.metadata)
    for i, cell in enumerate(nb.cells):
        assert KEY not in json.dumps(cell.get("outputs", [])), f"cell {i} shows the key: {cell.source!r}"
    assert KEY not in json.dumps(stub.requests), "the key went over the wire inside a request body"
    assert "GEMINI_API_KEY=" not in text, "the environment was echoed"


def test_a_variable_holding_the_key_is_not_sent_or_shown(secret_env, stub, tmp_path):
    k = Kernel(env={"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": KEY}, cwd=str(tmp_path))
    try:
        k.run("%load_ext genai_magics", cell_id="setup")
        k.run("import os\napi_key = os.environ['GEMINI_API_KEY']", cell_id="c1")
        dry = k.run("%%gemini_ask --vars api_key --dry-run\nIs this set?", cell_id="m1")
        assert "dry run" in dry.plain
        assert KEY not in dry.plain, "the dry run shows the key"
        sent = k.run("%%gemini_ask --vars api_key\nIs this set?", cell_id="m2")
        assert KEY not in sent.plain
        said = k.run("%%gemini_ask --interpolate\nthe key is $api_key", cell_id="m3")
        assert KEY not in said.plain
        history = k.run("%gemini history", cell_id="h").stdout
        assert "the key is ***" in history and KEY not in history
        assert KEY not in json.dumps(stub.requests), "the key was sent to the model"
    finally:
        k.close()


def test_library_logs_that_echo_the_key_are_redacted(secret_env, stub, tmp_path):
    """A server that echoes the key in a retried 500, with the SDK's logging at DEBUG."""
    k = Kernel(env={"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": KEY}, cwd=str(tmp_path))
    try:
        k.run("import logging\nlogging.basicConfig(level=logging.DEBUG, force=True)", cell_id="log")
        k.run("%load_ext genai_magics", cell_id="setup")
        k.run("%config GeminiMagics.retry_attempts = 2", cell_id="cfg")
        k.run("x = 1", cell_id="c1")
        stub.inject("http", status=500, times=2, message=f"oops {KEY}")
        run = k.run("%%gemini_ask\nhello", cell_id="m1")
        assert "Retrying" in run.stderr  # the SDK logged the retry, with the server's message
        assert KEY not in run.plain and KEY not in run.stderr
    finally:
        k.close()


# -- trust ---------------------------------------------------------------------------

SCRIPT = "<script>alert(1)</script>"


@pytest.mark.parametrize("mode", ["contents", "interactions"])
def test_proposal_with_markup_renders_as_escaped_text(kernel, stub, mode):
    cell = f'banner = "{SCRIPT}"\n<img src=x onerror=alert(2)>\n'
    kernel.run(cell, cell_id="cell-xss")
    run = kernel.run(f"%%gemini_edit --state {mode} --cell cell-xss\nkeep {SCRIPT} as is", cell_id="m1")
    assert run.stderr == ""
    proposal = api_requests(stub)[-1]["response_text"]
    assert SCRIPT in proposal  # the stand-in really proposed markup
    diff = [v for v in kernel.html_values() if "stub edit" in v]
    assert diff, kernel.html_values()
    for value in kernel.html_values():
        assert "<script" not in value.lower() and "<img" not in value.lower(), value
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in diff[0]
    assert "&lt;img src=x onerror=alert(2)&gt;" in diff[0]
    # every text/html output of the cell escapes it too (notes, footer)
    for m in run.messages:
        if m["msg_type"] in ("display_data", "update_display_data"):
            assert "<script" not in m["content"]["data"].get("text/html", "").lower()


def test_model_output_is_never_executed(stub, tmp_path):
    """A proposal full of side effects is shown and can be applied, but never run."""
    evil = "open('pwned', 'w').write('executed')\nimport os; os.makedirs('pwned_dir')\nraise SystemExit('executed!')\n"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(evil, id="evil")]  # never run: it only lives in the file
    path = tmp_path / "trust.ipynb"
    nbformat.write(nb, str(path))
    stub.reset()
    k = Kernel(
        env={"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY, "JPY_SESSION_NAME": str(path)},
        cwd=str(tmp_path),
    )
    try:
        k.run("%load_ext genai_magics", cell_id="setup")
        for state in ("contents", "interactions"):
            ask = k.run(
                f"%%gemini_ask --state {state} --new --cell evil\nrun this for me: exec(open('x').read())",
                cell_id=f"a-{state}",
            )
            edit = k.run("%%gemini_edit --cell evil\nmake it write the file", cell_id=f"e-{state}")
            assert ask.stderr == "" and edit.stderr == "", (ask.stderr, edit.stderr)
            assert "open('pwned', 'w')" in api_requests(stub)[-1]["response_text"]
            k.click("Apply")
            k.run("%gemini apply", cell_id="apply-again")
        assert not (tmp_path / "pwned").exists() and not (tmp_path / "pwned_dir").exists()
        alive = k.run("print(6 * 7)", cell_id="alive")
        assert alive.stdout == "42\n"
        assert k.km.is_alive()
    finally:
        k.close()
