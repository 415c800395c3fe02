"""The agent's functions without a kernel: their declarations and checks, the turn's changes, the
step lines, and the drivers of the send stage's steps (turn/send.py)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import pytest
from helpers import aio
from helpers.footer import footer_line
from helpers.wire import api_requests, calling_off

from genai_magics import messages
from genai_magics.engine.agent import (
    AGENT_FUNCTIONS,
    Deleted,
    Edited,
    Inserted,
    TurnChanges,
    agent_declarations,
    bad_agent_call,
    edited,
    step_line,
)
from genai_magics.engine.cells import Cell
from genai_magics.engine.errors import UserError
from genai_magics.engine.outputs import SHOWED_NOTHING
from genai_magics.engine.tools import ACTS_ON, LEFT_OUT, ToolCall, ToolResult, error_result
from genai_magics.frontends.agent_actions import AgentActions, TurnView, cannot_run
from genai_magics.gemini import budget
from genai_magics.gemini.pricing import price_for
from genai_magics.turn.send import drive, drive_async


def test_declarations_have_the_issue_names_and_parameters():
    declared = {d["name"]: d["parameters"] for d in agent_declarations(AGENT_FUNCTIONS)}
    assert list(declared) == ["insert_cell", "edit_cell", "delete_cell", "run_cell"]
    assert list(declared["insert_cell"]["properties"]) == ["after", "source", "cell_type"]
    assert declared["insert_cell"]["required"] == ["after", "source"]
    assert list(declared["edit_cell"]["properties"]) == ["ref", "edits"]
    assert declared["delete_cell"]["required"] == ["ref"] == declared["run_cell"]["required"]
    assert all(ACTS_ON[name] in declared[name]["required"] for name in declared)  # what a call's label names
    assert agent_declarations(["run_cell", "list_variables"]) == [
        {"name": "run_cell", **{k: v for k, v in agent_declarations(AGENT_FUNCTIONS)[3].items() if k != "name"}}
    ]


@pytest.mark.parametrize(
    ("name", "args", "why"),
    [
        ("insert_cell", {"after": "top", "source": "x = 1"}, None),
        ("insert_cell", {"after": "top"}, "'source' is required"),
        ("insert_cell", {"after": "3", "source": "", "cell_type": "sql"}, "must be code, markdown or raw"),
        ("edit_cell", {"ref": "3", "edits": [{"find": "a", "replace": "b"}]}, None),
        ("edit_cell", {"ref": "3", "edits": []}, "non-empty list"),
        ("edit_cell", {"ref": "3", "edits": [{"find": "a"}]}, "non-empty list"),
        ("delete_cell", {"ref": 3}, "'ref' is required and must be a string"),
        ("run_cell", {"ref": "3", "force": True}, "unexpected argument(s) force"),
        ("run_cell", ["3"], "must be a JSON object"),
    ],
)
def test_a_bad_call_is_told_why(name, args, why):
    found = bad_agent_call(ToolCall(name, args))
    assert (found is None) if why is None else (why in (found or ""))


def test_edits_apply_strictly_or_write_nothing():
    assert edited("a = 1\nb = 2\n", {"edits": [{"find": "b = 2", "replace": "b = 3"}]}) == "a = 1\nb = 3\n"
    with pytest.raises(ValueError, match="edit 2 of 2: its find text was not found"):
        edited("a = 1\n", {"edits": [{"find": "a", "replace": "c"}, {"find": "zzz", "replace": ""}]})


def test_turn_changes_make_the_notebook_as_the_turn_left_it_once():
    cells = [Cell("a", "x = 1"), Cell("b", "y = 2"), Cell("m", "%%gemini_agent\nfix")]
    changes = TurnChanges()
    changes.add(Inserted("n1", "z = 3", "code", "a"))
    changes.add(Edited("b", "y = 2", "y = 20"))
    changes.add(Deleted({"id": "a", "cell_type": "code", "source": "x = 1"}, None))
    changes.add(Inserted("n0", "# top", "markdown", None))
    after = changes.applied(cells)
    assert [(c.id, c.source) for c in after] == [
        ("n0", "# top"),
        ("n1", "z = 3"),
        ("b", "y = 20"),
        ("m", cells[2].source),
    ]
    assert [c.id for c in changes.applied(after)] == [c.id for c in after]  # a newer snapshot holding them


def test_step_lines():
    insert = ToolResult(
        ToolCall("insert_cell", {"after": "3", "source": "a\nb\n"}), {"id": "c-9f2", "after": "In[3]"}, "whole"
    )
    # an older record's insert has no label: its id names it
    assert step_line(insert) == messages.AGENT_INSERTED.render(label="c-9f2", after="In[3]", lines="2 lines")
    uri = "vscode-notebook-cell:/home/me/work/analysis.ipynb#W5sZmlsZQ%3D%3D"
    in_vscode = ToolResult(insert.call, {"id": uri, "label": "cell #5", "after": "In[3]"}, "whole")
    assert step_line(in_vscode) == "✎ inserted cell #5 after In[3] (2 lines)"
    one = ToolResult(ToolCall("insert_cell", {"after": "3", "source": "a\n"}), {"id": "x", "label": "cell #4"}, "whole")
    assert step_line(one).endswith("(1 line)")
    edit = ToolResult(ToolCall("edit_cell", {"ref": "4", "edits": [{}, {}]}), {"label": "In[4]"}, "whole")
    assert step_line(edit) == "✎ edited In[4] (2 edits)"
    assert (
        step_line(replace(edit, call=ToolCall("edit_cell", {"ref": "4", "edits": [{}]}))) == "✎ edited In[4] (1 edit)"
    )
    assert (
        step_line(ToolResult(ToolCall("delete_cell", {"ref": "5"}), {"label": "In[5]"}, "whole")) == "✗ deleted In[5]"
    )
    own = ToolResult(ToolCall("delete_cell", {"ref": "x"}), {"label": "cell #4", "inserted_this_turn": True}, "whole")
    assert step_line(own) == "↶ removed cell #4, which this turn inserted"  # no ✗ of a user's cell deleted
    # a run's line: the start of what it printed, and the error it raised
    call = ToolCall("run_cell", {"ref": "7"})
    ran = ToolResult(call, {"ran": "In[7]", "label": "In[7]", "text": "\n  total: 4\nmore"}, "whole")
    assert step_line(ran) == f'▶ ran In[7]: "total: 4" ({ran.chars:,} chars)'
    named = ToolResult(call, {"ran": "In[8]", "label": "cell #3", "text": SHOWED_NOTHING}, "whole")
    assert step_line(named) == f"▶ ran cell #3 as In[8]: printed nothing ({named.chars:,} chars)"
    error = "ZeroDivisionError raised in In[9]\n  line 2, in f\nZeroDivisionError: division by zero"
    failed = ToolResult(call, {"ran": "In[9]", "label": "In[9]", "text": "before", "error": error}, "whole")
    assert step_line(failed) == (
        f'▶ ran In[9]: "before" ({failed.chars:,} chars); raised ZeroDivisionError: division by zero'
    )
    long = ToolResult(call, {"ran": "In[7]", "label": "In[7]", "text": "x" * 500}, "whole")
    assert len(step_line(long)) < 120
    failed = error_result(ToolCall("delete_cell", {"ref": "9"}), "no cell 9")
    assert step_line(failed) == messages.TOOL_FAILED.render(call="delete_cell(9)", error="no cell 9")


# -- the drivers ---------------------------------------------------------------------------------
def _steps(log: list):
    """Steps yielding two agent calls and returning what they were sent; an exception thrown in is logged."""
    try:
        first = yield ToolCall("insert_cell", {"after": "top", "source": "x"})
        second = yield ToolCall("run_cell", {"ref": "1"})
    except BaseException as exc:
        log.append(type(exc).__name__)
        raise
    return [first.response, second.response]


def _ok(call: ToolCall) -> ToolResult:
    return ToolResult(call, {"done": call.name}, "whole")


def test_drive_answers_each_call_in_order():
    assert drive(_steps([]), _ok) == [{"done": "insert_cell"}, {"done": "run_cell"}]


def test_drive_without_an_answer_gives_error_results():
    out = drive(_steps([]))
    assert out[0] == {"error": "insert_cell cannot be answered here"}


def test_drive_throws_a_failed_answer_into_the_steps():
    log: list = []

    def stop(call: ToolCall) -> ToolResult:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        drive(_steps(log), stop)
    assert log == ["KeyboardInterrupt"]


def test_drive_async_awaits_the_answers():
    async def later(call: ToolCall) -> ToolResult:
        await asyncio.sleep(0)
        return _ok(call)

    answers = iter([later, _ok])  # an awaitable answer, then a plain one
    out = aio.run(drive_async(_steps([]), lambda call: next(answers)(call)))
    assert out == [{"done": "insert_cell"}, {"done": "run_cell"}]


def test_a_cancel_at_an_await_is_thrown_in_as_the_interrupt():
    log: list = []

    async def cancelled(call: ToolCall) -> ToolResult:
        raise asyncio.CancelledError

    with pytest.raises(KeyboardInterrupt):
        aio.run(drive_async(_steps(log), cancelled))
    assert log == ["KeyboardInterrupt"]


# -- the magic's help and settings (an in-process shell) ---------------------------------------------
def test_agent_help_names_its_flags_and_settings(magic_shell):
    shown = magic_shell.help("%%gemini_agent")
    for flag in ("--conversation", "--model", "--state", "--dry-run", "--vars", "--error", "--outputs", "--approve"):
        assert flag in shown
    assert "  --notebook " not in shown and "insert_cell" in shown and "--approve WHAT" in shown
    assert "the words after the flags" in magic_shell.help("%gemini_agent")
    settings = magic_shell.run("%config GeminiMagics").stdout
    assert "agent_approve" in settings and "max_agent_steps" in settings
    refused = magic_shell.run("%%gemini_agent --approve sometimes\ndo it")
    assert "argument --approve: invalid choice" in refused.stderr


def test_an_agent_dry_run_shows_the_four_declarations_and_sends_nothing(magic_shell, stub):
    magic_shell.run("x = 1")
    shown = magic_shell.run("%%gemini_agent --dry-run\nadd a test").plain
    for name in AGENT_FUNCTIONS:
        assert f'"name": "{name}"' in shown
    assert "insert_cell, edit_cell, delete_cell and run_cell" in shown  # the system instruction says so
    assert api_requests(stub) == []


# -- AgentActions over a notebook that answers at once ------------------------------------------------
class _Notebook:
    """A live notebook whose edits succeed at once (what the bridge's reply would say), over Cell objects."""

    def __init__(self, cells: list[Cell]):
        self.held = list(cells)
        self.description = "test notebook"

    def cells(self) -> list[Cell]:
        return list(self.held)

    def cell_above(self, cell_id: str) -> Cell | None:
        return None

    def insert_cell(self, after_id, source, cell_type, done, cell=None) -> str:
        done(None)
        return "new1"

    def set_source(self, cell_id, source, done) -> None:
        done(None)

    def delete_cell(self, cell_id, done, on_removed=None) -> None:
        if on_removed is not None:
            on_removed({"id": cell_id, "cell_type": "code", "source": "x", "outputs": [{"output_type": "stream"}]})
        done(None)


def _actions(run=None, waits=False) -> AgentActions:
    notebook = _Notebook([Cell("a", "x = 1"), Cell("q", "%%gemini_ask\nwhy?"), Cell("m", "%%gemini_agent\ngo")])
    view = TurnView(notebook)

    def find(ref: str, name: str) -> Cell:
        found = [c for c in view.cells() if c.id.startswith(ref)]
        if len(found) != 1:
            raise UserError(messages.NO_SUCH_CELL, flag=name, ref=ref)
        return found[0]

    return AgentActions(
        notebook,
        view,
        "m",
        find,
        lambda c: f"cell {c.id}",
        run or cannot_run,
        lambda _line: None,
        waits,  # type: ignore[arg-type]
    )


def test_a_run_that_must_wait_where_the_cell_cannot_is_an_error_result_never_a_hang():
    async def approved(cell: Cell, label: str) -> ToolResult:
        raise AssertionError("never awaited here")

    result = _actions(approved).answer(ToolCall("run_cell", {"ref": "a"}))
    assert isinstance(result, ToolResult)
    assert result.response == {"error": messages.AGENT_CANNOT_WAIT.render()}


def test_the_turn_sees_its_changes_and_keeps_them_for_undo():
    actions = _actions()
    inserted = actions.answer(ToolCall("insert_cell", {"after": "a", "source": "y = 2"}))
    assert isinstance(inserted, ToolResult) and inserted.response["id"] == "new1"
    actions.answer(ToolCall("edit_cell", {"ref": "new1", "edits": [{"find": "2", "replace": "3"}]}))
    user_deleted = actions.answer(ToolCall("delete_cell", {"ref": "a"}))
    assert [(c.id, c.source) for c in actions.view.cells()] == [
        ("new1", "y = 3"),
        ("q", "%%gemini_ask\nwhy?"),
        ("m", "%%gemini_agent\ngo"),
    ]
    first, edit, deleted = actions.changes.items
    assert first == Inserted("new1", "y = 2", "code", "a") and edit == Edited("new1", "y = 2", "y = 3")
    assert isinstance(deleted, Deleted) and deleted.cell["outputs"] and deleted.after_id is None
    # the code cell above the agent's, as the bridge finds it: the inserted one, never the magic between
    assert actions.view.cell_above("m") == Cell("new1", "y = 3") and actions.view.cell_above("new1") is None
    # the turn's own insert deleted again: removed, no cell of the user's deleted; one name throughout
    removed = actions.answer(ToolCall("delete_cell", {"ref": "new1"}))
    assert isinstance(removed, ToolResult)
    assert removed.response == {"label": inserted.response["label"], "inserted_this_turn": True}
    assert isinstance(user_deleted, ToolResult) and user_deleted.response == {"label": "cell a"}


def test_a_change_that_would_write_a_magic_cell_is_refused():
    result = _actions().answer(ToolCall("insert_cell", {"after": "top", "source": "%%gemini_agent\nagain"}))
    assert isinstance(result, ToolResult) and result.status == "error"
    assert messages.AGENT_MAGIC_CELL.matches(result.response["error"], prefixed=False, name="insert_cell")


def test_a_write_waits_for_its_approval_where_agent_approve_asks_for_it():
    asked: list[tuple[str, str, tuple[str, ...]]] = []

    def declined(description: str, shown: str, risks: tuple[str, ...]) -> bool:
        asked.append((description, shown, risks))
        return False

    actions = _actions()
    actions.approve_write = declined
    result = actions.answer(ToolCall("insert_cell", {"after": "a", "source": "y = 2\n"}))
    assert isinstance(result, ToolResult)
    assert result.response == {"error": messages.AGENT_WRITE_DECLINED.render(name="insert_cell")}
    assert asked == [("insert a code cell after cell a (1 line)", "y = 2\n", ())] and not actions.changes

    async def approved(description: str, shown: str, risks: tuple[str, ...]) -> bool:
        await asyncio.sleep(0)
        return True

    waiting = _actions(waits=True)
    waiting.approve_write = approved
    pending = waiting.answer(ToolCall("delete_cell", {"ref": "a"}))
    assert not isinstance(pending, ToolResult) and not waiting.changes  # nothing before the click
    done = aio.run(_awaited(pending))
    assert done.response == {"label": "cell a"} and [c.id for c in waiting.view.cells()] == ["q", "m"]

    cannot = _actions()  # a cell that cannot wait: never a hang
    cannot.approve_write = approved
    refused = cannot.answer(ToolCall("delete_cell", {"ref": "a"}))
    assert isinstance(refused, ToolResult) and refused.response == {"error": messages.AGENT_CANNOT_WAIT.render()}


async def _awaited(value):
    return await value


def test_at_the_turn_cap_the_agent_is_asked_to_answer_without_functions(magic_shell, stub):
    """Issue 34.6: max_turn_cost is checked before every request of the agent's loop, with what the earlier
    ones cost; a request whose calls could not be answered under the cap goes with calling off, the model
    answers, the cell names the cap, and the turn stays under it (before: the turn stopped, BUDGET_STOPPED)."""
    magic_shell.run("%gemini reset --all", cell_id="reset")
    magic_shell.run("x = 1", cell_id="c1")
    shown = magic_shell.run("%%gemini_agent --dry-run\nadd a cell", cell_id="d")
    (bundle,) = [b for b in shown.bundles if "dry run" in b.get("text/plain", "")]
    body = json.loads(bundle["text/plain"].split("\n", 1)[1])
    first = budget.estimate(price_for(magic_shell.magics.model), body, [], "")
    cap = magic_shell.magics.max_turn_cost = first * 2.05  # the first request and its answer fit, not a third
    try:
        inserts = [[{"name": "insert_cell", "args": {"after": "c1", "source": f"y{i} = 2"}}] for i in range(6)]
        stub.script_tools(inserts)
        answered = magic_shell.run("%%gemini_agent\nadd a cell", cell_id="m")
    finally:
        magic_shell.magics.max_turn_cost = None
    requests = api_requests(stub)
    assert len(requests) >= 2 and [calling_off(r) for r in requests] == [False] * (len(requests) - 1) + [True]
    assert answered.stderr == "" and "Stub answer to: add a cell" in answered.plain
    assert messages.BUDGET_ANSWER_NOW.within(answered.plain, name="max_turn_cost", cap=budget.exact(cap))
    assert messages.AGENT_INSERTED.within(answered.plain)  # the steps before the cap are shown
    (turn,) = magic_shell.magics.session.conversations["default"].history  # recorded, under the cap
    assert turn.usage.cost_usd is not None and turn.usage.cost_usd <= cap
    assert f"~${turn.usage.cost_usd:.2g}" in footer_line(answered.plain)


def test_the_one_line_agent_continues_the_conversation_of_an_ask(magic_shell, stub):
    magic_shell.run("%gemini reset --all", cell_id="reset")
    magic_shell.run("x = 1", cell_id="c1")
    magic_shell.run("%%gemini_ask\nwhat is x?", cell_id="a1")
    stub.script_tools([[{"name": "insert_cell", "args": {"after": "c1", "source": "print(x)"}}]])
    shown = magic_shell.run("%gemini_agent print x in a new cell?", cell_id="m")
    assert shown.stderr == ""
    assert messages.AGENT_PROPOSAL.within(shown.plain, count=1)  # no live notebook in this shell
    assert len(magic_shell.magics.session.conversations["default"].history) == 2


@pytest.mark.parametrize("state", ["contents", "interactions"])
def test_past_the_input_limit_mid_loop_the_results_are_left_out_and_the_model_answers(magic_shell, stub, state):
    """Issue 34.6 at the model's input limit: the request carrying a result too large for it is refused; the
    earlier turns compacted cannot make it fit, so it goes once more with that result left out (the call
    that fetches it named) and calling off; the model answers, the cell names the limit, the insert made
    before stays, and the turn is recorded. Interactions mode goes on on its chain: a new chain would ask
    the model again for what it did already (before: the turn failed in one line)."""
    magic_shell.run("%gemini reset --all", cell_id="reset")
    magic_shell.magics.max_output_chars = 40_000
    try:
        magic_shell.run(f"%%gemini_ask --state {state}\nhi", cell_id="a1")
        magic_shell.run("print('x' * 30_000)", cell_id="c2")  # what it showed goes only if asked for
        magic_shell.run("x = 1", cell_id="c1")
        stub.limit_input(4_000)  # the first request fits; the one carrying c2's output does not
        insert = {"name": "insert_cell", "args": {"after": "c1", "source": "y = 2"}}
        stub.script_tools([[insert, {"name": "cell_outputs", "args": {"ref": "c2"}}], []])
        answered = magic_shell.run("%%gemini_agent\nadd a cell", cell_id="m")
    finally:
        stub.limit_input(None)
        magic_shell.magics.session.limits.learned.clear()  # the session outlives the test: the limit must not
        magic_shell.magics.max_output_chars = magic_shell.magics.trait_defaults("max_output_chars")
    assert answered.stderr == "" and "Stub answer to: add a cell" in answered.plain
    assert messages.LIMIT_ANSWER_NOW.within(answered.plain, limit=4_000)
    assert not messages.CHAIN_OVER_LIMIT.within(answered.plain)
    assert messages.AGENT_INSERTED.within(answered.plain)  # the step it made is shown
    last = api_requests(stub)[-1]
    assert calling_off(last)
    inserted, outputs = last["tool_results"]
    assert "error" not in inserted["response"]  # a write's short result goes as it was
    assert outputs["response"] == {"error": LEFT_OUT, "fetch again": "cell_outputs(c2)"}
    assert "x" * 1_000 not in json.dumps(last["json"])
    if state == "interactions":
        assert last["json"].get("previous_interaction_id")  # the same chain
    history = magic_shell.magics.session.conversations["default"].history
    assert [t.magic for t in history] == ["ask", "agent"]  # recorded, its results whole in the record
    assert any("x" * 1_000 in json.dumps(r.response) for rnd in history[1].tool_rounds for r in rnd.results)


def test_a_runs_result_fades_to_reading_what_the_cell_showed_never_to_running_it_again():
    from genai_magics.engine.outputs import OUTPUTS_FIELD, OutputPiece
    from genai_magics.engine.tools import faded_result, whole_response

    piece = OutputPiece(OUTPUTS_FIELD, "ValueError: bad", "c7", label="In[7]")
    ran = ToolResult(ToolCall("run_cell", {"ref": "7"}), whole_response([piece]), "whole", (piece,))
    assert faded_result(ran).response["fetch again"] == "cell_outputs(7)"


@pytest.mark.parametrize(
    ("code", "awaited"),
    [
        ("get_ipython().run_cell_magic('gemini_agent', '', 'fix it\\n')", True),
        ("get_ipython().run_line_magic('gemini_agent', 'fix it')", True),
        ("get_ipython().run_cell_magic('gemini_edit', '', 'fix it\\n')", True),
        ("get_ipython().run_cell_magic('gemini_ask', '', 'why\\n')", False),
        ("x = 1\nget_ipython().run_line_magic('gemini_agent', 'fix it')", False),
    ],
)
def test_a_lone_agent_or_edit_magic_call_is_the_one_awaited(code, awaited):
    from genai_magics.frontends.waiting import sole_awaited_call

    assert (sole_awaited_call(code) is not None) == awaited


def test_gemini_history_and_tokens_name_an_agent_turn_agent_also_read_back_from_the_record(magic_shell, stub):
    """Issue 34: %gemini history listed an agent turn as ``ask`` (its mode: it answers), while its footer said
    ``agent``; the turn now keeps which magic asked it, and the record keeps it for the next kernel."""
    from genai_magics.engine.record import NotebookRecord, dumps
    from genai_magics.engine.replay import RecordedConversation
    from genai_magics.persistence.schema import loads

    magic_shell.run("%gemini reset --all", cell_id="reset")
    magic_shell.run("x = 1", cell_id="c1")
    magic_shell.run("%%gemini_ask\nwhat is x?", cell_id="a1")
    stub.script_tools([[{"name": "insert_cell", "args": {"after": "c1", "source": "print(x)"}}]])
    shown = magic_shell.run("%%gemini_agent\nprint x in a new cell", cell_id="m")
    assert messages.FOOTER_TURN.within(shown.plain, turn=2, mode="agent")
    history = magic_shell.run("%gemini history", cell_id="h").stdout.splitlines()
    assert [line.split()[:2] for line in history[1::2]] == [["1", "ask"], ["2", "agent"]]
    tokens = magic_shell.run("%gemini tokens", cell_id="t").stdout.splitlines()
    assert [row.split()[:2] for row in tokens[2:4]] == [["1", "ask"], ["2", "agent"]]
    conv = magic_shell.magics.session.conversations["default"]
    record = NotebookRecord("/nb.ipynb", 1.0, conversations={"default": RecordedConversation(conv, created=1.0)})
    text = dumps(record)
    assert text.count('"agent":true') == 1  # written for the agent turn only: an ask's turn is as it was
    back = loads(text).conversations["default"].conversation.history
    assert [t.magic for t in back] == ["ask", "agent"]


def test_an_agent_calls_line_names_its_cell_wherever_it_is_refused_and_a_write_is_read_never_made_again(
    magic_shell, stub
):
    """A bad call caught by the send stage showed as ``edit_cell()``, one the agent's actions refused as
    ``edit_cell(c1)``; and the call that fetches a faded agent result again named the write itself."""
    from genai_magics.engine.tools import fetch_again

    magic_shell.run("%gemini reset --all", cell_id="reset")
    magic_shell.run("x = 1", cell_id="c1")
    bad = {"name": "edit_cell", "args": {"ref": "c1", "edits": []}}  # its shape: caught by the send stage
    missing = {"name": "edit_cell", "args": {"ref": "c1", "edits": [{"find": "zzz", "replace": "y"}]}}
    insert = {"name": "insert_cell", "args": {"after": "c1", "source": "y = 2"}}
    stub.script_tools([[bad, missing, insert]])
    shown = magic_shell.run("%%gemini_agent\nadd a cell", cell_id="m")
    failed = [line for line in shown.plain.splitlines() if messages.TOOL_FAILED.matches(line, prefixed=False)]
    assert [messages.TOOL_FAILED.parse(line)["call"] for line in failed] == ["edit_cell(c1)", "edit_cell(c1)"]
    (turn,) = magic_shell.magics.session.conversations["default"].history
    (round_,) = turn.tool_rounds
    assert round_.results[2].call.label == "insert_cell(after=c1)"
    new_id = round_.results[2].response["id"]
    assert [fetch_again(r) for r in round_.results] == ["read_cell(c1)", "read_cell(c1)", f"read_cell({new_id})"]
