"""The live bridge, kernel side, against a fake frontend that speaks its protocol.

The fake frontend (tests/helpers/fake_frontend.py) is a real jupyter_client talking to
a real ipykernel, pushing snapshots before execute requests the way the
labextension does and answering edit requests.
"""

from __future__ import annotations

import time

import pytest
from helpers.bridge import ATTACH, PROBE, kernel_json, make_comm_last_used_from_a_subshell, ordering_runs
from helpers.fake_frontend import FakeFrontend

from genai_magics import messages

pytestmark = pytest.mark.kernel  # every test here starts a kernel (directly or through nbclient)


def view(ff: FakeFrontend):
    return kernel_json(ff, "[[c.id, c.cell_type, c.source] for c in B.cells()]")


def notebook(ff: FakeFrontend):
    return [[c.id, c.cell_type, c.source] for c in ff.cells]


@pytest.fixture
def ff():
    frontend = FakeFrontend(
        cells=[
            ("a", "import math\nx = 1"),
            ("notes", "# Notes", "markdown"),
            ("b", "y = x + 1"),
            ("m1", "%%gemini_edit\nmake it faster"),
            ("m2", "%%gemini_ask\nwhy?"),
        ]
    )
    run = frontend.execute_code(ATTACH)
    assert run.error is None, run.error
    yield frontend
    frontend.close()


def test_first_snapshot_is_full_and_gives_layout(ff):
    assert ff.bridge_comm_id is not None
    assert ff.snapshots_sent[0]["full"] is True
    assert kernel_json(ff, "B.connected") is True
    assert view(ff) == notebook(ff)
    assert kernel_json(ff, "B.path()") == "fake.ipynb"
    assert kernel_json(ff, "B.description") == messages.FRONTEND_LIVE.render()
    # the code cell above, skipping markdown and other magic cells
    assert kernel_json(ff, "B.cell_above('m1').id") == "b"
    assert kernel_json(ff, "B.cell_above('m2').id") == "b"
    assert kernel_json(ff, "B.cell_above('b').id") == "a"
    assert kernel_json(ff, "B.cell_above('a')") is None
    assert kernel_json(ff, "B.cell_above('nope')") is None
    assert kernel_json(ff, "type(B.writer).__name__") == "LiveWriter"
    assert "Ctrl+Z" in kernel_json(ff, "B.writer.describe_apply()")


def test_attach_is_idempotent(ff):
    assert kernel_json(ff, "Bridge.attach(get_ipython(), existing=B) is B") is True
    opens = [
        m
        for m in ff.comm_messages
        if m["msg_type"] == "comm_open" and m["content"]["target_name"] == "genai_magics.bridge"
    ]
    assert len(opens) == 1


def test_unrun_hand_edit_is_seen_at_the_next_execute(ff):
    ff.edit("b", "y = x + 2  # edited by hand, never run")
    ff.add_cell("probe", "print(B.cell('b').source)")
    run = ff.execute("probe")
    assert run.stdout.strip() == "y = x + 2  # edited by hand, never run"
    snap = ff.snapshots_sent[-1]
    assert snap["full"] is False
    assert {c["id"] for c in snap["cells"]} == {"b", "probe"}  # only what changed


def test_deltas_add_remove_move(ff):
    ff.add_cell("c", "z = 3", after="b")
    ff.remove_cell("notes")
    ff.move_cell("a", 3)
    ff.add_cell("probe", "pass")
    ff.execute("probe")
    snap = ff.snapshots_sent[-1]
    assert snap["full"] is False
    assert snap["removed"] == ["notes"]
    assert "order" in snap
    assert view(ff) == notebook(ff)
    # unchanged order -> no order in the delta
    ff.execute("probe")
    assert "order" not in ff.snapshots_sent[-1]
    assert ff.snapshots_sent[-1]["cells"] == []


def test_set_source_round_trip(ff):
    run = ff.execute_code("res = []\nB.writer.write('b', 'y = x * 10', res.append)\nprint(res)")
    # the reply is another comm message: it cannot arrive while this cell runs
    assert run.stdout.strip() == "[]"
    assert ff.requests_received[-1]["op"] == "set_source"
    assert ff.source("b") == "y = x * 10"
    assert kernel_json(ff, "res") == [None]
    assert kernel_json(ff, "B.cell('b').source") == "y = x * 10"  # the view follows at once


def test_set_source_unknown_id_and_refusal(ff):
    ff.execute_code("res = []\nB.writer.write('gone', 'x', res.append)")
    errors = kernel_json(ff, "res")
    assert errors == ["the cell is no longer in the notebook"]
    ff.refuse_requests = "cell is read-only"
    ff.execute_code("res = []\nB.writer.write('b', 'x', res.append)")
    assert kernel_json(ff, "res") == ["cell is read-only"]
    assert ff.source("b") == "y = x + 1"


def test_insert_and_delete(ff):
    run = ff.execute_code(
        "res = []\n"
        "new_id = B.insert_cell('a', 'print(42)', 'code', res.append)\n"
        "top_id = B.insert_cell(None, '# Title', 'markdown', res.append)\n"
        "B.delete_cell('notes', res.append)\n"
        "B.delete_cell('nope', res.append)\n"
        "print(new_id, top_id)"
    )
    new_id, top_id = run.stdout.split()
    errors = kernel_json(ff, "res")
    assert errors[:3] == [None, None, None]
    assert errors[3] == "the cell is no longer in the notebook"
    assert [c.id for c in ff.cells] == [top_id, "a", new_id, "b", "m1", "m2"]
    assert ff.cell(new_id).source == "print(42)"
    assert ff.cell(top_id).cell_type == "markdown"
    assert view(ff) == notebook(ff)


RAN = [
    {"output_type": "stream", "name": "stdout", "text": "3\n"},
    {"output_type": "error", "ename": "ValueError", "evalue": "no", "traceback": ["ValueError: no"]},
]


def test_set_outputs_and_a_new_cell_named_at_once(ff):
    """set_outputs replaces a code cell's outputs and execution count; a cell just inserted is named in
    set_outputs, set_source and delete_cell by the id insert_cell returned, before any reply came."""
    run = ff.execute_code(
        f"res = []\nB.set_outputs('b', {RAN!r}, 7, res.append)\n"
        "new_id = B.insert_cell('b', 'print(1)', 'code', res.append)\n"
        f"B.set_outputs(new_id, {RAN[:1]!r}, 8, res.append)\n"
        "B.set_source(new_id, 'print(3)', res.append)\n"
        f"B.set_outputs('notes', {RAN!r}, 9, res.append)\n"
        "print(new_id)"
    )
    new_id = run.stdout.strip()
    assert kernel_json(ff, "res") == [None, None, None, None, "only a code cell has outputs"]
    assert (ff.cell("b").outputs, ff.cell("b").execution_count) == (RAN, 7)
    new = ff.cell(new_id)
    assert (new.source, new.outputs, new.execution_count) == ("print(3)", RAN[:1], 8)
    assert ff.cell("notes").outputs == []
    ff.execute_code(f"B.delete_cell({new_id!r}, res.append)")
    assert kernel_json(ff, "res")[-1] is None and new_id not in [c.id for c in ff.cells]


def test_request_without_reply_times_out():
    with FakeFrontend(cells=[("a", "x = 1")]) as ff:
        ff.execute_code(
            "from genai_magics.frontends.bridge import Bridge\nB = Bridge.attach(get_ipython(), timeout=0.5)"
        )
        ff.answer_requests = False
        t0 = time.monotonic()
        ff.execute_code("res = []\nB.writer.write('a', 'x = 2', res.append)")
        ff.pump(1.0)
        errors = kernel_json(ff, "res")
        assert errors == [messages.FRONTEND_NO_REPLY.render(timeout=0.5, op="set_source")]
        assert time.monotonic() - t0 < 5
        # a late reply is ignored, done is not called twice
        ff.comm_msg(ff.bridge_comm_id, {"type": "reply", "request_id": 1, "ok": True})
        assert kernel_json(ff, "res") == errors


def test_without_the_extension_nothing_breaks():
    # JupyterLab without the extension answers comm_close; nbclient ignores the comm
    for close in (True, False):
        with FakeFrontend(cells=[("a", "x = 1")], bridge=False, close_unknown_comms=close) as ff:
            run = ff.execute_code(ATTACH + "res = []\nB.writer.write('a', 'x', res.append)\nprint(B.connected, res)")
            assert run.error is None
            assert run.stdout.startswith("False ['no live notebook frontend is connected")
            assert kernel_json(ff, "B.cells()") == []
            assert kernel_json(ff, "B.is_fresh_for('a', 'x = 1')") is False


def test_notebook_closed_fails_pending_and_new_requests(ff):
    ff.answer_requests = False
    ff.execute_code("res = []\nB.writer.write('b', 'q', res.append)")
    ff._send_shell("comm_close", {"comm_id": ff.bridge_comm_id, "data": {"reason": "notebook closed"}})
    ff.pump(0.3)
    errors = kernel_json(ff, "res")
    assert errors == [messages.NOTEBOOK_CLOSED.render()]
    assert kernel_json(ff, "B.connected") is False
    ff.execute_code("res2 = []\nB.writer.write('b', 'q', res2.append)")
    assert messages.BRIDGE_NOT_CONNECTED.within(kernel_json(ff, "res2")[0])


def test_delta_gap_asks_for_a_full_snapshot(ff):
    pushed = len(ff.snapshots_sent)
    ff.comm_msg(
        ff.bridge_comm_id, {"type": "snapshot", "version": 1, "full": False, "seq": 999, "cells": [], "removed": []}
    )
    ff.pump(0.3)
    assert len(ff.snapshots_sent) == pushed + 1 and ff.snapshots_sent[-1]["full"] is True
    assert view(ff) == notebook(ff)


def test_late_snapshot_is_reported_as_stale(ff):
    ff.push_before_execute = False
    ff.add_cell("probe", PROBE)
    assert ff.execute("probe").stdout.strip() == "STALE"  # the view never had this cell
    ff.push_before_execute = True
    ff.edit("probe", PROBE + "# v2\n")
    assert ff.execute("probe").stdout.strip() == "FRESH"


def test_snapshot_before_every_execute_30_of_30(ff):
    """The extension's way: snapshots on the main shell, comm last used from a subshell."""
    make_comm_last_used_from_a_subshell(ff)
    assert ordering_runs(ff, 30) == 30


def test_snapshot_order_holds_even_when_the_frontend_sends_on_a_subshell():
    """A frontend that sends the bridge's comm messages on a subshell (JupyterLab's
    default for comms): the kernel side routes snapshots to the main shell."""
    with FakeFrontend(cells=[("a", "x = 1"), ("b", "y = 2")], comm_subshell=True) as ff:
        if not ff.supports_subshells:
            pytest.skip("this ipykernel has no subshells")
        ff.execute_code(ATTACH)
        assert kernel_json(ff, "B.connected") is True
        make_comm_last_used_from_a_subshell(ff)
        assert ordering_runs(ff, 30) == 30


def test_reply_reaches_a_subshell_request_while_the_main_shell_is_busy(ff):
    """Apply clicked (on a subshell) while a long cell runs: done is not held up by it."""
    if not ff.supports_subshells:
        pytest.skip("this ipykernel has no subshells")
    busy = ff.send_helper_code("import time; time.sleep(4)")
    sid = ff.create_subshell()
    t0 = time.monotonic()
    msg_id = ff.send_helper_code(
        "import time\nres_sub = []\nB.writer.write('b', 'y = 99', lambda e: res_sub.append((e, time.monotonic())))\n",
        subshell_id=sid,
    )
    ff._wait_idle(msg_id)
    ff._shell_reply(msg_id, None)
    # the fake answered the request while handling iopub; ask the subshell for the result
    check = ff.send_helper_code(
        "import time\nfor _ in range(100):\n    if res_sub: break\n    time.sleep(0.02)\n"
        "print(res_sub[0][0] if res_sub else 'NOTHING')",
        subshell_id=sid,
    )
    # keep handling iopub (the request arrives there) while the subshell waits
    messages = ff._wait_idle(check)
    out = "".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream")
    assert out.strip() == "None"
    assert time.monotonic() - t0 < 3.5, "the reply waited for the busy main shell"
    assert ff.source("b") == "y = 99"
    ff._wait_idle(busy)


def test_kernel_restart_reopens_the_comm_after_loading_again(ff):
    first_comm = ff.bridge_comm_id
    ff.restart()
    assert ff.bridge_comm_id is None
    ff.edit("a", "x = 'after restart'")
    run = ff.execute_code(_load_code())
    assert run.error is None, run.error
    assert ff.bridge_comm_id is not None and ff.bridge_comm_id != first_comm
    assert ff.snapshots_sent[-1]["full"] is True
    assert kernel_json(ff, "B.connected") is True
    assert kernel_json(ff, "B.cell('a').source") == "x = 'after restart'"


def _load_code() -> str:
    """``%load_ext genai_magics`` when it attaches the bridge, else attach by hand."""
    import inspect

    import genai_magics

    if "Bridge" in inspect.getsource(genai_magics):
        return (
            "%load_ext genai_magics\nfrom genai_magics.kernel.shell_state import state_of\n"
            "B = state_of(get_ipython()).bridge\n"
        )
    return ATTACH
