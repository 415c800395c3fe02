"""Count the tests' asserts on English sentences the package says (issue 31: at most 35).

An assert counts when its condition (not its failure message) holds a string constant of three or
more words (whitespace-separated tokens with a letter in them: ``x = 1`` is one word) that is a
piece of a string literal in ``genai_magics/`` (f-strings' fixed parts included), unless the
constant is an input rather than a comparison: an argument of a call (``k.run("%gemini debug on")``)
other than the string methods that compare (``startswith``, ``endswith``, ``count``, ``find``,
``index``). Such an assert copies the sentence instead of asking the catalogue for it
(``messages.NAME.render(...)``, ``.within``, ``.matches``, ``.parse``).

    python scripts/prose_asserts.py        # the count, and the count per file
    python scripts/prose_asserts.py -v     # every assert counted, with the sentence
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMPARING = {"startswith", "endswith", "count", "find", "rfind", "index", "rindex"}


def package_literals() -> str:
    texts = []
    for path in sorted((ROOT / "genai_magics").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                texts.append(node.value)
    return "\0".join(texts)


def _words(text: str) -> int:
    return sum(any(c.isalpha() for c in word) for word in text.split())


def _inputs(test: ast.expr) -> set[int]:
    """ids of the nodes passed as arguments to calls that do not compare."""
    passed = set()
    for node in ast.walk(test):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in COMPARING:
                continue
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                passed |= {id(n) for n in ast.walk(arg)}
    return passed


def prose_asserts(literals: str) -> list[tuple[Path, int, str]]:
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Assert):
                continue
            inputs = _inputs(node.test)
            for sub in ast.walk(node.test):
                if (
                    isinstance(sub, ast.Constant)
                    and isinstance(sub.value, str)
                    and id(sub) not in inputs
                    and _words(sub.value) >= 3
                    and sub.value in literals
                ):
                    found.append((path.relative_to(ROOT), node.lineno, sub.value))
                    break
    return found


def main() -> None:
    found = prose_asserts(package_literals())
    if "-v" in sys.argv:
        for path, line, text in found:
            print(f"{path}:{line}: {text!r}")
    print(f"{len(found)} asserts on English sentences")
    for path, count in Counter(path for path, _, _ in found).most_common():
        print(f"{count:4} {path}")


if __name__ == "__main__":
    main()
