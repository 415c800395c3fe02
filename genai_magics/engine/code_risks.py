"""What a cell's code does that deserves a second look before it is approved: a static risk line, no model call.

Six risks, each named once however often the code does it, in this order: it deletes files, runs a shell or
subprocess (``!cmd`` and ``%%bash`` included), reaches the network, installs packages, evaluates strings
(``eval``/``exec``/``compile``, the shell's ``run_cell``), reads the environment's secrets (``os.environ``,
``getenv``, ``%env``, ``.env`` files, credential files). The code is read as the kernel reads it
(``to_python``: IPython syntax turned into Python), then parsed; imports and simple assignments are followed
(``import subprocess as sp``, ``from os import system``, ``ip = get_ipython()``) and the text of a shell
command is read for ``rm``, ``curl``, ``pip install`` and the like. Where the code does not parse, the words
are searched for. A hint for the person approving, never a guarantee: code that builds its names at run time
escapes it (as it escapes every static check).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from .steering import ToPython

DELETES = "deletes files"
SHELL = "runs a shell or subprocess"
NETWORK = "reaches the network"
INSTALLS = "installs packages"
EVALUATES = "evaluates strings"
SECRETS = "reads the environment's secrets"
ORDER = (DELETES, SHELL, NETWORK, INSTALLS, EVALUATES, SECRETS)

_DELETE_CALLS = frozenset({"os.remove", "os.unlink", "os.rmdir", "os.removedirs", "shutil.rmtree"})
_DELETE_METHODS = frozenset({"unlink", "rmdir", "rmtree", "send2trash"})
_SHELL_MAGICS = frozenset({"bash", "sh", "script", "system", "sx", "perl", "ruby", "pwsh", "powershell", "cmd"})
_SHELL_METHODS = frozenset({"system", "getoutput", "popen", "getstatusoutput"})  # os.*, get_ipython().*
_INSTALL_MAGICS = frozenset({"pip", "conda", "mamba", "micromamba", "uv"})
_NETWORK_MODULES = frozenset(
    {
        "socket",
        "urllib",
        "urllib3",
        "http",
        "requests",
        "httpx",
        "aiohttp",
        "ftplib",
        "smtplib",
        "telnetlib",
        "poplib",
        "imaplib",
        "paramiko",
        "websocket",
        "websockets",
        "pycurl",
        "xmlrpc",
        "grpc",
        "webbrowser",
    }
)
_CODE_RUNNERS = frozenset({"run_cell", "run_cell_async", "ex", "ev", "run_code", "safe_execfile_ipy"})
# in a shell command's text (or any string passed to a subprocess)
_COMMAND_WORDS = (
    (DELETES, re.compile(r"(^|[\s;&|`(])(rm|rmdir|shred|del|unlink)\s")),
    (NETWORK, re.compile(r"(^|[\s;&|`(])(curl|wget|ssh|scp|rsync|nc|ncat|telnet|ftp|git\s+(clone|fetch|pull|push))\b")),
    (INSTALLS, re.compile(r"\b(pip3?|conda|mamba|micromamba|npm|apt|apt-get|yum|brew|uv\s+pip)\s+install\b")),
    (SECRETS, re.compile(r"(^|[\s;&|`(])(env|printenv|set)(\s|$)|\$[A-Za-z_{]")),
)
_URL = re.compile(r"^\s*(https?|ftp|s3|gs|wss?)://", re.IGNORECASE)
_SECRET_PATHS = re.compile(r"(^|[/\\~])(\.env|\.netrc|\.ssh|\.aws|\.pgpass|credentials|id_rsa|\.git-credentials)\b")
# the words searched for where the code does not parse
_WORDS = (
    (DELETES, re.compile(r"\b(os\.(remove|unlink|rmdir)|rmtree|\.unlink\()|(^|\n)\s*!\s*rm\s")),
    (SHELL, re.compile(r"\bsubprocess\b|\bos\.(system|popen|exec|spawn)|(^|\n)\s*!|%%(bash|sh|script)\b")),
    (NETWORK, re.compile(r"\b(requests|urllib|httpx|aiohttp|socket)\b|https?://")),
    (INSTALLS, re.compile(r"%(pip|conda|mamba)\b|\bpip3?\s+install\b")),
    (EVALUATES, re.compile(r"\b(eval|exec|compile)\s*\(")),
    (SECRETS, re.compile(r"\bos\.(environ|getenv)|\bgetenv\s*\(|%env\b")),
)


def risks(source: str, to_python: ToPython) -> tuple[str, ...]:
    """The risks of ``source`` among ``ORDER``, in that order (none: nothing seen)."""
    python = to_python(source)
    try:
        tree = ast.parse(python if python is not None else source)
    except (SyntaxError, ValueError):
        return _ordered(risk for risk, words in _WORDS if words.search(source))
    return _ordered(_Reader(to_python).read(tree))


def _ordered(found: Iterable[str]) -> tuple[str, ...]:
    seen = set(found)
    return tuple(risk for risk in ORDER if risk in seen)


def _literal(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _strings(node: ast.AST) -> list[str]:
    return [s for n in ast.walk(node) if (s := _literal(n) if isinstance(n, ast.expr) else None) is not None]


def command_risks(command: str) -> set[str]:
    """The risks a shell command's text names (``rm``, ``curl``, ``pip install``, ``printenv``)."""
    return {risk for risk, words in _COMMAND_WORDS if words.search(command)}


class _Reader:
    """One walk over the code: the names it imports or assigns, resolved to what they stand for."""

    def __init__(self, to_python: ToPython):
        self.to_python = to_python
        self.names: dict[str, str] = {}
        self.found: set[str] = set()

    def read(self, tree: ast.Module) -> set[str]:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".")[0]
                    self.names[alias.asname or top] = alias.name if alias.asname else top
                    self._module(alias.name)
            elif isinstance(node, ast.ImportFrom) and node.module:
                self._module(node.module)
                for alias in node.names:
                    self.names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                named = self._dotted(node.value)
                if named is not None:
                    self.names[node.targets[0].id] = named
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                self._call(node)
            elif isinstance(node, ast.Attribute):
                if self._dotted(node) in ("os.environ", "os.environb"):
                    self.found.add(SECRETS)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                if _URL.match(node.value):
                    self.found.add(NETWORK)
                if _SECRET_PATHS.search(node.value):
                    self.found.add(SECRETS)
        return self.found

    def _module(self, module: str) -> None:
        top = module.split(".")[0]
        if top in _NETWORK_MODULES:
            self.found.add(NETWORK)
        if top == "dotenv":
            self.found.add(SECRETS)
        if top in ("pip", "ensurepip"):
            self.found.add(INSTALLS)

    def _dotted(self, node: ast.expr) -> str | None:
        """``os.path.join``, ``get_ipython().system``: what the expression names, its imports followed."""
        if isinstance(node, ast.Name):
            return self.names.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            inner = self._dotted(node.value)
            return None if inner is None else f"{inner}.{node.attr}"
        if isinstance(node, ast.Call):
            inner = self._dotted(node.func)
            return None if inner is None else f"{inner}()"
        return None

    def _call(self, call: ast.Call) -> None:
        name = self._dotted(call.func) or ""
        last = name.rsplit(".", 1)[-1]
        first = _literal(call.args[0]) if call.args else None
        if name in _DELETE_CALLS or (last in _DELETE_METHODS and "." in name):
            self.found.add(DELETES)
        if name.startswith(("subprocess.", "asyncio.create_subprocess", "pty.spawn")) or name.startswith(
            ("os.exec", "os.spawn", "os.posix_spawn")
        ):
            self.found.add(SHELL)
            self.found |= command_risks(" ".join(_strings(call)))
        elif last in _SHELL_METHODS and "." in name:
            self.found.add(SHELL)
            self.found |= command_risks(" ".join(_strings(call)))
        if name in ("eval", "exec", "compile") or (last in _CODE_RUNNERS and "." in name):
            self.found.add(EVALUATES)
        if name in ("os.getenv", "os.getenvb") or name.endswith("load_dotenv"):
            self.found.add(SECRETS)
        if name.startswith("pip.") or name.startswith("ensurepip."):
            self.found.add(INSTALLS)
        if last in ("run_line_magic", "run_cell_magic") and first is not None:
            self._magic(first.lstrip("%"), " ".join(_strings(call)[1:]))

    def _magic(self, magic: str, text: str) -> None:
        if magic in _SHELL_MAGICS:
            self.found.add(SHELL)
            self.found |= command_risks(text)
        elif magic in _INSTALL_MAGICS and "install" in text:
            self.found |= {INSTALLS, NETWORK}
        elif magic == "env" and "=" not in text:  # %env lists the environment, %env NAME reads one
            self.found.add(SECRETS)
