"""Fixtures of the netns tests: the repository on sys.path, the ``netns`` marker, skip reasons."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def pytest_configure(config):
    config.addinivalue_line("markers", "netns: creates network-namespace hosts (needs root and `ip netns`)")


def _netns_skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "netns tests need root (they create network namespaces)"
    if not shutil.which("ip") or subprocess.run(["ip", "netns", "list"], capture_output=True).returncode != 0:
        return "`ip netns` is not available"
    if not os.access("/usr/sbin/sshd", os.X_OK):
        return "sshd is not installed (openssh-server)"
    return None


def pytest_collection_modifyitems(config, items):
    reason = _netns_skip_reason()
    if reason:
        for item in items:
            if "netns" in item.keywords:
                item.add_marker(pytest.mark.skip(reason=reason))
