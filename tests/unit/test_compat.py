"""Decisions by type and by reference, never by a name or a message's words (issue 19, item 4)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from google import genai
from google.genai import errors
from helpers.shell import Shell

from genai_magics.frontends.terminal import is_terminal
from genai_magics.gemini import sdk_compat
from genai_magics.gemini.caching import cache_is_gone


def test_an_embedded_ipython_is_a_terminal_and_a_kernel_shell_is_not():
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.terminal.embed import InteractiveShellEmbed

    # IPython.embed()'s shell subclasses TerminalInteractiveShell: no widgets there either
    assert is_terminal(object.__new__(InteractiveShellEmbed)) is True
    assert is_terminal(object.__new__(InteractiveShell)) is False


def test_unload_removes_exactly_the_transformers_the_load_added():
    shell = Shell()
    ip = shell.ip
    added = list(shell.magics.transformers)
    assert added and all(t in lst for lst, t in added)

    def users_own(lines):  # a transformer of the user's, whatever its module says
        return lines

    users_own.__module__ = "genai_magics.user"
    ip.input_transformers_cleanup.append(users_own)
    try:
        shell.close()
        assert all(t not in lst for lst, t in added)
        assert users_own in ip.input_transformers_cleanup
    finally:
        ip.input_transformers_cleanup.remove(users_own)


def test_the_retry_hook_sees_the_exception_itself(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    client = genai.Client(http_options={"retry_options": {"attempts": 2}})
    seen = []
    assert sdk_compat.on_retry_wait(client, lambda error, wait: seen.append((error, wait)))
    state = SimpleNamespace(
        outcome=SimpleNamespace(failed=True, exception=lambda: ConnectionResetError("reset")),
        next_action=SimpleNamespace(sleep=0.5),
        fn=None,
        attempt_number=1,
        seconds_since_start=0.0,
    )
    client._api_client._retry.before_sleep(state)  # what tenacity calls before it waits
    assert [(type(e), w) for e, w in seen] == [(ConnectionResetError, 0.5)]


def test_without_the_sdks_retry_objects_the_hook_is_left_out():
    assert sdk_compat.on_retry_wait(SimpleNamespace(), lambda error, wait: None) is False


@pytest.mark.parametrize(("code", "gone"), [(403, True), (404, True), (400, False), (500, False)])
def test_a_lost_cache_is_told_by_status_not_by_words(code, gone):
    error = errors.APIError(code, {"error": {"code": code, "message": "anything at all", "status": "X"}})
    assert cache_is_gone(error) is gone
