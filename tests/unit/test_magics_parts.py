"""The pieces the magics delegate to, each alone and without a kernel: the frontend picked from
what the kernel knows (``frontends.frontend.for_run``), one frontend passed into a turn
(``Session.run``), a staged Apply written on the magic cell's next run
(``frontends.cell_writer.write_staged``), the proposal's controller and terminal display
(``ui.proposal_display``), the request the flags make (``magic_flags.turn_request``), the
conversations ``-c`` names (``line_commands.chosen``) and a failed turn's line
(``ui.display``). The live bridge is the real ``Bridge``, fed the snapshot message the
frontend extension sends, with no comm."""

from __future__ import annotations

import pytest
from helpers.display import RecordingDisplay

from genai_magics import messages
from genai_magics.engine.conversation import Conversation, Turn
from genai_magics.engine.errors import UserError
from genai_magics.frontends.bridge import Bridge
from genai_magics.frontends.cell_writer import KernelStateWriter, StagedApply, write_staged
from genai_magics.frontends.companion import Companion
from genai_magics.frontends.frontend import Frontend, KernelSide, Kind, for_run
from genai_magics.frontends.notebook_edit import NotebookWriter
from genai_magics.frontends.notebook_view import ExecutedCells, MergedView
from genai_magics.kernel.line_commands import chosen
from genai_magics.kernel.magic_flags import turn_request
from genai_magics.kernel.magics import GeminiMagics
from genai_magics.sources.explicit import ExplicitContext
from genai_magics.turn import pipeline
from genai_magics.turn.requests import Settings, TurnRequest
from genai_magics.turn.session import Session
from genai_magics.ui.display import NotebookDisplay
from genai_magics.ui.proposal_display import Place, Proposed, controller_for, show_proposal

MAGIC = "%%gemini_edit\nadd a docstring"
CODE = "def area(r):\n    return 3.14159 * r * r\n"
SETTINGS = Settings(model="gemini-test-model", state="contents")


def live_bridge(cells: list[tuple[str, str]]) -> Bridge:
    """A real Bridge holding the full snapshot a notebook sends (no comm: nothing is sent back)."""
    bridge = Bridge()
    snapshot = {"type": "snapshot", "full": True, "seq": 1, "path": "nb.ipynb"}
    snapshot["cells"] = [{"id": i, "cell_type": "code", "source": s} for i, s in cells]
    bridge._on_msg({"content": {"data": snapshot}})
    return bridge


def side(executed: ExecutedCells, tmp_path, bridge: Bridge | None = None, terminal: bool = False) -> KernelSide:
    return KernelSide(
        terminal=terminal,
        bridge=bridge,
        companion=Companion(directory=tmp_path),  # no companion has this notebook open
        executed=executed,
        notebook_path=None,
        staged={},
        set_next_input=lambda _text: None,
        apply_wait=5.0,
    )


def running_magic(*before: tuple[str, str, int]) -> ExecutedCells:
    executed = ExecutedCells()
    for cell_id, source, count in before:
        executed.add(cell_id, source, count)
    executed.add("m1", MAGIC, 9)
    return executed


# -- the frontend of a run -------------------------------------------------------------------------
def test_a_fresh_live_bridge_is_the_view_and_knows_the_cell_above(tmp_path):
    executed = running_magic(("c0", "x = 1", 1))
    bridge = live_bridge([("c0", "x = 1"), ("c1", CODE), ("m1", MAGIC)])
    frontend = for_run(side(executed, tmp_path, bridge))
    assert frontend.kind is Kind.LIVE and frontend.view is bridge and not frontend.stale
    assert frontend.default_target().id == "c1"  # never run, but directly above the magic
    assert frontend.current_source("c1") == CODE
    assert frontend.current_source("gone") is None  # the live notebook does not have it: gone


def test_a_late_snapshot_is_stale_and_the_kernels_record_stands_in(tmp_path):
    executed = running_magic(("c0", "x = 1", 1))
    bridge = live_bridge([("c0", "x = 1"), ("m1", "%%gemini_edit\nan older instruction")])
    frontend = for_run(side(executed, tmp_path, bridge))
    assert frontend.kind is Kind.LIVE and frontend.stale
    assert isinstance(frontend.view, MergedView) and frontend.cell_above is None
    assert frontend.default_target().id == "c0"  # the newest run code cell
    executed.add("ran-once", "y = 2", 3)
    assert frontend.current_source("ran-once") == "y = 2"  # not live: the executed cells know it


def test_without_a_connected_bridge_or_companion_apply_is_for_the_conversation(tmp_path):
    executed = running_magic(("c0", "x = 1", 1))
    frontend = for_run(side(executed, tmp_path, Bridge()))  # attached, never answered
    assert frontend.kind is Kind.COPY and not frontend.stale
    assert isinstance(frontend.writer("fix"), KernelStateWriter)


def test_at_a_terminal_the_proposal_goes_to_the_next_prompt(tmp_path):
    frontend = for_run(side(running_magic(("c0", "x = 1", 1)), tmp_path, terminal=True))
    assert frontend.kind is Kind.TERMINAL and "pre-filled" in frontend.writer("fix").describe_apply()


# -- one frontend per turn, passed in ---------------------------------------------------------------
def test_the_turn_reads_the_notebook_through_the_frontend_it_is_given(tmp_path):
    session = Session()
    session.executed.add("m1", MAGIC, 1)
    req = TurnRequest(mode="edit", prompt="add a docstring", dry_run=True)
    bridge = live_bridge([("c1", CODE), ("m1", MAGIC)])
    frontend = for_run(side(session.executed, tmp_path, bridge))
    resolved = pipeline.resolve(session, req, SETTINGS, RecordingDisplay(), frontend)
    assert resolved.target is not None and resolved.target.id == "c1" and resolved.doc.source == CODE
    # no frontend: the executed cells alone, where no code cell has run
    with pytest.raises(UserError) as failure:
        pipeline.resolve(session, req, SETTINGS, RecordingDisplay())
    assert failure.value.message is messages.NOTHING_TO_EDIT


# -- a staged Apply ------------------------------------------------------------------------------
def staged_record() -> tuple[ExecutedCells, dict[str, StagedApply], list]:
    executed = running_magic()
    done: list = []
    return executed, {"m1": StagedApply("# add a docstring\nx = 2", MAGIC, lambda e: done.append(e) or True)}, done


def test_a_staged_apply_is_written_when_its_cell_runs_again_as_it_was():
    executed, staged, done = staged_record()
    prefilled: list[str] = []
    assert write_staged(staged, executed, prefilled.append) is True
    assert prefilled == ["# add a docstring\nx = 2"] and executed.by_id["m1"].source == "# add a docstring\nx = 2"
    assert done == [None] and staged == {}


def test_a_staged_apply_for_an_edited_cell_is_not_written_and_says_why():
    executed, staged, done = staged_record()
    executed.add("m1", "%%gemini_edit\nsomething else", 10)
    prefilled: list[str] = []
    assert write_staged(staged, executed, prefilled.append) is False
    assert done == [messages.EDITED_BEFORE_RERUN.render()] and prefilled == [] and staged == {}


def test_a_staged_apply_the_controller_refuses_is_not_written():
    executed = running_magic()
    staged = {"m1": StagedApply("x = 2", MAGIC, lambda _e: False)}  # discarded since the click
    prefilled: list[str] = []
    assert write_staged(staged, executed, prefilled.append) is False and prefilled == []
    assert executed.by_id["m1"].source == MAGIC


def test_no_staged_apply_for_the_running_cell_is_an_ordinary_turn():
    executed, staged, done = staged_record()
    executed.add("m2", MAGIC, 10)
    assert write_staged(staged, executed, lambda _t: None) is False and "m1" in staged and done == []


# -- the proposal shown ---------------------------------------------------------------------------
def proposed(target_id: str | None, replayed: bool = False) -> Proposed:
    turn = Turn(1, "edit", "add a docstring", "contents", base_source=CODE)
    turn.proposal_source, turn.outcome = '"""Area."""\n' + CODE, "proposed"
    target = None if target_id is None else ExecutedCells().add(target_id, CODE, 1)
    return Proposed(Conversation("default", "contents"), turn, target, "add a docstring", replayed)


def copy_frontend(tmp_path) -> Frontend:
    return for_run(side(running_magic(("c1", CODE, 1)), tmp_path))


def test_a_replayed_open_proposal_says_so_and_what_apply_does_here(tmp_path):
    controller = controller_for(proposed("c1", replayed=True), copy_frontend(tmp_path), lambda _c: CODE)
    assert controller.cell_id == "c1" and controller.status.text.endswith(controller.writer.describe_apply())
    assert controller.status.text != controller.writer.describe_apply()  # the replay's line comes first


def test_a_notebook_proposal_through_the_bridge_reads_the_cells_it_manages(tmp_path):
    bridge = live_bridge([("c1", CODE), ("m1", MAGIC)])
    frontend = for_run(side(running_magic(("c1", CODE, 1)), tmp_path, bridge))
    controller = controller_for(proposed(None), frontend, lambda _c: "never asked")
    assert isinstance(controller.writer, NotebookWriter) and controller.cell_id == "<notebook>"
    assert controller.current_source == controller.writer.current_source


def test_at_a_terminal_the_diff_is_printed_and_the_next_prompt_prefilled(tmp_path, capsys):
    frontend = for_run(side(running_magic(("c1", CODE, 1)), tmp_path, terminal=True))
    latest: dict = {}
    prefilled: list[str] = []
    footers: list[str] = []
    place = Place({}, latest, lambda _c: CODE, lambda _c: None, prefilled.append)
    assert show_proposal(proposed("c1"), frontend, place, lambda: footers.append("footer")) is None
    out = capsys.readouterr().out
    assert '+"""Area."""' in out and out.rstrip().endswith(latest["default"].message)
    assert prefilled == ['"""Area."""\n' + CODE] and footers == ["footer"]


# -- flags, -c, failures --------------------------------------------------------------------------
def test_the_parsed_flags_make_the_request():
    args = GeminiMagics.gemini_edit.parser.parse_args(
        ["--no-outputs", "--outputs", " 3, In[5] ,", "-c", "side", "--cell", "-1", "--rerun"]
    )
    asked = ExplicitContext(pieces=(), failing_cell="c9", prompt="fix it")
    req = turn_request("edit", args, asked)
    assert (req.mode, req.prompt, req.conversation, req.cell) == ("edit", "fix it", "side", "-1")
    assert req.outputs is False and req.output_cells == ("3", "In[5]") and req.rerun is True
    assert req.preferred_target == "c9" and req.dry_run is False and req.state is None


def test_dash_c_names_one_conversation_or_none_and_no_dash_c_every_one():
    convs = {n: Conversation(n, "contents") for n in ("default", "side")}
    assert chosen(convs, None) == list(convs.values())
    assert chosen(convs, "side") == [convs["side"]]
    assert chosen(convs, "nope") is None
    assert chosen({}, None) == []


def test_a_failed_turn_is_one_line_and_its_traceback_only_with_debug(capsys):
    display = NotebookDisplay("ask")
    display.failed(UserError(messages.NO_API_KEY), debug=False)
    assert capsys.readouterr().err == messages.NO_API_KEY.shown() + "\n"
    try:
        raise KeyError("k")
    except KeyError as exc:
        bug = exc
    display.failed(bug, debug=False)
    assert capsys.readouterr().err == (
        "genai_magics: unexpected KeyError: 'k' (%gemini debug on shows the traceback)\n"
    )
    display.failed(bug, debug=True)
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):") and err.endswith("shows the traceback)\n")
    api = UserError(messages.OTHER_STATUS, code=400, detail="the API said no")
    api.__cause__ = bug
    display.failed(api, debug=True)
    err = capsys.readouterr().err
    assert "KeyError: 'k'" in err and err.endswith(
        messages.OTHER_STATUS.shown(code=400, detail="the API said no") + "\n"
    )


def test_a_turns_merged_view_merges_once_per_file_version_and_record_change(tmp_path):
    import json
    import os

    path = tmp_path / "nb.ipynb"

    def save(*sources: str) -> None:
        cells = [{"id": f"f{i}", "cell_type": "code", "source": s, "metadata": {}} for i, s in enumerate(sources)]
        path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}))

    save("a = 1", "b = 2")
    executed = ExecutedCells()
    view = MergedView(executed, path)
    first = view.cells()
    assert view.cells() is first  # asked again in the same turn: the same merge
    executed.add("f1", "b = 3", 1)
    assert [c.source for c in view.cells()] == ["a = 1", "b = 3"]  # the executed cells changed: merged again
    save("a = 1", "b = 2", "c = 4")
    os.utime(path, ns=(1, 1))  # a new file version even within the clock's resolution
    assert [c.source for c in view.cells()] == ["a = 1", "b = 3", "c = 4"]
    executed.add("f1", "b = 3", 2)  # run again as it is (a magic cell, each turn): made again where it stands
    assert view.cells()[1] is executed.by_id["f1"]
    executed.set_source("f1", "a = 1")  # the text of a file's cell never run: that cell is it now, merged whole
    assert [(c.id, c.source) for c in view.cells()] == [("f1", "a = 1"), ("f1", "b = 2"), ("f2", "c = 4")]

    from genai_magics.engine.cells import Cell
    from genai_magics.frontends.notebook_view import merged

    twice = (
        Cell("g0", "p = 1"),
        Cell("g0", "q = 1"),
        Cell("g1", "r = 1"),
    )  # an id twice: the second looked for by text
    other = ExecutedCells()
    other.add("g0", "p = 1", 1)
    other.add("g1", "r = 1", 2)
    merged(twice, other)
    other.set_source("g1", "q = 1")  # the second g0's text: g1 is that cell now, merged whole
    assert [(c.id, c.source) for c in merged(twice, other)] == [("g0", "p = 1"), ("g1", "q = 1"), ("g1", "r = 1")]


def test_a_file_cell_is_the_executed_cell_of_its_id_or_else_of_a_text_it_held():
    from genai_magics.engine.cells import Cell
    from genai_magics.frontends.notebook_view import merge_file_and_executed

    executed = ExecutedCells()
    executed.add("f0", "x = 1", 1)  # JupyterLab: the file's id
    executed.add("vscode-a", "y = 2", 2)  # VS Code: a URI the file never holds; it held "y = 2" ...
    executed.add("vscode-a", "y = 20", 3)  # ... and now holds "y = 20"
    executed.add("vscode-b", "z = 3", 4)
    executed.add("vscode-c", "z = 3", 5)  # the same text in two cells: the first run in the order wins
    executed.add("f0b", "x = 1", 6)  # holds f0's text too, but f0 is matched by its id first
    executed.add("run-only", "w = 9", 7)
    file_cells = (
        Cell("f0", "x = 1", "code"),
        Cell("old-1", "y = 2", "code"),  # an older text of vscode-a
        Cell("old-2", "z = 3", "code"),
        Cell("old-3", "z = 3", "code"),
        Cell("f0-copy", "x = 1", "code"),  # f0 is taken: f0b, which held the text
        Cell("never-run", "v = 0", "markdown"),
    )
    merged = merge_file_and_executed(file_cells, executed)
    assert [(c.id, c.source) for c in merged] == [
        ("f0", "x = 1"),
        ("vscode-a", "y = 20"),
        ("vscode-b", "z = 3"),
        ("vscode-c", "z = 3"),
        ("f0b", "x = 1"),
        ("never-run", "v = 0"),
        ("run-only", "w = 9"),  # run but not in the file (yet): after the file's cells
    ]
    assert merged[0] is executed.by_id["f0"]  # the executed cell itself: its hash is not computed again


def test_a_magic_line_parsed_again_is_the_same_flags_in_an_object_of_its_own():
    from IPython.core.error import UsageError

    from genai_magics.kernel.magics import _parsed

    line = "--cell c1 -c review --vars df,model Why"
    first, again = _parsed(GeminiMagics.gemini_edit, line), _parsed(GeminiMagics.gemini_edit, line)
    assert vars(first) == vars(again) and first is not again
    assert (first.cell, first.conversation, first.vars) == ("c1", "review", "df,model")
    first.cell = "changed"
    assert _parsed(GeminiMagics.gemini_edit, line).cell == "c1", "what a turn does to its flags stays there"
    for _ in range(2):  # a line that does not parse says so every time
        with pytest.raises(UsageError):
            _parsed(GeminiMagics.gemini_edit, "--state nonsense")


def test_the_footers_plain_names_are_the_payloads_fields():
    """ui/report.py names the pieces by the payload's fields, which sources/ defines and ui/ may not import."""
    from genai_magics.engine.context import SECONDARY_FIELD
    from genai_magics.sources.last_error import LAST_ERROR_FIELD
    from genai_magics.sources.variables import VARIABLES_FIELD
    from genai_magics.ui.report import PLAIN_NAMES

    assert set(PLAIN_NAMES) == {SECONDARY_FIELD, LAST_ERROR_FIELD, VARIABLES_FIELD}
