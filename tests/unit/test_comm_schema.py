"""The live bridge's comm messages: one schema file that every side is held to.

genai_magics/frontends/bridge_protocol.schema.json is the protocol. At run time in the tests:
the fake frontend (tests/helpers/fake_frontend.py) validates every message the kernel side sends it
and every one it sends (so every kernel-level bridge test checks both), and the extension's unit
tests (labextension/test/schema.test.ts) validate the messages its builders make. The extension's
TypeScript types are generated from the schema (labextension/src/protocol.ts); docs/protocol.md
names every field.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import protocol
from helpers.bridge import ATTACH
from helpers.fake_frontend import FakeFrontend

ROOT = Path(__file__).resolve().parents[2]
DEFS = protocol.schema()["$defs"]


def _fields() -> set[str]:
    return {name for d in DEFS.values() for name in d.get("properties", {})}


def test_the_typescript_types_are_the_schemas():
    """protocol.ts is what labextension/dev/gen_protocol.py makes of the schema, unedited."""
    run = subprocess.run([sys.executable, str(ROOT / "labextension/dev/gen_protocol.py"), "--check"])
    assert run.returncode == 0, "labextension/src/protocol.ts differs: run labextension/dev/gen_protocol.py"


def test_the_bridge_modules_use_the_generated_types():
    for name in ("bridge.ts", "snapshot.ts", "reply.ts"):
        source = (ROOT / "labextension/src" / name).read_text()
        assert "from './protocol'" in source, name
        assert not re.search(r"^(export )?interface I(Request|Reply|Snapshot|Cell)\b", source, re.M), name


@pytest.mark.parametrize(
    ("definition", "message"),
    [
        ("Snapshot", {"type": "snapshot", "version": 1, "full": True, "seq": 1, "path": "n.ipynb", "cells": []}),
        (
            "Snapshot",
            {
                "type": "snapshot",
                "version": 1,
                "full": True,
                "seq": 1,
                "path": "",
                "cells": [],
                "removed": [],
                "executing": "a",
            },
        ),  # noqa: E501
        ("Reply", {"type": "reply", "request_id": 1, "ok": "yes"}),
        ("Request", {"type": "request", "request_id": 1, "op": "set_source", "cell_id": "a"}),  # no source
        ("Request", {"type": "request", "request_id": 1, "op": "rename", "cell_id": "a"}),
        ("Request", {"type": "request", "request_id": 1, "op": "set_outputs", "cell_id": "a", "outputs": []}),
        (
            "Request",
            {
                "type": "request",
                "request_id": 1,
                "op": "set_outputs",
                "cell_id": "a",
                "execution_count": 2,
                "outputs": [{"output_type": "update_display_data"}],
            },
        ),
        ("CommOpen", {"version": 2}),
    ],
)
def test_the_schema_refuses_what_no_side_may_send(definition, message):
    with pytest.raises(AssertionError, match=f"not a {definition}"):
        protocol.check(definition, message)


@pytest.mark.kernel
def test_a_kernel_message_outside_the_schema_fails_the_fake_frontend():
    ff = FakeFrontend(cells=[("a", "x = 1")])
    try:
        assert ff.execute_code(ATTACH).error is None
        bad = {"type": "request", "request_id": 99, "op": "set_source", "cell_id": "a", "source": "y", "why": "x"}
        with pytest.raises(AssertionError, match="not a ToFrontend"):
            ff.execute_code(f"B._comm.send({bad!r})")
            ff.pump(1.0)
    finally:
        ff.close()


def test_docs_name_every_field():
    doc = (ROOT / "docs/protocol.md").read_text()
    section = doc[doc.index("## The bridge's comm protocol") :]
    missing = {f for f in _fields() if not re.search(rf"`[^`]*\b{f}\b[^`]*`", section)}  # named in code spans
    assert not missing, f"docs/protocol.md does not describe {missing}"
    assert "bridge_protocol.schema.json" in section


def test_the_schema_is_json_that_ships_with_the_package():
    assert json.loads(protocol.SCHEMA_PATH.read_text())["$defs"]
    assert protocol.SCHEMA_PATH.is_relative_to(ROOT / "genai_magics")
