"""What the two real-browser layers (tests/browser: JupyterLab; tests/vscode: code-server) share."""

from __future__ import annotations

import re
import shutil
import socket
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


def wait_serving(proc: Any, request: Any, log_path: Path, name: str, poll: float, timeout: float = 60) -> None:
    """Until ``request`` (a URL or urllib Request) answers 200; the server's log tail if ``proc``
    exits or it does not within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited: {log_path.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(request, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(poll)
    raise TimeoutError(f"{name} did not start: {log_path.read_text()[-3000:]}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def artifact_dir(root: Path, node) -> Path:
    """A fresh folder for one test's screenshots and logs."""
    path = root / node.name.replace("/", "_").replace("[", "-").replace("]", "")
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True, exist_ok=True)
    return path


def watch_console(page: Any) -> list[str]:
    """The page's console lines (and uncaught errors) as they come, kept on it as ``page.console_log``."""
    console: list[str] = []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
    page.console_log = console
    return console


def recorded_page(node, browser: Any, artifacts: Path, width: int, height: int) -> Iterator[Any]:
    """A page in its own context; its console goes to ``console.log``, a failure to ``failure.png``."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(30_000)
    console = watch_console(page)
    yield page
    if failed(node):
        try:
            page.screenshot(path=str(artifacts / "failure.png"), full_page=True)
        except Exception:
            pass
    (artifacts / "console.log").write_text("\n".join(console))
    context.close()


def shown_as(message: Any, **known: object) -> re.Pattern[str]:
    """A catalogue message (``known`` fields as given, the others any text) as a regular expression the
    page's JavaScript reads (``expect(...).to_contain_text``): its fields unnamed, as JavaScript spells groups."""
    source = message.pattern(prefixed=False, **known).pattern
    if "(?P=" in source:
        raise ValueError(f"{message.name}: a field named twice has no JavaScript form here")
    return re.compile(re.sub(r"\(\?P<\w+>", "(?:", source), re.DOTALL)
