"""An agent turn's writes through the live bridge name one ``undo_group``, the kernel request the turn runs in,
so the frontend makes them one step of the notebook's undo (labextension/src/undo.ts); ``%gemini undo``'s
writes, made in a request of their own, name none. Real kernel, the fake JupyterLab (its requests checked
against the bridge's schema), the real SDK over HTTP to the stand-in.
"""

from __future__ import annotations

import pytest
from test_agent import TEST, call, lab  # noqa: F401 (lab: the fixture, a notebook with its first cells run)

pytestmark = pytest.mark.kernel


def test_a_turns_writes_name_its_request_as_their_undo_group_and_undos_name_none(lab, stub):  # noqa: F811
    stub.script_tools(
        [
            [call("insert_cell", after="a", source=TEST)],
            [call("edit_cell", ref="a", edits=[{"find": "int(s)", "replace": "int(s.strip())"}])],
            [call("delete_cell", ref="b")],
        ]
    )
    run = lab.execute("m")
    assert run.error is None, run.error
    turn = list(lab.requests_received)
    assert [r["op"] for r in turn] == ["insert_cell", "set_source", "delete_cell"]
    assert {r.get("undo_group") for r in turn} == {run.reply["parent_header"]["msg_id"]}

    lab.execute_code("%gemini undo")  # each write waits for the reply to the one before
    assert lab.pump_until(lambda: len(lab.requests_received) == 2 * len(turn))
    undo = lab.requests_received[len(turn) :]
    assert sorted(r["op"] for r in undo) == ["delete_cell", "insert_cell", "set_source"]
    assert not [r for r in undo if "undo_group" in r]
