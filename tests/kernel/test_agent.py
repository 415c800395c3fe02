"""%%gemini_agent in real kernels: the model inserts, edits and deletes cells through the live bridge
(a fake JupyterLab speaking its protocol), is refused its own cell and magic cells, makes one
--notebook proposal where there is no live notebook, stops at max_agent_steps, and replays after a
restart with zero requests and no change made again.

Real kernels (jupyter_client), the real SDK over real HTTP to the stand-in, which plays the agent
(``script_tools``: a later call names the inserted cell by ``{{id}}``).
"""

from __future__ import annotations

import html
import threading
import time

import pytest
from helpers.fake_frontend import FakeFrontend
from helpers.kernel import FAKE_KEY
from helpers.wire import api_requests, current_payload

from genai_magics import messages

pytestmark = pytest.mark.kernel

CELL_A = "def parse(s):\n    return int(s)"
TEST = "assert parse('3') == 3\n"


def call(function: str, **args) -> dict:
    return {"name": function, "args": args}


def results(stub) -> list[dict]:
    """Every function result the kernel sent back, in order."""
    return [r for req in api_requests(stub) for r in req["tool_results"]]


@pytest.fixture
def lab(stub, tmp_path):
    stub.reset()
    cells = [
        ("setup", "%load_ext genai_magics"),
        ("a", CELL_A),
        ("b", "scratch = 1"),
        ("q", "%%gemini_ask\nWhy?"),
        ("m", "%%gemini_agent\nAdd a test of parse, make it check 4, and drop the scratch cell."),
    ]
    env = {"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": FAKE_KEY, "JUPYTER_DATA_DIR": str(tmp_path / "d")}
    env["JPY_SESSION_NAME"] = str(tmp_path / "work.ipynb")  # a notebook: the kernel keeps a record
    with FakeFrontend(cells=cells, env=env, cwd=str(tmp_path)) as ff:
        ff.execute("setup")
        ff.execute("a")
        yield ff


@pytest.mark.parametrize("mode", ["contents", "interactions"])
def test_the_agent_inserts_edits_and_deletes_cells_live(lab, stub, mode):
    lab.execute_code(f"%config GeminiMagics.state = {mode!r}")
    stub.script_tools(
        [
            [call("insert_cell", after="a", source=TEST)],
            [call("edit_cell", ref="{{id}}", edits=[{"find": "parse('3') == 3", "replace": "parse('4') == 4"}])],
            [call("read_cell", ref="{{id}}"), call("delete_cell", ref="b")],
        ]
    )
    run = lab.execute("m")
    assert run.error is None, run.error
    ids = [c.id for c in lab.cells]
    assert ids[:2] == ["setup", "a"] and "b" not in ids and ids[-2:] == ["q", "m"]
    (new,) = [c for c in lab.cells if c.id not in ("setup", "a", "q", "m")]
    assert new.source == "assert parse('4') == 4\n"
    insert, edit, read, delete = results(stub)
    assert insert["response"]["id"] == new.id and insert["response"]["after"] == "In[2]"
    assert read["response"]["text"] == f"id={new.id}\nassert parse('4') == 4\n"  # the turn's view, at once
    assert "error" not in edit["response"] and "error" not in delete["response"]
    plain = run.plain
    # one name for the new cell in every line (its place when inserted), plurals right
    assert messages.AGENT_INSERTED.within(plain, label="cell #3", after="In[2]", lines="1 line")
    assert messages.AGENT_EDITED.within(plain, label="cell #3", count="1 edit")
    assert insert["response"]["label"] == edit["response"]["label"] == "cell #3"
    assert messages.AGENT_DELETED.within(plain, label="cell #4")
    assert f"turn 1 · agent · {mode}" in plain and "Function results read" in plain  # the answer, then the footer
    assert not messages.AGENT_APPROVE_NONE.within(plain)


def test_with_agent_approve_none_every_turn_says_that_nothing_waits(lab, stub):
    lab.execute_code("%config GeminiMagics.agent_approve = 'none'")
    for turn in (1, 2):
        stub.script_tools([[call("insert_cell", after="a", source=f"x = {turn}\n")]])
        run = lab.execute("m")
        assert run.error is None, run.error
        assert messages.AGENT_APPROVE_NONE.within(run.plain), (turn, run.plain)


def test_the_awaited_agent_cell_waits_for_each_reply_and_reads_a_refusal(lab, stub):
    """The lone agent cell is awaited: a change the frontend refuses is an error result, not a success."""
    lab.refuse_requests = "the notebook is read-only"
    stub.script_tools([[call("insert_cell", after="a", source=TEST)]])
    run = lab.execute("m")
    (result,) = results(stub)
    assert messages.AGENT_WRITE_FAILED.matches(result["response"]["error"], prefixed=False, name="insert_cell")
    assert "the notebook is read-only" in result["response"]["error"]
    assert [c.id for c in lab.cells] == ["setup", "a", "b", "q", "m"]
    assert messages.TOOL_FAILED.within(run.plain, call="insert_cell(after=a)")


def test_the_agents_own_cell_and_magic_cells_are_never_touched(lab, stub):
    stub.script_tools(
        [[call("delete_cell", ref="m"), call("edit_cell", ref="q", edits=[{"find": "Why", "replace": "How"}])]]
    )
    before = [(c.id, c.source) for c in lab.cells]
    run = lab.execute("m")
    assert [(c.id, c.source) for c in lab.cells] == before
    own, magic = (r["response"]["error"] for r in results(stub))
    assert messages.AGENT_OWN_CELL.matches(own, prefixed=False, name="delete_cell")
    assert messages.AGENT_MAGIC_CELL.matches(magic, prefixed=False, name="edit_cell")
    assert messages.TOOL_FAILED.within(run.plain, call="delete_cell(m)")


def test_a_find_not_found_writes_nothing(lab, stub):
    stub.script_tools(
        [
            [
                call(
                    "edit_cell",
                    ref="a",
                    edits=[{"find": "return int(s)", "replace": "return 0"}, {"find": "nowhere", "replace": ""}],
                )
            ]
        ]
    )
    lab.execute("m")
    assert lab.source("a") == CELL_A
    (result,) = results(stub)
    assert result["response"]["error"] == "edit_cell: nothing written: edit 2 of 2: its find text was not found"


def test_without_a_live_notebook_the_changes_are_one_proposal_and_nothing_runs(kernel, stub):
    kernel.run(CELL_A, cell_id="a")
    stub.script_tools([[call("insert_cell", after="a", source=TEST)], [call("run_cell", ref="{{id}}")]])
    run = kernel.run("%%gemini_agent\nAdd a test of parse and run it.", cell_id="m")
    assert run.stderr == ""
    insert, ran = results(stub)
    assert insert["response"]["id"].startswith("c-")
    assert ran["response"]["error"] == messages.AGENT_CANNOT_RUN.render()
    assert messages.AGENT_PROPOSAL.within(run.plain, count=1)
    assert kernel.buttons("Copy")  # the --notebook proposal's Copy
    assert any("+assert parse(" in html.unescape(v) for v in kernel.html_values())  # its diff shows the new cell


def test_max_agent_steps_then_the_model_answers(kernel, stub):
    kernel.run(CELL_A, cell_id="a")
    kernel.run("%config GeminiMagics.max_agent_steps = 2", cell_id="cfg")
    stub.script_tools([[call("insert_cell", after="a", source=f"x{i} = {i}")] for i in range(4)])
    run = kernel.run("%%gemini_agent\nAdd cells.", cell_id="m")
    assert messages.AGENT_STEPS_LIMIT.within(run.plain, count=2)
    requests = api_requests(stub)
    assert len(requests) == 3  # two rounds answered, then the answer without functions
    assert requests[-1]["json"]["toolConfig"]["functionCallingConfig"]["mode"] == "NONE"
    assert messages.AGENT_PROPOSAL.within(run.plain, count=2)


def test_an_agent_turn_replays_with_zero_requests_and_changes_nothing_again(lab, stub):
    stub.script_tools([[call("insert_cell", after="a", source=TEST)], [call("delete_cell", ref="b")]])
    live = lab.execute("m")
    assert live.error is None, live.error
    (new,) = [c for c in lab.cells if c.id not in ("setup", "a", "q", "m")]
    after_turn = [(c.id, c.source) for c in lab.cells]
    sent = len(api_requests(stub))
    # Restart & Run All: the notebook as the turn left it; the agent cell shows its steps and answer
    lab.restart()
    for cell_id in ("setup", "a", new.id):
        lab.execute(cell_id)
    replayed = lab.execute("m")
    assert len(api_requests(stub)) == sent, "a replay sent requests"
    assert [(c.id, c.source) for c in lab.cells] == after_turn  # nothing inserted or deleted again
    assert messages.AGENT_INSERTED.within(replayed.plain, label="cell #3") and messages.AGENT_DELETED.within(
        replayed.plain
    )
    assert messages.REPLAYED_FOOTER.within(replayed.plain, turn=1)
    # --rerun asks again, live
    lab.edit("m", lab.source("m").replace("%%gemini_agent", "%%gemini_agent --rerun"))
    stub.script_tools([[call("insert_cell", after="top", source="# notes")]])
    again = lab.execute("m")
    assert len(api_requests(stub)) == sent + 2 and "replayed" not in again.plain
    assert lab.cells[0].source == "# notes"


def test_an_agent_turn_that_deleted_the_cell_above_it_still_replays(lab, stub):
    """The turn deletes its own document (the code cell above the agent cell): after a restart Run All
    finds another cell above it, and the turn still replays, by its cell, with no request."""
    stub.script_tools([[call("delete_cell", ref="b")]])
    assert lab.execute("m").error is None
    assert "b" not in [c.id for c in lab.cells]
    sent = len(api_requests(stub))
    lab.restart()
    for cell_id in ("setup", "a"):
        lab.execute(cell_id)
    replayed = lab.execute("m")
    assert len(api_requests(stub)) == sent, "a replay sent requests"
    assert messages.AGENT_DELETED.within(replayed.plain) and messages.REPLAYED_FOOTER.within(replayed.plain, turn=1)


def test_the_kernels_interrupt_ends_an_agent_turn_waiting_at_an_await(lab, stub):
    """The interrupt while the awaited cell waits for the frontend's reply: the turn ends as any turn's
    interrupt does (one line, nothing recorded), at once."""
    lab.answer_requests = False  # the reply never comes: the cell waits at its await
    stub.script_tools([[call("insert_cell", after="a", source=TEST)]])

    def interrupt_once_asked() -> None:  # the insert request has come: the cell waits at its await now
        deadline = time.monotonic() + 60
        while not lab.requests_received and time.monotonic() < deadline:
            time.sleep(0.05)
        lab.km.interrupt_kernel()

    interrupter = threading.Thread(target=interrupt_once_asked, daemon=True)
    interrupter.start()
    run = lab.execute("m")
    interrupter.join()
    assert lab.requests_received[-1]["op"] == "insert_cell"
    assert messages.AGENT_STOPPED.shown() in run.stderr  # the insert was sent: it may stand, undoable
    assert len(api_requests(stub)) == 1  # the turn stopped at the call: no request after it
    status = lab.execute_code("%gemini status")
    assert "no conversation yet" in status.plain  # nothing committed


def test_an_agent_cell_that_is_not_awaited_still_writes_and_never_hangs(lab, stub):
    """Not the magic alone (a statement before it): the cell is not awaited; each change is sent to the
    frontend and the model told it is made, without waiting for the reply the busy kernel reads later."""
    lab.add_cell("n", "ready = True\n%gemini_agent add a test of parse", after="b")
    stub.script_tools([[call("insert_cell", after="a", source=TEST)]])
    started = time.monotonic()
    run = lab.execute("n")
    assert run.error is None, run.error
    assert time.monotonic() - started < 15
    (result,) = results(stub)
    assert "error" not in result["response"]
    assert [c.source for c in lab.cells if c.id == result["response"]["id"]] == [TEST]


def test_a_change_sent_without_waiting_that_did_not_land_is_said_and_the_model_reads_it(lab, stub):
    """Not the magic alone: the cell cannot wait for the frontend's replies. Once the notebook answers, each change is
    checked: one refused is a line in the agent cell, and the conversation's next request carries the error."""
    lab.add_cell("n", "ready = True\n%gemini_agent add a test of parse", after="b")
    lab.refuse_requests = "the notebook is read-only"
    stub.script_tools([[call("insert_cell", after="a", source=TEST)]])
    run = lab.execute("n")
    assert run.error is None, run.error
    assert [c.source for c in lab.cells].count(TEST) == 0
    line = messages.AGENT_NOT_LANDED.render(call="insert_cell(after=a)", error="the notebook is read-only")
    assert lab.pump_until(lambda: any(line in html.unescape(v) for v in lab.statuses()), timeout=15), lab.statuses()
    lab.refuse_requests = None
    lab.execute("q")  # the conversation's next request
    sent = current_payload(api_requests(stub)[-1])
    assert sent["agentChangesNotMade"] == line
    lab.execute("q")
    assert "agentChangesNotMade" not in current_payload(api_requests(stub)[-1])  # told once


def test_changes_sent_without_waiting_that_landed_are_said_to_have_landed(lab, stub):
    lab.add_cell("n", "ready = True\n%gemini_agent add a test of parse", after="b")
    stub.script_tools([[call("insert_cell", after="a", source=TEST)]])
    assert lab.execute("n").error is None
    done = messages.LANDED_ALL.render(count="1 change")
    assert lab.pump_until(lambda: any(done in html.unescape(v) for v in lab.statuses()), timeout=15), lab.statuses()
    lab.execute("q")
    assert "agentChangesNotMade" not in current_payload(api_requests(stub)[-1])
