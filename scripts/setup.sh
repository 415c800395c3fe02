#!/usr/bin/env bash
# Sets up this checkout for the demo and the tests: the system packages they use
# (installed with apt-get when run as root on Debian/Ubuntu, otherwise named),
# then .venv with the package and its test extras.
#   python3 >= 3.11, python3-venv  the virtual environment
#   nodejs                 builds the live bridge (labextension/) into the package; without it the
#                          package installs without it (no live Apply in JupyterLab / Notebook 7)
#   chromium               the browser tests (tests/browser); skipped without it
#   tmux                   the terminal IPython test (tests/kernel/test_terminal.py); skipped without it
set -euo pipefail
cd "$(dirname "$0")/.."

log="$PWD/setup.log"  # what apt-get and pip print; shown only when a step fails
: > "$log"
quiet() {  # quiet COMMAND...: its output to the log, its last lines on the screen if it fails
    "$@" >> "$log" 2>&1 || { echo "setup: failed: $*"; tail -25 "$log"; exit 1; }
}

missing=()
command -v python3 >/dev/null 2>&1 || missing+=(python3)
python3 -c "import ensurepip, venv" >/dev/null 2>&1 || missing+=(python3-venv)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing ${missing[*]} system-wide with apt-get (as root; a few minutes, quiet; log: setup.log)"
        quiet scripts/apt_install.sh "${missing[@]}"  # waits while another apt holds its locks
    else
        echo "setup: not installed: ${missing[*]} (as root: apt-get install ${missing[*]}); going on without them"
    fi
fi

if ! python3 -c "import sys; sys.exit(sys.version_info < (3, 11))" 2>/dev/null; then
    echo "setup: Python >= 3.11 is needed (google-genai 3.x), found: $(python3 --version 2>&1)"
    exit 1
fi
bridge="without the live bridge (no Node.js)"
command -v node >/dev/null 2>&1 && bridge="building the live bridge with Node.js"
echo "setup: making .venv: the package (editable), JupyterLab and the test tools from PyPI, $bridge" \
     "(a few minutes, quiet; log: setup.log)"
quiet python3 -m venv .venv
quiet .venv/bin/pip install --upgrade pip
quiet .venv/bin/pip install -e ".[test,dev]"
# hatch_build.py says so when it leaves the bridge out, but pip shows a build's output only when it fails
if [ ! -e .venv/share/jupyter/labextensions/genai-magics-bridge/package.json ]; then
    echo "setup: installed without the live bridge (it needs Node.js >= 18): no live Apply in JupyterLab / Notebook 7;" \
         "install Node.js and run scripts/setup.sh again to get it"
fi
echo "setup: done (.venv)"
