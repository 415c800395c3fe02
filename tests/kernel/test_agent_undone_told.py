"""The model and the record know what Undo did (issue 40, item 6; issue 41, item 7): after an agent turn's Undo (its
button, ``%gemini undo``, or the notebook's own undo, ``z``) the next request tells the model the turn was undone,
``%gemini history`` shows it (and, before, that the turn's changes stand), the record keeps it and the replay
after a restart says so. After ``z`` the turn's Undo line says so without a click, its button disabled (item 7).
Real kernel, the fake JupyterLab, the real SDK over HTTP to the stand-in, which plays the agent.
"""

from __future__ import annotations

import html
import json

import pytest
from helpers.wire import api_requests
from test_agent import TEST, call, lab  # noqa: F401 (lab: the fixture, a notebook with its first cells run)

from genai_magics import messages

pytestmark = pytest.mark.kernel


def shown(ff, text: str) -> bool:
    return ff.pump_until(lambda: any(text in html.unescape(v) for v in ff.statuses()), timeout=20)


@pytest.mark.parametrize(
    ("how", "mode"),
    [("button", "contents"), ("line", "contents"), ("z", "contents"), ("button", "interactions")],
)
def test_an_undone_agent_turn_is_told_to_the_model_kept_in_the_record_and_replayed_as_undone(
    lab,  # noqa: F811
    stub,
    how,
    mode,
):
    lab.execute_code(f"%config GeminiMagics.state = {mode!r}")
    stub.script_tools([[call("insert_cell", after="a", source=TEST)]])
    assert lab.execute("m").error is None
    (new,) = [c.id for c in lab.cells if c.id not in ("setup", "a", "b", "q", "m")]
    assert "[changes kept]:" in lab.execute_code("%gemini history").plain
    undo_button = lab.buttons()["Undo"]
    if how == "button":
        lab.click(undo_button)
    elif how == "line":
        lab.execute_code("%gemini undo")
    else:  # the notebook's own undo (z) takes the inserted cell out: the next snapshot shows it
        lab.remove_cell(new)
        lab.push_snapshot(full=True)  # (the fake's delta names only cells it pushed before)
        assert shown(lab, messages.TURN_UNDONE_BY_NOTEBOOK.render())  # without a click
        assert lab.widget_models[undo_button]["disabled"]
    assert shown(lab, "Undone")
    assert [c.id for c in lab.cells] == ["setup", "a", "b", "q", "m"]
    assert "[undone]:" in lab.execute_code("%gemini history").plain
    # the next request says so
    lab.add_cell("n", "%%gemini_ask\nWhat now?")
    assert lab.execute("n").error is None
    sent = api_requests(stub)[-1]["json"]
    if mode == "contents":
        said = [p["text"] for c in sent["contents"] if c["role"] == "model" for p in c["parts"] if "text" in p]
        assert any(json.loads(text).get("outcome") == "undone" for text in said if text.startswith("{")), said
    else:
        assert '"proposalOutcomes":{"agent turn 1":"undone"}' in str(sent["input"]), sent["input"]
    # Restart & Run All: the turn replays, says it was undone, and nothing is asked again
    count = len(api_requests(stub))
    lab.restart()
    for cell_id in ("setup", "a"):
        lab.execute(cell_id)
    replayed = lab.execute("m")
    assert messages.REPLAYED_FOOTER.within(replayed.plain, turn=1), replayed.plain
    assert messages.AGENT_REPLAYED_UNDONE.within(replayed.plain)
    assert [c.id for c in lab.cells] == ["setup", "a", "b", "q", "m", "n"]  # nothing made again
    assert "[undone]:" in lab.execute_code("%gemini history").plain  # the record kept it
    assert len(api_requests(stub)) == count
