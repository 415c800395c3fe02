"""``benchmarks/vscode_apply.py --smoke``: one click per variant, so that the benchmark keeps running
(the other benchmarks' smoke runs are in tests/unit/test_benchmarks.py). It starts its own code-server,
JupyterLab and Chromium; it needs the companion's VSIX built in vscode-extension/."""

from __future__ import annotations

import os

import pytest
from helpers.benchmark import ROOT, smoke_run


def test_the_vscode_apply_benchmark_runs_in_its_smoke_mode():
    if not list((ROOT / "vscode-extension").glob("genai-magics-companion-*.vsix")):
        message = "the companion is not built: cd vscode-extension && npm ci && npm run package"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    assert "click -> proposal" in smoke_run("vscode_apply.py")
