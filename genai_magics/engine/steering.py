"""Code that steers the assistant or its approvals: what the agent may not write unseen, nor run.

An agent turn under ``agent_approve = "runs"`` writes cells without the user's click; a cell that
talks to the assistant (``%gemini_agent --approve none …``), changes its settings (``%config
GeminiMagics…``) or names a magic anew (``%alias_magic``) would set up a run nobody approved, the next
time the notebook runs. So such a write is refused (an error result the model reads), and ``run_cell``
refuses a cell that would call one of our magics (a turn inside the turn's run).

The check is static. IPython syntax is first turned into the Python that runs (``to_python``: the
shell's own ``transform_cell`` in a kernel, so ``%magic`` lines, ``%%cell`` magics, ``!cmd``, ``obj?``,
automagic and line continuations read as the kernel reads them), then parsed (``ast``). Refused:

- a call of ``run_line_magic`` / ``run_cell_magic`` / ``magic`` (whatever the receiver: ``ip =
  get_ipython(); ip.run_line_magic(…)`` too) naming one of our magics (``ours``: ``gemini*`` and every
  alias of one the kernel holds), ``alias_magic``, ``config`` of ``Gemini…``, ``load_ext`` /
  ``reload_ext`` / ``unload_ext`` of ``genai_magics``, or a magic whose name is not a literal;
- a call of the shell's code runners (``run_cell``, ``run_cell_async``, ``ex``, ``ev``, ``run_code``,
  ``safe_execfile_ipy``, ``set_next_input`` …) whose code is not a literal, or is a literal that steers;
  ``eval`` / ``exec`` / ``compile`` of a literal that steers;
- any name, attribute or string that reaches our settings or the magics' registry (``GeminiMagics``,
  ``genai_magics``, ``agent_approve``, ``magics_manager``, ``register_magic_function``, ``define_macro``
  …) or a string holding ``%gemini…``;
- a line whose first word is one of our magics or ``alias_magic`` used as a command (automagic, where
  no shell transformed the cell), and, where the code does not parse, any of the words above.

An edit is refused where it adds a finding (the cell's findings after it, counted, less those before it):
steering code the user wrote stays editable around.

Why static: the guard answers before anything is written or run, costs no request, and reads the code the
kernel would run, not what a model says of it. Knowingly not caught (under ``agent_approve = "runs"`` each
still needs the user's Run to do anything, and that approval shows the code and its risk line,
engine/code_risks.py): names built at run time (``getattr(ip, "run_" + "line_" + "magic")``, ``exec`` /
``eval`` of a string that is not a literal, ``importlib``), code read from elsewhere (``%run``, ``%load``,
a module or file the cell imports, ``%macro`` of the history), a user's own magic that calls ours, and an
edit of the code around steering code the cell already held (a condition that guards it).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from .text import clip

ToPython = Callable[[str], "str | None"]  # a cell's text as the Python the kernel runs; None: it cannot say
Ours = Callable[[str], bool]  # a magic's name is one of ours (an alias of one included)

OUR_MAGICS = frozenset({"gemini", "gemini_ask", "gemini_edit", "gemini_agent"})
_BUILTIN_STEERING = frozenset({"alias_magic", "config", "load_ext", "reload_ext", "unload_ext"})
MAGIC_CALLS = frozenset({"run_line_magic", "run_cell_magic"})
# the shell's ways of running text as code (the first argument is the code)
CODE_RUNNERS = frozenset(
    {"run_cell", "run_cell_async", "ex", "ev", "run_code", "run_ast_nodes", "safe_execfile_ipy", "set_next_input"}
)
EVALUATORS = frozenset({"eval", "exec", "compile"})
# names that reach our settings, our package or the magics' registry
REGISTRY_WORDS = frozenset(
    {
        "GeminiMagics",
        "genai_magics",
        "agent_approve",
        "magics_manager",
        "register_magic_function",
        "register_magics",
        "find_magic",
        "find_line_magic",
        "find_cell_magic",
        "define_macro",
        "alias_magic",
        *MAGIC_CALLS,
    }
)
_REGISTRY_RE = re.compile(r"\b(" + "|".join(sorted(REGISTRY_WORDS)) + r")\b|%{1,2}gemini", re.IGNORECASE)
_COMMAND_LINE = re.compile(r"^\s*([A-Za-z_]\w*)\b(?!\s*(?:[-+*/%&|^@<>!]?=|[(.\[,:;)\]]))(.*)$")


def ours_by_name(name: str) -> bool:
    """The package's own magics: ``%gemini``, ``%%gemini_ask``, ``%%gemini_edit``, ``%%gemini_agent``."""
    return name.startswith("gemini")


def _a_magic(word: str, ours: Ours) -> bool:
    """``word`` names a magic automagic would call: ours, an alias of ours, or one of the steering built-ins
    (a variable merely named ``gemini_x`` is not one)."""
    return word in OUR_MAGICS or word in _BUILTIN_STEERING or (ours(word) and not ours_by_name(word))


def magic_steers(name: str, line: str, ours: Ours = ours_by_name) -> bool:
    """The magic ``name`` with ``line`` talks to the assistant, changes its settings or names a magic anew."""
    name = name.lstrip("%")
    if ours(name) or name == "alias_magic":
        return True
    if name == "config":
        return "gemini" in line.lower()
    if name in ("load_ext", "reload_ext", "unload_ext"):
        return "genai_magics" in line
    return False


def steering(source: str, to_python: ToPython, ours: Ours = ours_by_name) -> tuple[str, ...]:
    """What in ``source`` steers the assistant or its approvals, each as the code says it, as often as it does;
    none: nothing."""
    found: list[str] = []
    for line in source.splitlines():  # automagic: a magic's name used as a command, without its %
        m = _COMMAND_LINE.match(line)
        if m is not None and _a_magic(m.group(1), ours) and magic_steers(m.group(1), m.group(2), ours):
            found.append(clip(line.strip(), 120))
    python = to_python(source)
    tree = _parsed(python if python is not None else source)
    if tree is None:  # not Python: every word that could reach us counts
        found += [clip(m.group(0), 120) for m in _REGISTRY_RE.finditer(source)]
        return tuple(found)
    found += _calls(tree, to_python, ours)
    return tuple(found)


def _parsed(python: str) -> ast.Module | None:
    try:
        return ast.parse(python)
    except (SyntaxError, ValueError):  # ValueError: a NUL in the text
        return None


def _literal(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _arg(call: ast.Call, at: int) -> ast.expr | None:
    return call.args[at] if len(call.args) > at else None


def _calls(tree: ast.Module, to_python: ToPython, ours: Ours) -> list[str]:
    found: list[str] = []
    for node in ast.walk(tree):
        said = clip(ast.unparse(node), 120) if isinstance(node, ast.expr) else ""
        if isinstance(node, ast.Name) and node.id in REGISTRY_WORDS:
            found.append(said)
        elif isinstance(node, ast.Attribute) and node.attr in REGISTRY_WORDS - MAGIC_CALLS:
            found.append(said)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [alias.name for alias in node.names]
            if any(_REGISTRY_RE.search(name) for name in names):
                found.append(clip(ast.unparse(node), 120))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _REGISTRY_RE.search(node.value):
            found.append(said)
        elif isinstance(node, ast.Call) and _call_steers(node, to_python, ours):
            found.append(said)
    return found


def _call_steers(call: ast.Call, to_python: ToPython, ours: Ours) -> bool:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    first = _arg(call, 0)
    if name in MAGIC_CALLS:
        magic, line = _literal(first), _literal(_arg(call, 1))
        return magic is None or magic_steers(magic, line if line is not None else "gemini genai_magics", ours)
    if name == "magic":  # the old InteractiveShell.magic("name args")
        text = _literal(first)
        if text is None:
            return True
        word, _, rest = text.strip().partition(" ")
        return magic_steers(word, rest, ours)
    if name in CODE_RUNNERS and isinstance(func, ast.Attribute):
        code = _literal(first)
        return code is None or bool(steering(code, to_python, ours))
    if name in EVALUATORS and isinstance(func, ast.Name):
        code = _literal(first)
        return code is not None and bool(steering(code, to_python, ours))
    return False
