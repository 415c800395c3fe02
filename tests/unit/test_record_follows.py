"""A notebook's record follows the notebook (issue 32, item 9): renamed or moved while its kernel runs,
the record moves along and the next kernel replays it; a copy (Save As) leaves the original's record
with the original and says so; a kernel whose environment still names the old file takes the record
over from there. The fast layer: the extension in an in-process IPython shell, the real SDK over HTTP
to the stand-in, records in a private data folder of the test's own."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import protocol
from helpers.wire import api_requests

from genai_magics import messages
from genai_magics.frontends.companion import former_paths
from genai_magics.frontends.notebook_view import NotebookLocation, path_of_cell_uri, reported_path
from genai_magics.persistence.store import record_path

ASK = "%%gemini_ask\nWhat does total hold?"


@pytest.fixture
def notebooks(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


def new_kernel(shell, notebook: Path) -> None:
    """The shell as a new kernel started for ``notebook``: nothing of the last one's session kept."""
    shell.ip.run_line_magic("unload_ext", "genai_magics")
    del shell.ip._genai_magics
    shell.ip.user_ns["__session__"] = str(notebook)
    shell.ip.run_line_magic("load_ext", "genai_magics")
    from genai_magics.kernel.shell_state import state_of

    shell.magics = state_of(shell.ip).magics
    # the one in-process shell keeps the %config of earlier tests: the defaults of a new kernel
    for line in ("record_location = 'user'", "persist = True", "replay = 'auto'"):
        shell.run(f"%config GeminiMagics.{line}")


def first_turn(shell, stub, notebook: Path) -> None:
    notebook.write_text("{}")
    new_kernel(shell, notebook)
    shell.run("total = 1 + 2", cell_id="code")
    shown = shell.run(ASK, cell_id="ask")
    assert shown.stderr == "" and len(api_requests(stub)) == 1
    assert record_path("user", notebook).exists()


def replays(shell, stub, notebook: Path) -> str:
    """A new kernel for ``notebook`` runs the cells again: what its magic cell shows (no request)."""
    new_kernel(shell, notebook)
    shell.run("total = 1 + 2", cell_id="code")
    sent = len(api_requests(stub))
    shown = shell.run(ASK, cell_id="ask")
    assert len(api_requests(stub)) == sent, "the turn was asked again"
    assert messages.REPLAYED_FOOTER.within(shown.plain, turn=1)
    return shown.stderr


def test_a_notebook_renamed_while_its_kernel_runs_takes_its_record_along(magic_shell, stub, notebooks):
    draft, final = notebooks / "draft.ipynb", notebooks / "sub" / "final.ipynb"
    first_turn(magic_shell, stub, draft)
    final.parent.mkdir()
    draft.rename(final)
    magic_shell.magics.path_reported(str(final))  # what the bridge's snapshot or a VS Code cell URI says
    assert record_path("user", final).exists() and not record_path("user", draft).exists()
    shown = magic_shell.run("%gemini status")  # the line waits for the next magic
    assert messages.RECORD_FOLLOWED.shown(path=final, aside="") in shown.stderr
    replays(magic_shell, stub, final)


def test_a_copy_saved_as_another_name_leaves_the_record_with_the_original_and_says_so(magic_shell, stub, notebooks):
    original, copy = notebooks / "original.ipynb", notebooks / "copy.ipynb"
    first_turn(magic_shell, stub, original)
    copy.write_text(original.read_text())  # Save As: the original stays
    magic_shell.magics.path_reported(str(copy))
    shown = magic_shell.run("%gemini status")
    assert messages.RECORD_COPY.shown(path=copy, original=original) in shown.stderr
    assert record_path("user", original).exists()
    magic_shell.run("%%gemini_ask\nAnd now?", cell_id="more")  # this kernel's turns go to the copy's record
    assert record_path("user", copy).exists()
    replays(magic_shell, stub, original)  # the original's record is whole and still its own


def test_a_kernel_whose_environment_names_the_old_file_takes_the_record_over(magic_shell, stub, notebooks):
    untitled, work = notebooks / "Untitled.ipynb", notebooks / "work.ipynb"
    first_turn(magic_shell, stub, untitled)
    untitled.rename(work)  # renamed, and the kernel restarted before it heard of it
    new_kernel(magic_shell, untitled)
    magic_shell.magics.path_reported("work.ipynb")  # JupyterLab names it relative to the server's root
    magic_shell.run("total = 1 + 2", cell_id="code")
    sent = len(api_requests(stub))
    shown = magic_shell.run(ASK, cell_id="ask")
    assert len(api_requests(stub)) == sent
    assert messages.RECORD_FOLLOWED.shown(path=work, aside="") in shown.stderr
    assert record_path("user", work).exists() and not record_path("user", untitled).exists()


def test_the_frontends_names_of_the_file_are_made_absolute(tmp_path):
    (tmp_path / "sub").mkdir()
    nb = tmp_path / "sub" / "a b.ipynb"
    nb.write_text("{}")
    start = tmp_path / "sub" / "Untitled.ipynb"  # the kernel started in sub/, the server's root above it
    assert reported_path("sub/a b.ipynb", start) == nb
    assert reported_path("sub/missing.ipynb", start) is None
    assert reported_path("notes.txt", start) is None
    assert path_of_cell_uri("vscode-notebook-cell:/home/me/a%20b.ipynb#W1sZmlsZQ%3D%3D") == "/home/me/a b.ipynb"
    assert path_of_cell_uri("vscode-notebook-cell:Untitled-1.ipynb#W0") is None  # not saved yet
    assert path_of_cell_uri("abc-123") is None
    where = NotebookLocation()
    assert where.path(start) == start
    assert where.report("sub/a b.ipynb") and not where.report("sub/a b.ipynb")
    assert where.path(start) == nb


def test_a_notebook_renamed_in_vscode_takes_its_record_to_the_kernel_of_its_new_name(
    magic_shell, stub, notebooks, monkeypatch
):
    """VS Code ends a renamed notebook's kernel (the document is replaced); the next one starts with the new
    name, and learns the old one from the companion's presence file (its window saw the rename)."""
    draft, final = notebooks / "draft.ipynb", notebooks / "final.ipynb"
    channel = notebooks.parent / "companion"
    channel.mkdir()
    monkeypatch.setenv("GENAI_MAGICS_COMPANION_DIR", str(channel))
    draft.write_text("{}")
    new_kernel(magic_shell, draft)
    magic_shell.run("total = 1 + 2", cell_id=f"vscode-notebook-cell:{draft}#W1sZmlsZQ%3D%3D")
    magic_shell.run(ASK, cell_id=f"vscode-notebook-cell:{draft}#W2sZmlsZQ%3D%3D")
    assert len(api_requests(stub)) == 1
    draft.rename(final)
    presence = {
        "version": 1,
        "companion": "t",
        "pid": os.getpid(),
        "inbox": str(channel / "in-t"),
        "notebooks": [],  # not this notebook: no requests to answer here
        "renamed": [{"from": str(draft), "to": str(final)}],
    }
    protocol.check("Presence", presence, protocol.COMPANION_SCHEMA_PATH)
    (channel / "companion-t.json").write_text(json.dumps(presence))
    new_kernel(magic_shell, final)
    # the cells of the new document: VS Code numbers them again, in order (the URI names the new file)
    magic_shell.run("total = 1 + 2", cell_id=f"vscode-notebook-cell:{final}#W1sZmlsZQ%3D%3D")
    sent = len(api_requests(stub))
    shown = magic_shell.run(ASK, cell_id=f"vscode-notebook-cell:{final}#W2sZmlsZQ%3D%3D")
    assert len(api_requests(stub)) == sent, "the turn was asked again"
    assert messages.RECORD_FOLLOWED.shown(path=final, aside="") in shown.stderr
    assert record_path("user", final).exists() and not record_path("user", draft).exists()


def test_the_names_a_notebook_had_follow_renames_of_it_and_of_its_folders_newest_first():
    renamed = [
        ("/w/a.ipynb", "/w/b.ipynb"),
        ("/w/other.ipynb", "/w/c.ipynb"),  # another notebook once had the name this one has later
        ("/w/b.ipynb", "/w/c.ipynb"),
        ("/w", "/x"),
        ("/y/z.ipynb", "/y/q.ipynb"),
    ]
    assert former_paths(Path("/x/c.ipynb"), renamed) == (Path("/w/c.ipynb"), Path("/w/b.ipynb"), Path("/w/a.ipynb"))
    assert former_paths(Path("/x/d.ipynb"), renamed) == (Path("/w/d.ipynb"),)
    assert former_paths(Path("/v/c.ipynb"), renamed) == ()
