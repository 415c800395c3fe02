"""--vars: compact, deterministic, capped variable summaries, each its own hashed piece."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.properties import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from genai_magics import messages
from genai_magics.engine.context import ContextPiece
from genai_magics.engine.conversation import Conversation
from genai_magics.engine.errors import UserError
from genai_magics.sources.variables import interpolated_names, parse_var_list, summarize, variable_pieces

ROOT = Path(__file__).resolve().parents[2]
CAP = 2_000


def _python(code: str, **env: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


# -- plain values ---------------------------------------------------------------
def test_plain_values_type_name_first() -> None:
    assert summarize(42, "x", CAP) == "int\n42"
    assert summarize("hi", "s", CAP) == "str len=2\n'hi'"
    d = summarize({"a": [1, 2, 3], "b": None}, "d", CAP)
    assert d == "dict len=2\n{'a': [1, 2, 3], 'b': None}"
    long = summarize(list(range(1000)), "l", CAP)
    assert long.startswith("list len=1000\n[0, 1, 2,") and "+992" in long


def test_deterministic_across_processes_even_for_sets() -> None:
    """Sets iterate in hash order, which changes with PYTHONHASHSEED: the summary must not."""
    code = """
        from genai_magics.sources.variables import summarize
        print(summarize({"pear", "apple", "fig", "kiwi", 3, 1.5, ("t", 1)}, "s", 500))
        print(summarize(frozenset(f"w{i}" for i in range(50)), "f", 500))
    """
    outs = {_python(code, PYTHONHASHSEED=seed) for seed in ("1", "2", "3")}
    assert len(outs) == 1, outs
    assert "'apple', 'fig', 'kiwi', 'pear'" in outs.pop()


def test_default_repr_has_no_address_and_shows_attributes() -> None:
    class Model:
        def __init__(self) -> None:
            self.alpha = 0.5
            self.layers = [3, 4]

    a, b = summarize(Model(), "m", CAP), summarize(Model(), "m", CAP)
    assert a == b  # equal state, different objects: same summary, same hash
    assert "0x" not in a
    assert a.endswith("attributes: {'alpha': 0.5, 'layers': [3, 4]}")


def test_repr_that_raises_does_not_crash() -> None:
    class Bad:
        def __repr__(self) -> str:
            raise ValueError("nope")

    assert summarize(Bad(), "b", CAP).endswith("<repr failed: ValueError: nope>")
    nested = summarize([1, Bad()], "l", CAP)
    assert nested == "list len=2\n[1, <repr failed: ValueError: nope>]"


# -- caps -------------------------------------------------------------------------
def test_deeply_nested_objects_are_capped_without_recursion_error() -> None:
    deep: list = []
    for _ in range(10_000):
        deep = [deep]
    assert summarize(deep, "deep", CAP) == "list len=1\n[[[<list len=1>]]]"

    d: dict = {}
    for i in range(10_000):
        d = {"k": d, "i": i}
    text = summarize(d, "d", CAP)
    assert text.startswith("dict len=2\n{'k': {'k': {'k': <dict len=2>")

    @dataclass
    class Node:
        nxt: object

    node = None
    for _ in range(10_000):
        node = Node(node)
    text = summarize(node, "node", 300)  # its generated repr recurses 10,000 deep
    assert text.startswith(f"{Node.__module__}.{Node.__qualname__}\n<repr failed: RecursionError")
    assert len(text) <= 300

    loop: list = [1]
    loop.append(loop)
    assert summarize(loop, "loop", CAP) == "list len=2\n[1, <recursive>]"


def test_huge_strings_and_ints_are_cheap_and_capped() -> None:
    t0 = time.perf_counter()
    s = summarize("x" * 50_000_000, "s", 300)
    n = summarize(10**20_000, "n", 300)
    assert time.perf_counter() - t0 < 1.0
    assert s.startswith("str len=50000000\n'xxx") and len(s) <= 300
    assert n.startswith("int\n<int of ") and len(n) <= 300


leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=50), st.binary(max_size=20)
)
nested = st.recursive(
    leaf,
    lambda kids: st.one_of(
        st.lists(kids, max_size=12),
        st.tuples(kids, kids),
        st.dictionaries(st.text(max_size=8), kids, max_size=12),
        st.frozensets(st.integers(), max_size=12),
    ),
    max_leaves=60,
)


@settings(max_examples=examples(150), deadline=None)
@given(value=nested, cap=st.integers(min_value=0, max_value=400))
def test_hard_cap_and_determinism_on_any_nested_value(value, cap) -> None:
    text = summarize(value, "v", cap)
    assert len(text) <= cap
    assert text == summarize(value, "v", cap)
    if cap >= 40:
        assert text.startswith(type(value).__name__)


# -- optional libraries are never imported --------------------------------------
def test_plain_values_import_no_pandas_numpy_or_polars() -> None:
    out = _python(
        """
        import sys
        from genai_magics.sources.variables import summarize, variable_pieces
        class Obj:
            def __init__(self):
                self.x = 1
        ns = {"n": 3, "l": [1, [2, {3}]], "d": {"a": (1, 2.5)}, "s": "text", "o": Obj(), "f": 1.5}
        for p in variable_pieces(sorted(ns), ns, 500):
            assert p.text, p
        print(",".join(m for m in ("pandas", "numpy", "polars") if m in sys.modules) or "none")
        """
    )
    assert out == "none"


# -- numpy / pandas / polars ------------------------------------------------------
def test_numpy_array_shape_dtype_and_first_values() -> None:
    np = __import__("numpy")
    text = summarize(np.arange(12, dtype=np.int16).reshape(3, 4), "a", CAP)
    assert text == ("numpy.ndarray shape=(3, 4) dtype=int16\nfirst values (flat): [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, … +2]")
    big = np.zeros((4_000, 4_000), dtype=np.float32)[::2, ::3]  # non-contiguous view
    t0 = time.perf_counter()
    text = summarize(big, "big", 200)
    assert time.perf_counter() - t0 < 0.5
    assert text.startswith("numpy.ndarray shape=(2000, 1334) dtype=float32") and len(text) <= 200
    inside = summarize({"w": np.ones((5, 5))}, "d", CAP)
    assert inside == "dict len=1\n{'w': <numpy.ndarray shape=(5, 5)>}"


@pytest.fixture(scope="module")
def huge_frame():
    pd = __import__("pandas")
    np = __import__("numpy")
    n = 10_000_000
    return pd.DataFrame({"a": np.arange(n, dtype=np.int32), "b": np.zeros(n, dtype=np.float32)})


def test_ten_million_row_frame_is_fast_capped_and_never_rendered_whole(huge_frame, monkeypatch) -> None:
    pd = __import__("pandas")

    def refuse(method):
        def guarded(self, *args, **kwargs):
            assert len(self) <= 100, f"{method.__name__} on {len(self):,} rows"
            return method(self, *args, **kwargs)

        return guarded

    for cls in (pd.DataFrame, pd.Series):
        for name in ("__repr__", "to_string", "__str__"):
            monkeypatch.setattr(cls, name, refuse(getattr(cls, name)))

    t0 = time.perf_counter()
    text = summarize(huge_frame, "df", 600)
    elapsed = time.perf_counter() - t0
    assert elapsed < 1.0, elapsed
    assert len(text) <= 600
    lines = text.splitlines()
    assert lines[0] == "pandas.DataFrame shape=(10000000, 2)"
    assert lines[1] == "columns: a:int32, b:float32"
    assert lines[2] == "head(5):"
    assert lines[3].split() == ["a", "b"]
    assert lines[4].split() == ["0", "0", "0.0"]
    assert len(lines) == 3 + 1 + 5
    assert summarize(huge_frame, "df", 100) == text[:99] + "…"

    series = summarize(huge_frame["a"], "a", 600)
    assert series.startswith("pandas.Series name='a' length=10000000 dtype=int32\nhead(5):\n0    0\n")


def test_wide_frame_lists_a_bounded_number_of_columns() -> None:
    pd = __import__("pandas")
    wide = pd.DataFrame([[1] * 5_000], columns=[f"c{i}" for i in range(5_000)])
    text = summarize(wide, "w", 100_000)
    assert "c39:int64, … +4960 columns" in text and "c40:" not in text
    assert len(text) < 3_000  # bounded by the column limits, not only by the cap


def test_frame_piece_hash_changes_with_a_new_column_only(huge_frame) -> None:
    df = huge_frame.iloc[:1000].copy()
    ns = {"df": df, "x": 5}
    first = {p.name: p for p in variable_pieces(["df", "x"], ns, CAP)}
    again = {p.name: p for p in variable_pieces(["df", "x"], ns, CAP)}
    assert first == again
    df["c"] = 1
    changed = {p.name: p for p in variable_pieces(["df", "x"], ns, CAP)}
    assert changed["df"].sha256 != first["df"].sha256
    assert "c:int64" in changed["df"].text
    assert changed["x"].sha256 == first["x"].sha256


def test_polars_frame_when_installed() -> None:
    pl = __import__("polars")
    df = pl.DataFrame({"a": list(range(100)), "b": ["x"] * 100})
    text = summarize(df, "p", CAP)
    assert text.startswith("polars.DataFrame shape=(100, 2)\ncolumns: a:Int64, b:String\nhead(5)")
    assert "(4, 'x')" in text and "(5, 'x')" not in text


# -- pieces and the conversation ------------------------------------------------
def test_variable_pieces_shape_and_unknown_name() -> None:
    ns = {"df": [1, 2], "x": 3}
    pieces = variable_pieces(["x", "df", "x"], ns, CAP)
    assert [(p.field, p.name, p.key) for p in pieces] == [
        ("variables", "x", "variables:x"),
        ("variables", "df", "variables:df"),
    ]
    assert pieces[0] == ContextPiece("variables", "int\n3", name="x")
    with pytest.raises(UserError) as info:
        variable_pieces(["x", "nope"], ns, CAP)
    assert info.value.message is messages.NO_SUCH_VARIABLE and info.value.fields == {"name": "nope"}


def test_follow_up_sends_only_changed_summaries() -> None:
    ns: dict[str, object] = {"df": {"a": [1, 2]}, "model": "linear", "x": 1}
    conv = Conversation("vars")
    plan = conv.plan_turn("ask", "q1", None, variable_pieces(["df", "model", "x"], ns, CAP))
    assert set(plan.payload["variables"]) == {"df", "model", "x"}
    conv.commit(plan, "a1")

    ns["x"] = 2
    plan = conv.plan_turn("ask", "q2", None, variable_pieces(["df", "model", "x"], ns, CAP))
    assert plan.payload["variables"] == {"x": "int\n2"}
    assert sorted(p.name for p in plan.omitted) == ["df", "model"]
    conv.commit(plan, "a2")

    plan = conv.plan_turn("ask", "q3", None, variable_pieces(["df", "model", "x"], ns, CAP))
    assert "variables" not in plan.payload and len(plan.omitted) == 3


# -- parsing ----------------------------------------------------------------------
def test_parse_var_list() -> None:
    assert parse_var_list("df, model,x") == ["df", "model", "x"]
    assert parse_var_list(" df  model,df, ") == ["df", "model"]
    for bad, message, fields in [
        ("obj.attr", messages.NOT_A_VARIABLE_NAME, {"item": "obj.attr", "hint": messages.NO_ATTRIBUTES.render()}),
        ("df,1x", messages.NOT_A_VARIABLE_NAME, {"item": "1x", "hint": ""}),
        ("class", messages.NOT_A_VARIABLE_NAME, {"item": "class", "hint": ""}),
        ("df[0]", messages.NOT_A_VARIABLE_NAME, {"item": "df[0]", "hint": ""}),
        (" , ", messages.NO_VARIABLE_NAMES, {}),
    ]:
        with pytest.raises(UserError) as info:
            parse_var_list(bad)
        assert (info.value.message, info.value.fields) == (message, fields)


def test_interpolated_names() -> None:
    prompt = "Plot {df} by {col:>10} and {x!r}; not {{literal}}, but {{{y}}}; {a.b} {c[0]} {} {0} {df} { z }"
    assert interpolated_names(prompt) == ["df", "col", "x", "y"]
    assert interpolated_names("def f(): return {'a': 1}") == []
    assert interpolated_names("{class} {données}") == ["données"]
