"""What the record knows was billed (issue 32.6): its ledger, read by ``%gemini cost`` after a restart.

Real kernels against the stand-in, killed and started again as Restart & Run All does; the record is the
private one of the notebook the kernel names.
"""

from __future__ import annotations

import pytest
from helpers.kernel import notebook_kernel, restart

from genai_magics import messages

pytestmark = pytest.mark.kernel

CODE = "def parse(s):\n    return int(s)\n"
BILLS = (
    "from genai_magics.kernel.shell_state import state_of\n"
    "print([(s.usage.cost_usd, s.failed, s.estimated) for s in state_of(get_ipython()).session.spent])"
)


def bills(k) -> list[tuple[float, bool, bool]]:
    """This kernel's bills: cost, failed, estimated."""
    return eval(k.run(BILLS).stdout)


def before_line(k) -> str:
    """%gemini cost's line of what earlier kernels were billed."""
    (line,) = [x for x in k.run("%gemini cost").stdout.splitlines() if messages.COST_BEFORE.parse(x)]
    return line


def expected_before(billed: list[tuple[float, bool, bool]]) -> str:
    failed, estimated = sum(f for _, f, _ in billed), sum(e for _, _, e in billed)
    return messages.COST_BEFORE.render(
        cost=f"${sum(c for c, _, _ in billed):.6f}",
        turns=len(billed),
        unpriced="",
        failed=messages.COST_FAILED.render(
            count=failed, estimated=messages.COST_ESTIMATED.render(count=estimated) if estimated else ""
        )
        if failed
        else "",
    )


def test_gemini_cost_after_a_restart_counts_branched_and_started_over_turns(stub, tmp_path):
    """Before: after an edited prompt branched Run All, 3 of 5 billed turns; after --new, 1 of them."""
    stub.reset()
    k = notebook_kernel(stub, tmp_path / "ledger.ipynb")
    try:
        k.run(CODE, cell_id="code")
        for cell, prompt in (("m1", "why int?"), ("m2", "and float?"), ("m3", "and bool?")):
            assert k.run(f"%%gemini_ask\n{prompt}", cell_id=cell).stderr == ""
        first = bills(k)
        restart(k)
        assert before_line(k) == expected_before(first)
        # Run All with m2's prompt edited: m1 replays, m2 and m3 go live (the record's m2 and m3 are dropped)
        k.run(CODE, cell_id="code")
        assert messages.REPLAYED_FOOTER.within(k.run("%%gemini_ask\nwhy int?", cell_id="m1").plain, turn=1)
        assert k.run("%%gemini_ask\nand float, really?", cell_id="m2").stderr == ""
        assert k.run("%%gemini_ask\nand bool?", cell_id="m3").stderr == ""
        second = bills(k)
        restart(k)
        assert before_line(k) == expected_before(first + second)  # 5 turns, though the record holds 3
        # the conversation started over: the record holds one turn of it, the ledger all
        assert k.run("%%gemini_ask --new\nstart over: why int?", cell_id="m5").stderr == ""
        third = bills(k)
        restart(k)
        assert before_line(k) == expected_before(first + second + third)
    finally:
        k.close()


def test_gemini_cost_after_a_restart_counts_a_failed_turn(stub, tmp_path):
    """A turn whose answer broke off mid-stream was billed (at the estimate): the ledger keeps it."""
    stub.reset()
    k = notebook_kernel(stub, tmp_path / "failed.ipynb")
    try:
        k.run(CODE, cell_id="code")
        assert k.run("%%gemini_ask\nwhy int?", cell_id="m1").stderr == ""
        stub.inject("cut_stream", match="any", after_chunks=1)
        assert messages.STREAM_CUT.shown() in k.run("%%gemini_ask\nand str?", cell_id="m2").stderr
        billed = bills(k)
        assert [(f, e) for _, f, e in billed] == [(False, False), (True, True)]
        restart(k)
        assert before_line(k) == expected_before(billed)
    finally:
        k.close()
