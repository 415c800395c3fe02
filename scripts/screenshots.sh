#!/usr/bin/env bash
# The README's two pictures (docs/images/), taken again by the tests that check what they show:
# a proposal with its diff and buttons in JupyterLab (tests/browser/) and in VS Code with the
# companion (tests/vscode/); see tests/helpers/screenshots.py. About 2 minutes.
# Needs what those tests need: scripts/setup.sh (chromium, the live bridge), scripts/setup_vscode.sh
# and the companion's VSIX (cd vscode-extension && npm ci && npm run package).
#   PYTHON  the interpreter with the package and its test extras (default: .venv/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
out=docs/images
shots=("$out/jupyterlab-proposal.png" "$out/vscode-proposal.png")
export GENAI_MAGICS_SCREENSHOTS="$PWD/$out"
rm -f "${shots[@]}"
"$python" -m pytest -p no:cacheprovider -q \
  "tests/browser/test_lab_magics.py::test_a_proposal_reads_as_its_diff_and_apply_says_what_it_did"
"$python" -m pytest -p no:cacheprovider -q \
  "tests/vscode/test_vscode_companion.py::test_a_proposal_reads_as_its_diff_and_apply_writes_the_code_cell"
for shot in "${shots[@]}"; do
  if [ ! -s "$shot" ]; then
    echo "screenshots: $shot was not taken (the test's skip reason is above)" >&2
    exit 1
  fi
done
echo "screenshots: ${shots[*]}"
