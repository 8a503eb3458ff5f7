"""The paper's kernel settings on the ssh provider's servers: set with sysctl, restored at down().

The servers are netns hosts (conftest.py); net.* parameters are per network
namespace, so each server's own value is what is checked.
"""

import pytest

from harness.providers.ssh import SshProvider

from provider_hosts import LAYOUT, ROLES, user_inventory

pytestmark = pytest.mark.netns
FUJITSU = {"net.ipv4.tcp_tw_reuse": 1, "net.ipv4.tcp_fin_timeout": 5}   # seed 003 line 124


def value(cluster, host: str, name: str) -> str:
    return cluster.exec(host, ["sysctl", "-n", name]).stdout.strip()


def test_fujitsu_tcp_settings_are_set_then_restored(cluster, tmp_path):
    before = {r: {k: value(cluster, r, k) for k in FUJITSU} for r in ROLES}
    assert all(v["net.ipv4.tcp_fin_timeout"] != "5" for v in before.values())
    p = SshProvider(user_inventory(cluster, tmp_path / "servers.yml"), work_root=str(tmp_path / "remote"),
                    preflight=False)
    try:
        p.up(LAYOUT, tmp_path / "run")
        applied = p.tune(FUJITSU)
        assert [(a["name"], a["value"], a["applied"]) for a in applied] == \
            [("net.ipv4.tcp_tw_reuse", 1, True), ("net.ipv4.tcp_fin_timeout", 5, True)]
        assert applied[1]["before"] == {f"{r}-0": before[r]["net.ipv4.tcp_fin_timeout"] for r in ROLES}
        for r in ROLES:
            assert value(cluster, r, "net.ipv4.tcp_fin_timeout") == "5"
            assert value(cluster, r, "net.ipv4.tcp_tw_reuse") == "1"
    finally:
        p.down()
    assert {r: {k: value(cluster, r, k) for k in FUJITSU} for r in ROLES} == before
