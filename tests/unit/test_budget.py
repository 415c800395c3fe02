"""The budget: a request's estimated cost before it is sent, refused in one line when it would pass
max_turn_cost or max_session_cost (nothing sent, nothing changed); %gemini cost."""

from __future__ import annotations

import base64
import datetime as dt
import json
from dataclasses import replace

import pytest
from helpers.footer import footer_line
from helpers.kernel import notebook_kernel, restart

from genai_magics import messages
from genai_magics.engine.conversation import Spent, Turn, Usage
from genai_magics.engine.errors import UserError
from genai_magics.gemini.budget import (
    FIRST_TURN_OUTPUT,
    Caps,
    check_cap,
    dollars,
    estimate,
    exact,
    expected_output,
    refusal,
    request_tokens,
    total,
)
from genai_magics.gemini.models import DEFAULT_MODEL
from genai_magics.gemini.pricing import billing_day, price_for
from genai_magics.persistence.store import record_path
from genai_magics.turn.session import Session

FLASH = price_for(DEFAULT_MODEL, day=dt.date(2026, 12, 31))


def turn(index: int, out: int | None, thinking: int | None = None, inp: int = 100) -> Turn:
    return Turn(index, "ask", "p", "contents", usage=Usage(inp, out, thinking_tokens=thinking))


def test_the_output_expected_is_the_largest_recent_answer_or_the_first_turn_allowance():
    assert expected_output([]) == FIRST_TURN_OUTPUT
    assert expected_output([turn(1, 50), turn(2, 70, thinking=30), turn(3, 20)]) == 100
    # only the last three count; a turn without a reported output does not
    assert expected_output([turn(1, 9_000), turn(2, 10), turn(3, 20), turn(4, None), turn(5, 30)]) == 30


def test_the_estimate_counts_the_request_as_the_kernel_does_and_the_chain_it_reads_again():
    contents = {"contents": [{"role": "user", "parts": [{"text": "x" * 400}]}], "config": {"system_instruction": ""}}
    assert request_tokens(contents, DEFAULT_MODEL) == 100
    first = estimate(FLASH, contents, [], DEFAULT_MODEL)
    assert first == pytest.approx((100 * 0.75 + FIRST_TURN_OUTPUT * 3.75) / 1e6)
    chained = {"input": "y" * 40, "previous_interaction_id": "i1"}
    history = [turn(1, 200, inp=5_000)]
    # the server chain makes the model read the last turn's input and answer again
    assert estimate(FLASH, chained, history, DEFAULT_MODEL) == pytest.approx(((10 + 5_200) * 0.75 + 200 * 3.75) / 1e6)
    assert estimate(FLASH, {"input": "y" * 40}, history, DEFAULT_MODEL) == pytest.approx((10 * 0.75 + 200 * 3.75) / 1e6)


def test_a_request_passing_either_cap_is_refused_naming_the_setting():
    assert refusal(0.0036, Caps(), 0, 0, first=True) is None  # off by default
    refused = refusal(0.0036, Caps(turn=0.00001), 0, 0, first=True)
    assert refused is not None and refused.message is messages.BUDGET_REFUSED
    assert refused.fields == {"estimate": "0.0036", "name": "max_turn_cost", "cap": "0.00001"}
    assert refusal(0.003, Caps(turn=0.003), 0, 0, first=True) is None  # at the cap is within it
    # the session cap counts what this session spent, and the turn's earlier requests
    stopped = refusal(0.002, Caps(session=0.01), 0.002, 0.007, first=False)
    assert stopped is not None and stopped.message is messages.BUDGET_STOPPED
    assert stopped.fields == {"estimate": "0.011", "name": "max_session_cost", "cap": "0.01"}
    assert refusal(0.002, Caps(session=0.01), 0, 0.007, first=True) is None


@pytest.mark.parametrize("bad", [-1, -0.01, "abc", "1", True, float("nan"), float("inf"), [1]])
def test_a_cap_is_none_or_a_number_at_least_zero(bad):
    assert check_cap("max_turn_cost", None) is None and check_cap("max_turn_cost", 0) == 0.0
    assert check_cap("max_session_cost", 2) == 2.0
    with pytest.raises(UserError) as refused:
        check_cap("max_turn_cost", bad)
    assert refused.value.message is messages.CAP_BAD and refused.value.fields == {"name": "max_turn_cost", "value": bad}


def test_dollars_have_two_significant_digits_and_caps_are_shown_as_written():
    assert [dollars(v) for v in (0.0036, 0.00361, 0.011, 1.23, 0)] == ["0.0036", "0.0036", "0.011", "1.2", "0"]
    assert [exact(v) for v in (0.00001, 2.0, 0.5)] == ["0.00001", "2", "0.5"]


# -- over the wire: the real SDK against the stand-in, in an in-process shell -------------------

CODE = "def parse(s):\n    return int(s)\n"


def dry_request(shell, source: str) -> dict:
    """The exact request a turn would send, from its dry run (nothing sent)."""
    shown = shell.run(source.replace("\n", " --dry-run\n", 1), cell_id="dry")
    (bundle,) = [b for b in shown.bundles if "dry run" in b.get("text/plain", "")]
    return json.loads(bundle["text/plain"].split("\n", 1)[1])


def kernel_estimate(shell, source: str, conversation: str) -> float:
    """The estimate the kernel makes for the turn's first request (gemini/budget.py on its dry run)."""
    conv = shell.magics.session.conversations.get(conversation)
    return estimate(FLASH, dry_request(shell, source), conv.history if conv else [], DEFAULT_MODEL)


@pytest.fixture
def shell(magic_shell):
    """The in-process shell on 2026-12-31 (FLASH's day), no cap; the caps set by a test are taken off after it."""
    magic_shell.magics.session.today = lambda: dt.date(2026, 12, 31)
    yield magic_shell
    magic_shell.magics.max_turn_cost = magic_shell.magics.max_session_cost = None


@pytest.mark.parametrize("state", ["contents", "interactions"])
def test_a_turn_over_max_turn_cost_is_sent_nothing_and_changes_nothing(shell, stub, state):
    shell.run(CODE, cell_id="code")
    shell.run(f"%%gemini_ask -c capped --new --state {state}\nwhy int?", cell_id="m1")
    conv = shell.magics.session.conversations["capped"]
    before = (len(conv.history), conv.last_interaction_id, dict(conv.sync.context_hashes), len(stub.requests))
    spent = list(shell.magics.session.spent)
    source = "%%gemini_ask -c capped\nand float?"
    expected = kernel_estimate(shell, source, "capped")
    shell.magics.max_turn_cost = 0.00001
    refused = shell.run(source, cell_id="m2")
    assert refused.stderr.strip() == messages.BUDGET_REFUSED.shown(
        estimate=dollars(expected), name="max_turn_cost", cap="0.00001"
    )
    assert (len(conv.history), conv.last_interaction_id, dict(conv.sync.context_hashes), len(stub.requests)) == before
    assert shell.magics.session.spent == spent and "Traceback" not in refused.plain
    # at a cap the estimate stays under, the same turn goes
    shell.magics.max_turn_cost = expected * 1.01
    assert "Stub answer to: and float?" in shell.run(source, cell_id="m2").plain
    assert len(conv.history) == 2


def test_max_session_cost_counts_what_this_session_spent(shell, stub):
    shell.run(CODE, cell_id="code")
    shell.run("%%gemini_ask -c s1 --new\nwhy int?", cell_id="m1")
    spent = total(shell.magics.session.spent)
    assert spent > 0 and shell.magics.session.spent[-1].conversation == "s1"
    source = "%%gemini_ask -c s2 --new\nwhy not float?"
    expected = estimate(FLASH, dry_request(shell, source), [], DEFAULT_MODEL)
    assert expected < spent + expected * 0.99  # the second turn alone is under the cap ...
    requests = len(stub.requests)
    shell.magics.max_session_cost = spent + expected * 0.99  # ... with what the session spent, over it
    refused = shell.run(source, cell_id="m2")
    total_shown = dollars(spent + expected)
    cap = exact(shell.magics.max_session_cost)
    assert refused.stderr.strip() == messages.BUDGET_REFUSED.shown(
        estimate=total_shown, name="max_session_cost", cap=cap
    )
    assert len(stub.requests) == requests and "s2" not in shell.magics.session.conversations
    shell.magics.max_session_cost = None  # off again: it goes
    assert "Stub answer to: why not float?" in shell.run(source, cell_id="m2").plain


def test_the_session_keeps_what_it_spent_as_the_bills_come():
    """Issue 42: every turn summed the whole session's bills for max_session_cost; the running total kept as
    each bill comes is the same float (added in the same order), an unpriced bill adding nothing."""
    session = Session()
    bills = [Spent("c", "m", Usage(cost_usd=c), failed=c == 0.2) for c in (0.1, None, 0.2, 0.3, 1e-7, 0.7)]
    for bill in bills:
        session.bill(bill)
        assert session.spent_usd == total(session.spent)
    assert session.spent == bills and session.spent_usd == 0.1 + 0.2 + 0.3 + 1e-7 + 0.7


@pytest.mark.parametrize("state", ["contents", "interactions"])
def test_an_edit_retry_is_checked_before_it_is_sent(shell, stub, state):
    shell.run(CODE, cell_id="code")
    shell.run(f"%%gemini_ask -c e --new --state {state}\nwhy int?", cell_id="m1")  # sets the expected output
    conv = shell.magics.session.conversations["e"]
    source = "%%gemini_edit -c e\nAdd logging."
    first = kernel_estimate(shell, source, "e")
    requests = len(stub.requests)
    # the first request is under the cap; with the retry's estimate the turn would pass it
    shell.magics.max_turn_cost = first * 1.5
    stub.inject("bad_edits", match="edit")
    stopped = shell.run(source, cell_id="m2")
    line = stopped.stderr.strip().splitlines()[-1]
    fields = messages.BUDGET_STOPPED.parse(line)
    assert fields is not None and fields["name"] == "max_turn_cost", stopped.stderr
    assert float(fields["estimate"]) > first * 1.5
    assert len(stub.requests) == requests + 1  # the first went; the retry was never sent
    assert len(conv.history) == 1  # the turn is not recorded
    # without the cap the same retry goes and the turn is recorded
    shell.magics.max_turn_cost = None
    stub.inject("bad_edits", match="edit")
    shell.run(source, cell_id="m3")
    assert len(stub.requests) == requests + 3 and len(conv.history) == 2


def test_a_new_chain_after_a_lost_one_is_checked_before_it_is_sent(shell, stub, monkeypatch):
    """The new chain is admitted like the first request: here it alone is held to a cap of $0 (by the
    real check, TurnSend._admit, on the real request), and its refusal leaves the conversation as it was."""
    from genai_magics.turn.send import TurnSend

    shell.run(CODE, cell_id="code")
    shell.run("%%gemini_ask -c lost --new --state interactions\nwhy int?", cell_id="m1")
    conv = shell.magics.session.conversations["lost"]
    chained = conv.last_interaction_id
    assert stub.forget_interaction(chained)
    admitted, real = [], TurnSend._admit

    def admit(send, body, at_limit):
        admitted.append(body(at_limit))
        if "previous_interaction_id" not in admitted[-1]:  # the new chain's request
            send.settings = replace(send.settings, caps=Caps(turn=0.0))
        return real(send, body, at_limit)

    monkeypatch.setattr(TurnSend, "_admit", admit)
    requests = len(stub.requests)
    refused = shell.run("%%gemini_ask -c lost\nand float?", cell_id="m2")
    monkeypatch.undo()
    assert messages.CHAIN_LOST.render() in refused.plain
    assert messages.BUDGET_REFUSED.parse(refused.stderr.strip().splitlines()[-1]) is not None, refused.stderr
    assert [b.get("previous_interaction_id") for b in admitted] == [chained, None]
    assert "earlierTurns" in admitted[1]["input"]  # the new chain's request, with its digest
    assert len(stub.requests) == requests + 1  # the chained request (404); the new chain was not sent
    assert conv.last_interaction_id == chained and len(conv.history) == 1  # as it was


# -- in a real kernel: %config, %gemini cost, the record -------------------------------------------


def record_files(nb) -> dict[str, bytes]:
    """The record and whatever beside it belongs to it (its journal), as bytes."""
    record = record_path("user", nb)
    return {p.name: p.read_bytes() for p in record.parent.glob(record.name + "*")}


COSTS = (
    "from genai_magics.kernel.shell_state import state_of\n"
    "print([(s.conversation, s.model, s.usage.cost_usd) for s in state_of(get_ipython()).session.spent])"
)


@pytest.mark.kernel
def test_a_bad_cap_is_one_line_and_keeps_the_old_one(stub, tmp_path):
    k = notebook_kernel(stub, tmp_path / "caps.ipynb")
    try:
        assert k.run("%config GeminiMagics.max_turn_cost = 0.5").stderr == ""
        for bad in ("'abc'", "-1", "[1]"):
            refused = k.run(f"%config GeminiMagics.max_turn_cost = {bad}")
            (line,) = refused.stderr.splitlines()
            assert line == "ERROR:root:" + messages.CAP_BAD.shown(name="max_turn_cost", value=eval(bad)), line
            assert "Traceback" not in refused.plain
        held = "print(get_ipython().magics_manager.registry['GeminiMagics'].max_turn_cost, end='')"
        assert k.run(held).stdout == "0.5"  # the cap stays as it was
        shown = k.run("%config GeminiMagics.max_session_cost = -0.01")
        assert shown.stderr.strip() == "ERROR:root:" + messages.CAP_BAD.shown(name="max_session_cost", value=-0.01)
    finally:
        k.close()


@pytest.mark.kernel
def test_gemini_cost_is_the_footers_sum_and_the_record_before_the_restart(stub, tmp_path):
    stub.reset()
    nb = tmp_path / "work.ipynb"
    k = notebook_kernel(stub, nb)
    try:
        k.run("def parse(s):\n    return int(s)\n", cell_id="code")
        footers = [
            k.run(source, cell_id=cell).plain
            for cell, source in (
                ("m1", "%%gemini_ask\nwhy int?"),
                ("m2", "%%gemini_ask\nand float?"),
                ("m3", "%%gemini_ask -c g4 --model gemini-4-argon\nwhy int?"),
                ("m4", "%%gemini_ask -c odd --model gemini-9-unpriced\nwhy int?"),
            )
        ]
        spent = eval(k.run(COSTS).stdout)
        assert [(c, m) for c, m, _ in spent] == [
            ("default", DEFAULT_MODEL),
            ("default", DEFAULT_MODEL),
            ("g4", "gemini-4-argon"),
            ("odd", "gemini-9-unpriced"),
        ]
        # each footer shows its turn's cost; the unpriced one shows tokens only
        for shown, (_, _, cost) in zip(footers, spent, strict=True):
            footer = footer_line(shown)
            assert (f"~${cost:.2g}" in footer) if cost is not None else ("~$" not in footer), footer
        total = sum(c for _, _, c in spent if c is not None)
        report = k.run("%gemini cost").stdout.splitlines()
        unpriced = messages.COST_UNPRICED.render(count=1)
        assert report[0] == messages.COST_THIS_SESSION.render(
            cost=f"${total:.6f}", turns=4, unpriced=unpriced, failed=""
        )
        rows = [messages.COST_ROW.parse(line) for line in report[1:4]]
        assert [(r["name"], r["model"], r["turns"], r["cost"]) for r in rows] == [
            ("'default'", DEFAULT_MODEL, "2", f"${spent[0][2] + spent[1][2]:.6f}"),
            ("'g4'", "gemini-4-argon", "1", f"${spent[2][2]:.6f}"),
            ("'odd'", "gemini-9-unpriced", "1", messages.COST_TOKENS_ONLY.render()),
        ]
        nothing = messages.COST_BEFORE.render(cost="$0", turns=0, unpriced="", failed="")
        assert report[4] == nothing
        # a refused turn leaves no record entry and adds nothing to what was spent
        files = record_files(nb)
        k.run("%config GeminiMagics.max_turn_cost = 0.00001")
        refused = k.run("%%gemini_ask\nand bool?", cell_id="m5")
        assert messages.BUDGET_REFUSED.parse(refused.stderr.strip()) is not None, refused.stderr
        assert record_files(nb) == files and eval(k.run(COSTS).stdout) == spent
        restart(k)
        after = k.run("%gemini cost").stdout.splitlines()
        assert after[0] == messages.COST_THIS_SESSION.render(cost="$0", turns=0, unpriced="", failed="")
        assert after[1] == messages.COST_BEFORE.render(cost=f"${total:.6f}", turns=4, unpriced=unpriced, failed="")
        assert after[2:] == report[1:4]
        # a replayed turn costs nothing in this session, and keeps the price of its own day
        k.run("def parse(s):\n    return int(s)\n", cell_id="code")
        assert messages.REPLAYED_FOOTER.within(k.run("%%gemini_ask\nwhy int?", cell_id="m1").plain, turn=1)
        assert k.run("%gemini cost").stdout.splitlines()[0] == after[0]
        kept = k.run(
            "from genai_magics.kernel.shell_state import state_of\n"
            "u = state_of(get_ipython()).session.conversations['default'].history[0].usage\n"
            "print(u.priced_on, u.cost_usd, end='')"
        ).stdout
        assert kept == f"{billing_day().isoformat()} {spent[0][2]}"  # Google's day, not the machine's
    finally:
        k.close()


# -- issue 32: every part a request carries counts; every billed request counts ---------------------

STATES = ["contents", "interactions"]
BIG = 19_000  # characters of each cell the model reads (a result is at most secondary_context_chars, 20,000)


def test_the_estimate_counts_function_calls_and_results_with_their_images():
    from helpers.images import png

    image = base64.b64encode(png(64, 64)).decode("ascii")
    result = {"text": "r" * 4_000}
    called = {"functionCall": {"name": "read_cell", "args": {"ref": "c" * 400}}}
    answered = {"functionResponse": {"name": "read_cell", "response": result}}
    with_image = {
        "functionResponse": {"name": "cell_outputs", "response": {}, "parts": [{"inlineData": {"data": image}}]}
    }
    contents = {"contents": [{"role": "model", "parts": [called]}, {"role": "user", "parts": [answered]}]}
    assert request_tokens(contents, DEFAULT_MODEL) > 1_100  # the call's 400 characters, the result's 4,000
    alone = request_tokens({"contents": [{"role": "user", "parts": [{"inlineData": {"data": image}}]}]}, DEFAULT_MODEL)
    images = request_tokens({"contents": [{"role": "user", "parts": [with_image]}]}, DEFAULT_MODEL)
    assert alone > 0 and images >= alone  # the image inside the result, by the image rule
    interactions = {"input": [{"type": "function_result", "call_id": "1", "name": "read_cell", "result": "r" * 4_000}]}
    assert request_tokens(interactions, DEFAULT_MODEL) >= 1_000
    listed = [{"type": "text", "text": "r" * 4_000}, {"type": "image", "data": image, "mime_type": "image/png"}]
    both = {"input": [{"type": "function_result", "call_id": "1", "name": "cell_outputs", "result": listed}]}
    assert request_tokens(both, DEFAULT_MODEL) >= 1_000 + alone


@pytest.fixture
def reading(shell, stub):
    """The shell with eight cells of BIG characters each, and a model scripted to read them all in one round."""
    shell.run("%gemini reset --all", cell_id="reset")
    for name in ("secondary_context_chars", "tools", "max_tool_calls"):
        setattr(shell.magics, name, shell.magics.trait_defaults(name))
    for i in range(8):
        shell.run(f"big{i} = '{chr(97 + i) * BIG}'", cell_id=f"big{i}")
    stub.script_tools([[{"name": "read_cell", "args": {"ref": f"big{i}"}} for i in range(8)]])
    yield shell
    emptied(shell, [f"big{i}" for i in range(8)], [f"big{i}" for i in range(8)])


def emptied(shell, cells: list[str], names: list[str]) -> None:
    """The cells a test ran run again as ``pass``, and its variables deleted: the shell outlives the test, and
    later turns would send them as context, or call them."""
    for cell in cells:
        shell.run("pass", cell_id=cell)
    for name in names:
        shell.ip.user_ns.pop(name, None)


def read_all(shell, state: str, name: str):
    return shell.run(
        f"%%gemini_ask -c {name} --new --no-context --state {state}\nwhat do the cells hold?", cell_id=name
    )


@pytest.mark.parametrize("state", STATES)
def test_max_turn_cost_counts_the_function_results_a_request_carries(reading, stub, state):
    """Issue 32.4: with a $0.01 cap, the request carrying eight 19 KB results was admitted (its results
    counted 0 tokens); the turn's own footer then said ~$0.022."""
    spent = reading.magics.session.spent
    read_all(reading, state, "uncapped")
    assert spent[-1].usage.requests == 2 and spent[-1].usage.cost_usd > 0.01, spent[-1]
    stub.script_tools([[{"name": "read_cell", "args": {"ref": f"big{i}"}} for i in range(8)]])
    requests = len(stub.requests)
    reading.magics.max_turn_cost = 0.01
    stopped = read_all(reading, state, "capped")
    fields = messages.BUDGET_STOPPED.parse(stopped.stderr.strip().splitlines()[-1])
    assert fields is not None and fields["name"] == "max_turn_cost", stopped.stderr
    assert float(fields["estimate"]) > 0.01
    assert len(stub.requests) == requests + 1  # the results were never sent
    assert "capped" not in reading.magics.session.conversations


def cost_lines(shell) -> list[str]:
    return shell.run("%gemini cost", cell_id="cost").plain.splitlines()


def failed_part(spent) -> str:
    """What %gemini cost's first line says of the session's failed turns (the shell's session outlives a test)."""
    estimated = sum(s.estimated for s in spent)
    return messages.COST_FAILED.render(
        count=sum(s.failed for s in spent),
        estimated=messages.COST_ESTIMATED.render(count=estimated) if estimated else "",
    )


@pytest.mark.parametrize("state", STATES)
def test_what_a_stopped_turn_was_billed_counts_in_gemini_cost_and_max_session_cost(reading, stub, state):
    """Issue 32.5: turns stopped by the budget after a billed request added nothing to what the session
    spent: %gemini cost did not show them, and max_session_cost admitted the next turn."""
    session = reading.magics.session
    before = total(session.spent)
    reading.magics.max_turn_cost = 0.01
    read_all(reading, state, "stopped")
    (bill,) = session.spent[len(session.spent) - 1 :]
    assert bill.failed and not bill.estimated and bill.conversation == "stopped"
    assert bill.usage.requests == 1 and bill.usage.cost_usd > 0 and bill.usage.input_tokens > 0
    assert "stopped" not in session.conversations  # the turn itself is not kept
    lines = cost_lines(reading)
    fields = messages.COST_THIS_SESSION.parse(lines[0])
    assert fields is not None and fields["cost"] == f"${before + bill.usage.cost_usd:.6f}"
    assert lines[0].endswith(failed_part(session.spent))
    # the session cap counts it: a turn that alone fits under the cap is refused with it
    reading.magics.max_turn_cost = None
    source = "%%gemini_ask -c after --new --no-context\nwhy?"
    expected = estimate(FLASH, dry_request(reading, source), [], DEFAULT_MODEL)
    reading.magics.max_session_cost = before + expected + bill.usage.cost_usd / 2
    refused = reading.run(source, cell_id="after")
    assert messages.BUDGET_REFUSED.matches(
        refused.stderr.strip(), name="max_session_cost", estimate=dollars(total(session.spent) + expected)
    ), refused.stderr


@pytest.mark.parametrize("state", STATES)
def test_a_stop_during_a_call_counts_the_requests_billed_before_it(shell, stub, state):
    shell.run("%gemini reset --all", cell_id="reset")
    shell.run("class Stuck:\n    def __repr__(self):\n        raise KeyboardInterrupt\n\nstuck = Stuck()", cell_id="s")
    stub.script_tools([[{"name": "list_variables"}], [{"name": "inspect_variable", "args": {"name": "stuck"}}]])
    shown = shell.run(f"%%gemini_ask -c stop --new --state {state}\nwhat is stuck?", cell_id="stop")
    emptied(shell, ["s"], ["stuck", "Stuck"])
    assert messages.STOPPED.shown() in shown.stderr
    bill = shell.magics.session.spent[-1]
    assert bill.failed and bill.conversation == "stop" and bill.usage.requests == 2 and bill.usage.cost_usd > 0


@pytest.mark.parametrize("state", STATES)
def test_a_later_error_counts_the_requests_billed_before_it(shell, stub, state):
    """The answer to the calls is refused (a 400): the request that asked for them was billed."""
    shell.run("%gemini reset --all", cell_id="reset")
    shell.ip.user_ns["stand_in"] = stub
    shell.run(
        "class Trap:\n    def __repr__(self):\n"
        "        stand_in.inject('http', status=400, match='any')\n        return 'trap'\n\ntrap = Trap()",
        cell_id="t",
    )
    stub.script_tools([[{"name": "inspect_variable", "args": {"name": "trap"}}]])
    shown = shell.run(f"%%gemini_ask -c later --new --state {state}\nwhat is trap?", cell_id="later")
    emptied(shell, ["t"], ["trap", "Trap", "stand_in"])
    assert shown.stderr.strip(), shown.plain
    bill = shell.magics.session.spent[-1]
    assert bill.failed and bill.conversation == "later" and bill.usage.requests == 1 and bill.usage.cost_usd > 0


@pytest.mark.parametrize(("state", "chunks"), [("contents", 1), ("interactions", 3)])
def test_an_answer_cut_mid_stream_is_billed_at_the_estimate_and_says_so(shell, stub, state, chunks):
    """A request whose answer began and then broke off was billed, but Gemini never reported its usage:
    it counts at the kernel's estimate (its input as the budget counts it, the text shown as output)."""
    shell.run("%gemini reset --all", cell_id="reset")
    stub.inject("cut_stream", match="any", after_chunks=chunks)
    shown = shell.run(f"%%gemini_ask -c cut --new --state {state}\nwhy int?", cell_id="cut")
    assert messages.STREAM_CUT.shown() in shown.stderr, shown.stderr
    bill = shell.magics.session.spent[-1]
    assert bill.failed and bill.estimated and bill.usage.input_tokens > 0 and bill.usage.output_tokens > 0
    lines = cost_lines(shell)
    assert lines[0].endswith(failed_part(shell.magics.session.spent)) and "estimated" in lines[0]
