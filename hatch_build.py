"""Build hook: the live bridge (labextension/, TypeScript) goes into the wheel when Node.js is there.

Without Node.js (or with one too old to build it) the package installs without the
bridge and says so in one line, instead of failing in metadata generation with a
traceback. The bridge is what lets Apply write into a cell live in JupyterLab and
Notebook 7; everything else works without it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

MIN_NODE = 18  # yarn 3 (jlpm) needs 18.12; tested with 20
BUILD_DIR = "genai_magics/labextension"
SHARE = "share/jupyter/labextensions/genai-magics-bridge"
MISSING = (
    "genai-magics: {why}: installing without the live bridge (no live Apply in JupyterLab / Notebook 7); "
    "install Node.js >= {min} and install again to get it"
)


def node_problem() -> str | None:
    """Why the bridge cannot be built here, or None when Node.js is fit to build it."""
    node = shutil.which("node")
    if node is None:
        return "Node.js not found"
    try:
        version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
        major = int(version.lstrip("v").split(".")[0])
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return "Node.js does not run"
    return None if major >= MIN_NODE else f"Node.js {version} is older than {MIN_NODE}"


class BridgeBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":  # the sdist carries the TypeScript sources
            return
        problem = node_problem()
        if problem is not None:
            print(MISSING.format(why=problem, min=MIN_NODE), file=sys.stderr)
            return
        from hatch_jupyter_builder import npm_builder

        root = Path(self.root)
        npm_builder(
            self.target_name,
            version,
            path=str(root / "labextension"),
            build_cmd="build:prod",
            source_dir=str(root / "labextension/src"),
            build_dir=str(root / BUILD_DIR),
            npm=["jlpm"],
        )
        for target in ("package.json", "static/style.js"):
            if not (root / BUILD_DIR / target).exists():
                raise RuntimeError(f"the labextension build did not produce {BUILD_DIR}/{target}")
        build_data["shared_data"][BUILD_DIR] = SHARE
        build_data["shared_data"]["labextension/install.json"] = f"{SHARE}/install.json"
