"""API failures in a real kernel, both state modes: one clear line, no traceback, nothing recorded.

Pattern of every case: turn 1 succeeds; the target cell is hand-edited and
re-run (so the model no longer holds it); a fault is injected into the
stand-in; turn 2 fails -> exactly one ``genai_magics: ...`` line on stderr, no
error message (traceback), ``%gemini status``/``tokens``/``history`` exactly as
before; turn 3 without a fault carries the edited cell as ``currentSource``
(the sync hashes did not move) and, in interactions mode, chains from turn 1.
"""

from __future__ import annotations

import socket
import time

import pytest
from helpers.display import RecordingDisplay
from helpers.kernel import FAKE_KEY, Kernel, point_sdk_at
from helpers.properties import RETRY_DELAY_S, THOROUGH
from helpers.wire import api_requests, current_payload, earlier_turns

from genai_magics import messages

MODES = ["contents", "interactions"]
CELL = "def area(r):\n    return 3.14159 * r * r\n"
EDITED = "def area(r):\n    return math.pi * r ** 2\n"
OTHER = "import math\nRADIUS = 2\n"

# (case id, injection or special, the one line's message and the fields it must hold, turn 2 mode)
CASES = [
    (
        "http400",
        dict(fault="http", status=400),
        messages.REQUEST_REJECTED,
        {"detail": "Request contains an invalid argument."},
        "edit",
    ),
    ("http401", dict(fault="http", status=401), messages.KEY_REJECTED, {"code": "401"}, "ask"),
    ("http403", dict(fault="http", status=403), messages.KEY_REJECTED, {"code": "403"}, "edit"),
    # interactions: a 404 on a chained turn is a lost chain, retried once as a new chain
    ("http404", dict(fault="http", status=404, times=2), messages.NOT_FOUND, {}, "ask"),
    ("http429", dict(fault="http", status=429), messages.RATE_LIMITED, {"attempts": "1"}, "edit"),
    ("http500", dict(fault="http", status=500), messages.SERVER_ERROR, {"code": "500", "attempts": "1"}, "ask"),
    ("http503", dict(fault="http", status=503), messages.SERVER_ERROR, {"code": "503", "attempts": "1"}, "edit"),
    ("timeout", "timeout", messages.TIMED_OUT, {"timeout_s": "1", "attempts": "1"}, "ask"),
    ("refused", "refused", messages.UNREACHABLE, {}, "ask"),
    ("cut_stream_ask", dict(fault="cut_stream", after_chunks=1), messages.STREAM_CUT, {}, "ask"),
    ("cut_stream_edit", dict(fault="cut_stream", after_chunks=1), messages.STREAM_CUT, {}, "edit"),
    ("invalid_json", dict(fault="invalid_json"), messages.EDIT_NOT_JSON, {}, "edit"),
]


@pytest.fixture(scope="module")
def kern(stub, tmp_path_factory):
    """One kernel for the module (the SDK import costs seconds); each test has its own conversation."""
    k = Kernel(
        env={"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY},
        cwd=str(tmp_path_factory.mktemp("failures")),
    )
    k.run("%load_ext genai_magics", cell_id="setup")
    k.run("%config GeminiMagics.retry_attempts = 1", cell_id="cfg")
    k.run(OTHER, cell_id="other")
    yield k
    k.close()


@pytest.fixture
def failures_kernel(kern, stub):
    stub.reset()
    stub.chunk_delay = 0.0
    yield kern
    stub.chunk_delay = 0.0
    kern.run(
        "%config GeminiMagics.retry_attempts = 1\n%config GeminiMagics.timeout = 120.0\n%gemini debug off",
        cell_id="restore",
    )


def status_line(kernel, conv: str) -> str:
    out = kernel.run("%gemini status", cell_id="status").stdout
    lines = [line for line in out.splitlines() if line.startswith(f"conversation {conv!r}:")]
    assert len(lines) == 1, out
    return lines[0]


def observed(kernel, conv: str) -> tuple[str, str, str]:
    return (
        status_line(kernel, conv),
        kernel.run(f"%gemini tokens -c {conv}", cell_id="tokens").stdout,
        kernel.run(f"%gemini history -c {conv}", cell_id="history").stdout,
    )


def retrying(why: str, wait: int, attempt: int, attempts: int) -> str:
    return messages.RETRYING.render(why=why, wait=wait, attempt=attempt, attempts=attempts)


def one_line(run) -> str:
    """The failure line: the only stderr output, no traceback anywhere."""
    assert run.errors == [], run.errors
    assert "Traceback" not in run.plain
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("genai_magics: ")
    return lines[0]


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def first_turn(kernel, stub, mode: str, conv: str, cell_id: str):
    """Turn 1 on the cell, then a hand edit that is re-run: the model no longer holds the cell."""
    kernel.run(CELL, cell_id=cell_id)
    run = kernel.run(
        f"%%gemini_ask --state {mode} -c {conv} --cell {cell_id}\nWhat does it compute?", cell_id=f"m1-{conv}"
    )
    assert run.stderr == "" and "Stub answer to: What does it compute?" in run.plain
    turn1 = api_requests(stub)[-1]
    assert current_payload(turn1)["currentSource"] == CELL
    kernel.run(EDITED, cell_id=cell_id)
    return turn1


def third_turn_resends(kernel, stub, mode: str, conv: str, cell_id: str, turn1) -> None:
    """After the failure, a turn without a fault sends what the model does not hold."""
    before = len(api_requests(stub))
    run = kernel.run(f"%%gemini_ask -c {conv} --cell {cell_id}\nAnd now?", cell_id=f"m3-{conv}")
    assert run.stderr == "" and "Stub answer to: And now?" in run.plain
    sent = api_requests(stub)[before:]
    assert len(sent) == 1 and sent[0]["status"] == 200
    payload = current_payload(sent[0])
    assert payload["currentSource"] == EDITED
    assert "sourceSynchronized" not in payload
    if mode == "interactions":
        assert sent[0]["json"]["previous_interaction_id"] == turn1["interaction_id"]
    else:
        roles = [c["role"] for c in sent[0]["json"]["contents"]]
        assert roles == ["user", "model", "user"], "the failed turn must not be in the transcript"
    assert messages.FOOTER_TURN.within(run.plain, turn=2)  # the footer numbers it as the second recorded turn


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case, fault, message, fields, turn_mode", CASES, ids=[c[0] for c in CASES])
def test_failed_turn_is_one_line_and_changes_nothing(
    failures_kernel, stub, mode, case, fault, message, fields, turn_mode
):
    conv, cell_id = f"{case}-{mode}", f"cell-{case}-{mode}"
    turn1 = first_turn(failures_kernel, stub, mode, conv, cell_id)
    before = observed(failures_kernel, conv)
    assert "1 turn(s)" in before[0]
    apply_buttons = len(failures_kernel.buttons("Apply"))
    sent_before = len(api_requests(stub))

    if fault == "timeout":
        failures_kernel.run("%config GeminiMagics.timeout = 1.0", cell_id="cfg")
        stub.inject("delay", seconds=3)
    elif fault == "refused":
        failures_kernel.run(f"%env GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:{closed_port()}", cell_id="env")
    else:
        fault = dict(fault)
        if mode == "contents" and fault.get("times"):
            fault["times"] = 1  # no chain to recover in contents mode: one 404 is the failure
        stub.inject(**fault)
    started = time.monotonic()
    run = failures_kernel.run(f"%%gemini_{turn_mode} -c {conv} --cell {cell_id}\nMake it better", cell_id=f"m2-{conv}")
    elapsed = time.monotonic() - started
    if fault == "refused":
        failures_kernel.run(f"%env GOOGLE_GEMINI_BASE_URL={stub.url}", cell_id="env")
    if fault == "timeout":
        failures_kernel.run("%config GeminiMagics.timeout = 120.0", cell_id="cfg")
        assert elapsed < 2.9, "the client timeout, not the server's delay, ended the turn"

    line = one_line(run)
    parsed = message.parse(line)
    assert parsed is not None and fields.items() <= parsed.items(), line
    assert "{'error'" not in line and '{"error"' not in line, f"a raw error body is not a clear line: {line}"
    assert FAKE_KEY not in run.plain
    assert len(failures_kernel.buttons("Apply")) == apply_buttons, "a failed edit shows no proposal"
    assert observed(failures_kernel, conv) == before, "the failed turn changed the conversation"
    if fault not in ("refused",):
        assert len(api_requests(stub)) > sent_before, "the fault was really hit"
    third_turn_resends(failures_kernel, stub, mode, conv, cell_id, turn1)


@pytest.mark.parametrize("mode", MODES)
def test_retries_429_with_backoff_and_shows_the_wait(failures_kernel, stub, mode):
    conv, cell_id = f"retry-{mode}", f"cell-retry-{mode}"
    turn1 = first_turn(failures_kernel, stub, mode, conv, cell_id)
    failures_kernel.run("%config GeminiMagics.retry_attempts = 3", cell_id="cfg")
    stub.inject("http", status=429, times=2)
    before = len(api_requests(stub))
    started = time.monotonic()
    run = failures_kernel.run(f"%%gemini_ask -c {conv} --cell {cell_id}\nretry please", cell_id=f"m2-{conv}")
    elapsed = time.monotonic() - started
    assert run.stderr == "" and run.errors == []
    assert "Stub answer to: retry please" in run.plain
    for wait, attempt in ((1, 2), (2, 3)):
        assert retrying(messages.RATE_LIMITED_NOW.render(code=429), wait, attempt, 3) in run.plain
    sent = api_requests(stub)[before:]
    assert [r["status"] for r in sent] == [429, 429, 200]
    assert elapsed >= 1.0, "backoff waited between attempts"
    # the retried request is the same turn: it carries the edited cell, once
    assert all(current_payload(r)["currentSource"] == EDITED for r in sent)
    if mode == "interactions":
        assert all(r["json"]["previous_interaction_id"] == turn1["interaction_id"] for r in sent)
    assert "2 turn(s)" in status_line(failures_kernel, conv)


def test_retries_exhausted_show_attempts_and_change_nothing(failures_kernel, stub):
    conv, cell_id = "exhausted", "cell-exhausted"
    turn1 = first_turn(failures_kernel, stub, "contents", conv, cell_id)
    failures_kernel.run("%config GeminiMagics.retry_attempts = 2", cell_id="cfg")
    before = observed(failures_kernel, conv)
    stub.inject("http", status=503, times=2)
    n = len(api_requests(stub))
    run = failures_kernel.run(f"%%gemini_ask -c {conv} --cell {cell_id}\nagain", cell_id=f"m2-{conv}")
    assert retrying(messages.SERVER_ERROR_NOW.render(code=503), 1, 2, 2) in run.plain
    line = one_line(run)
    assert line == messages.SERVER_ERROR.shown(code=503, attempts=2)
    assert [r["status"] for r in api_requests(stub)[n:]] == [503, 503]
    assert observed(failures_kernel, conv) == before
    third_turn_resends(failures_kernel, stub, "contents", conv, cell_id, turn1)


def test_retry_attempts_and_timeout_are_traitlets():
    from genai_magics.kernel.magics import GeminiMagics

    traits = GeminiMagics.class_traits(config=True)
    assert {"retry_attempts", "timeout"} <= set(traits)
    assert traits["retry_attempts"].default_value >= 2


@pytest.mark.parametrize("mode", MODES)
def test_interrupt_while_streaming_records_nothing_and_says_so(failures_kernel, stub, mode):
    conv, cell_id = f"interrupt-{mode}", f"cell-interrupt-{mode}"
    turn1 = first_turn(failures_kernel, stub, mode, conv, cell_id)
    before = observed(failures_kernel, conv)
    stub.chunk_delay = 1.0  # the answer streams slowly: interrupt it after its first piece
    msg_id = failures_kernel.start(f"%%gemini_ask -c {conv} --cell {cell_id}\nstream slowly", cell_id=f"m2-{conv}")

    def partial_answer_shown(k):
        return any(
            m["msg_type"] in ("display_data", "update_display_data")
            and "Stub answer" in m["content"]["data"].get("text/plain", "")
            for m in k._pending[msg_id]
        )

    failures_kernel.wait_until(partial_answer_shown, msg_id, timeout=30)
    failures_kernel.km.interrupt_kernel()
    run = failures_kernel.finish(msg_id)
    stub.chunk_delay = 0.0
    line = one_line(run)
    assert line == messages.STOPPED.shown()
    assert run.reply["content"]["status"] == "ok"
    assert observed(failures_kernel, conv) == before
    third_turn_resends(failures_kernel, stub, mode, conv, cell_id, turn1)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("magic", ["ask", "edit"])
def test_interrupt_while_waiting_for_the_answer(failures_kernel, stub, mode, magic):
    """The stop button while the request waits for the first byte (edit cells run as async cells)."""
    conv, cell_id = f"interrupt-wait-{magic}-{mode}", f"cell-interrupt-wait-{magic}-{mode}"
    turn1 = first_turn(failures_kernel, stub, mode, conv, cell_id)
    before = observed(failures_kernel, conv)
    stub.inject("delay", seconds=5)
    n = len(api_requests(stub))
    msg_id = failures_kernel.start(f"%%gemini_{magic} -c {conv} --cell {cell_id}\nslow {magic}", cell_id=f"m2-{conv}")
    deadline = time.monotonic() + 30
    while len(api_requests(stub)) == n and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    failures_kernel.km.interrupt_kernel()
    line = one_line(failures_kernel.finish(msg_id))
    assert line == messages.STOPPED.shown()
    assert observed(failures_kernel, conv) == before
    third_turn_resends(failures_kernel, stub, mode, conv, cell_id, turn1)


def test_lost_chain_starts_a_new_chain_once_and_resends_what_the_model_needs(failures_kernel, stub):
    conv, cell_id = "lost", "cell-lost"
    turn1 = first_turn(failures_kernel, stub, "interactions", conv, cell_id)
    failures_kernel.run(f"%%gemini_ask -c {conv} --cell {cell_id}\nsecond", cell_id=f"m2-{conv}")
    turn2 = api_requests(stub)[-1]
    assert turn2["json"]["previous_interaction_id"] == turn1["interaction_id"]
    assert stub.forget_interaction(turn2["interaction_id"])
    n = len(api_requests(stub))
    run = failures_kernel.run(
        f"%%gemini_ask -c {conv} --cell {cell_id}\nthird, after the server forgot", cell_id=f"m3-{conv}"
    )
    assert run.stderr == "" and run.errors == []
    assert "Stub answer to: third, after the server forgot" in run.plain
    assert messages.CHAIN_LOST.within(run.plain)
    lost, fresh = api_requests(stub)[n:]
    assert lost["status"] == 404 and lost["json"]["previous_interaction_id"] == turn2["interaction_id"]
    assert fresh["status"] == 200 and "previous_interaction_id" not in fresh["json"]
    payload = current_payload(fresh)
    assert payload["currentSource"] == EDITED
    assert "RADIUS = 2" in payload["secondaryContext"]
    assert [(t["mode"], t["prompt"].strip()) for t in earlier_turns(payload)] == [
        ("ask", "What does it compute?"),
        ("ask", "second"),
    ]
    # the model really holds the document again
    assert "lines (sha256" in fresh["response_text"]
    assert "3 turn(s)" in status_line(failures_kernel, conv)
    assert f"interaction {fresh['interaction_id']}" in status_line(failures_kernel, conv)
    # turn 4 chains normally from the new chain, sends nothing again
    n = len(api_requests(stub))
    run = failures_kernel.run(f"%%gemini_ask -c {conv} --cell {cell_id}\nfourth", cell_id=f"m4-{conv}")
    assert run.stderr == "" and not messages.CHAIN_LOST.within(run.plain)
    (turn4,) = api_requests(stub)[n:]
    assert turn4["json"]["previous_interaction_id"] == fresh["interaction_id"]
    p4 = current_payload(turn4)
    assert p4.get("sourceSynchronized") is True
    assert not {"currentSource", "secondaryContext", "earlierTurns"} & set(p4)


def test_lost_chain_recovery_that_fails_keeps_the_old_chain_id(failures_kernel, stub):
    conv, cell_id = "lost-twice", "cell-lost-twice"
    turn1 = first_turn(failures_kernel, stub, "interactions", conv, cell_id)
    before = observed(failures_kernel, conv)
    assert f"interaction {turn1['interaction_id']}" in before[0]
    stub.inject("http", status=404, times=2)
    n = len(api_requests(stub))
    run = failures_kernel.run(f"%%gemini_ask -c {conv} --cell {cell_id}\nsecond", cell_id=f"m2-{conv}")
    assert messages.CHAIN_LOST.render() in run.plain  # tried once, and said so
    assert messages.NOT_FOUND.matches(one_line(run))
    chained, fresh = api_requests(stub)[n:]
    assert chained["json"].get("previous_interaction_id") == turn1["interaction_id"]
    assert "previous_interaction_id" not in fresh["json"]
    assert observed(failures_kernel, conv) == before
    third_turn_resends(failures_kernel, stub, "interactions", conv, cell_id, turn1)


def test_failed_first_turn_creates_no_conversation(failures_kernel, stub):
    failures_kernel.run(CELL, cell_id="cell-first-fail")
    stub.inject("http", status=500)
    run = failures_kernel.run("%%gemini_ask -c firstfail --cell cell-first-fail\nhello", cell_id="m-first-fail")
    assert (messages.SERVER_ERROR.parse(one_line(run)) or {}).get("code") == "500"
    assert "'firstfail'" not in failures_kernel.run("%gemini status", cell_id="status").stdout
    again = failures_kernel.run("%%gemini_ask -c firstfail --cell cell-first-fail\nhello", cell_id="m-first-fail")
    assert again.stderr == "" and messages.FOOTER_TURN.within(again.plain, turn=1)


def test_debug_off_by_default_no_traceback_debug_on_shows_it_for_api_failures(failures_kernel, stub):
    conv, cell_id = "debug", "cell-debug"
    first_turn(failures_kernel, stub, "contents", conv, cell_id)
    stub.inject("http", status=500)
    off = failures_kernel.run(f"%%gemini_ask -c {conv} --cell {cell_id}\nq", cell_id="m-debug")
    assert "Traceback" not in off.plain
    assert failures_kernel.run("%gemini debug on", cell_id="dbg").stdout.strip() == messages.DEBUG_IS.render(on="on")
    stub.inject("http", status=500)
    on = failures_kernel.run(f"%%gemini_ask -c {conv} --cell {cell_id}\nq", cell_id="m-debug")
    assert on.errors == []  # still no error message: the cell does not fail
    assert messages.SERVER_ERROR.shown(code=500, attempts=1) in on.stderr
    assert "Traceback (most recent call last)" in on.stderr, (
        "with %gemini debug on, an API failure must show its traceback"
    )
    assert "ServerError" in on.stderr
    assert FAKE_KEY not in on.plain
    assert "1 turn(s)" in status_line(failures_kernel, conv)


def test_debug_on_shows_traceback_of_an_unexpected_error(failures_kernel, stub):
    failures_kernel.run(CELL, cell_id="cell-bug")
    patch = (
        "import genai_magics.turn.pipeline as _p\n"
        "_orig_resolve = _p.resolve\n"
        "def _boom(*a, **k):\n    raise ZeroDivisionError('simulated bug')\n"
        "_p.resolve = _boom"
    )
    failures_kernel.run(patch, cell_id="patch")
    try:
        off = failures_kernel.run("%%gemini_ask --cell cell-bug\nq", cell_id="m-bug")
        line = one_line(off)
        assert line == messages.UNEXPECTED.shown(kind="ZeroDivisionError", error="simulated bug")
        failures_kernel.run("%gemini debug on", cell_id="dbg")
        on = failures_kernel.run("%%gemini_ask --cell cell-bug\nq", cell_id="m-bug")
        assert on.errors == []
        assert "Traceback (most recent call last)" in on.stderr and "_boom" in on.stderr
    finally:
        failures_kernel.run("_p.resolve = _orig_resolve", cell_id="unpatch")


@pytest.mark.parametrize("mode", MODES)
def test_the_wait_shown_is_the_wait_taken_with_a_retry_after_header(stub, monkeypatch, mode):
    """'retrying in ~N s' must match the pause before the next attempt (in-process: timing only)."""
    from genai_magics.gemini.client import ClientSettings
    from genai_magics.kernel.magics import GeminiMagics
    from genai_magics.turn import pipeline
    from genai_magics.turn.requests import Settings, TurnRequest
    from genai_magics.turn.session import Session

    point_sdk_at(monkeypatch, stub.url)
    stub.reset()
    display = RecordingDisplay()
    session = Session()
    session.executed.add("c", "x = 1\n", 1)
    settings = Settings(
        model=GeminiMagics.class_traits()["model"].default_value,
        state=mode,
        client=ClientSettings(retry_attempts=2, timeout_s=30, retry_delay_s=RETRY_DELAY_S),
    )
    # whole seconds, as HTTP has it, and apart from the client's own first wait (RETRY_DELAY_S)
    stub.inject("http", status=429, times=1, retry_after=2 if THOROUGH else 1)
    pipeline.run(session, TurnRequest(mode="ask", prompt="q", cell="c"), settings, display)
    first, second = api_requests(stub)
    gap = second["time"] - first["time"]
    (note,) = display.notes
    shown = float((messages.RETRYING.parse(note) or {})["wait"])
    # generate_content adds up to RETRY_DELAY_S of jitter to the wait it names (only ever longer), and the
    # gap holds the first answer's and the second request's own time besides
    assert -0.3 <= gap - shown <= RETRY_DELAY_S + 0.3, (
        f"the cell said {note!r} but the next attempt came after {gap:.1f} s"
    )


@pytest.mark.parametrize("mode", MODES)
def test_refused_connection_is_not_silent(stub, monkeypatch, mode):
    """An unreachable server does not leave the cell silent: generate_content retries a refused
    connection and each retry is announced (like a 429's) as it starts; the interactions client
    does not retry it, so the line comes at once."""
    from genai_magics.gemini.client import ClientSettings
    from genai_magics.kernel.magics import GeminiMagics
    from genai_magics.turn import pipeline
    from genai_magics.turn.requests import Settings, TurnRequest
    from genai_magics.turn.session import Session

    traits = GeminiMagics.class_traits()
    point_sdk_at(monkeypatch, f"http://127.0.0.1:{closed_port()}")
    display = RecordingDisplay()
    started = time.monotonic()
    session = Session()
    session.executed.add("c", "x = 1\n", 1)
    # 3 attempts, not the default 5: the same notices with less backoff
    settings = Settings(
        model=traits["model"].default_value,
        state=mode,
        client=ClientSettings(retry_attempts=3, timeout_s=traits["timeout"].default_value, retry_delay_s=RETRY_DELAY_S),
    )
    with pytest.raises(Exception) as failure:
        pipeline.run(session, TurnRequest(mode="ask", prompt="q", cell="c"), settings, display)
    assert messages.UNREACHABLE.matches(messages.PREFIX + str(failure.value)), failure.value
    if mode == "interactions":
        assert display.notes == [] and time.monotonic() - started < 5
        return
    assert len(display.notes) == settings.client.retry_attempts - 1, display.notes
    assert all(
        messages.CANNOT_REACH.matches((messages.RETRYING.parse(note) or {}).get("why", "")) for note in display.notes
    ), display.notes
    # each notice comes as its wait starts, not all after the last attempt: the first wait lies between them
    assert display.note_times[0] - started < 5, f"first notice after {display.note_times[0] - started:.1f} s"
    between = display.note_times[1] - display.note_times[0]
    assert between >= RETRY_DELAY_S, f"the notices came {between:.2f} s apart, less than the first wait"
