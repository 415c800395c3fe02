#!/usr/bin/env bash
# Sets up this checkout for the demo and the tests: the system packages they use
# (installed with apt-get when run as root on Debian/Ubuntu, otherwise named),
# then .venv with the package and its test extras.
#   python3, python3-venv  the virtual environment
#   nodejs                 builds the live bridge (labextension/) into the package; without it the
#                          package installs without it (no live Apply in JupyterLab / Notebook 7)
#   chromium               the browser tests (tests/browser); skipped without it
#   tmux                   the terminal IPython test (tests/test_terminal.py); skipped without it
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v python3 >/dev/null 2>&1 || missing+=(python3)
python3 -c "import ensurepip, venv" >/dev/null 2>&1 || missing+=(python3-venv)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: apt-get install ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null
        apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        echo "setup: not installed: ${missing[*]} (as root: apt-get install ${missing[*]}); going on without them"
    fi
fi

python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -e ".[test,dev]"
# hatch_build.py says so when it leaves the bridge out, but pip shows a build's output only when it fails
if [ ! -e .venv/share/jupyter/labextensions/genai-magics-bridge/package.json ]; then
    echo "setup: installed without the live bridge (it needs Node.js >= 18): no live Apply in JupyterLab / Notebook 7;" \
         "install Node.js and run scripts/setup.sh again to get it"
fi
echo "setup: done (.venv)"
