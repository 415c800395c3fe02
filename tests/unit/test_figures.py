"""The figures the docs publish cannot go stale (issue 42): each deterministic figure sits in a generated
block (``<!-- figures:NAME -->``), written by ``scripts/figures.py`` from ``benchmarks/figures.json``, which
the benchmarks' own functions produce. A figure edited by hand, or a block the file lacks, fails here; a
change of the code that changes the figures fails ``test_benchmarks.py``'s smoke-size check."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.scripts import script

ROOT = Path(__file__).resolve().parents[2]


FIGURES = script("figures")


def published() -> dict[str, dict[str, str]]:
    """doc -> its blocks (name -> text)."""
    return {str(doc.relative_to(ROOT)): FIGURES.blocks(doc.read_text(encoding="utf-8")) for doc in FIGURES.DOCS}


def test_every_published_block_is_the_generated_file_s():
    figures = json.loads(FIGURES.FIGURES.read_text(encoding="utf-8"))
    found = {name: (doc, text) for doc, named in published().items() for name, text in named.items()}
    assert set(found) == set(figures)  # every block generated, every generated figure published
    stale = {name: doc for name, (doc, text) in found.items() if text != figures[name]["text"]}
    assert stale == {}, "edited by hand, or not written: run python scripts/figures.py --docs"


def test_a_figure_edited_by_hand_is_found():
    figures = {"demo": {"text": "| a | 1 |\n"}}
    doc = "x\n<!-- figures:demo -->\n| a | 2 |\n<!-- /figures -->\ny\n"
    assert FIGURES.blocks(doc) == {"demo": "| a | 2 |\n"}
    assert FIGURES.blocks(FIGURES.written(doc, figures)) == {"demo": "| a | 1 |\n"}
