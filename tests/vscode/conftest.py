"""A real VS Code (code-server) with the real Jupyter extension, driven by Playwright in headless Chromium.

``scripts/setup_vscode.sh`` installs code-server and the extensions outside the
checkout (``$GENAI_MAGICS_VSCODE_DIR``, default ``~/.cache/genai-magics/vscode``).
One code-server runs per test session with a temporary HOME (its kernelspec
points at this venv's Python, the stand-in's URL in its env), user data dir and
a copy of the extensions; every test gets its own workspace folder (its own
window state) and notebook. Without the install (or chromium, or playwright)
these tests skip and say how to get it, except in CI, where they must run.
Screenshots, the extension host's Jupyter log and the code-server log go to
``test-artifacts/vscode/``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers.pages import artifact_dir, pytest_runtest_makereport, recorded_page, skip_under  # noqa: F401 (a hook)
from vscode_server import EXTENSIONS, VSCODE_DIR, CodeServer, install_extension

CHROMIUM = shutil.which("chromium")
REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "vscode"


def _skip_reason() -> str | None:
    if os.environ.get("CI"):
        return None  # in CI the VS Code tests must run
    if CHROMIUM is None:
        return "chromium is not installed (apt-get install chromium, as root: scripts/setup.sh does it)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[test]')"
    if not (VSCODE_DIR / "code-server" / ".installed").exists() or not (EXTENSIONS / ".stamp").exists():
        return (
            f"no code-server with the Jupyter extension in {VSCODE_DIR}: run scripts/setup_vscode.sh "
            "(GENAI_MAGICS_JUPYTER_VSIX / GENAI_MAGICS_WIDGETS_VSIX name the VSIXes where no marketplace is reachable)"
        )
    return None


def pytest_collection_modifyitems(config, items):
    skip_under(items, Path(__file__).parent, _skip_reason())


def companion_vsix() -> Path | None:
    """The companion's VSIX: $GENAI_MAGICS_COMPANION_VSIX, else the newest one built in vscode-extension/."""
    named = os.environ.get("GENAI_MAGICS_COMPANION_VSIX")
    if named:
        return Path(named)
    built = sorted((REPO / "vscode-extension").glob("genai-magics-companion-*.vsix"), key=lambda p: p.stat().st_mtime)
    return built[-1] if built else None


@pytest.fixture(scope="module")
def code_server(request, tmp_path_factory, stub):
    """code-server for one test module; a module with ``COMPANION = True`` gets the companion installed."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    root = tmp_path_factory.mktemp("vscode")
    extensions = root / "ext"  # a copy: nothing a session does changes the install
    shutil.copytree(EXTENSIONS, extensions, symlinks=True)
    name = request.module.__name__
    if getattr(request.module, "COMPANION", False):
        vsix = companion_vsix()
        if vsix is None or not vsix.exists():
            message = "the companion is not built: cd vscode-extension && npm ci && npm run package"
            if os.environ.get("CI"):
                pytest.fail(message)
            pytest.skip(message)
        install_extension(extensions, vsix, root / "install")
    env = {"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": "fake-key-for-the-stand-in"}
    server = CodeServer(root, env, extensions, ARTIFACTS / f"{name}-code-server.log")
    yield server
    (ARTIFACTS / f"{name}-jupyter-extension.log").write_text(server.jupyter_logs())
    server.stop()


@pytest.fixture(scope="session")
def browser(playwright_driver):
    b = playwright_driver.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
    )
    yield b
    b.close()


@pytest.fixture
def artifacts(request) -> Path:
    return artifact_dir(ARTIFACTS, request.node)


@pytest.fixture
def workspace(request, code_server, stub) -> Path:
    """A workspace folder of this test's own (VS Code keeps open editors per folder)."""
    stub.reset()
    path = code_server.root / "ws" / request.node.name.replace("[", "-").replace("]", "")
    path.mkdir(parents=True)
    return path


@pytest.fixture
def page(request, browser, artifacts):
    yield from recorded_page(request.node, browser, artifacts, 1500, 1100)
