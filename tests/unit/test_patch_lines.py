"""Only ``\\n`` ends a line (issue 15, case 3): a hand edit's ``sourcePatch`` is a patch a strict,
independent applier (GNU ``patch`` at fuzz 0, and one written here) turns into the edited text
exactly, whatever the cell holds: form feed, U+2028, U+2029, U+0085, a lone ``\\r``, CRLF, no
final newline. The stand-in's applier and the shown diff follow the same rule.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from helpers.properties import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from genai_magics.engine.diff import source_patch, unified_diff
from genai_magics.stub.patches import apply_patch
from genai_magics.ui.diff import diff_html

ODD = ["\x0c", "\u2028", "\u2029", "\x85", "\r", "\r\n", "\x0b", "\x1c", "\x1d", "\x1e"]
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$")

piece = st.sampled_from(["a", "b", "x = 1", "def f():", "    return 2", "", " "] + ODD)
line = st.lists(piece, max_size=4).map("".join)
text = st.lists(line, max_size=12).map("\n".join) | st.lists(line, max_size=12).map(lambda ls: "\n".join(ls) + "\n")


def strict_apply(base: str, patch: str) -> str:
    """A unified-diff applier written for this test: lines end at ``\\n`` only, every context and
    removed line must be exactly where its hunk says, every count must add up."""
    lines = base.split("\n")
    lines = [x + "\n" for x in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    plines = patch.split("\n")
    assert plines[-1] == "", "a patch ends with a newline"
    plines = plines[:-1]
    out: list[str] = []
    pos = 0
    i = 0
    while i < len(plines):
        m = HUNK.match(plines[i])
        assert m, f"not a hunk header: {plines[i]!r}"
        old_start, old_len = int(m.group(1)), int(m.group(2) or 1)
        new_len = int(m.group(4) or 1)
        start = old_start - (0 if old_len == 0 else 1)
        assert start >= pos
        out += lines[pos:start]
        pos = start
        i += 1
        seen_old = seen_new = 0
        while i < len(plines) and not HUNK.match(plines[i]):
            tag, body = plines[i][:1], plines[i][1:] + "\n"
            if i + 1 < len(plines) and plines[i + 1] == "\\ No newline at end of file":
                body = body[:-1]
                i += 1
            if tag in (" ", "-"):
                assert pos < len(lines) and lines[pos] == body, (
                    f"line {pos + 1} is {lines[pos : pos + 1]}, not {body!r}"
                )
                pos += 1
                seen_old += 1
                if tag == " ":
                    out.append(body)
                    seen_new += 1
            else:
                assert tag == "+", f"bad patch line {plines[i]!r}"
                out.append(body)
                seen_new += 1
            i += 1
        assert (seen_old, seen_new) == (old_len, new_len), "hunk counts"
    return "".join(out + lines[pos:])


def gnu_patch(tmp_path, base: str, patch: str) -> str:
    (tmp_path / "cell").write_bytes(base.encode("utf-8"))
    (tmp_path / "p").write_bytes(f"--- cell\n+++ cell\n{patch}".encode())
    run = subprocess.run(
        ["patch", "--posix", "--binary", "--batch", "-F0", "-s", "-r", "-", "-o", "out", "cell", "p"],
        cwd=tmp_path,
        capture_output=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return (tmp_path / "out").read_bytes().decode("utf-8")


@settings(max_examples=examples(400), deadline=None)
@given(base=text, edited=text)
@example(base="a\x0cb\nc\n", edited="a\x0cb\nc\nd\n")
@example(base="x\u2028y\nz", edited="x\u2028y\nZ")
@example(base="one\rtwo\nthree\n", edited="one\rtwo\nthree\nfour")
@example(base="a\r\nb\r\n\x85c\n", edited="a\r\nB\r\n\x85c\n")
@example(base="p\u2029q\n", edited="p\u2029q")
def test_a_source_patch_applied_strictly_gives_the_edited_text_exactly(base, edited):
    patch = source_patch(base, edited)
    if base == edited:
        assert patch == ""
        return
    assert strict_apply(base, patch) == edited
    assert apply_patch(base, patch) == edited  # the stand-in's model holds the same text


@pytest.mark.skipif(shutil.which("patch") is None, reason="GNU patch is not installed (apt-get install patch)")
@settings(max_examples=examples(120), deadline=None)
@given(base=text, edited=text)
@example(base="def f():\n\x0c\n    return 1\n", edited="def f():\n\x0c\n    return 2\n")
@example(base="a\u2028b\rc\n", edited="a\u2028b\rC\n")
def test_gnu_patch_at_fuzz_zero_turns_the_base_into_the_edited_text(tmp_path_factory, base, edited):
    if base == edited:
        return
    assert gnu_patch(tmp_path_factory.mktemp("p"), base, source_patch(base, edited)) == edited


def test_the_shown_diff_breaks_lines_where_the_patch_does():
    base, proposal = "a = 1\x0cb = 2\u2028c\n", "a = 1\x0cb = 3\u2028c\n"
    diff = unified_diff(base, proposal, "In[1]")
    assert diff.count("\n") == 5  # two headers, the hunk header, the removed and the added line
    body = diff_html(diff)
    assert body.count("\n") == 4  # five rows, and each hidden break is marked, never a line of its own
    assert body.count(">U+000C</span>") == 2 and body.count(">U+2028</span>") == 2


@pytest.mark.parametrize(
    "base, proposal, marked",
    [
        ("a = 1", "a = 2", False),  # a cell never ends in a newline: no mark on every diff
        ("", "a = 1", False),  # a new cell
        ("a = 1\nb = 2\n", "a = 1\nb = 3\n", False),
        ("a = 1\n", "a = 1", True),  # only the final newline changed: the mark is the change
        ("a = 1", "a = 2\n", True),
    ],
)
def test_the_shown_diff_marks_a_missing_final_newline_only_where_the_two_texts_differ_in_it(base, proposal, marked):
    diff = unified_diff(base, proposal, "In[1]")
    assert ("No newline at end of file" in diff) is marked
    assert diff.endswith("\n") and all(not line.startswith("\\") or marked for line in diff.splitlines())
