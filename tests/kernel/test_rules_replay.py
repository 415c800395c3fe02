"""The notebook's rules in a turn's identity (issue 44): a recorded turn replays while AGENTS.md is as it
was, and a changed AGENTS.md makes the next Run All go live, as a changed system instruction does. Real
kernels restarted over one notebook, the real SDK over HTTP to the stand-in, the record on disk."""

from __future__ import annotations

import pytest
from helpers.kernel import notebook_kernel, restart
from helpers.wire import api_requests, current_payload

from genai_magics.engine.rules import RULES_FIELD
from genai_magics.messages import REPLAYED_FOOTER

pytestmark = pytest.mark.kernel

CODE = "def parse(s):\n    return int(s)\n"


def test_a_changed_agents_md_makes_the_next_run_all_go_live(stub, tmp_path):
    stub.reset()
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    rules = tmp_path / "AGENTS.md"
    rules.write_text("Use polars.\n")
    k = notebook_kernel(stub, tmp_path / "work.ipynb")

    def run_all():
        k.run(CODE, cell_id="code")
        return k.run("%%gemini_ask\nWhat does this do?", cell_id="m1")

    try:
        run_all()
        (first,) = api_requests(stub)
        assert current_payload(first)[RULES_FIELD] == {"AGENTS.md": "Use polars.\n"}
        restart(k)
        replayed = run_all()
        assert len(api_requests(stub)) == 1 and REPLAYED_FOOTER.within(replayed.plain)
        rules.write_text("Use pandas.\n")
        restart(k)
        live = run_all()
        assert not REPLAYED_FOOTER.within(live.plain)
        assert len(api_requests(stub)) == 2
        assert current_payload(api_requests(stub)[1])[RULES_FIELD] == {"AGENTS.md": "Use pandas.\n"}
    finally:
        k.close()
