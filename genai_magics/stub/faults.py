"""Fault injection: the faults the stand-in can inject and which requests an injection matches."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .request_record import RequestRecord

FAULTS = ("http", "cut_stream", "invalid_json", "delay", "bad_edits")


MATCHES = (
    None,
    "any",
    "generate",
    "stream",
    "count",
    "interactions",
    "edit",
    "ask",
    "interaction.create",
    "interaction.get",
    "caches",
    "cache.create",
    "cache.get",
    "cache.update",
    "cache.delete",
)


def applies(inj: dict[str, Any], info: RequestRecord) -> bool:
    fault, match, kind = inj["fault"], inj["match"], info.kind or ""
    if fault == "cut_stream" and not info.stream:
        return False
    if fault in ("invalid_json", "bad_edits") and not (
        info.edit and kind in ("generate", "stream", "interaction.create")
    ):
        return False
    if match in (None, "any"):
        return True
    if match == "generate":
        return kind in ("generate", "stream")
    if match == "stream":
        return info.stream
    if match == "interactions":
        return kind.startswith("interaction.")
    if match == "caches":
        return kind.startswith("cache.")
    if match == "edit":
        return info.edit
    if match == "ask":
        return kind in ("generate", "stream", "interaction.create") and not info.edit
    return kind == match
