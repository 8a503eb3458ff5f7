"""The ssh (and aws) provider's per-point link delay (Fujitsu Fig. 5's network_latency_ms sweep).

No host: this kernel has no netem, so a test double stands in for the remote
command runner (the `ip route get` probe and the links playbook) and the test
asserts the exact tc commands each sending host would run."""

import json

import pytest

from harness.errors import HarnessError
from harness.providers import ssh_links
from harness.providers.ssh import SshProvider
from harness.report.hosts import _point_delays
from harness.rundir import write_json

ADDRESS = {"p-0": "10.0.0.1", "p-1": "10.0.0.2", "p-2": "10.0.0.3"}


class RemoteRunnerDouble:
    """Test double of the remote side: answers `ip route get` (every address via eth0) and records playbooks."""

    def __init__(self):
        self.playbooks = []   # (playbook, {host: [tc command line]})

    def adhoc(self, inventory, pattern, command, out_dir, timeout_s=5, become=False):
        routes = "".join(f"{a} dev eth0 src 10.0.0.9 uid 0 \\    cache \r\n" for a in ADDRESS.values())
        return {h: {"rc": 0, "stdout": routes} for h in pattern.split(",")}

    def playbook(self, playbook, log_name, variables, what, timeout, hint=None, fresh=False):
        cmds = variables["fabricrepro_tc_commands"]
        self.playbooks.append((playbook, {h: [" ".join(c["argv"]) for c in cs] for h, cs in cmds.items()}))


@pytest.fixture
def provider(tmp_path, monkeypatch):
    """Three peers on three hosts, as after up(), talking to the double instead of Ansible."""
    double = RemoteRunnerDouble()
    monkeypatch.setattr(ssh_links, "adhoc", double.adhoc)
    p = SshProvider(tmp_path / "inv.yml")
    p.run_dir, p.hosts_inventory = tmp_path, tmp_path / "hosts.yml"
    p.placed = {f"peer{i}": f"p-{i}" for i in range(3)}
    p.host_roles = {h: [r] for r, h in p.placed.items()}
    p.user_vars = {h: {"ansible_host": a} for h, a in ADDRESS.items()}
    p._playbook = double.playbook
    p.double = double
    return p


def every_pair(delay_ms):
    return [{"from": f"peer{i}", "to": f"peer{j}", "delay_ms": delay_ms, "ports": [7051]}
            for i in range(3) for j in range(3) if i != j]


def test_zero_delay_links_get_a_netem_that_each_point_changes(provider):
    first = provider.apply_links(every_pair(0.0))   # the sweep's first point: 0 ms, the qdisc must exist
    [(book, cmds)] = provider.double.playbooks
    assert book == ssh_links.LINKS_PLAYBOOK
    assert [c for c in cmds["p-0"] if "netem" in c] == [
        "tc qdisc replace dev eth0 parent 1:1 handle 101: netem delay 0ms limit 1000",
        "tc qdisc replace dev eth0 parent 1:2 handle 102: netem delay 0ms limit 1000"]
    assert all(r["delay_method"] == "tc netem" and r["delay_ms"] == 0.0 for r in first)

    out = provider.set_link_delay(32.0)
    book, cmds = provider.double.playbooks[-1]
    # one change per netem on its sending host; the queue grows with the delay (10 Gbit/s x 32 ms x 1.5)
    assert book == ssh_links.LINKS_PLAYBOOK and cmds == {
        "p-0": ["tc qdisc change dev eth0 parent 1:1 handle 101: netem delay 32ms limit 40001",
                "tc qdisc change dev eth0 parent 1:2 handle 102: netem delay 32ms limit 40001"],
        "p-1": ["tc qdisc change dev eth0 parent 1:1 handle 101: netem delay 32ms limit 40001",
                "tc qdisc change dev eth0 parent 1:2 handle 102: netem delay 32ms limit 40001"],
        "p-2": ["tc qdisc change dev eth0 parent 1:1 handle 101: netem delay 32ms limit 40001",
                "tc qdisc change dev eth0 parent 1:2 handle 102: netem delay 32ms limit 40001"]}
    assert [(r["from"], r["to"], r["delay_ms"], r["rtt_added_ms"]) for r in out] == \
        [(l["from"], l["to"], 32.0, 32.0) for l in every_pair(0)]
    assert out[0]["tc_change"] == "tc qdisc change dev eth0 parent 1:1 handle 101: netem delay 32ms limit 40001"
    # the run's metadata keeps the links as first applied, as netns does
    assert [r["delay_ms"] for r in provider.describe()["links"]] == [0.0] * 6

    # a later apply_links re-renders the links with the delay they have now
    provider.apply_links([{"from": "peer0", "to": "peer1", "delay_ms": 32.0}])
    assert "tc qdisc replace dev eth0 parent 1:1 handle 101: netem delay 32ms limit 40001" in \
        provider.double.playbooks[-1][1]["p-0"]


def test_each_points_delay_is_stored_with_the_point_and_reported(provider, tmp_path):
    """As reproduce does: set_link_delay's result in points/<point>/links.json, listed by the report."""
    provider.apply_links(every_pair(0.0))
    run = type("RunDouble", (), {"path": tmp_path})()
    for point, delay in (("p-000", 0.0), ("p-001", 64.0)):
        (tmp_path / "points" / point).mkdir(parents=True)
        write_json(tmp_path / "points" / point / "links.json", provider.set_link_delay(delay))
    stored = json.loads((tmp_path / "points" / "p-001" / "links.json").read_text())
    assert {l["delay_ms"] for l in stored} == {64.0} and all(l["delay_method"] == "tc netem" for l in stored)
    assert _point_delays(run).endswith("p-000 +0 ms; p-001 +64 ms.")


def test_bad_delay_and_nothing_to_change_are_errors(provider):
    with pytest.raises(HarnessError, match="no delayed link to change"):
        provider.set_link_delay(4.0)
    provider.apply_links([{"from": "peer0", "to": "peer1", "rate_mbit": 100}])
    with pytest.raises(HarnessError, match="no delayed link to change"):
        provider.set_link_delay(4.0)   # a rate-only link has no netem
    provider.apply_links(every_pair(4.0))
    with pytest.raises(HarnessError, match=">= 0 ms"):
        provider.set_link_delay(-1)
