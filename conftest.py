"""Shared pytest setup: the repository root is importable (``harness``); tests
marked ``netns`` (they build network-namespace hosts) are skipped, with the
reason, where this machine cannot build them; tests marked ``network`` (they
start servers on this machine's fixed loopback ports) hold the machine's
network lock while they run, so a test suite and a benchmark or another
engineer's run never start two networks on the same ports."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.upstream import file_lock

ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: The lock `invoke regress` also takes (harness/regress/run.py); empty disables it.
NETWORK_LOCK = os.environ.get("FABRICREPRO_NETWORK_LOCK", "/tmp/fabricrepro-network.lock")


def netns_skip_reason() -> str | None:
    """Why network-namespace hosts cannot be built here (None when they can)."""
    if os.geteuid() != 0:
        return "netns tests need root (they create network namespaces)"
    if not shutil.which("ip") or subprocess.run(["ip", "netns", "list"], capture_output=True).returncode != 0:
        return "`ip netns` is not available"
    if not os.access("/usr/sbin/sshd", os.X_OK):
        return "sshd is not installed (openssh-server)"
    return None


def pytest_collection_modifyitems(config, items):
    reason = netns_skip_reason()
    if reason:
        for item in items:
            if item.get_closest_marker("netns") is not None:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(autouse=True)
def _one_network_at_a_time(request):
    """Tests marked ``network`` run under the machine's network lock (taken after their
    module's builds, which need no lock). Do not wrap pytest in ``flock`` on the same file."""
    # the marker, not a keyword: a parametrization id "network" (test_terraform's) is a keyword too
    if request.node.get_closest_marker("network") is None or not NETWORK_LOCK:
        yield
        return
    if _held_by_an_ancestor(Path(NETWORK_LOCK)):
        yield  # pytest wrapped in `flock` on the same file: taking it again would wait forever
        return
    with file_lock(Path(NETWORK_LOCK)):
        yield


def _held_by_an_ancestor(path: Path) -> bool:
    """Whether one of this process's ancestors holds the flock on ``path`` (/proc/locks)."""
    try:
        inode = path.stat().st_ino
        holders = {int(f[4]) for f in (line.split() for line in Path("/proc/locks").read_text().splitlines())
                   if len(f) > 5 and f[1] == "FLOCK" and f[5].rsplit(":", 1)[-1] == str(inode)}
        pid = os.getppid()
        while pid > 1:
            if pid in holders:
                return True
            stat = Path(f"/proc/{pid}/stat").read_text()
            pid = int(stat.rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return False
    return False
