"""--error: the last exception of a real IPython shell, trimmed to notebook cells, as one hashed piece."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from genai_magics.sources.last_error import (
    DEFAULT_ERROR_PROMPT,
    MAX_TRACEBACK_CHARS,
    LastError,
    capture_last_error,
    error_piece,
)

ROOT = Path(__file__).resolve().parents[2]
IPYTHON_INTERNALS = ("interactiveshell", "run_code", "exec(code_obj", "site-packages", "IPython")


@pytest.fixture
def shell(monkeypatch):
    """The real shell, with no last exception in sys (as in a fresh kernel)."""
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        monkeypatch.delattr(sys, name, raising=False)
    shell = InteractiveShell.instance()
    mode = shell.InteractiveTB.mode
    shell.InteractiveTB.set_mode("Plain")  # what IPython prints is not under test; Context mode is slow
    yield shell
    shell.InteractiveTB.set_mode(mode)


def run(shell: InteractiveShell, code: str) -> int:
    """Run ``code`` as the next cell; its execution count."""
    number = shell.execution_count
    shell.run_cell(code, store_history=True)
    return number


def define_and_fail(shell: InteractiveShell) -> tuple[int, int]:
    a = run(shell, "def le_divide(x):\n    y = 1\n    return y / x\n")
    b = run(shell, "le_value = 0\nle_divide(le_value)\n")
    return a, b


def test_no_error_yet_is_none(shell) -> None:
    assert capture_last_error(shell, lambda f: (None, None)) is None
    run(shell, "le_ok = 1 + 1")
    assert capture_last_error(shell, lambda f: (None, None)) is None


def test_trimmed_to_cell_frames_with_the_exception_line(shell) -> None:
    a, b = define_and_fail(shell)
    err = capture_last_error(shell, lambda f: (None, None))
    assert err == LastError(
        type="ZeroDivisionError",
        message="division by zero",
        traceback=(
            "Traceback (notebook cells only; 1 other frame left out):\n"
            f"  In[{b}], line 2, in <module>\n"
            "    le_divide(le_value)\n"
            f"  In[{a}], line 3, in le_divide\n"
            "    return y / x\n"
            "ZeroDivisionError: division by zero"
        ),
        cell_label=f"In[{a}]",  # the cell whose code raised it
        cell_id=None,
    )
    for internal in IPYTHON_INTERNALS:
        assert internal not in err.traceback


def test_ipykernel_file_names_map_to_cells(shell, monkeypatch) -> None:
    """ipykernel compiles cells under /tmp/ipykernel_<pid>/<hash>.py, not <ipython-input-…>."""
    from ipykernel.compiler import XCachingCompiler

    monkeypatch.setattr(shell, "compile", XCachingCompiler())
    a, b = define_and_fail(shell)
    names = list(shell.compile._filename_map)
    assert all("ipykernel_" in n and n.endswith(".py") for n in names)
    err = capture_last_error(shell, lambda f: (None, None))
    assert err is not None and err.cell_label == f"In[{a}]"
    assert f"  In[{b}], line 2, in <module>\n    le_divide(le_value)\n" in err.traceback
    assert "ipykernel_" not in err.traceback


def test_callback_names_cells_by_id(shell) -> None:
    a, b = define_and_fail(shell)
    by_count = {v: k for k, v in shell.compile._filename_map.items()}
    ids = {by_count[a]: ("cell-def", None), by_count[b]: ("cell-call", "In[call]")}
    err = capture_last_error(shell, lambda f: ids.get(f, (None, None)))
    assert (err.cell_id, err.cell_label) == ("cell-def", f"In[{a}]")  # label from IPython's naming
    assert "  In[call], line 2, in <module>" in err.traceback
    piece = error_piece(err)
    assert piece.text.startswith(f"ZeroDivisionError raised in In[{a}] (cell id cell-def)\nTraceback")

    def broken(filename: str):
        raise RuntimeError("lead's mapping failed")

    fallback = capture_last_error(shell, broken)
    assert fallback.cell_label == f"In[{a}]" and fallback.cell_id is None


def test_same_error_same_sha_new_error_new_sha(shell) -> None:
    a, b = define_and_fail(shell)
    first = error_piece(capture_last_error(shell, lambda f: (None, None)))
    again = error_piece(capture_last_error(shell, lambda f: (None, None)))
    assert (first.field, first.key) == ("lastError", "lastError")
    assert first == again

    run(shell, "le_fine = 2")  # a cell without error does not change the last error
    assert error_piece(capture_last_error(shell, lambda f: (None, None))) == first

    run(shell, "le_undefined_name + 1")
    other = capture_last_error(shell, lambda f: (None, None))
    assert other.type == "NameError" and "le_undefined_name" in other.message
    assert error_piece(other).sha256 != first.sha256

    run(shell, "le_value = 0\nle_divide(le_value)\n")  # the same failure, run again: a new error
    rerun = error_piece(capture_last_error(shell, lambda f: (None, None)))
    assert rerun.sha256 not in (first.sha256, error_piece(other).sha256)


def test_syntax_error_names_the_cell_without_internals(shell) -> None:
    n = run(shell, "le_x = (1,\n")
    err = capture_last_error(shell, lambda f: (None, None))
    assert err.type == "SyntaxError" and err.cell_label == f"In[{n}]"
    assert err.traceback.startswith(f"  In[{n}], line 1\n    le_x = (1,\n")
    assert err.traceback.endswith("SyntaxError: incomplete input")
    for internal in IPYTHON_INTERNALS:
        assert internal not in err.traceback


def test_library_frame_is_named_once_and_cause_is_kept(shell) -> None:
    n = run(
        shell,
        "import json\ntry:\n    json.loads('{')\nexcept ValueError as exc:\n    raise KeyError('config') from exc\n",
    )
    err = capture_last_error(shell, lambda f: (None, None))
    assert err.type == "KeyError" and err.cell_label == f"In[{n}]"
    assert err.traceback.endswith(
        "KeyError: 'config'\n(caused by json.decoder.JSONDecodeError: "
        "Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"
    )
    run(shell, "json.loads('{')")
    err = capture_last_error(shell, lambda f: (None, None))
    assert "  (raised inside json/decoder.py, line " in err.traceback
    assert err.traceback.count("json/") == 1  # only the innermost library frame, no source

    run(shell, "get_ipython().run_line_magic('le_no_such_magic', '')")  # raised inside IPython itself
    err = capture_last_error(shell, lambda f: (None, None))
    assert err.traceback.endswith("UsageError: Line magic function `%le_no_such_magic` not found.")
    assert "raised inside" not in err.traceback and "IPython/" not in err.traceback


def test_caps_hold_for_deep_recursion_and_huge_messages(shell) -> None:
    run(
        shell,
        "def le_ping(n):\n    return le_pong(n - 1) if n else 1 / 0\ndef le_pong(n):\n    return le_ping(n - 1)\n",
    )
    run(shell, "le_ping(150)")  # 150 alternating cell frames: nothing to collapse
    err = capture_last_error(shell, lambda f: (None, None))
    assert err.type == "ZeroDivisionError"
    assert len(err.traceback) <= MAX_TRACEBACK_CHARS
    assert "frames left out" in err.traceback
    assert "    le_ping(150)" in err.traceback  # the outermost cell frame is kept
    assert err.traceback.endswith("    return le_pong(n - 1) if n else 1 / 0\nZeroDivisionError: division by zero")
    assert capture_last_error(shell, lambda f: (None, None)) == err  # deterministic

    run(shell, "def le_self(n):\n    return le_self(n - 1) if n else 1 / 0\nle_self(150)")
    err = capture_last_error(shell, lambda f: (None, None))
    assert "  [previous frame repeated 150 more times]" in err.traceback and len(err.traceback) < 600

    run(shell, "raise ValueError('x' * 100_000)")
    err = capture_last_error(shell, lambda f: (None, None), max_chars=1_500)
    assert len(err.traceback) <= 1_500 and len(err.message) <= 1_000
    assert len(error_piece(err).text) <= 1_600
    tiny = capture_last_error(shell, lambda f: (None, None), max_chars=60)
    assert len(tiny.traceback) == 60 and tiny.traceback.endswith("…")


def test_default_prompt_and_no_ipython_import_at_module_level() -> None:
    assert DEFAULT_ERROR_PROMPT == "Explain this error and how to fix it."
    code = "import sys, genai_magics.sources.last_error; print('IPython' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
