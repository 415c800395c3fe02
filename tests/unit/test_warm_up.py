"""The first turn is as quick as the others: %load_ext warms the SDK up in the background.

The latency itself is measured in benchmarks/kernel_overhead.py (part 3); these
tests pin what makes it so: the warm-up runs off the main thread, builds the SDK
types a turn needs, sends nothing, and leaves a client the first turn reuses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from genai_magics.gemini.models import DEFAULT_MODEL

PROBE = r"""
import json, sys
from google.genai import types
from genai_magics.gemini.warm_up import rehearse
kinds = (types.GenerateContentConfig, types.Content, types.GenerateContentResponse)
before = [k.__pydantic_complete__ for k in kinds]
rehearse("contents", sys.argv[1])
after = [k.__pydantic_complete__ for k in kinds]
interactions_before = "google.genai._gaos.google_genai" in sys.modules
rehearse("interactions", sys.argv[1])
print(json.dumps({"before": before, "after": after, "interactions": [
    interactions_before, "google.genai._gaos.google_genai" in sys.modules]}))
"""


def test_the_rehearsal_builds_the_sdk_types_offline(stub):
    stub.clear()
    env = {**os.environ, "GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": "must-not-be-used"}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, DEFAULT_MODEL], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    built = json.loads(out.stdout)
    assert built["before"] == [False, False, False]  # a fresh interpreter has not built them
    assert built["after"] == [True, True, True]
    assert built["interactions"] == [False, True]  # the interactions client's code is loaded too
    assert stub.requests == []  # an in-memory transport answered: nothing reached any server


WARM_UP_STATE = r"""
import threading, sys
[t.join() for t in threading.enumerate() if t.name == "genai_magics warm-up"]
from google.genai import types
from genai_magics.kernel.shell_state import state_of
magics = state_of(get_ipython()).magics
print(types.GenerateContentConfig.__pydantic_complete__, len(magics.session.clients._clients))
"""


def test_load_ext_warms_up_in_the_background_and_the_first_turn_reuses_it(kernel, stub):
    run = kernel.run(WARM_UP_STATE)
    assert run.stdout.split() == ["True", "1"]  # types built, one client ready
    assert stub.requests == []  # the warm-up sent nothing
    kernel.run("def parse(s):\n    return int(s)\n")
    kernel.run("%%gemini_ask\nwhat does parse do?")
    again = kernel.run(WARM_UP_STATE)
    assert again.stdout.split() == ["True", "1"]  # the first turn used the warmed client, no second one
    assert [r["kind"] for r in stub.requests] == ["stream"]
