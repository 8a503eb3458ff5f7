"""Fixtures of the provider tests: netns hosts standing in for the user's servers.

A ``NetnsCluster`` gives three hosts (``orderer``, ``peer``, ``client``), each
a network namespace with its own address and sshd that accepts root with a key
made for the cluster: to the ssh provider they are bare-metal servers. The
cluster is torn down in the fixture's ``finally`` (killing every process left
in its namespaces, the node-exporters included) even when a test fails.
"""

import shutil
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))   # provider_hosts beside this file

from harness.providers import netns as N  # noqa: E402

from provider_hosts import ROLES  # noqa: E402


def _tools_skip_reason() -> str | None:
    """What the provider tests need beyond netns hosts (tests/conftest.py checks those)."""
    if not shutil.which("ansible-playbook"):
        return "ansible is not installed"
    if not shutil.which("prometheus-node-exporter"):
        return "prometheus-node-exporter is not installed on this machine (the netns hosts share its files)"
    return None


def pytest_collection_modifyitems(config, items):
    reason = _tools_skip_reason()
    if reason:
        for item in items:
            if "netns" in item.keywords and str(item.fspath).startswith(str(Path(__file__).parent)):
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = N.NetnsCluster(tmp_path_factory.mktemp("servers"), ROLES, roles={r: [r] for r in ROLES},
                       handle_signals=False)
    t = time.monotonic()
    try:
        c.start()
        print(f"3 netns servers up in {time.monotonic() - t:.2f}s")
        yield c
    finally:
        c.teardown()
