"""Run the quickstart notebook headless against the bundled stand-in server.

``python -m genai_magics.demo`` needs no API key: it starts the stand-in on
127.0.0.1, executes notebooks/quickstart.ipynb in a real kernel (nbclient, over
IPC sockets), prints what each magic cell showed (an edit, Apply, a follow-up that
does not resend the cell, Undo, Discard, a server-side conversation, a 2,000-line
cell whose follow-up is served from the context cache) and the token table, and
writes the executed notebook to the current folder (``--output`` to choose).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

# The checkout's notebooks/ (an editable install), else the copy the wheel carries.
_HERE = Path(__file__).resolve().parent
DEFAULT_NOTEBOOK = next(
    (
        p
        for p in (_HERE.parent / "notebooks" / "quickstart.ipynb", _HERE / "notebooks" / "quickstart.ipynb")
        if p.exists()
    ),
    _HERE.parent / "notebooks" / "quickstart.ipynb",
)


def _text_of(output) -> str:
    """What the cell showed when it ran: a proposal's text form is its diff and what Apply
    will do, as it was then (its widgets' saved state is how they ended, after later cells)."""
    if output.output_type == "stream":
        return output.text
    if output.output_type == "error":  # a notebook may raise on purpose, to ask about it
        return f"{output.ename}: {output.evalue}"
    data = output.get("data", {})
    return data.get("text/markdown") or data.get("text/plain", "")


def _shown_source(source: str, most: int = 12) -> str:
    """A cell's code as the demo prints it: a long cell (the 2,000-line one) by its first lines."""
    lines = source.splitlines()
    if len(lines) <= most:
        return source
    return "\n".join([*lines[:3], f"... ({len(lines):,} lines in all)"])


def run(notebook: Path, output: Path | None) -> int:
    import nbformat

    try:
        from nbclient import NotebookClient
        from traitlets.config import Config
    except ImportError:
        print("the demo runs a notebook with nbclient: pip install 'genai-magics[demo]'", file=sys.stderr)
        return 2

    from .stub import StubServer

    nb = nbformat.read(str(notebook), as_version=4)
    with StubServer() as stub, tempfile.TemporaryDirectory(prefix="genai-magics-demo-") as sockets:
        # The stand-in, never Gemini: a fake key, so a real one is never sent to it.
        os.environ["GOOGLE_GEMINI_BASE_URL"] = stub.url
        os.environ["GEMINI_API_KEY"] = "stand-in-key"
        os.environ.pop("GOOGLE_API_KEY", None)
        client = NotebookClient(
            nb,
            timeout=120,
            kernel_name="python3",
            # IPC sockets, not TCP on localhost: private to this user, and ipykernel's warning about
            # unencrypted TCP stays out of the demo's output
            config=Config({"KernelManager": {"transport": "ipc", "ip": str(Path(sockets) / "kernel")}}),
            allow_errors=True,
            resources={"metadata": {"path": str(notebook.parent)}},
        )
        client.execute()
        api_calls = [r for r in stub.requests if r["kind"] != "count"]
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        print(f"\n>>> {_shown_source(cell.source.strip())}")
        for out in cell.outputs:
            text = _text_of(out).rstrip()
            if text:
                print(text)
    print(
        f"\n{len(api_calls)} requests went to the stand-in at {stub.url}; "
        f"{sum(r['body_bytes'] for r in api_calls):,} bytes uploaded in all."
    )
    target = output or Path.cwd() / (notebook.stem + ".executed.ipynb")
    nbformat.write(nb, str(target))
    print(f"executed notebook written to {target}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m genai_magics.demo", description=__doc__.splitlines()[0])
    parser.add_argument("notebook", nargs="?", type=Path, default=DEFAULT_NOTEBOOK)
    parser.add_argument("--output", type=Path, default=None, help="where to write the executed notebook")
    args = parser.parse_args(argv)
    if not args.notebook.exists():
        print(f"no notebook at {args.notebook}", file=sys.stderr)
        return 2
    return run(args.notebook, args.output)


if __name__ == "__main__":
    sys.exit(main())
