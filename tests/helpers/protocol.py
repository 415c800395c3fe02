"""The live notebooks' protocols, each from its one schema file: the bridge's comm
(genai_magics/frontends/bridge_protocol.schema.json) and the VS Code companion's files
(genai_magics/frontends/companion_protocol.schema.json).

The fake frontend and the fake companion check every message they get from the kernel and every one
they send against them at run time, so a test fails on a field outside the schema, a missing one,
or a wrong type.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

FRONTENDS = Path(__file__).resolve().parents[2] / "genai_magics/frontends"
SCHEMA_PATH = FRONTENDS / "bridge_protocol.schema.json"
COMPANION_SCHEMA_PATH = FRONTENDS / "companion_protocol.schema.json"


@functools.cache
def schema(path: Path = SCHEMA_PATH) -> dict[str, Any]:
    return json.loads(path.read_text())


@functools.cache
def _validator(definition: str, path: Path):
    from jsonschema import Draft202012Validator

    return Draft202012Validator({"$ref": f"#/$defs/{definition}", "$defs": schema(path)["$defs"]})


def check_in_kernel() -> str:
    """Code for a kernel, run before ``Bridge.attach``: every message the bridge receives (from a real
    extension in the browser tests) is validated against the schema; ``_bridge_bad`` lists what was not."""
    return (
        "import json as _json, jsonschema as _jsonschema\n"
        "from genai_magics.frontends.bridge import Bridge as _Bridge\n"
        f"_defs = _json.loads(open({str(SCHEMA_PATH)!r}).read())['$defs']\n"
        "_to_kernel = _jsonschema.Draft202012Validator({'$ref': '#/$defs/ToKernel', '$defs': _defs})\n"
        "_bridge_bad = []\n"
        "def _checked(self, msg, _on_msg=_Bridge._on_msg):\n"
        "    data = (msg.get('content') or {}).get('data')\n"
        '    _bridge_bad.extend(f"{e.message} in {data!r}" for e in _to_kernel.iter_errors(data))\n'
        "    return _on_msg(self, msg)\n"
        "_Bridge._on_msg = _checked\n"
    )


def check(definition: str, data: Any, path: Path = SCHEMA_PATH) -> None:
    """Raise AssertionError naming every way ``data`` is not a ``definition`` of the schema at ``path``."""
    errors = sorted(_validator(definition, path).iter_errors(data), key=str)
    if errors:
        raise AssertionError(f"not a {definition}: " + "; ".join(e.message for e in errors) + f" in {data!r}")
