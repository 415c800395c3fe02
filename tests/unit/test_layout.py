"""The folders are the architecture: engine/ is pure and the layers import downwards only."""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "genai_magics"
# A layer may import itself and the layers listed for it, nothing above.
# messages.py (the sentences a user reads) is below every layer: each may use it.
ALLOWED = {
    "engine": {"engine", "messages"},
    "sources": {"sources", "engine", "messages"},
    "gemini": {"gemini", "engine", "messages"},
    "frontends": {"frontends", "engine", "messages"},
    "ui": {"ui", "frontends", "engine", "messages"},
    "persistence": {"persistence", "engine", "messages"},
    # a turn from request to record: every layer of the protocol, none of what the user sees
    "turn": {"turn", "engine", "sources", "gemini", "frontends", "persistence", "messages"},
    # the IPython face: the magics, their flags and options, the shell's state, the %gemini commands
    "kernel": {"kernel", "turn", "engine", "sources", "gemini", "frontends", "persistence", "ui", "messages"},
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


# The root holds only the extension's entry (load/unload), the catalogue of sentences and the demo
# (a kernel's client, from outside); the layers below the IPython face import no UI toolkit.
ROOT = {"__init__.py", "messages.py", "demo.py"}
UI_TOOLKITS = ("IPython", "ipywidgets", "ipykernel", "traitlets")


def test_the_root_holds_the_entry_the_catalogue_and_the_demo():
    assert {path.name for path in PACKAGE.glob("*.py")} == ROOT, "a module belongs in a layer's folder"
    folders = {path.name for path in PACKAGE.iterdir() if path.is_dir() and (path / "__init__.py").exists()}
    assert folders == set(ALLOWED) | {"stub"}, f"say where a new folder sits among the layers: {folders ^ set(ALLOWED)}"


def test_a_turn_imports_no_ui_toolkit():
    for path in (PACKAGE / "turn").glob("*.py"):
        for level, module in _imports(path):
            assert level or module.split(".")[0] not in UI_TOOLKITS, f"turn/{path.name} imports {module}"


def _module_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _target(path: Path, level: int, module: str) -> str:
    if level == 0:
        return module
    base = _module_of(path).split(".")
    if path.name != "__init__.py":
        base = base[:-1]
    return ".".join(base[: len(base) - (level - 1)] + module.split("."))


def test_no_import_cycle():
    # every import counts, lazy and TYPE_CHECKING ones too: a cycle through them is still two modules
    # that know each other
    modules = {_module_of(path): path for path in PACKAGE.rglob("*.py")}
    graph = {
        name: {t for level, m in _imports(path) if (t := _target(path, level, m)) in modules and t != name}
        for name, path in modules.items()
    }
    graph = {name: {t for t in targets if not name.startswith(t + ".")} for name, targets in graph.items()}
    done: set[str] = set()

    def visit(name: str, stack: list[str]) -> None:
        if name in stack:
            raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(name) :] + [name]))
        if name in done:
            return
        for target in sorted(graph[name]):
            visit(target, stack + [name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])


def _layout_section() -> str:
    text = (PACKAGE.parent / "docs" / "development.md").read_text(encoding="utf-8")
    start = text.index("\n## Layout")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def test_development_md_layout_names_every_module_and_no_module_that_is_gone():
    section = _layout_section()
    named = set(re.findall(r"`([\w/]+\.py)`", section))
    modules = [p.relative_to(PACKAGE) for p in PACKAGE.rglob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    unnamed = [
        str(m) for m in modules if m.name not in named and str(m) not in named and f"genai_magics/{m}" not in named
    ]
    assert unnamed == [], f"docs/development.md's Layout does not name {unnamed}"
    repo = PACKAGE.parent
    known = {p.name for p in modules} | {str(m) for m in modules}
    gone = [n for n in named if "/" not in n and n not in known and n != "__init__.py" and not (repo / n).exists()]
    gone += [n for n in named if "/" in n and not (repo / n).exists() and not (PACKAGE / n).exists()]
    gone = [n for n in gone if not any((repo / top / n).exists() for top in ("labextension", "vscode-extension"))]
    assert gone == [], f"docs/development.md's Layout names modules that are not in the tree: {gone}"


# The two TypeScript packages (labextension/ with its tools in labextension/dev/, vscode-extension/) share
# one set of settings: the root's tsconfig.base.json, .prettierrc.json and eslint.base.mjs, one TypeScript.
TS_PACKAGES = ("labextension", "labextension/dev", "vscode-extension")


def _locked_versions(repo: Path, name: str) -> set[str]:
    """The versions of ``name`` the packages' lock files install."""
    found = {
        json.loads((repo / folder / "package-lock.json").read_text())["packages"][f"node_modules/{name}"]["version"]
        for folder in ("labextension/dev", "vscode-extension")
    }
    if name == "typescript":  # the bridge's build installs its own, with jlpm (yarn.lock)
        yarn_lock = (repo / "labextension/yarn.lock").read_text()
        found |= set(re.findall(r'^"typescript@npm:[^"]*":\n  version: (\S+)', yarn_lock, re.M))
    return found


def test_the_typescript_packages_share_one_set_of_settings():
    repo = PACKAGE.parent
    manifests = {folder: json.loads((repo / folder / "package.json").read_text()) for folder in TS_PACKAGES}
    assert {m["devDependencies"]["typescript"] for m in manifests.values()} == {"~5.9.3"}
    tools = manifests["labextension/dev"]["devDependencies"]
    companion = manifests["vscode-extension"]["devDependencies"]
    assert {k: v for k, v in companion.items() if k in tools} == tools, "the tools both packages use differ"
    for name in tools:
        assert len(_locked_versions(repo, name)) == 1, f"the lock files install two versions of {name}"
    for tsconfig in (
        "labextension/tsconfig.json",
        "labextension/dev/tsconfig.test.json",
        "vscode-extension/tsconfig.json",
    ):
        base = json.loads((repo / tsconfig).read_text())["extends"]
        assert ((repo / tsconfig).parent / base).resolve() == repo / "tsconfig.base.json", tsconfig
    for entry in ("labextension/dev/eslint.config.mjs", "vscode-extension/eslint.config.mjs"):
        assert re.search(r"^import config from '(\.\./)+eslint\.base\.mjs';$", (repo / entry).read_text(), re.M), entry
    prettier = [p for top in ("labextension", "vscode-extension") for p in (repo / top).rglob(".prettierrc*")]
    assert [p for p in prettier if "node_modules" not in p.parts] == [], "one .prettierrc.json, at the root"


def _may_import(package: Path) -> set[str]:
    """The layers a package's docstring says it may import: the backquoted names after "May import:"."""
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""
    assert doc.strip() != package.name, f"{package.name}/__init__.py's docstring is its name only"
    assert "May import:" in doc, f"{package.name}/__init__.py's docstring does not say what the layer may import"
    return set(re.findall(r"`([\w.]+)`", doc.split("May import:", 1)[1]))


def test_every_package_docstring_says_what_the_layer_is_and_may_import():
    # the rule above (ALLOWED) and the one a reader of the package finds first are the same
    for layer, allowed in ALLOWED.items():
        assert _may_import(PACKAGE / layer) == allowed - {layer}, f"{layer}/__init__.py's docstring vs ALLOWED"
    assert _may_import(PACKAGE / "stub") == {"engine", "gemini.models"}


def test_the_magics_parse_and_delegate():
    # kernel/magics.py is the magics' surface (flags, help, dispatch); the work lives in the modules it calls
    lines = (PACKAGE / "kernel" / "magics.py").read_text(encoding="utf-8").count("\n")
    assert lines < 450, f"kernel/magics.py has {lines} lines: move its wiring to the module named for it"
