"""A real JupyterLab / Notebook 7 server and headless Debian Chromium via Playwright.

The server runs on 127.0.0.1 with a token, a temporary HOME, Jupyter config,
data, runtime and settings dirs, and the package's prebuilt labextension.
Chromium is Debian's ``/usr/bin/chromium`` (never ``playwright install``).
Screenshots, the browser console and the server log go to ``test-artifacts/``.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from helpers.pages import (  # noqa: F401 (a hook)
    artifact_dir,
    free_port,
    pytest_runtest_makereport,
    recorded_page,
    skip_under,
    wait_serving,
)

CHROMIUM = shutil.which("chromium")  # Debian's /usr/bin/chromium
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# GENAI_MAGICS_LABEXTENSION: a built bridge to test instead of the venv's (a worktree's
# `cd labextension && jlpm build` writes genai_magics/labextension): the servers find it in their own
# data dir, which wins over the environment's with JUPYTER_PREFER_ENV_PATH=0; the venv is left alone.
LABEXTENSION = os.environ.get("GENAI_MAGICS_LABEXTENSION")
BRIDGE = (
    Path(LABEXTENSION, "package.json")
    if LABEXTENSION
    else Path(sys.prefix, "share/jupyter/labextensions/genai-magics-bridge/package.json")
)
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "browser"


def _skip_reason() -> str | None:
    if os.environ.get("CI"):
        return None  # in CI the browser tests must run
    if CHROMIUM is None:
        return "chromium is not installed (apt-get install chromium, as root: scripts/setup.sh does it)"
    if not BRIDGE.exists():
        return (
            "the live bridge is not installed (Node.js was missing when the package was installed): "
            "install Node.js and run scripts/setup.sh again"
        )
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[test]')"
    return None


def pytest_collection_modifyitems(config, items):
    skip_under(items, Path(__file__).parent, _skip_reason())


class JupyterServer:
    def __init__(self, app: str, root: Path, home: Path, env: dict[str, str], log_path: Path):
        self.app = app
        self.root = root
        self.token = secrets.token_hex(16)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        settings = home / "lab-settings"
        notif = settings / "@jupyterlab" / "apputils-extension"
        notif.mkdir(parents=True, exist_ok=True)
        # no news or update toasts over the notebook
        (notif / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False})
        )
        full_env = dict(os.environ)
        for var in ("JUPYTER_PATH", "JUPYTER_CONFIG_PATH", "JPY_SESSION_NAME"):
            full_env.pop(var, None)
        full_env.update(
            {
                "HOME": str(home),
                "JUPYTER_CONFIG_DIR": str(home / "jupyter-config"),
                "JUPYTER_DATA_DIR": str(home / "jupyter-data"),
                "JUPYTER_RUNTIME_DIR": str(home / "jupyter-runtime"),
                "JUPYTERLAB_SETTINGS_DIR": str(settings),
                "JUPYTERLAB_WORKSPACES_DIR": str(home / "lab-workspaces"),
                "IPYTHONDIR": str(home / "ipython"),
                "PATH": str(Path(sys.executable).parent) + os.pathsep + full_env.get("PATH", ""),
            }
        )
        if LABEXTENSION:
            extensions = home / "jupyter-data" / "labextensions"
            extensions.mkdir(parents=True)
            (extensions / "genai-magics-bridge").symlink_to(Path(LABEXTENSION).resolve())
            full_env["JUPYTER_PREFER_ENV_PATH"] = "0"
        full_env.update(env)
        module = "jupyterlab" if app == "lab" else "notebook"
        cmd = [
            sys.executable,
            "-m",
            module,
            "--no-browser",
            "--allow-root",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={root}",
        ]
        self.log_path = log_path
        self._log = open(log_path, "w")
        self.proc = subprocess.Popen(cmd, env=full_env, cwd=str(root), stdout=self._log, stderr=subprocess.STDOUT)
        self._wait_ready()

    def _wait_ready(self) -> None:
        req = urllib.request.Request(f"{self.url}/api/status", headers={"Authorization": f"token {self.token}"})
        wait_serving(self.proc, req, self.log_path, f"jupyter {self.app}", poll=0.2)

    def notebook_url(self, name: str) -> str:
        path = "lab/tree" if self.app == "lab" else "notebooks"
        return f"{self.url}/{path}/{name}?token={self.token}"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()


@pytest.fixture
def artifacts(request) -> Path:
    return artifact_dir(ARTIFACTS, request.node)


@pytest.fixture
def server_env(request) -> dict[str, str]:
    """Extra environment for the server (and so its kernels); tests may add to it. A test marked
    ``stand_in`` gets the stand-in's address and a placeholder key: its kernels talk to ``stub_url``."""
    if request.node.get_closest_marker("stand_in") is None:
        return {}
    return {"GOOGLE_GEMINI_BASE_URL": request.getfixturevalue("stub_url"), "GEMINI_API_KEY": "fake"}


@pytest.fixture
def stub_url():
    """The stand-in Gemini server in its own process (the kernels reach it over HTTP)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "genai_magics.stub", "--port", "0"], stdout=subprocess.PIPE, text=True
    )
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("GOOGLE_GEMINI_BASE_URL="), line
        yield line.split("=", 1)[1]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def jupyter_server(request, tmp_path, artifacts, server_env):
    app = getattr(request, "param", "lab")
    root = tmp_path / "root"
    home = tmp_path / "home"
    root.mkdir()
    home.mkdir()
    server = JupyterServer(app, root, home, server_env, artifacts / "server.log")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def browser(playwright_driver):
    b = playwright_driver.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
    yield b
    b.close()


@pytest.fixture
def page(request, browser, artifacts):
    yield from recorded_page(request.node, browser, artifacts, 1280, 900)
