"""``%load_ext genai_magics`` imports no heavy module: each is imported where it is first used (issue 42).

``regex`` alone cost ~90 ms of the load when ``sources/tools.py`` imported it at the top, for the one
function (``search_cells``) that needs it. How long the load takes is measured in
``benchmarks/kernel_overhead.py``; this test pins what keeps it short, in a fresh interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

# module: who needs it (the first use that imports it)
HEAVY = {
    "regex": "search_cells (sources/tools.py)",
    "uuid": "nothing: it imports platform and sysconfig",
    "zoneinfo": "the first turn's billing day (gemini/pricing.py)",
    "google.genai": "the warm-up thread, the first turn",
    "ipywidgets": "the first proposal (ui/widgets.py)",
    "nbformat": "reading a notebook's file",
    "jsonschema": "nbformat's validation",
    "genai_magics.engine.steering": "the agent's guard, its first check (frontends/code_check.py)",
    "genai_magics.engine.code_risks": "an approval's risk line (frontends/code_check.py)",
    "genai_magics.kernel.agent_turn": "the first agent turn (kernel/magics.py)",
    "genai_magics.kernel.agent_run": "the first agent turn, or the landed check after one",
    "genai_magics.frontends.agent_actions": "the first agent turn (kernel/agent_turn.py)",
    "genai_magics.frontends.cell_runner": "the agent's first run_cell",
    "genai_magics.frontends.code_check": "the agent's guard (frontends/agent_actions.py)",
    "genai_magics.frontends.landed": "an agent turn's changes sent without waiting",
    "genai_magics.frontends.turn_undo_steps": "an agent turn's Undo",
    "genai_magics.ui.approval": "the agent's first approval",
    "genai_magics.ui.turn_undo_widget": "an agent turn's Undo, or %gemini undo after one",
    "difflib": "an edit's diff, a hand edit's patch (engine/diff.py), a masked key put back",
    "pydantic": "the SDK",
    "httpx": "the SDK",
}

# what the interpreter held before (under .ci/run's coverage a .pth file imports coverage, and uuid with it)
PROBE = r"""
import json, sys
before = set(sys.modules)
from IPython.core.interactiveshell import InteractiveShell
import genai_magics.turn.clients as clients
clients.Clients.warm_up = lambda self, settings: None  # its thread imports the SDK, racing this check
ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "genai_magics")
print(json.dumps({"registered": "gemini_ask" in ip.magics_manager.magics["cell"],
                  "imported": sorted(m for m in json.loads(sys.argv[1]) if m in sys.modules and m not in before)}))
"""


def test_load_ext_imports_no_heavy_module(tmp_path):
    env = {**os.environ, "IPYTHONDIR": str(tmp_path / "ipython")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(sorted(HEAVY))], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["registered"]
    assert {m: HEAVY[m] for m in found["imported"]} == {}
