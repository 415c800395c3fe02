"""The README a stranger reads: short, its pictures there, its links and figures true.

(The footer it quotes is the demo's: test_shown_text.py.)
"""

from __future__ import annotations

import datetime
import re
import struct
from pathlib import Path

import pytest
from helpers.scripts import script

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md")), ROOT / "benchmarks" / "README.md"]
MAX_README_BYTES = 12_000
COMMANDS = "```bash\nscripts/setup.sh && .venv/bin/python -m genai_magics.demo\n.venv/bin/python -m pytest\n```"
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
_IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+\.png)\)")


def _measure_figures():
    return script("measure_figures")


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def anchors(markdown: str) -> set[str]:
    """The headings' anchors as GitHub makes them (a repeated one gets -1, -2, ...)."""
    seen: dict[str, int] = {}
    out = set()
    in_code = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def test_the_readme_is_short_and_starts_with_the_two_commands():
    text = README.read_text(encoding="utf-8")
    assert len(text.encode()) <= MAX_README_BYTES
    assert text.index(COMMANDS) < 800  # the first lines: setup and demo, then the tests


def test_the_readme_shows_two_screenshots_near_the_top_taken_by_the_tests():
    text = README.read_text(encoding="utf-8")
    images = _IMAGE.findall(text)
    assert images[:2] == ["docs/images/jupyterlab-proposal.png", "docs/images/vscode-proposal.png"]
    assert text.index(images[1]) < 3_000
    for image in images:
        width, height = png_size(ROOT / image)
        assert width >= 600 and height >= 300, (image, width, height)
    script = (ROOT / "scripts" / "screenshots.sh").read_text()
    assert all(Path(image).name in script for image in images[:2])  # the script that takes them again


def test_every_link_between_the_docs_leads_somewhere():
    broken = []
    for doc in DOCS:
        for target in _LINK.findall(doc.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            where = (doc.parent / path).resolve() if path else doc
            if not where.exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target}")
            elif anchor and where.suffix == ".md" and anchor not in anchors(where.read_text(encoding="utf-8")):
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []


def _fast_layer_of_this_run(session) -> int | None:
    """The fast layer's size when this run is exactly the fast layer over tests/ (its own items),
    else None."""
    config = session.config
    if config.getoption("markexpr") != "not kernel and not browser" or config.getoption("keyword"):
        return None
    if config.getoption("deselect") or config.getoption("lf", False):
        return None
    if [Path(arg).resolve() for arg in config.args] != [ROOT / "tests"]:
        return None
    return len(session.items)


def test_the_docs_quote_the_fast_layer_as_pytest_collects_it(request):
    figures = _measure_figures()
    count = _fast_layer_of_this_run(request.session)
    if count is None:  # another selection: count the layer as the script does
        count = figures.fast_layer_count()
    quoted = {doc.name: figures.quoted_counts(doc.read_text(encoding="utf-8")) for doc in figures.DOCS}
    assert all(quoted.values()), quoted  # each says how many there are
    assert quoted == {name: [count] * len(ns) for name, ns in quoted.items()}, (
        f"the fast layer has {count} tests: python scripts/measure_figures.py --write"
    )


@pytest.mark.parametrize(
    "text, count, timing, expected",
    [
        (
            "the layer: 346 tests in ~23 s at load 0.5; 346 tests",
            371,
            (29.6, 6.24, datetime.date(2026, 12, 6)),
            "the layer: 371 tests in ~30 s at load 6.2 on 2026-12-06; 371 tests",
        ),
        (
            "346 tests in ~23 s at load 0.5 on 2026-11-30.",
            347,
            (31.2, 1.0, datetime.date(2026, 12, 6)),
            "347 tests in ~31 s at load 1.0 on 2026-12-06.",
        ),
        ("1,024 tests in ~9 s at load 1.0", 1025, None, "1,025 tests in ~9 s at load 1.0"),
    ],
)
def test_measure_figures_writes_the_count_and_the_time_where_the_docs_quote_them(text, count, timing, expected):
    assert _measure_figures().rewritten(text, count, timing) == expected


def test_the_readme_says_the_vscode_tests_need_their_setup_and_skip_without_it():
    """Its second command runs every test: the VS Code ones only after scripts/setup_vscode.sh, and a newcomer
    seeing them skipped learns why from the README itself."""
    text = " ".join(README.read_text(encoding="utf-8").split())
    said = re.search(r"[^.]*`tests/vscode/`[^.]*`scripts/setup_vscode\.sh`[^.]*skipped[^.]*\.", text)
    assert said, "the README names scripts/setup_vscode.sh for tests/vscode/ and says they skip without it"
    assert (ROOT / "scripts" / "setup_vscode.sh").exists()


# The docs' own words, each defined in docs/glossary.md (issue 41: used before anything said what they were).
GLOSSARY = ROOT / "docs" / "glossary.md"
TERMS = ("document", "secondary context", "record", "bridge", "companion", "stand-in", "proposal", "replay")
USER_DOCS = ("flags.md", "frontends.md", "failures.md", "after-a-restart.md", "token-economy.md")


def test_a_glossary_says_what_the_docs_words_are_before_they_use_them():
    defined = re.findall(r"^- (\*\*[^:]*):", GLOSSARY.read_text(encoding="utf-8"), re.M)  # each line's head
    assert set(TERMS) <= {term for head in defined for term in TERMS if f"**{term}**" in head}, defined
    assert "(docs/glossary.md)" in README.read_text(encoding="utf-8")
    for name in USER_DOCS:
        text = (ROOT / "docs" / name).read_text(encoding="utf-8")
        linked = text.find("(glossary.md)")
        assert linked != -1, f"{name} does not link the glossary"
        for term in TERMS:
            used = re.search(rf"\b{term}\b", text, re.I)
            assert used is None or used.start() > linked, f"{name} says {term!r} before it links the glossary"
