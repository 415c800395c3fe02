#!/usr/bin/env bash
# apt_install.sh PACKAGE...: apt-get update, then install the packages (as root), waiting while another
# apt or dpkg (an unattended upgrade, another install) holds its locks instead of failing at once.
# apt-get install waits for the dpkg lock itself (DPkg::Lock::Timeout); apt-get update waits for no
# lock, so it is tried again while another process holds the package lists' lock.
# APT_LOCK_WAIT: the longest wait in seconds (600). Used by setup.sh and setup_vscode.sh.
set -euo pipefail
wait_s="${APT_LOCK_WAIT:-600}"
export DEBIAN_FRONTEND=noninteractive

LISTS=/var/lib/apt/lists/
eval "$(apt-config shell LISTS Dir::State::lists/d)"  # where this apt keeps them (APT_CONFIG may move them)
lists_locked() {  # another process holds the lists' lock (a POSIX lock, as apt takes it: lslocks sees it)
    lslocks -n -o PATH 2>/dev/null | grep -qx "${LISTS%/}/lock"
}

waited=0
until apt-get update -qq; do
    if [ "$waited" -ge "$wait_s" ] || ! lists_locked; then
        echo "apt_install: apt-get update failed" >&2
        exit 1
    fi
    [ "$waited" -gt 0 ] || echo "apt_install: another apt holds the package lists; waiting (up to ${wait_s} s)" >&2
    sleep 2
    waited=$((waited + 2))
done
apt-get -o DPkg::Lock::Timeout="$wait_s" install -y -qq "$@"
