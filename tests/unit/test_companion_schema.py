"""The VS Code companion's file protocol: one schema file that both sides are held to.

genai_magics/frontends/companion_protocol.schema.json is the protocol. In the tests: the stand-in
companion (tests/helpers/companion.py) validates every request the kernel side writes and every
reply and presence file it writes itself (so every test of tests/unit/test_companion.py checks both),
and the extension's unit tests (vscode-extension/test/schema.test.ts) validate what its builders
make. The extension's TypeScript types are generated from the schema
(vscode-extension/src/protocol.ts, by labextension/dev/gen_protocol.py); docs/protocol.md names
every field.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import protocol

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = protocol.COMPANION_SCHEMA_PATH
DEFS = protocol.schema(SCHEMA)["$defs"]
GENERATED = ROOT / "vscode-extension/src/protocol.ts"
HEAD = {"version": 1, "request_id": 1, "notebook": "vscode-notebook-cell:/n.ipynb", "reply_to": "/c/out-1/rep-1.json"}
STORED = {"cell_type": "code", "source": "x", "language": "python", "metadata": {}, "outputs": []}


def test_the_typescript_types_are_the_schemas():
    """protocol.ts is what labextension/dev/gen_protocol.py makes of the schema, unedited."""
    run = subprocess.run([sys.executable, str(ROOT / "labextension/dev/gen_protocol.py"), "--check", SCHEMA, GENERATED])
    assert run.returncode == 0, f"{GENERATED} differs: run labextension/dev/gen_protocol.py {SCHEMA} {GENERATED}"


def test_the_companion_modules_use_the_generated_types():
    names = "|".join(DEFS)
    for name in ("channel.ts", "extension.ts"):
        source = (ROOT / "vscode-extension/src" / name).read_text()
        assert "from './protocol'" in source, name
        assert not re.search(rf"^(export )?(interface|type) I?({names}|Envelope)\b", source, re.M), name


@pytest.mark.parametrize(
    ("definition", "message"),
    [
        ("Presence", {"version": 1, "companion": "0.1.0", "pid": 7, "inbox": "/c/in-7"}),  # no notebooks
        ("Request", {**HEAD, "op": "snapshot", "cell_id": "a"}),
        ("Request", {**HEAD, "op": "set_source", "cell_id": "a"}),  # no source
        ("Request", {**HEAD, "op": "insert_cell", "source": "", "cell_type": "code"}),  # no after_id
        ("Request", {**HEAD, "op": "insert_cell", "after_id": None, "source": "", "cell_type": "heading"}),
        ("Request", {**HEAD, "op": "rename", "cell_id": "a"}),
        ("Request", {**HEAD, "version": 2, "op": "snapshot"}),
        ("Request", {**HEAD, "op": "set_outputs", "cell_id": "a", "outputs": []}),  # no execution_count
        ("Request", {**HEAD, "op": "set_outputs", "cell_id": "a", "outputs": [{"text": "x"}], "execution_count": 1}),
        ("Reply", {"request_id": 1, "ok": True, "cells": [{"id": "a", "cell_type": "code"}], "path": ""}),
        ("Reply", {"request_id": 1, "ok": True, "cell_id": "a", "cell": {**STORED, "language": None}}),
        ("Reply", {"request_id": 1, "ok": False}),  # no error
        ("Reply", {"request_id": 1, "ok": "yes", "cell_id": "a"}),
    ],
)
def test_the_schema_refuses_what_no_side_may_write(definition, message):
    with pytest.raises(AssertionError, match=f"not a {definition}"):
        protocol.check(definition, message, SCHEMA)


@pytest.mark.parametrize(
    ("definition", "message"),
    [
        ("Request", {**HEAD, "op": "insert_cell", "after_id": "a", "source": "", "cell_type": "raw", "cell": STORED}),
        ("Request", {**HEAD, "op": "insert_cell", "after_id": None, "source": "", "cell_type": "code"}),
        (
            "Request",
            {
                **HEAD,
                "op": "set_outputs",
                "cell_id": "a",
                "outputs": [{"output_type": "error"}],
                "execution_count": None,
            },
        ),
        ("Reply", {"request_id": 1, "ok": True, "cell_id": "a", "cell": STORED}),
        ("Reply", {"request_id": 1, "ok": True, "cells": [], "path": "/n.ipynb"}),
    ],
)
def test_the_schema_holds_what_each_side_writes(definition, message):
    protocol.check(definition, message, SCHEMA)


def test_docs_name_every_field():
    doc = (ROOT / "docs/protocol.md").read_text()
    section = doc[doc.index("## The VS Code companion's protocol") :]
    fields = {name for d in DEFS.values() for name in d.get("properties", {})}
    missing = {f for f in fields if not re.search(rf"`[^`]*\b{f}\b[^`]*`", section)}  # named in code spans
    assert not missing, f"docs/protocol.md does not describe {missing}"
    assert "companion_protocol.schema.json" in section


def test_the_schema_ships_with_the_package():
    assert SCHEMA.is_relative_to(ROOT / "genai_magics") and DEFS
