"""The agent cell keeps its own execution count: the cells it ran have theirs (the next ones), the agent cell's
reply says its own (JupyterLab shows the reply's), and the next cell counts on after the last one it ran. Real
kernel, the fake JupyterLab, the real SDK over HTTP to the stand-in playing the agent.
"""

from __future__ import annotations

import pytest
from test_agent_run import click_when_asked, finish, parse_agent

pytestmark = pytest.mark.kernel


def test_the_agent_cell_shows_its_own_count_and_the_cell_it_ran_and_the_next_cell_theirs(stub, tmp_path):
    with parse_agent(stub, tmp_path, "%%gemini_agent\nShow parse('5').") as (ff, msg_id):
        click_when_asked(ff, "Run")
        run = finish(ff, msg_id)
        assert run.status == "ok", run.error
        (started,) = [m["content"]["execution_count"] for m in run.messages if m["msg_type"] == "execute_input"]
        (new,) = [c for c in ff.cells if c.id not in ("setup", "a", "m")]
        ff.pump(0.5)
        assert new.execution_count == started + 1  # the run, as the agent cell's own
        assert run.reply["content"]["execution_count"] == started
        after = ff.execute("a")
        assert after.reply["content"]["execution_count"] == started + 2
