"""Shared pytest setup: the repository root is importable (``harness``), and tests
marked ``netns`` (they build network-namespace hosts) are skipped, with the
reason, where this machine cannot build them."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
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
            if "netns" in item.keywords:
                item.add_marker(pytest.mark.skip(reason=reason))
