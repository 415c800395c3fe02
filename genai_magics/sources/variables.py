"""Compact, deterministic summaries of notebook variables (``--vars``, ``{name}``).

Each variable travels as its own context piece (field ``variables``, entry
``name``), so a follow-up sends only the summaries whose hash changed.

A summary is bounded in both size and work: a 10-million-row DataFrame is
described from its shape, the dtypes of its first columns and ``head()`` only;
containers are walked to a fixed depth and item count; every repr is guarded.
Optional libraries (pandas, numpy, polars) are never imported here: a value is
only treated as one of theirs when that library is already in ``sys.modules``.

A value is classified by ``type()``, never ``isinstance``: ``isinstance`` reads
``__class__``, which a lazy object (Django's ``settings``, a ``lazy_object_proxy``)
answers by loading itself, or by raising.
"""

from __future__ import annotations

import heapq
import keyword
import re
import reprlib
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import messages
from ..engine.context import ContextPiece
from ..engine.errors import UserError
from ..engine.redaction import redact
from ..engine.text import ELLIPSIS, clip, key_room, one_line, sendable
from .bounds import Deadline, PastBound

VARIABLES_FIELD = "variables"
VARIABLE_LIST_FIELD = "variableList"

_HEAD_ROWS = 5  # rows of a DataFrame / Series shown
_MAX_COLUMNS = 40  # columns whose dtypes are listed
_HEAD_COLUMNS = 12  # columns shown in the head rows
_CELL_WIDTH = 40  # max width of one rendered DataFrame cell
_ITEMS = 8  # items shown per container level
_DEPTH = 3  # container levels walked
_SCALAR_CHARS = 200  # one nested scalar's repr
_ARRAY_ITEMS = 10  # first values of an ndarray
_SORT_LIMIT = 100_000  # sets larger than this are shown in iteration order
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


# -- helpers ----------------------------------------------------------------
def _type_name(value: object) -> str:
    t = type(value)
    module = getattr(t, "__module__", "") or ""
    qualname = getattr(t, "__qualname__", t.__name__)
    if module == "builtins":
        return qualname
    top = module.split(".")[0]
    if top in ("pandas", "numpy", "polars"):
        # pandas.core.frame.DataFrame -> pandas.DataFrame: the public name
        return f"{top}.{qualname}"
    return f"{module}.{qualname}"


def _safe_repr(value: Any, limit: int) -> str:
    """A truncated repr that never raises and never recurses without bound."""
    try:
        if _is(value, (str, bytes, bytearray)):
            # never the repr of a huge string; room past the cut for a key there to be masked whole
            text = repr(value[: limit + 1 + key_room()])
        elif type(value) is int and value.bit_length() > 4 * limit:
            text = f"<int of {value.bit_length()} bits>"  # decimal digits cost time and tokens
        elif type(value).__name__ in ("deque", "array"):
            r = _MaskedRepr()  # reprlib knows these: level- and item-capped
            r.maxlevel, r.maxdeque, r.maxarray = _DEPTH, _ITEMS, _ITEMS
            r.maxother = r.maxstring = r.maxlong = max(limit, 12)
            text = r.repr(value)
        else:
            text = repr(value)
    except (KeyboardInterrupt, SystemExit, PastBound):
        raise
    except BaseException as exc:  # noqa: BLE001 - a user's __repr__ may raise anything
        text = f"<repr failed: {type(exc).__name__}: {_exc_text(exc)}>"
    if not isinstance(text, str):
        text = f"<repr failed: returned {type(text).__name__}>"
    # Memory addresses differ between two equal objects (and between runs):
    # they carry nothing for the model and would change the hash needlessly.
    return clip(_ADDRESS.sub("", text), limit)


class _MaskedRepr(reprlib.Repr):
    """reprlib's repr with each string masked before reprlib cuts it in the middle."""

    def repr_str(self, x: str, level: int) -> str:
        return super().repr_str(redact(x), level)


def _masked(value: Any) -> object:
    """A table cell masked before pandas cuts it at its column width."""
    return redact(value) if _is(value, str) else value


def _exc_text(exc: BaseException) -> str:
    try:
        return one_line(str(exc), 120)
    except PastBound:
        raise
    except BaseException:  # noqa: BLE001
        return "?"


def _guard(render: Callable[[], str], what: str) -> str:
    try:
        return render()
    except (KeyboardInterrupt, SystemExit, PastBound):
        raise
    except BaseException as exc:  # noqa: BLE001
        return f"<{what} failed: {type(exc).__name__}: {_exc_text(exc)}>"


def _loaded(module: str) -> Any:
    """The already imported module, or None: never imports it."""
    return sys.modules.get(module)


def _is(value: object, kinds: type | tuple[type, ...]) -> bool:
    """``isinstance`` by the value's real type: nothing of the value runs (no ``__class__`` read)."""
    return issubclass(type(value), kinds)


def _is_instance(value: object, module: str, cls: str) -> bool:
    mod = _loaded(module)
    target = getattr(mod, cls, None) if mod is not None else None
    return isinstance(target, type) and issubclass(type(value), target)


# -- containers -------------------------------------------------------------
def _ordered(value: set | frozenset) -> tuple[list[object], bool]:
    """The first items of a set in a deterministic order (sets iterate by hash)."""
    if len(value) > _SORT_LIMIT:
        return [x for _, x in zip(range(_ITEMS), value, strict=False)], False
    try:
        return heapq.nsmallest(_ITEMS, value), True
    except Exception:  # noqa: BLE001 - mixed types: order by type name and repr
        keyed = [((_type_name(x), _safe_repr(x, _SCALAR_CHARS)), i) for i, x in enumerate(value)]
        items = list(value)
        return [items[i] for _, i in heapq.nsmallest(_ITEMS, keyed)], True


def _render(value: Any, depth: int, path: set[int]) -> str:
    """One nested value, bounded in depth, items and characters."""
    if _is(value, (list, tuple, dict, set, frozenset)):
        if id(value) in path:
            return "<recursive>"
        if depth >= _DEPTH:
            return f"<{_type_name(value)} len={len(value)}>"
        path = path | {id(value)}
        n = len(value)
        if _is(value, dict):
            parts = [
                f"{_render(k, depth + 1, path)}: {_render(v, depth + 1, path)}" for k, v in _first(value.items(), n)
            ]
            open_, close = "{", "}"
        elif _is(value, (set, frozenset)):
            items, _ = _ordered(value)
            parts = [_render(x, depth + 1, path) for x in items]
            open_, close = "{", "}"
        else:
            parts = [_render(x, depth + 1, path) for x in _first(value, n)]
            open_, close = ("[", "]") if _is(value, list) else ("(", ")")
        if n > _ITEMS:
            parts.append(f"{ELLIPSIS} +{n - _ITEMS}")
        body = ", ".join(parts)
        if type(value) in (list, tuple, dict, set, frozenset):
            return f"{open_}{body}{close}"
        return f"{_type_name(value)}({open_}{body}{close})"
    if _is_array_like(value):
        # A frame or array inside a container: its shape, never its repr.
        array: Any = value
        return f"<{_type_name(value)} shape={_guard(lambda: str(tuple(array.shape)), 'shape')}>"
    return _safe_repr(value, _SCALAR_CHARS)


def _is_array_like(value: object) -> bool:
    top = (getattr(type(value), "__module__", "") or "").split(".")[0]
    return top in ("pandas", "numpy", "polars") and hasattr(type(value), "shape") and not _is_scalar(value)


def _is_scalar(value: object) -> bool:
    np = _loaded("numpy")
    generic = getattr(np, "generic", None) if np is not None else None
    return isinstance(generic, type) and _is(value, generic)


def _first(items, n: int) -> list:
    out = []
    for i, x in enumerate(items):
        if i >= min(n, _ITEMS):
            break
        out.append(x)
    return out


def _container(value: list | tuple | dict | set | frozenset) -> str:
    head = f"{_type_name(value)} len={len(value)}"
    if _is(value, (set, frozenset)) and len(value) > _SORT_LIMIT:
        head += " (unordered sample)"
    return f"{head}\n{_render(value, 0, set())}"


# -- pandas / polars / numpy ------------------------------------------------
def _pandas_frame(df: Any) -> str:
    rows, cols = df.shape
    lines = [f"{_type_name(df)} shape=({rows}, {cols})"]
    # dtypes is per column, not per row: cheap however long the frame is
    dtypes = ", ".join(
        f"{clip(str(c), 60)}:{t!s}"
        for c, t in zip(df.columns[:_MAX_COLUMNS], df.dtypes.iloc[:_MAX_COLUMNS], strict=False)
    )
    more = f", {ELLIPSIS} +{cols - _MAX_COLUMNS} columns" if cols > _MAX_COLUMNS else ""
    lines.append(f"columns: {dtypes or '(none)'}{more}")
    index = df.index
    if type(index).__name__ != "RangeIndex" or index.name is not None:
        lines.append(f"index: {type(index).__name__} name={index.name!r} dtype={index.dtype}")
    if rows and cols:
        head = df.iloc[:_HEAD_ROWS, :_HEAD_COLUMNS]
        head = head.map(_masked) if hasattr(head, "map") else head.applymap(_masked)  # pandas < 2.1: applymap
        lines.append(
            f"head({min(rows, _HEAD_ROWS)}):\n"
            + _guard(lambda: head.to_string(max_colwidth=_CELL_WIDTH, show_dimensions=False), "head")
        )
    return "\n".join(lines)


def _pandas_series(s: Any) -> str:
    lines = [f"{_type_name(s)} name={s.name!r} length={len(s)} dtype={s.dtype}"]
    if len(s):
        head = s.iloc[:_HEAD_ROWS].map(_masked)
        lines.append(f"head({len(head)}):\n" + _guard(lambda: head.to_string(max_rows=_HEAD_ROWS), "head"))
    return "\n".join(lines)


def _polars_frame(df: Any) -> str:
    rows, cols = df.shape
    lines = [f"{_type_name(df)} shape=({rows}, {cols})"]
    schema = list(zip(df.columns[:_MAX_COLUMNS], df.dtypes[:_MAX_COLUMNS], strict=False))
    more = f", {ELLIPSIS} +{cols - _MAX_COLUMNS} columns" if cols > _MAX_COLUMNS else ""
    lines.append("columns: " + ", ".join(f"{clip(str(c), 60)}:{t}" for c, t in schema) + more)
    if rows and cols:
        head = df.head(_HEAD_ROWS).select(df.columns[:_HEAD_COLUMNS])

        def rows_text() -> str:
            return "\n".join("(" + ", ".join(_render(v, 1, set()) for v in row) + ")" for row in head.rows())

        lines.append(f"head({head.height}) rows as tuples:\n" + _guard(rows_text, "head"))
    return "\n".join(lines)


def _polars_series(s: Any) -> str:
    lines = [f"{_type_name(s)} name={s.name!r} length={len(s)} dtype={s.dtype}"]
    if len(s):
        lines.append("head: " + _guard(lambda: _render(s.head(_HEAD_ROWS).to_list(), 0, set()), "head"))
    return "\n".join(lines)


def _ndarray(a: Any) -> str:
    line = f"{_type_name(a)} shape={tuple(a.shape)} dtype={a.dtype}"
    if a.size == 0:
        return line
    first = a.flat[:_ARRAY_ITEMS].tolist()  # a copy of the first few only
    more = f", {ELLIPSIS} +{a.size - len(first)}" if a.size > len(first) else ""
    values = ", ".join(_render(v, 1, set()) for v in first)
    return f"{line}\nfirst values (flat): [{values}{more}]"


def _plain_object(value: object) -> str:
    text = _safe_repr(value, 1_000)
    t = type(value)
    if getattr(t, "__repr__", None) is object.__repr__ and isinstance(getattr(value, "__dict__", None), dict):
        # The default repr says nothing: show the public attributes instead.
        attrs = {k: v for k, v in vars(value).items() if not str(k).startswith("_")}
        if attrs:
            text += "\nattributes: " + _render(attrs, 0, set())
    return text


def _body(value: Any) -> str:
    if _is(value, (str, bytes, bytearray)):
        return f"{_type_name(value)} len={len(value)}\n{_safe_repr(value, 1_000)}"
    if _is(value, (list, tuple, dict, set, frozenset)):
        return _container(value)
    # isinstance against a module already in sys.modules: subclasses from
    # other packages (geopandas, ...) count too, and nothing is imported.
    if _is_instance(value, "pandas", "DataFrame"):
        return _pandas_frame(value)
    if _is_instance(value, "pandas", "Series"):
        return _pandas_series(value)
    if _is_instance(value, "polars", "DataFrame"):
        return _polars_frame(value)
    if _is_instance(value, "polars", "Series"):
        return _polars_series(value)
    if _is_instance(value, "numpy", "ndarray"):
        return _ndarray(value)
    return f"{_type_name(value)}\n{_plain_object(value)}"


# -- public API -------------------------------------------------------------
def summarize(value: object, name: str, max_chars: int) -> str:
    """A compact, deterministic summary of ``value``, type name first, at most ``max_chars`` long.

    ``name`` is the variable's name: the summary travels under it (the entry of
    the ``variables`` field), so the text itself does not repeat it.
    """
    text = _guard(lambda: _body(value), f"summary of {name}")
    return clip(sendable(text), max_chars)


def variable_pieces(names: Sequence[str], namespace: Mapping[str, object], max_chars: int) -> list[ContextPiece]:
    """One ``variables`` piece per name (duplicates dropped), each with its own hash."""
    pieces: list[ContextPiece] = []
    seen: set[str] = set()
    for name in names:
        if name in seen:
            continue
        seen.add(name)
        try:
            value = namespace[name]
        except KeyError:
            raise UserError(messages.NO_SUCH_VARIABLE, name=name) from None
        pieces.append(ContextPiece(VARIABLES_FIELD, summarize(value, name, max_chars), name=name))
    return pieces


_IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})


def _listed(name: str, value: object, hidden: Mapping[str, object]) -> bool:
    """A user's variable: not a module, function or class, not IPython's own, no leading underscore."""
    if name.startswith("_") or name in _IPYTHON_NAMES or (name in hidden and hidden[name] is value):
        return False
    return not _is(value, (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType))


def _brief(value: Any) -> str:
    """Type, shape or length, and size in bytes (each guarded, as every summary is)."""
    parts = [_type_name(value)]
    if _is_array_like(value):
        array: Any = value
        parts.append("shape=" + _guard(lambda: str(tuple(array.shape)), "shape"))
    elif _is(value, (str, bytes, bytearray, list, tuple, dict, set, frozenset)):
        parts.append(f"len={len(value)}")
    parts.append("size=" + _guard(lambda: str(_size(value)), "size"))
    return " ".join(parts)


def _size(value: Any) -> int:
    """Bytes, never walking a frame's values (pandas' own ``__sizeof__`` is deep: O(rows) on object columns)."""
    if _is_instance(value, "pandas", "DataFrame"):
        return int(value.memory_usage(index=True, deep=False).sum())
    if _is_instance(value, "pandas", "Series"):
        return int(value.memory_usage(index=True, deep=False))
    if _is_instance(value, "polars", "DataFrame") or _is_instance(value, "polars", "Series"):
        return int(value.estimated_size())
    if _is_instance(value, "numpy", "ndarray"):
        return int(value.nbytes)
    return sys.getsizeof(value)


def variable_list(
    namespace: Mapping[str, object], hidden: Mapping[str, object], max_chars: int, deadline: Deadline
) -> ContextPiece:
    """``list_variables()``: one line per user variable (name, type, shape or length, size), sorted by name;
    a variable that cannot be described is its own line, the rest are listed; PastBound at the deadline."""
    lines: list[str] = []
    for name in sorted(namespace):
        deadline.check()
        value = namespace[name]
        if _listed(name, value, hidden):
            lines.append(f"{name}: " + _guard(lambda: _brief(value), "listing"))  # noqa: B023 - called at once
    return ContextPiece(VARIABLE_LIST_FIELD, clip(sendable("\n".join(lines) or "(no variables)"), max_chars))


def _is_variable_name(text: str) -> bool:
    return text.isidentifier() and not keyword.iskeyword(text)


def parse_var_list(text: str) -> list[str]:
    """``"df, model,x"`` -> ``["df", "model", "x"]`` (commas and/or spaces separate)."""
    names: list[str] = []
    for item in re.split(r"[,\s]+", text.strip()):
        if not item:
            continue
        if not _is_variable_name(item):
            hint = messages.NO_ATTRIBUTES.render() if "." in item else ""
            raise UserError(messages.NOT_A_VARIABLE_NAME, item=item, hint=hint)
        if item not in names:
            names.append(item)
    if not names:
        raise UserError(messages.NO_VARIABLE_NAMES)
    return names


# ``{{`` and ``}}`` are consumed first, so ``{{df}}`` is literal text, not df.
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^\W\d]\w*)(?:![rsa])?(?::[^{}]*)?\}")


def interpolated_names(prompt: str) -> list[str]:
    """Names in ``{name}`` placeholders, in order of first use (plain identifiers only)."""
    names: list[str] = []
    for m in _PLACEHOLDER.finditer(prompt):
        name = m.group(1)
        if name and _is_variable_name(name) and name not in names:
            names.append(name)
    return names
