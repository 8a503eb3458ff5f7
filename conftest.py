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

from harness import machine_lock

ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

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
    """Tests marked ``network`` run under the machine's network lock (harness/machine_lock.py; taken after
    their module's builds, which need no lock). Pytest wrapped in ``flock`` on the same file holds it already."""
    # the marker, not a keyword: a parametrization id "network" (test_terraform's) is a keyword too
    if request.node.get_closest_marker("network") is None:
        yield
        return
    with machine_lock.machine(f"test {request.node.nodeid}"):
        yield
