"""What genai_magics keeps per shell is one object stored once on the shell
(``shell_state.ShellState``): load registers magics working on it, unload takes only them away,
and ``%reload_ext`` (which reloads the package's ``__init__``) finds the same object again.
In an in-process IPython shell (the fast layer)."""

from __future__ import annotations

from genai_magics.kernel.shell_state import ShellState, state_of


def test_load_unload_and_reload_share_one_state_on_the_shell(magic_shell):
    ip = magic_shell.ip
    state = state_of(ip)
    assert isinstance(state, ShellState) and state_of(ip) is state
    assert state.magics is magic_shell.magics and magic_shell.magics.shell_state is state
    session, companion = state.session, state.companion

    ip.run_line_magic("reload_ext", "genai_magics")  # reloads genai_magics/__init__.py
    assert state_of(ip) is state  # the reloaded module finds the same object
    assert state.magics is not magic_shell.magics and state.magics is not None  # new magics ...
    assert state.magics.session is session and state.magics.shell_state.companion is companion  # ... same state

    ip.run_line_magic("unload_ext", "genai_magics")
    assert state.magics is None and state.session is session  # only the magics went
    assert ip.find_magic("gemini_edit", "cell") is None
    ip.run_line_magic("load_ext", "genai_magics")
    assert state.magics is not None and state.magics.session is session
    magic_shell.magics = state.magics  # the fixture's close unloads this one


def test_nothing_else_is_kept_on_the_shell(magic_shell):
    kept = [name for name in vars(magic_shell.ip) if "genai" in name]
    assert kept == ["_genai_magics"]


def test_a_turn_builds_its_frontend_once_and_a_click_builds_the_one_of_its_moment(magic_shell, stub, monkeypatch):
    from genai_magics.frontends import frontend

    built: list[frontend.Frontend] = []
    real = frontend.for_run

    def counted(side: frontend.KernelSide) -> frontend.Frontend:
        built.append(real(side))
        return built[-1]

    monkeypatch.setattr(frontend, "for_run", counted)
    magic_shell.run("def parse(s):\n    return int(s)\n", cell_id="code")
    shown = magic_shell.run("%%gemini_edit\nAdd validation", cell_id="m1")
    assert len(built) == 1  # the whole turn (document, context, labels, writer) saw one view
    (box,) = shown.widgets()
    (apply,) = [b for b in box.children if getattr(b, "description", None) == "Apply"]
    apply.click()  # the click asks what the cell holds now
    assert len(built) == 2 and magic_shell.magics.latest["default"].turn.outcome == "applied"
