"""What the two real-browser layers (tests/browser: JupyterLab; tests/vscode: code-server) share."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest


def skip_under(items: list, here: Path, reason: str | None) -> None:
    """Mark every collected test under ``here`` skipped with ``reason`` (None: they run)."""
    if reason is None:
        return
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keeps each phase's report on the test (``rep_setup``, ``rep_call``): fixtures screenshot failures."""
    outcome = yield
    rep = outcome.get_result()
    setattr(item, f"rep_{rep.when}", rep)


def failed(node) -> bool:
    return any(
        getattr(node, f"rep_{w}", None) is not None and getattr(node, f"rep_{w}").failed for w in ("setup", "call")
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
