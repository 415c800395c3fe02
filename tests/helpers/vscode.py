"""VS Code's requests to a kernel, as vscode-jupyter sends them.

VS Code cannot run here, so its request shapes are taken from the source of
microsoft/vscode-jupyter (commit 3d24702e, July 2026); each shape names the
file it comes from.
"""

from __future__ import annotations

from typing import Any

from helpers.kernel import Kernel, Run

NOTEBOOK = "/home/user/work/analysis.ipynb"


def cell_uri(handle: int, path: str = NOTEBOOK) -> str:
    """A cell's ``cellId``: ``cell.document.uri.toString()`` (src/kernels/execution/cellExecution.ts),
    a ``vscode-notebook-cell:`` URI whose fragment is the cell's handle, not its position."""
    return f"vscode-notebook-cell:{path}#W{handle}sZmlsZQ%3D%3D"


def cell_request(code: str, uri: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A notebook cell run (src/kernels/execution/cellExecution.ts, ``requestExecute``)."""
    content = {
        "code": code,
        "silent": False,
        "stop_on_error": False,
        "allow_stdin": True,
        "store_history": True,
        "user_expressions": {},
    }
    return content, {"cellId": uri}


def silent_request(code: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """VS Code's own code: ``executeSilently`` (src/kernels/helpers.ts): ``store_history: false``,
    ``silent: false``, and no metadata at all, so no cellId."""
    content = {
        "code": code.replace("\r\n", "\n"),
        "silent": False,
        "stop_on_error": False,
        "allow_stdin": True,
        "store_history": False,
        "user_expressions": {},
    }
    return content, {}


def startup_code(path: str) -> str:
    """What VS Code runs silently when the kernel starts (src/kernels/kernel.ts, gatherInternalStartupCode)."""
    return f'__vsc_ipynb_file__ = "{path}"'


# The variable viewer's request (src/platform/interpreter/variableScriptGenerator.ts: the script
# pythonFiles/vscode_datascience_helpers/getVariableInfo/vscodeGetVariableInfo.py, then the call,
# then the clean-up), shortened to its shape: a function definition, a call, a del.
VARIABLE_VIEWER = """def _VSCODE_getVariable(what_to_get, is_debugging, *args):
    # Query Jupyter server for the info about a dataframe
    import json as _VSCODE_json
    import builtins as _VSCODE_builtins
    return _VSCODE_json.dumps({"what": what_to_get, "count": _VSCODE_builtins.len(args)})


_VSCODE_getVariable("info", False, 1)

try:
    del _VSCODE_getVariable
except:
    pass"""


def set_next_input(run: Run) -> list[dict[str, Any]]:
    """The payloads VS Code acts on: ``source == 'set_next_input'`` with ``text`` and ``replace``
    in the execute reply (src/kernels/execution/cellExecutionMessageHandler.ts, handleExecuteReply)."""
    payloads = run.reply["content"].get("payload", [])
    return [p for p in payloads if p.get("source") == "set_next_input" and "text" in p and "replace" in p]


def cell_text_after(run: Run, text_before: str) -> str:
    """The cell's text once VS Code applied the reply (handleSetNextInput: ``replace`` overwrites the
    cell that ran, otherwise a new cell is inserted below and this one stays)."""
    for payload in set_next_input(run):
        if payload["replace"]:
            text_before = payload["text"]
    return text_before


class VSCode:
    """One VS Code notebook on a real kernel: cells run with their URIs, helper code silently."""

    def __init__(self, kernel: Kernel, path: str = NOTEBOOK):
        self.kernel = kernel
        self.path = path

    def uri(self, handle: int) -> str:
        return cell_uri(handle, self.path)

    def start(self, code: str, handle: int) -> str:
        return self.kernel.send_execute(*cell_request(code, self.uri(handle)))

    def run(self, code: str, handle: int, timeout: float = 60) -> Run:
        return self.kernel.finish(self.start(code, handle), timeout)

    def run_silently(self, code: str, timeout: float = 60) -> Run:
        return self.kernel.finish(self.kernel.send_execute(*silent_request(code)), timeout)

    def open_notebook(self) -> Run:
        """The kernel learns the notebook's file as VS Code tells it."""
        return self.run_silently(startup_code(self.path))
