"""Writes a protocol's TypeScript types from its one schema file: the bridge's (the default) and the
VS Code companion's.

    python labextension/dev/gen_protocol.py          # rewrite labextension/src/protocol.ts
    python labextension/dev/gen_protocol.py --check  # exit 1 if it is not what the schema gives
    python labextension/dev/gen_protocol.py [--check] \
        genai_magics/frontends/companion_protocol.schema.json vscode-extension/src/protocol.ts

tests/unit/test_comm_schema.py and tests/unit/test_companion_schema.py fail when a protocol.ts and its schema
differ. Handles what the schemas use: const, enum, $ref, oneOf, arrays, type lists, objects without
properties, required, additionalProperties; if/then is left to the run-time validation. Strings are
quoted, and a type too long for its line broken, as the target's .prettierrc.json says, so the file passes
its package's prettier.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "genai_magics/frontends/bridge_protocol.schema.json"
TARGET = ROOT / "labextension/src/protocol.ts"
PRIMITIVE = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean", "null": "null"}


def literal(value: object, quote: str) -> str:
    return json.dumps(value).replace('"', quote)


def ts_type(node: dict, quote: str) -> str:
    if "$ref" in node:
        return "I" + node["$ref"].rsplit("/", 1)[1]
    if "const" in node:
        return literal(node["const"], quote)
    if "enum" in node:
        return " | ".join(literal(v, quote) for v in node["enum"])
    if "oneOf" in node:
        return " | ".join(ts_type(n, quote) for n in node["oneOf"])
    kind = node.get("type")
    if isinstance(kind, list):
        return " | ".join(PRIMITIVE[k] for k in kind)
    if kind == "array":
        return f"{ts_type(node['items'], quote)}[]"
    if kind == "object":  # one without properties: any JSON object
        return "Record<string, unknown>"
    return PRIMITIVE[kind]


def declaration(name: str, node: dict, quote: str, width: int) -> str:
    doc = f"/** {node['description']} */\n" if "description" in node else ""
    if node.get("type") != "object":
        line = f"export type I{name} = {ts_type(node, quote)};"
        if len(line) > width:  # as prettier breaks a type too long for its line (one that fits the next)
            line = f"export type I{name} =\n  {ts_type(node, quote)};"
        return f"{doc}{line}\n"
    required = set(node.get("required", []))
    lines = [
        f"  {key}{'' if key in required else '?'}: {ts_type(prop, quote)};" for key, prop in node["properties"].items()
    ]
    if node.get("additionalProperties", True) is not False:
        lines.append("  [key: string]: unknown;")
    return f"{doc}export interface I{name} {{\n" + "\n".join(lines) + "\n}\n"


def prettier_config(target: Path) -> dict:
    """The prettier config that covers ``target`` (none: prettier's defaults)."""
    for folder in target.parents:
        config = folder / ".prettierrc.json"
        if config.is_file():
            return json.loads(config.read_text())
    return {}


def generate(schema: dict, source: str, config: dict) -> str:
    head = (
        f"// Generated from {source} by labextension/dev/gen_protocol.py:\n"
        "// do not edit; change the schema and run the script.\n"
    )
    quote = "'" if config.get("singleQuote") else '"'
    width = config.get("printWidth", 80)
    return head + "".join("\n" + declaration(name, node, quote, width) for name, node in schema["$defs"].items())


def main(argv: list[str]) -> int:
    paths = [Path(a).resolve() for a in argv if a != "--check"]
    schema, target = paths if paths else (SCHEMA, TARGET)
    text = generate(json.loads(schema.read_text()), schema.relative_to(ROOT).as_posix(), prettier_config(target))
    if "--check" in argv:
        return 0 if target.read_text() == text else 1
    target.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
