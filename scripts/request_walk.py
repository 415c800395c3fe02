"""The request walk: which genai_magics modules one ``%%gemini_edit`` passes through, from the magic to the
wire and back, and how often control goes back into a module or up the layers (docs/development.md,
"The request walk", says how it is counted).

One ``%%gemini_edit`` in an in-process IPython shell with the extension loaded, the real google-genai SDK
over real HTTP to the stand-in (``genai_magics.stub``), under ``sys.setprofile`` (this thread only: the
stand-in's threads are not in the walk). A warm-up edit in another conversation runs first, so imports
and first-use work stay out of it; the measured edit is the first turn of its own conversation.

    python scripts/request_walk.py [--checkout PATH] [--walk]

``--checkout`` measures another checkout of the repository (its ``genai_magics`` is imported instead
of this one's), e.g. main before and after a change: ``git worktree add /tmp/before main``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "genai_magics"
# The layers of tests/unit/test_layout.py as heights: a layer imports only layers below it. Layers that
# import neither (turn and ui; sources, gemini, frontends, persistence) stand at the same height.
HEIGHT = {
    "messages": 0,
    "engine": 1,
    "sources": 2,
    "gemini": 2,
    "frontends": 2,
    "persistence": 2,
    "ui": 3,
    "turn": 3,
    "kernel": 4,
    "": 5,  # the package's root (__init__: load and unload)
}
CODE = "def total(xs):\n    return sum(xs)\n"
MAGIC = "gemini_edit"  # GeminiMagics' method for %%gemini_edit: the walk starts when it is called, ends when it returns


def short(module: str) -> str:
    """genai_magics.turn.pipeline -> turn/pipeline.py."""
    parts = module.split(".")[1:]
    return "/".join(parts) + ".py" if parts else "__init__.py"


def height(module: str) -> int:
    """Its layer's height: the folder's, messages.py's, or the root's (__init__ and the other root modules)."""
    parts = module.split(".")
    return HEIGHT.get(parts[1], HEIGHT[""]) if len(parts) > 1 else HEIGHT[""]


def ours(frame: FrameType | None) -> str | None:
    """The genai_magics module a frame runs in, or None (the SDK, IPython, the standard library...)."""
    name = frame.f_globals.get("__name__", "") if frame is not None else ""
    return name if name == PACKAGE or name.startswith(PACKAGE + ".") else None


def caller(frame: FrameType) -> str | None:
    """The module of the nearest genai_magics frame below this one on the stack."""
    back = frame.f_back
    while back is not None and ours(back) is None:
        back = back.f_back
    return ours(back)


def record(run: Any) -> tuple[list[str], list[tuple[str, str]]]:
    """The module of every call into genai_magics from the magic's entry to its return while ``run()`` runs
    (IPython's hooks around the cell are not the request's), and the upward calls among them (caller, callee)."""
    calls: list[tuple[str, str | None]] = []
    magic: list[FrameType] = []  # the magic's frame while it runs

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if not magic:
            if event == "call" and frame.f_code.co_name == MAGIC and ours(frame) == f"{PACKAGE}.kernel.magics":
                magic.append(frame)
                calls.append((f"{PACKAGE}.kernel.magics", None))
            return
        if event == "return" and frame is magic[0]:
            magic.clear()
        elif event == "call":
            module = ours(frame)
            if module is not None:
                calls.append((module, caller(frame)))

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    upward = [(by, module) for module, by in calls if by is not None and height(module) > height(by)]
    return [module for module, _ in calls], upward


def collapsed(modules: list[str]) -> list[str]:
    """Consecutive calls in the same module are one stay there."""
    return [m for i, m in enumerate(modules) if i == 0 or m != modules[i - 1]]


def one_edit(checkout: Path) -> tuple[list[str], list[tuple[str, str]], str]:
    """The calls of one %%gemini_edit, the upward ones among them, and what the shell printed."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    from traitlets.config import Config

    import genai_magics
    from genai_magics.stub import StubServer

    if not Path(genai_magics.__file__).resolve().is_relative_to(checkout):
        raise SystemExit(f"genai_magics was imported from {genai_magics.__file__}, not from {checkout}")
    cfg = Config()
    cfg.HistoryManager.hist_file = ":memory:"
    ip = InteractiveShell.instance(config=cfg)
    with StubServer() as stub, capture_output() as out:
        os.environ["GOOGLE_GEMINI_BASE_URL"], os.environ["GEMINI_API_KEY"] = stub.url, "stand-in-key"
        ip.run_line_magic("load_ext", "genai_magics")
        ip.run_cell(CODE, cell_id="code")
        ip.run_cell("%%gemini_edit --cell code -c warm-up\nAdd a docstring", cell_id="warm-up")
        for thread in threading.enumerate():  # the extension's background warm-up, if any, is over
            if thread is not threading.current_thread() and thread.name.startswith(PACKAGE):
                thread.join()
        before = len(stub.requests)
        calls, upward = record(lambda: ip.run_cell("%%gemini_edit --cell code -c walk\nAdd a docstring", cell_id="m"))
        failed = [r["status"] for r in stub.requests[before:] if r["status"] != 200]
        sent = len(stub.requests) - before
    if out.stderr.strip() or failed or not sent:
        raise SystemExit(f"the edit failed (requests {sent}, errors {failed}): {out.stderr.strip()[:500]}")
    return calls, upward, out.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the checkout to measure (default this one)")
    parser.add_argument("--walk", action="store_true", help="also print the walk, one module a line")
    args = parser.parse_args(argv)
    checkout = args.checkout.resolve()
    sys.path.insert(0, str(checkout))
    calls, upward, _ = one_edit(checkout)
    walk = collapsed(calls)
    moves = list(zip(walk, walk[1:], strict=False))
    climbs = sum(1 for a, b in moves if height(b) > height(a))
    entries = Counter(walk)
    commit = subprocess.run(
        ["git", "-C", str(checkout), "log", "-1", "--format=%h %s"], capture_output=True, text=True
    ).stdout.strip()
    print(f"the request walk of one %%gemini_edit in {checkout} ({commit or 'not a git checkout'})")
    print(f"calls into genai_magics functions: {len(calls)}")
    print(f"calls between modules (moves of the walk from one module to another): {len(moves)}")
    print(f"climbs back up (moves to a module of a higher layer): {climbs}")
    print(f"upward calls (a function called from a module of a lower layer: a callback): {len(upward)}")
    for (by, module), n in sorted(Counter(upward).items()):
        print(f"  {short(by)} -> {short(module)}: {n}")
    print(f"{'module':<32} {'entered':>8} {'re-entered':>11}")
    for module, n in sorted(entries.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"{short(module):<32} {n:>8} {n - 1:>11}")
    if args.walk:
        print("\nthe walk:")
        print("\n".join(f"{i:>4} {'  ' * (HEIGHT['kernel'] + 1 - height(m))}{short(m)}" for i, m in enumerate(walk)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
