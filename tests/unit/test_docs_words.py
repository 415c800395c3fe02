"""The user docs speak of what a user sees and does; the tests that prove it and the code's insides are
named in docs/development.md and docs/protocol.md (issue 41: the user docs cited test names)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
USER_DOCS = (
    "README.md",
    *(
        f"docs/{name}"
        for name in ("flags.md", "failures.md", "frontends.md", "after-a-restart.md", "glossary.md", "token-economy.md")
    ),
)
# A test's name or node id, a test file, or a source file or name of the package's (the README may still
# name the tests/vscode/ folder: how to run those tests is a user's step; benchmarks/ and scripts/ are run).
INSIDES = re.compile(
    r"\btest_\w+|::\w+|\btests/\w+/\w+\.py"
    r"|\b(?:genai_magics|engine|frontends|gemini|kernel|persistence|sources|turn|ui)/[\w/]*\.py"
    r"|\blabextension/(?:src|test)/|\bvscode-extension/src/|(?<=`)(?:caching|transport)\.\w+"
)


def insides(text: str) -> list[str]:
    return [m.group(0) for m in INSIDES.finditer(text)]


@pytest.mark.parametrize("doc", USER_DOCS)
def test_a_user_doc_names_no_test_and_no_source_file(doc):
    assert insides((ROOT / doc).read_text(encoding="utf-8")) == [], f"{doc}: move these to docs/development.md"


def test_the_check_sees_each_kind_of_name():
    text = (
        "tested by `test_replay.py::test_x[contents]`, `tests/unit/test_store.py`, "
        "`genai_magics/messages.py`, `caching.new_chain_pays`; run `tests/vscode/` after setup"
    )
    assert insides(text) == [
        "test_replay",
        "::test_x",
        "tests/unit/test_store.py",
        "genai_magics/messages.py",
        "caching.new_chain_pays",
    ]


def test_the_tests_named_in_development_md_exist():
    """Where each documented behaviour is tested: every file and test function it names is there."""
    text = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    section = text[text.index("## Where each documented behaviour is tested") :]
    missing = []
    for path, name in re.findall(r"`(tests/[\w/]+\.py)(?:::(test_\w+))?", section):
        source = ROOT / path
        if not source.exists() or name and not re.search(rf"def {name}\b", source.read_text(encoding="utf-8")):
            missing.append(f"{path}::{name}" if name else path)
    assert missing == []
