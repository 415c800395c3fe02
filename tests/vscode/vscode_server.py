"""code-server for the tests: where setup_vscode.sh installed it, and one running instance."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from helpers.pages import free_port, wait_serving

VSCODE_DIR = Path(
    os.environ.get("GENAI_MAGICS_VSCODE_DIR")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "genai-magics" / "vscode"
)
ENTRY = VSCODE_DIR / "code-server" / "out" / "node" / "entry.js"
NODE = VSCODE_DIR / "node22" / "bin" / "node"
EXTENSIONS = VSCODE_DIR / "ext"
KERNEL_NAME = "genai-magics-test"
KERNEL_DISPLAY = "genai-magics test kernel"
SETTINGS = {
    "security.workspace.trust.enabled": False,
    "workbench.startupEditor": "none",
    "telemetry.telemetryLevel": "off",
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "update.mode": "none",
    "workbench.tips.enabled": False,
    "jupyter.askForKernelRestart": False,
    "window.restoreWindows": "none",
    "files.autoSave": "off",
    "notebook.output.scrolling": False,
    "workbench.editor.enablePreview": False,
    "chat.disableAIFeatures": True,
    "editor.autoIndent": "none",
    "remote.autoForwardPorts": False,
    "workbench.secondarySideBar.defaultVisibility": "hidden",
}


class CodeServer:
    """One code-server process group (code-server, its extension host, the kernels)."""

    def __init__(self, root: Path, env: dict[str, str], extensions: Path, log_path: Path):
        self.root = root
        self.home = root / "home"
        self.user_data = root / "data"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        (self.user_data / "User").mkdir(parents=True)
        (self.user_data / "User" / "settings.json").write_text(json.dumps(SETTINGS, indent=1))
        spec = self.home / ".local" / "share" / "jupyter" / "kernels" / KERNEL_NAME
        spec.mkdir(parents=True)
        (spec / "kernel.json").write_text(
            json.dumps(
                {
                    "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                    "display_name": KERNEL_DISPLAY,
                    "language": "python",
                    "env": env,
                }
            )
        )
        full_env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "JPY_", "VSCODE_"))}
        full_env.update({"HOME": str(self.home), "PATH": f"{NODE.parent}{os.pathsep}{full_env.get('PATH', '')}"})
        cmd = [
            str(NODE),
            str(ENTRY),
            "--auth",
            "none",
            "--bind-addr",
            f"127.0.0.1:{self.port}",
            "--user-data-dir",
            str(self.user_data),
            "--extensions-dir",
            str(extensions),
            "--disable-telemetry",
            "--disable-update-check",
            "--disable-workspace-trust",
        ]
        self.log_path = log_path
        self._log = open(log_path, "w")
        # its own session: stopping the group stops the extension host and the kernels too
        self.proc = subprocess.Popen(
            cmd, env=full_env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self._wait_ready()

    def _wait_ready(self) -> None:
        wait_serving(self.proc, f"{self.url}/healthz", self.log_path, "code-server", poll=0.3)

    def jupyter_logs(self) -> str:
        logs = sorted(self.user_data.glob("logs/*/exthost*/output_logging_*/*Jupyter*.log"))
        return "\n".join(p.read_text(errors="replace") for p in logs)

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        self._log.close()


def install_extension(extensions: Path, vsix: Path, scratch: Path) -> None:
    """Install a VSIX into an extensions dir (code-server's own installer; its state goes to ``scratch``)."""
    env = {**os.environ, "HOME": str(scratch), "CODE_SERVER_CONFIG": str(scratch / "config.yaml")}
    subprocess.run(
        [str(NODE), str(ENTRY), "--extensions-dir", str(extensions), "--user-data-dir", str(scratch / "data")]
        + ["--install-extension", str(vsix), "--force"],
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
