"""An agent insert never changes what an earlier magic is about (issue 40, item 9): where the frontend names
cells, a recorded ask or edit turn keeps its document by cell id, so a cell the agent inserted right above an
earlier magic does not make Restart & Run All send that turn (and every turn after it) live again, aimed at the
inserted cell. Real kernel, the fake JupyterLab, the real SDK over HTTP to the stand-in.
"""

from __future__ import annotations

import pytest
from helpers.wire import api_requests
from test_agent import call, lab  # noqa: F401 (lab: the fixture, a notebook with its first cells run)

from genai_magics import messages

pytestmark = pytest.mark.kernel


def test_an_agent_insert_right_above_an_earlier_magic_keeps_its_turn_replaying(lab, stub):  # noqa: F811
    lab.edit("q", "%%gemini_edit\nName the variable better.")
    lab.edit("m", lab.source("m").replace("%%gemini_agent", "%%gemini_agent --conversation tasks"))
    assert lab.execute("b").error is None
    edit = lab.execute("q")  # its document: the code cell above it, b
    assert edit.error is None and "scratch = 1" in str(api_requests(stub)[-1]["json"])
    stub.script_tools([[call("insert_cell", after="b", source="y = 2\n")]])
    assert lab.execute("m").error is None
    (new,) = [c.id for c in lab.cells if c.id not in ("setup", "a", "b", "q", "m")]
    assert [c.id for c in lab.cells] == ["setup", "a", "b", new, "q", "m"]  # the insert sits right above q
    sent = len(api_requests(stub))
    lab.restart()  # Restart & Run All
    for cell_id in ("setup", "a", "b", new):
        assert lab.execute(cell_id).error is None
    replayed = [lab.execute("q"), lab.execute("m")]
    assert len(api_requests(stub)) == sent, "Run All sent a recorded turn live again"
    for run in replayed:  # each the first turn of its conversation
        assert messages.REPLAYED_FOOTER.within(run.plain, turn=1), run.plain
