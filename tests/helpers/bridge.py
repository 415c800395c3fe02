"""Driving the live bridge through the fake frontend: shared by tests/kernel/test_bridge.py and
benchmarks/bridge_ordering.py."""

from __future__ import annotations

import json

from helpers.fake_frontend import FakeFrontend

ATTACH = "from genai_magics.frontends.bridge import Bridge\nB = Bridge.attach(get_ipython())\n"

# A cell that reports whether the bridge's view had this very cell's source
# when it started running (the snapshot pushed before it was handled first).
PROBE = (
    "_p = get_ipython().kernel.get_parent()\n"
    "print('FRESH' if B.is_fresh_for(_p['metadata']['cellId'], _p['content']['code']) else 'STALE')\n"
)


def kernel_json(ff: FakeFrontend, expr: str):
    run = ff.execute_code(f"import json as _j; print(_j.dumps({expr}))")
    assert run.error is None, run.error
    return json.loads(run.stdout.strip().splitlines()[-1])


def make_comm_last_used_from_a_subshell(ff: FakeFrontend) -> None:
    """ipykernel 7.4 routes a comm's incoming messages to the thread that last sent on it.

    A request sent from a subshell (as a widget click handled on JupyterLab's
    comm subshell does) makes that the subshell; without the bridge's routing
    the next snapshots would be handled there, racing the main shell.
    """
    if not ff.supports_subshells:
        return  # ipykernel 6: one shell thread, nothing to race
    sid = ff.create_subshell()
    msg_id = ff.send_helper_code(
        "res_sub = []\nB.writer.write('b', B.cell('b').source, res_sub.append)", subshell_id=sid
    )
    ff._wait_idle(msg_id)
    ff._shell_reply(msg_id, None)
    ff.pump(0.3)
    assert kernel_json(ff, "res_sub") == [None]


def ordering_runs(ff: FakeFrontend, n: int) -> int:
    # a notebook of some size, so a snapshot takes a moment to handle
    for i in range(150):
        ff.add_cell(f"filler{i}", f"v{i} = {i}\n" + "# padding\n" * 20)
    ff.add_cell("probe", PROBE)
    fresh = 0
    for i in range(n):
        ff.edit("probe", f"# hand edit {i}, never run before\n" + PROBE)
        ff.edit(f"filler{i}", f"v{i} = -{i}\n")
        run = ff.execute("probe")
        assert run.error is None, run.error
        fresh += run.stdout.strip() == "FRESH"
    return fresh
