"""Writes labextension/src/protocol.ts, the bridge's message types, from the one schema file.

    python labextension/dev/gen_protocol.py          # rewrite src/protocol.ts
    python labextension/dev/gen_protocol.py --check  # exit 1 if it is not what the schema gives

tests/test_comm_schema.py fails when protocol.ts and the schema differ. Handles what the schema
uses: const, enum, $ref, arrays, type lists, required, additionalProperties; if/then is left to
the run-time validation.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "genai_magics/frontends/bridge_protocol.schema.json"
TARGET = ROOT / "labextension/src/protocol.ts"
PRIMITIVE = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean", "null": "null"}


def ts_type(node: dict) -> str:
    if "$ref" in node:
        return "I" + node["$ref"].rsplit("/", 1)[1]
    if "const" in node:
        return json.dumps(node["const"]).replace('"', "'")
    if "enum" in node:
        return " | ".join(json.dumps(v).replace('"', "'") for v in node["enum"])
    if "oneOf" in node:
        return " | ".join(ts_type(n) for n in node["oneOf"])
    kind = node.get("type")
    if isinstance(kind, list):
        return " | ".join(PRIMITIVE[k] for k in kind)
    if kind == "array":
        return f"{ts_type(node['items'])}[]"
    return PRIMITIVE[kind]


def declaration(name: str, node: dict) -> str:
    doc = f"/** {node['description']} */\n" if "description" in node else ""
    if node.get("type") != "object":
        return f"{doc}export type I{name} = {ts_type(node)};\n"
    required = set(node.get("required", []))
    lines = [f"  {key}{'' if key in required else '?'}: {ts_type(prop)};" for key, prop in node["properties"].items()]
    if node.get("additionalProperties", True) is not False:
        lines.append("  [key: string]: unknown;")
    return f"{doc}export interface I{name} {{\n" + "\n".join(lines) + "\n}\n"


def generate(schema: dict) -> str:
    head = (
        "// Generated from genai_magics/frontends/bridge_protocol.schema.json by labextension/dev/gen_protocol.py:\n"
        "// do not edit; change the schema and run the script.\n"
    )
    return head + "".join("\n" + declaration(name, node) for name, node in schema["$defs"].items())


def main(argv: list[str]) -> int:
    text = generate(json.loads(SCHEMA.read_text()))
    if "--check" in argv:
        return 0 if TARGET.read_text() == text else 1
    TARGET.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
