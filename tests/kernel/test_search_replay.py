"""A grounded answer after a restart (issue 44): Run All shows the recorded answer with its sources and its
search count, and sends nothing. A real kernel restarted over one notebook, the real SDK over HTTP to the
stand-in, the record on disk."""

from __future__ import annotations

import pytest
from helpers.kernel import notebook_kernel, restart
from helpers.wire import api_requests

from genai_magics import messages

pytestmark = pytest.mark.kernel

CODE = "def parse(s):\n    return int(s)\n"


@pytest.mark.parametrize("mode", ["contents", "interactions"])
def test_a_replayed_grounded_answer_shows_its_recorded_sources_with_no_request(stub, tmp_path, mode):
    stub.reset()
    k = notebook_kernel(stub, tmp_path / "work.ipynb")

    def run_all():
        k.run(CODE, cell_id="code")
        return k.run(f"%%gemini_ask --search --state {mode}\nWhat is new in Python?", cell_id="m1")

    try:
        live = run_all()
        assert len(api_requests(stub)) == 1 and messages.FOOTER_SEARCHES.render(count=1) in live.plain
        restart(k)
        replayed = run_all()
        assert len(api_requests(stub)) == 1, "the replay sent a request"
        assert messages.REPLAYED_FOOTER.within(replayed.plain)
        heading = messages.GROUNDING_SOURCES.render(searches=1)
        shown = [line for line in replayed.plain.splitlines() if line.startswith(("**Sources**", "1. ", "2. "))]
        assert shown == [line for line in live.plain.splitlines() if line.startswith(("**Sources**", "1. ", "2. "))]
        assert shown[0] == heading and "(https://example.com/search?q=What%20is%20new%20in%20Python%3F)" in shown[1]
    finally:
        k.close()
