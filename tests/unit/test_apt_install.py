"""scripts/apt_install.sh (setup.sh's system packages) waits while another apt holds its locks (issue 41: another
install held the package lists and setup failed in 2 s).

Real apt-get on a package-lists folder of the test's own (``APT_CONFIG``), with no package source: its
``update`` reads nothing from the network and never touches the machine's lists, yet takes the lists'
lock as always; the test holds that lock as another apt would (a POSIX lock), then lets it go.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "apt_install.sh"

pytestmark = pytest.mark.skipif(
    not (hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get") and shutil.which("lslocks")),
    reason="needs root, apt-get and lslocks (Debian as root, as setup.sh installs packages there)",
)


def test_apt_install_waits_for_the_package_lists_lock_instead_of_failing(tmp_path):
    lists = tmp_path / "lists"
    (lists / "partial").mkdir(parents=True)
    config = tmp_path / "apt.conf"
    config.write_text(
        f'Dir::Etc::SourceList "/dev/null";\nDir::Etc::SourceParts "/nonexistent";\nDir::State::Lists "{lists}/";\n'
    )
    env = {**os.environ, "APT_CONFIG": str(config), "APT_LOCK_WAIT": "60"}
    lock = os.open(lists / "lock", os.O_RDWR | os.O_CREAT, 0o640)
    try:
        fcntl.lockf(lock, fcntl.LOCK_EX)  # another apt-get update is running
        # no package: the install step has nothing to do (the machine's packages stay as they are)
        proc = subprocess.Popen(["bash", str(SCRIPT)], env=env, stderr=subprocess.PIPE, text=True)
        time.sleep(5)
        assert proc.poll() is None, proc.communicate()  # still waiting, not failed
    finally:
        os.close(lock)  # the other apt is done
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "waiting" in err


def test_apt_install_fails_at_once_when_update_fails_for_another_reason(tmp_path):
    config = tmp_path / "apt.conf"
    config.write_text(f'Dir::State::Lists "{tmp_path}/no-such-folder/";\n')  # update cannot lock what is not there
    env = {**os.environ, "APT_CONFIG": str(config), "APT_LOCK_WAIT": "60"}
    started = time.monotonic()
    done = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "apt-get update failed" in done.stderr
    assert time.monotonic() - started < 20  # no wait: nothing holds a lock
