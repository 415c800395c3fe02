#!/usr/bin/env bash
# The running-cell (VS Code) tests again on ipykernel 6.x, where jupyter-ui-poll
# does the waiting that ipykernel >= 7.4 does by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-ipykernel6
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q "ipykernel>=6.29,<7" jupyter-ui-poll "ipython>=8.12" "ipywidgets>=8,<9" \
    "google-genai>=3.3" nbformat traitlets jupyter_client pytest pytest-timeout "regex>=2022.1" tzdata
fi
# test_frontends.py too, but not its three spellings that stage Apply on ipykernel 7.4:
# with jupyter-ui-poll every spelling waits for the click (waiting.py), so they do not apply.
PYTHONPATH="$PWD" "$venv/bin/python" -m pytest -p no:cacheprovider tests/kernel/test_running_cell.py tests/kernel/test_frontends.py \
  -k "not in_a_loop and not autoawait_off and not followed_by_other" "$@"
