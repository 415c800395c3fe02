"""What strangers' notebooks print (issue 26): nothing of the key leaves, nothing printed is erased.

The fast layer: the extension in an in-process IPython shell, the real SDK over HTTP to the
stand-in, the record on disk at a named path. What a kernel adds (IPython's ``!`` output) is in
``test_outputs.py``.
"""

from __future__ import annotations

import json

from helpers.kernel import FAKE_KEY
from helpers.properties import examples
from helpers.record import text_on_disk
from helpers.wire import api_requests, current_payload
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from genai_magics import messages

# Characters the key does not hold: any 8 characters of the key found anywhere came from the key.
FILLER = "bcdfghjlmnopqruvwxBCDGHJ =/?&:,.;"
PIECES = {FAKE_KEY[i : i + 8] for i in range(len(FAKE_KEY) - 7)}


def leaked(text: str) -> list[str]:
    return sorted(p for p in PIECES if p in text)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    before=st.integers(0, 1_100),
    after=st.integers(0, 30),
    output_cap=st.integers(1, 1_200),
    context_cap=st.integers(1, 1_300),
    var_cap=st.integers(1, 1_200),
    seed=st.text(FILLER, min_size=1, max_size=20),
)
# the cuts of the issue, each falling inside the key (its first 14 characters before the cut): the
# outputs cap, the other cells' cap, the --vars cap, the traceback's source line (200) and message (1,000)
@example(before=100, after=20, output_cap=115, context_cap=4_000, var_cap=2_000, seed="x")
@example(before=100, after=20, output_cap=4_000, context_cap=180, var_cap=2_000, seed="x")
@example(before=100, after=20, output_cap=4_000, context_cap=4_000, var_cap=128, seed="x")
@example(before=167, after=20, output_cap=4_000, context_cap=4_000, var_cap=2_000, seed="x")
@example(before=985, after=20, output_cap=4_000, context_cap=4_000, var_cap=2_000, seed="x")
def test_no_piece_of_the_key_is_sent_or_recorded_whatever_the_cut(
    magic_shell, stub, tmp_path, before, after, output_cap, context_cap, var_cap, seed
):
    stub.reset()
    record = tmp_path / "shared.json"
    head = (seed * (before // len(seed) + 1))[:before]
    text = f"{head}{FAKE_KEY}{FILLER[:after]}"
    for line in (
        f"GeminiMagics.max_output_chars = {output_cap}",
        f"GeminiMagics.secondary_context_chars = {context_cap}",
        f"GeminiMagics.max_var_chars = {var_cap}",
        f"GeminiMagics.record_location = {str(record)!r}",
    ):
        magic_shell.run(f"%config {line}")
    magic_shell.run(f"settings = {text!r}\nprint(settings)", cell_id="dump")  # an output and another cell
    magic_shell.run(f"raise ValueError({text!r})", cell_id="boom")  # the traceback's line and message
    magic_shell.run("def f():\n    return 1\n", cell_id="doc")
    shown = magic_shell.run("%%gemini_ask --new --cell doc --outputs dump --vars settings --error\nwhy?", cell_id="m")
    assert shown.stderr == "", shown.stderr
    (request,) = api_requests(stub)
    payload = current_payload(request)
    assert {"outputs", "variables", "lastError", "secondaryContext"} <= payload.keys()  # every cap was there
    assert leaked(json.dumps(stub.requests)) == []
    assert leaked(text_on_disk(record)) == []
