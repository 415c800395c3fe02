"""The live bridge's comm messages: one schema that the kernel side, the extension and the fake frontend follow.

The schema is docs/protocol.md's ("The bridge's comm protocol"). Each side must write every field it
sends and read every field it receives, and use no field outside the schema, so a field nobody reads
(or one only one side knows) fails here. Read from the sources: genai_magics/frontends/bridge.py,
labextension/src/bridge.ts and snapshot.ts, tests/helpers/fake_frontend.py.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CELL = {"id", "cell_type", "source"}  # one entry of a snapshot's "cells"
TO_FRONTEND = {  # kernel -> frontend
    "comm_open": {"version"},
    "request": {"type", "request_id", "op", "cell_id", "source", "after_id", "cell_type", "cell"},
    "resync": {"type"},
}
TO_KERNEL = {  # frontend -> kernel
    "snapshot": {"type", "version", "full", "seq", "path", "order", "cells", "removed"} | CELL,
    "reply": {"type", "request_id", "ok", "cell_id", "cell", "error"},
}
SENT_TO_FRONTEND = set().union(*TO_FRONTEND.values())
SENT_TO_KERNEL = set().union(*TO_KERNEL.values())
FIELDS = SENT_TO_FRONTEND | SENT_TO_KERNEL


def _python_keys(path: Path, functions: set[str]) -> tuple[set[str], set[str]]:
    """(written, read) string keys of message dicts inside ``functions``."""
    written: set[str] = set()
    read: set[str] = set()
    for fn in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(fn, ast.FunctionDef) and fn.name in functions):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Dict):
                written |= {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr == "update":
                    written |= {kw.arg for kw in node.keywords if kw.arg}
                elif node.func.attr == "get" and node.args and isinstance(node.args[0], ast.Constant):
                    read.add(node.args[0].value)
            elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
                if isinstance(node.slice.value, str):
                    (written if isinstance(node.ctx, ast.Store) else read).add(node.slice.value)
    return written, read


def _ts_method(source: str, name: str) -> str:
    """The body of a method of bridge.ts's NotebookBridge (up to the next member)."""
    start = re.search(rf"^  (?:private |async )*{name}\b.*?\{{\n", source, re.M)
    assert start, name
    end = re.search(r"^  (?:private |public |constructor)", source[start.end() :], re.M)
    return source[start.end() : start.end() + end.start() if end else None]


def _ts_keys(*methods: str) -> tuple[set[str], set[str]]:
    source = (ROOT / "labextension/src/bridge.ts").read_text()
    body = "\n".join(_ts_method(source, m) for m in methods)
    if "_push" in methods:  # a snapshot's cell fields come from snapshot.ts
        snapshot = (ROOT / "labextension/src/snapshot.ts").read_text()
        body += snapshot[snapshot.index("{\n", snapshot.index("export function snapshotBody")) :]
    written = set(re.findall(r"(?:^|[{,])\s*(\w+)\s*:", body, re.M))  # object literal keys
    written |= set(re.findall(r"\b(?:data|cell)\.(\w+)\s*=[^=]", body))
    read = set(re.findall(r"\b(?:req|data)\.(\w+)\b(?!\s*=[^=])", body))
    return written - {"default", "metadata"}, read  # a switch's default; a new cell's own metadata


def test_the_kernel_side_sends_and_reads_the_schema():
    written, read = _python_keys(
        ROOT / "genai_magics/frontends/bridge.py",
        {
            "_open",
            "_install_routing",
            "_on_msg",
            "_on_snapshot",
            "_on_reply",
            "_after_ok",
            "_request",
            "set_source",
            "insert_cell",
            "delete_cell",
            "_send",
            "_cell_from",
        },
    )
    assert SENT_TO_FRONTEND <= written, SENT_TO_FRONTEND - written
    assert SENT_TO_KERNEL <= read, f"sent by the frontend but never read: {SENT_TO_KERNEL - read}"
    assert (written | read) - {"content", "data"} <= FIELDS, (written | read) - FIELDS


def test_the_extension_sends_and_reads_the_schema():
    written, read = _ts_keys("_onCommOpen", "_currentCells", "_push", "_onMsg", "_perform")
    assert SENT_TO_KERNEL <= written, SENT_TO_KERNEL - written
    assert SENT_TO_FRONTEND <= read, f"sent by the kernel but never read: {SENT_TO_FRONTEND - read}"
    assert written | read <= FIELDS, f"outside the schema: {(written | read) - FIELDS}"
    replied, _ = _ts_keys("_onMsg")
    assert replied <= TO_KERNEL["reply"], f"not reply fields: {replied - TO_KERNEL['reply']}"


def test_the_fake_frontend_sends_and_reads_the_schema():
    written, read = _python_keys(
        ROOT / "tests/helpers/fake_frontend.py", {"push_snapshot", "as_dict", "_on_bridge_msg", "_perform"}
    )
    assert SENT_TO_KERNEL <= written, SENT_TO_KERNEL - written
    # the comm_open's version: only the extension warns about a mismatch
    assert SENT_TO_FRONTEND - {"version"} <= read, SENT_TO_FRONTEND - read
    assert written | read <= FIELDS | {"comm_id", "data"}, (written | read) - FIELDS
    replied, _ = _python_keys(ROOT / "tests/helpers/fake_frontend.py", {"_on_bridge_msg"})
    assert replied - {"comm_id", "data"} <= TO_KERNEL["reply"], replied - TO_KERNEL["reply"]


def test_docs_name_every_field():
    doc = (ROOT / "docs/protocol.md").read_text()
    section = doc[doc.index("## The bridge's comm protocol") :]
    missing = {f for f in FIELDS if not re.search(rf"`[^`]*\b{f}\b[^`]*`", section)}  # named in code spans
    assert not missing, f"docs/protocol.md does not describe {missing}"
