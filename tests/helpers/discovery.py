"""Google's own schema of the request bodies: the Vertex AI discovery document google-api-python-client ships.

A small validator of the discovery format (``$ref``, ``type``, ``properties``, ``items``,
``additionalProperties``, ``enum``, ``format``): every property of a body must be one the schema
declares (camelCase, as the REST wire has them; proto3's JSON parser takes the snake_case name too),
of the type it declares, so a body the SDK sends (and the stand-in reads) in a shape
Google's API does not have fails the test that reads it.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
from pathlib import Path
from typing import Any

PREFIX = "GoogleCloudAiplatformV1beta1"
_DURATION = re.compile(r"^-?\d+(\.\d+)?s$")


@functools.cache
def schemas() -> dict[str, Any]:
    import googleapiclient

    path = Path(googleapiclient.__file__).parent / "discovery_cache" / "documents" / "aiplatform.v1beta1.json"
    return json.loads(path.read_text(encoding="utf-8"))["schemas"]


def problems(value: Any, schema: str) -> list[str]:
    """Where ``value`` is not of the discovery schema ``schema`` (e.g. ``GenerateContentRequest``)."""
    found: list[str] = []
    _check(value, {"$ref": PREFIX + schema}, schema, found)
    return found


def _check(value: Any, spec: dict[str, Any], path: str, found: list[str]) -> None:
    if "$ref" in spec:
        spec = schemas()[spec["$ref"]]
    kind = spec.get("type")
    if kind == "object" or "properties" in spec:
        if not isinstance(value, dict):
            found.append(f"{path}: {type(value).__name__}, not an object")
            return
        props = spec.get("properties", {})
        extra = spec.get("additionalProperties")
        for key, item in value.items():
            name = _camel(key)  # proto3's JSON parser takes a field's own snake_case name too
            if name in props:
                _check(item, props[name], f"{path}.{key}", found)
            elif extra is not None:
                _check(item, extra, f"{path}.{key}", found)
            else:
                found.append(f"{path}: unknown property {key!r}")
    elif kind == "array":
        if not isinstance(value, list):
            found.append(f"{path}: {type(value).__name__}, not an array")
            return
        for i, item in enumerate(value):
            _check(item, spec.get("items", {}), f"{path}[{i}]", found)
    elif kind == "string":
        if not isinstance(value, str):
            found.append(f"{path}: {type(value).__name__}, not a string")
        elif "enum" in spec and value not in spec["enum"]:
            found.append(f"{path}: {value!r} is not one of {spec['enum']}")
        elif spec.get("format") == "byte" and not _base64(value):
            found.append(f"{path}: not base64")
        elif spec.get("format") == "google-duration" and not _DURATION.match(value):
            found.append(f"{path}: {value!r} is not a duration")
        elif spec.get("format") in ("int64", "uint64") and not value.lstrip("-").isdigit():
            found.append(f"{path}: {value!r} is not an integer")
    elif kind == "integer":
        if type(value) is not int:
            found.append(f"{path}: {type(value).__name__}, not an integer")
    elif kind == "number":
        if type(value) not in (int, float):
            found.append(f"{path}: {type(value).__name__}, not a number")
    elif kind == "boolean":
        if type(value) is not bool:
            found.append(f"{path}: {type(value).__name__}, not a boolean")
    # type "any" (a function's args and response, a JSON schema): anything goes


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _base64(value: str) -> bool:
    try:
        base64.b64decode(value.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        return False
    return True
