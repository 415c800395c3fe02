"""The default model is named once; `%gemini models` lists what the key can use, over the wire."""

from __future__ import annotations

import re
from pathlib import Path

from genai_magics import messages
from genai_magics.gemini.models import DEFAULT_MODEL

ROOT = Path(__file__).resolve().parents[2]


def test_the_default_model_is_named_in_one_place():
    from genai_magics.kernel.magics import GeminiMagics

    assert GeminiMagics.class_traits()["model"].default_value == DEFAULT_MODEL
    # gemini/pricing.py lists prices by model name (the default among them): a table, not a default
    named = [
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "genai_magics").rglob("*.py")
        if DEFAULT_MODEL in p.read_text(encoding="utf-8")
    ]
    assert sorted(named) == ["genai_magics/gemini/models.py", "genai_magics/gemini/pricing.py"]
    # the demo, its notebooks and the benchmarks name no model by hand: they use the constant
    flash = re.compile(r"gemini-\d+(?:\.\d+)?-flash\b")
    stray = [
        p.relative_to(ROOT).as_posix()
        for p in [
            ROOT / "genai_magics" / "demo.py",
            *(ROOT / "benchmarks").glob("*.py"),
            *(ROOT / "notebooks").glob("*.ipynb"),
        ]
        if flash.search(p.read_text(encoding="utf-8"))
    ]
    assert stray == []
    docs = [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    assert any(f"`{DEFAULT_MODEL}`" in d.read_text(encoding="utf-8") for d in docs if d.exists())


def test_models_lists_what_the_key_can_use_marked_by_state_mode(kernel, stub):
    stub.clear()
    run = kernel.run("%gemini models")
    lines = {line[3:].split()[0]: line for line in run.stdout.splitlines() if line[3:].startswith("gemini")}
    assert lines[DEFAULT_MODEL].startswith("*") and "contents, interactions" in lines[DEFAULT_MODEL]
    assert "contents, interactions" in lines["gemini-3.1-pro-preview"]
    assert "not for conversations" in lines["gemini-embedding-001"]
    for name in ("gemini-4-argon", "gemini-4-carbon", "gemini-4-hydrogen", "gemini-4-neon"):
        assert "contents, interactions" in lines[name]  # the Gemini 4 models
    # client.models.list() went over HTTP with the key, page by page (the stand-in serves 2 a page: 7 models).
    listed = [r for r in stub.requests if r["kind"] == "models.list"]
    assert [r["method"] for r in listed] == ["GET"] * 4
    assert all(r["has_api_key"] for r in listed)
    assert [r["query"].get("pageToken") for r in listed] == [None, "2", "4", "6"]


def test_models_failure_is_one_line(kernel, stub):
    stub.clear()
    stub.inject("http", status=403, match="any")
    run = kernel.run("%gemini models")
    assert messages.KEY_REJECTED.shown(code=403, detail="") in run.plain
    assert "Traceback" not in run.plain
