"""The folders are the architecture: engine/ is pure and the layers import downwards only."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "genai_magics"
# A layer may import itself and the layers listed for it, nothing above.
# messages.py (the sentences a user reads) is below every layer: each may use it.
ALLOWED = {
    "engine": {"engine", "messages"},
    "sources": {"sources", "engine", "messages"},
    "gemini": {"gemini", "engine", "messages"},
    "frontends": {"frontends", "engine", "messages"},
    "ui": {"ui", "frontends", "engine", "messages"},
    "persistence": {"persistence", "engine", "messages"},
}
FORBIDDEN_IN_ENGINE = ("IPython", "ipywidgets", "ipykernel", "google", "httpx", "traitlets")


def _imports(path: Path) -> list[tuple[int, str]]:
    """(level, dotted module) of every import in the file, lazy ones included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(0, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.module is None:  # from . import x
                found += [(node.level, alias.name) for alias in node.names]
            else:
                found.append((node.level, node.module))
    return found


def _layer_of(path: Path, level: int, module: str) -> str | None:
    """The genai_magics layer an import reaches, or None outside the package."""
    if level == 0:
        parts = module.split(".")
        return parts[1] if parts[0] == "genai_magics" and len(parts) > 1 else None
    here = path.relative_to(PACKAGE).parts[:-1]
    base = here[: len(here) - (level - 1)]
    target = (*base, *module.split("."))
    return target[0] if target else None


def test_engine_imports_nothing_outside_itself():
    for path in (PACKAGE / "engine").glob("*.py"):
        for level, module in _imports(path):
            assert module.split(".")[0] not in FORBIDDEN_IN_ENGINE, f"{path.name} imports {module}"
            layer = _layer_of(path, level, module)
            assert level == 0 and layer is None or layer in ("engine", "messages"), (
                f"{path.name} imports {module} (level {level})"
            )


def test_layers_import_downwards_only():
    for layer, allowed in ALLOWED.items():
        for path in (PACKAGE / layer).glob("*.py"):
            for level, module in _imports(path):
                reached = _layer_of(path, level, module)
                if level or reached is not None:
                    assert reached in allowed, f"{layer}/{path.name} imports {module}: {reached} is not below {layer}"


def test_stand_in_is_standard_library_only():
    # It ships in the wheel but serves tests, the demo and benchmarks: nothing beyond the standard
    # library, its own modules, the pure engine and the package's default model name (which it serves).
    for path in (PACKAGE / "stub").glob("*.py"):
        for level, module in _imports(path):
            if level == 0:
                assert module.split(".")[0] in sys.stdlib_module_names, f"stub/{path.name} imports {module}"
            else:
                reached = _layer_of(path, level, module)
                assert reached in ("stub", "engine") or module == "gemini.models", f"stub/{path.name} imports {module}"


def test_messages_are_standard_library_only():
    # Every layer imports the catalogue, so it imports nothing of the package and no third party.
    for level, module in _imports(PACKAGE / "messages.py"):
        assert level == 0 and module.split(".")[0] in sys.stdlib_module_names, f"messages.py imports {module}"


# On top of the layers: the IPython face (the magics, their options and flags, the %gemini table,
# load/unload), the modules that import no IPython (a turn, the per-shell state, an edit answer,
# the one-line syntax) and the demo (a kernel's client, from outside).
IPYTHON_FACE = {"__init__.py", "magics.py", "options.py", "magic_flags.py", "line_commands.py"}
NO_IPYTHON = {"session.py", "shell_state.py", "edit_answer.py", "line_syntax.py", "messages.py"}
CLIENT = {"demo.py"}
UI_TOOLKITS = ("IPython", "ipywidgets", "ipykernel", "traitlets")


def test_every_module_on_top_is_either_the_ipython_face_or_free_of_it():
    on_top = {path.name for path in PACKAGE.glob("*.py")}
    named = IPYTHON_FACE | NO_IPYTHON | CLIENT
    assert on_top == named, f"say which a new module is: {on_top ^ named}"
    for name in NO_IPYTHON:
        for level, module in _imports(PACKAGE / name):
            assert level or module.split(".")[0] not in UI_TOOLKITS, f"{name} imports {module}"
