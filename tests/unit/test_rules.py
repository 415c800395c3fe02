"""The notebook's rules (issue 44): the AGENTS.md files from the notebook's folder up to the project root and
the notebook's own, sent once per conversation and again only as a change, in both state modes; checked on
the stand-in's recorded requests (the real SDK over real HTTP, an in-process shell)."""

from __future__ import annotations

import json

import nbformat
import pytest
from helpers.kernel import FAKE_KEY
from helpers.wire import api_requests, current_payload

from genai_magics import messages
from genai_magics.engine.rules import RULES_FIELD
from genai_magics.frontends.notebook_view import NotebookLocation
from genai_magics.sources.rules import METADATA_KEY, rule_files

CODE = "def parse(s):\n    return int(s)\n"
MODES = ["contents", "interactions"]


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project (pyproject.toml at its root) with AGENTS.md at the root and in the notebook's folder, and
    one above the root that must never be read; the kernel's notebook is ``project/analysis/work.ipynb``."""
    (tmp_path / "AGENTS.md").write_text("Outside the project: never read.\n")
    root = tmp_path / "project"
    folder = root / "analysis"
    folder.mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (root / "AGENTS.md").write_text("Use polars, not pandas.\n")
    (folder / "AGENTS.md").write_text("Plots use matplotlib.\n")
    notebook = folder / "work.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), notebook)
    monkeypatch.setenv("JPY_SESSION_NAME", str(notebook))
    return notebook


@pytest.fixture
def shell(magic_shell, project):
    """The in-process shell with no conversation from an earlier test, and no notebook path a frontend named in
    one (its state outlives a reload): the notebook is the one JPY_SESSION_NAME names."""
    state, names = magic_shell.magics.shell_state, magic_shell.ip.user_ns
    named, state.location = state.location, NotebookLocation()
    given = {k: names.pop(k) for k in ("__vsc_ipynb_file__", "__session__") if k in names}
    magic_shell.run("%gemini reset --all")
    # the cells earlier tests ran stay in the shell: a head they make large would go to a cache, out of the body
    magic_shell.magics.cache = "off"
    yield magic_shell
    magic_shell.magics.cache = magic_shell.magics.trait_defaults("cache")
    state.location = named
    names.update(given)


def sent_rules(request) -> dict[str, str] | None:
    return current_payload(request).get(RULES_FIELD)


def all_text(request) -> str:
    return json.dumps(request["json"], ensure_ascii=False)


def test_the_files_from_the_folder_up_to_the_root_nearer_after(project):
    root = project.parent.parent
    assert rule_files(project.parent) == (root / "AGENTS.md", project.parent / "AGENTS.md")


@pytest.mark.parametrize("mode", MODES)
def test_rules_go_once_and_a_changed_file_again_as_a_change(shell, stub, project, mode):
    shell.run(CODE, cell_id="code")
    first = shell.run(f"%%gemini_ask --state {mode}\nWhat does this do?", cell_id="m1")
    shell.run("%%gemini_ask\nAnd the edge cases?", cell_id="m2")
    (project.parent / "AGENTS.md").write_text("Plots use plotly.\n")
    third = shell.run("%%gemini_ask\nAnd now?", cell_id="m3")
    one, two, three = api_requests(stub)
    # the first turn: both files, the root's first, by their paths from the notebook's folder
    assert sent_rules(one) == {"../AGENTS.md": "Use polars, not pandas.\n", "AGENTS.md": "Plots use matplotlib.\n"}
    assert list(sent_rules(one)) == ["../AGENTS.md", "AGENTS.md"]
    assert "Outside the project" not in all_text(one)
    said = "holds the project's conventions, to follow"  # the instruction's sentence about them: with rules only
    assert all(said in all_text(r) for r in (one, two, three))
    # the second: nothing new (contents mode: the first turn, as sent, still holds them)
    assert sent_rules(two) is None
    if mode == "contents":
        assert "Plots use matplotlib." in all_text(two) and all_text(two).count("Use polars") == 1
    else:
        assert "Use polars" not in all_text(two)
    # the third: the changed file only, the other held
    assert sent_rules(three) == {"AGENTS.md": "Plots use plotly.\n"}
    assert "Use polars" not in json.dumps(current_payload(three))
    assert messages.RULES_SENT.render(names="AGENTS.md (2 files)") in first.plain
    assert messages.RULES_CHANGED.render(names="AGENTS.md", held=1) in third.plain


def test_the_footer_says_the_rules_were_not_re_sent(shell, stub, project):
    shell.run(CODE, cell_id="code")
    shell.run("%%gemini_ask\nWhat does this do?", cell_id="m1")
    second = shell.run("%%gemini_ask\nAnd the edge cases?", cell_id="m2")
    assert messages.RULES_HELD.render(names="AGENTS.md (2 files)") in second.plain


def test_the_notebooks_own_rules_travel_in_its_metadata_and_win(shell, stub, project):
    shell.run(CODE, cell_id="code")
    shown = shell.run('%gemini rules "Answer in French."')
    assert messages.RULES_READ.within(shown.stdout, names="AGENTS.md (2 files), the notebook's")
    assert nbformat.read(project, 4).metadata[METADATA_KEY]["rules"] == "Answer in French."
    shell.run("%%gemini_ask\nWhat does this do?", cell_id="m1")
    request, *_ = api_requests(stub)
    assert list(sent_rules(request)) == ["../AGENTS.md", "AGENTS.md", "notebook"]  # the notebook's last: it wins
    assert sent_rules(request)["notebook"] == "Answer in French."
    cleared = shell.run("%gemini rules clear")
    assert METADATA_KEY not in nbformat.read(project, 4).metadata
    assert messages.RULES_READ.within(cleared.stdout, names="AGENTS.md (2 files)")


def test_status_and_the_dry_run_name_what_was_read(shell, stub, project):
    shell.run(CODE, cell_id="code")
    status = shell.run("%gemini status")
    where = f"{project.parent.parent / 'AGENTS.md'}, {project.parent / 'AGENTS.md'}"
    assert messages.RULES_READ.render(names="AGENTS.md (2 files)", where=where) in status.stdout
    dry = shell.run("%%gemini_ask --dry-run\nWhat does this do?", cell_id="m1")
    assert messages.RULES_SENT.render(names="AGENTS.md (2 files)") in dry.plain
    assert "Use polars, not pandas." in dry.plain
    assert stub.requests == []


def test_off_sends_none_and_the_key_is_masked_and_a_large_file_cut(shell, stub, project):
    (project.parent / "AGENTS.md").write_text(f"Never print {FAKE_KEY}.\n" + "x" * 500)
    shell.magics.max_rules_chars = 100  # on this load only (a %config would outlive the test)
    shell.run(CODE, cell_id="code")
    shell.run("%%gemini_ask\nWhat does this do?", cell_id="m1")
    shell.magics.rules = "off"
    shell.run("%%gemini_ask --new -c other\nAgain?", cell_id="m2")
    cut_one, off = api_requests(stub)
    near = sent_rules(cut_one)["AGENTS.md"]
    assert FAKE_KEY not in all_text(cut_one) and near.startswith("Never print ***.")
    assert near == near[:100] + "\n" + messages.RULES_CUT.render(name="AGENTS.md", chars=17 + 500, cap=100)
    assert RULES_FIELD not in current_payload(off) and "Use polars" not in all_text(off)
    assert "holds the project's conventions" in all_text(cut_one) and "project's conventions" not in all_text(off)
    assert messages.RULES_OFF.render() in shell.run("%gemini status").stdout


def test_a_transcript_compacted_at_the_input_limit_keeps_the_turn_holding_the_rules(shell, stub, project):
    stub.limit_input(6_000)  # tokens: the transcript passes it after a few turns of 6 kB prompts
    try:
        shell.run(CODE, cell_id="first")
        shell.run("y = 2\n", cell_id="second")
        shell.run("%%gemini_ask --cell first --no-tools\nWhat does this do?", cell_id="m0")
        for i in range(1, 8):
            pasted = "".join(f"line {i}.{j}: value {i * j:08d}\n" for j in range(200))
            shown = shell.run(f"%%gemini_ask --cell second --no-tools\nquestion {i}\n{pasted}", cell_id=f"m{i}")
            assert shown.stderr == "", shown.stderr
    finally:
        shell.magics.session.limits.learned.clear()  # the session outlives the test: the limit must not
    compacted = [r for r in api_requests(stub) if "leftOut" in all_text(r)]
    assert compacted, "no request was compacted: the test proves nothing"
    assert all("Use polars, not pandas." in all_text(r) for r in compacted)


def test_rules_that_appear_after_a_cache_was_made_are_never_read_without_their_instruction(shell, stub, project):
    """A request naming a cache cannot send its own system instruction: the cache made before the rules appeared
    holds the instruction without their sentence, so once they appear it is another head and is made again."""
    root = project.parent.parent
    for found in (root / "AGENTS.md", project.parent / "AGENTS.md"):
        found.unlink()
    document = "doc = 1\n" + "".join(f"# comment line {i:05d} of the document\n" for i in range(600))  # cached
    shell.run(document, cell_id="d")
    shell.magics.cache = "auto"
    for i in range(1, 5):
        if i == 3:
            (project.parent / "AGENTS.md").write_text("Plots use matplotlib.\n")
        shown = shell.run(f"%%gemini_ask --no-tools\nquestion {i}: " + "why " * 60, cell_id=f"q{i}")
        assert shown.stderr == "", shown.stderr
    said = "holds the project's conventions, to follow"
    streams = [r for r in stub.requests if r["kind"] == "stream"]
    assert any(r["cached_content"] for r in streams[:2]), "no cache before the rules: the test proves nothing"
    caches = {c["name"]: c for c in stub.caches}
    for request in streams[2:]:  # with the rules: their sentence in the request or in the cache it reads
        cache = caches.get(request["cached_content"]) if request["cached_content"] else None
        assert said in (cache["system"] if cache else all_text(request))
