"""``reproduce(..., provider="ssh")`` of FastFabric's Table I on a user-style inventory of netns servers.

Twelve network-namespace hosts with their own sshd stand in for a user's
servers, listed as a user lists them: one group per topology role, three
hosts in ``zookeeper`` and ``kafka``, two in ``endorser`` (the paper's five
endorsers are then dealt round-robin over two servers, a deviation the run
records), hosts named as the user's machines are (``m01``...), not after
the layout. Host keys are checked as for a user's servers: accepted when first
met and recorded in a known_hosts file, which this module keeps.

tests/harness/fakebin is a TEST DOUBLE of the Go commands (contract-shaped
files, nothing measured): what is tested is the ssh path through the harness
for the paper's 15-host topology: the placement (each host of the layout on
the inventory host expected), preflight and node-exporter on every server,
idle ones included, the commands copied over SSH, tc shaping of every pair of
servers and its removal, teardown leaving nothing running or listening on any
server, and a run with an unreachable server or a server whose host key
changed failing in seconds, naming it. The servers share one filesystem and
one work_root, as servers with an NFS home would. About 60 s in all.
"""

import io
import json
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from harness.providers import netns as N
from harness.providers.ssh import SshProvider
from harness.reproduce import reproduce
from harness.rundir import Run

from provider_hosts import exporter_pids, restart_sshd_with_new_key, wait_no_leftovers

REPO = Path(__file__).resolve().parents[2]
FAKEBIN = REPO / "tests" / "harness" / "fakebin"
pytestmark = pytest.mark.netns

#: The user's inventory groups, in the order the user lists the hosts (not sorted, on purpose).
GROUPS = {"orderer": ["m01"], "zookeeper": ["m04", "m02", "m03"], "kafka": ["m05", "m06", "m07"],
          "peer": ["m08"], "storage": ["m09"], "endorser": ["m11", "m10"], "client": ["m12"]}
SERVERS = sorted(h for hs in GROUPS.values() for h in hs)
#: Table I laid out (harness/topology.py) and where each host of it must go: the i-th host of the group,
#: round-robin where the group has fewer.
PLACEMENT = {"orderer": "m01", "peer": "m08", "client": "m12", "storage": "m09",
             "zookeeper-0": "m04", "zookeeper-1": "m02", "zookeeper-2": "m03",
             "kafka-0": "m05", "kafka-1": "m06", "kafka-2": "m07",
             "endorser-0": "m11", "endorser-1": "m10", "endorser-2": "m11", "endorser-3": "m10", "endorser-4": "m11"}


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    c = N.NetnsCluster(tmp_path_factory.mktemp("servers"), SERVERS, handle_signals=False)
    t = time.monotonic()
    try:
        c.start()
        print(f"{len(SERVERS)} netns servers up in {time.monotonic() - t:.2f}s")
        yield c
    finally:
        c.teardown()


@pytest.fixture(scope="module")
def known_hosts(tmp_path_factory):
    """The known_hosts file of this module's runs (a user's is ~/.ssh/fabricrepro_known_hosts)."""
    return tmp_path_factory.mktemp("keys") / "known_hosts"


def inventory(servers, path: Path, address: dict[str, str] | None = None, extra: dict | None = None) -> Path:
    """The user's inventory: a group per role, each host with its address; no host key setting (the default)."""
    address = {h: servers.ip(h) for h in SERVERS} | (address or {})
    groups = {role: list(hosts) + list((extra or {}).get(role, [])) for role, hosts in GROUPS.items()}
    doc = {"all": {"vars": {"ansible_user": "root", "ansible_ssh_private_key_file": str(servers.key_path),
                            "ansible_python_interpreter": "/usr/bin/python3"},
                   "children": {role: {"hosts": {h: {"ansible_host": address[h], "private_ip": address[h]}
                                                 for h in hosts}}
                                for role, hosts in groups.items()}}}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def run_table1(servers, tmp_path, inv: Path, known_hosts: Path, remote: Path):
    stream = io.StringIO()
    t = time.monotonic()
    runs = reproduce("fastfabric", "table1-end-to-end", scale="smoke", repeat=1, provider="ssh",
                     results=tmp_path / "results", reports=tmp_path / "reports", stream=stream,
                     # no clock check: see test_ssh.py (no systemd or chrony in these namespaces)
                     provider_options={"inventory": inv, "work_root": str(remote), "bin_dir": FAKEBIN,
                                       "controller_work_root": tmp_path / "work", "require_clock_sync": False,
                                       "known_hosts": known_hosts},
                     papers_dir=REPO / "papers", build="reference", controls=False)
    return runs, stream.getvalue(), time.monotonic() - t


def tc_classes(servers, h: str) -> list[str]:
    return [ln for ln in servers.exec(h, ["tc", "class", "show", "dev", "eth0"]).stdout.splitlines() if "htb" in ln]


def test_table1_on_fifteen_layout_hosts_of_twelve_servers(servers, known_hosts, tmp_path, monkeypatch):
    # the shaping as the kernel of each server has it, read right after the provider applied it
    shaped: dict[str, list[str]] = {}
    apply_links = SshProvider.apply_links

    def apply_and_read(self, links):
        out = apply_links(self, links)
        shaped.update({h: tc_classes(servers, h) for h in SERVERS})
        return out

    monkeypatch.setattr(SshProvider, "apply_links", apply_and_read)
    inv = inventory(servers, tmp_path / "servers.yml")
    remote = tmp_path / "remote"
    (run,), printed, took = run_table1(servers, tmp_path, inv, known_hosts, remote)
    print(f"table1 on {len(SERVERS)} ssh servers in {took:.1f}s")
    meta = Run.open(run.path).metadata
    # The TEST DOUBLE's peer keeps no ledger: the point runs to its end on every server, and validity fails
    # it closed for that (and nothing the provider did).
    assert meta["status"] == "failed" and "1 of 1 points failed" in meta["reason"], meta.get("reason")
    (point,) = (run.path / "points").iterdir()
    reason = json.loads((point / "summary.json").read_text())["reason"]
    assert reason.startswith("validity:") and "no kept block files of peer on host m08" in reason, reason

    # the placement: printed before the run, recorded, each host of Table I on the server expected
    topo = meta["topology"]
    assert topo["provider"] == "ssh" and topo["placement"] == PLACEMENT
    assert topo["published"] == topo["laid_out"] == {"orderer": 1, "kafka": 3, "zookeeper": 3, "peer": 1,
                                                     "storage": 1, "endorser": 5, "client": 1}
    assert "endorser-0, endorser-2, endorser-4 share m11 (ssh provider)" in topo["deviations"]
    assert "endorser-1, endorser-3 share m10 (ssh provider)" in topo["deviations"]
    assert "15 hosts of the topology on 12 ssh host(s):" in printed
    for name, host in PLACEMENT.items():
        assert any(ln.split()[:3] == [name, "->", host] for ln in printed.splitlines()), (name, printed)
    assert printed.index("zookeeper-2 -> m03") < printed.index("points at scale smoke")  # before the run
    roles = meta["roles"]
    assert roles["orderer"] == ["m01"] and roles["peer"] == ["m08"] and roles["loadgen"] == ["m12"]

    # preflight and node-exporter ran on every server, the idle ones included
    cluster = meta["cluster"]
    assert sorted(cluster["hosts"]) == SERVERS and cluster["placement"] == PLACEMENT
    for h, info in cluster["hosts"].items():
        assert info["facts"]["vcpus"] >= 1 and info["facts"]["distribution"].startswith(("Debian", "Ubuntu")), h
        assert info["node_exporter"]["reused"] is False and info["node_exporter"]["pid"] > 1, h
    assert cluster["hosts"]["m11"]["roles"] == ["endorser-0", "endorser-2", "endorser-4"]
    res = json.loads((point / "metrics" / "resources.json").read_text())
    assert sorted(res["hosts"]) == SERVERS                  # every server scraped through the point

    # host keys: checked as a user's, every server's accepted when first met and recorded
    assert cluster["host_keys"]["known_hosts"] == str(known_hosts)
    assert set(cluster["host_keys"]["hosts"].values()) == {"accepted when first met (accept-new), then checked"}
    for h in SERVERS:
        assert subprocess.run(["ssh-keygen", "-F", servers.ip(h), "-f", str(known_hosts)],
                              capture_output=True).returncode == 0, f"no key recorded for {h}"

    # the commands copied over SSH to the servers' work root, each server's point files its own
    for c in ("orderer", "peer", "loadgen", "blockwatch"):
        assert (remote / "bin" / c).is_file()
    assert (point / "logs" / "m01" / "orderer.log").exists() and (point / "logs" / "m08" / "peer.log").exists()
    assert not (point / "logs" / "m08" / "orderer.log").exists()

    # the paper's 1 Gbit/s switch: every ordered pair of Table I's hosts on two servers, shaped with tc
    pairs = {(a, b) for a in PLACEMENT for b in PLACEMENT if PLACEMENT[a] != PLACEMENT[b]}
    links = cluster["links"]
    assert len(pairs) == 202 and {(l["from"], l["to"]) for l in links} == pairs
    assert all(l["applied"] and l["rate_mbit"] == 1000 and l["rate_method"] == "tc htb" and l["device"] == "eth0"
               and l["from_host"] == PLACEMENT[l["from"]] and l["to_host"] == PLACEMENT[l["to"]] for l in links)
    # on each server: one 1 Gbit/s class per other server (its layout hosts share it), as the kernel had it
    for h in SERVERS:
        assert len(shaped[h]) == len(SERVERS) - 1 and all("rate 1Gbit" in c for c in shaped[h]), (h, shaped[h])

    # down() and the points' teardown: no shaping, nothing running or listening beyond sshd on any server
    for h in SERVERS:
        assert not tc_classes(servers, h), h
        assert "htb" not in servers.exec(h, ["tc", "qdisc", "show", "dev", "eth0"]).stdout, h
    assert wait_no_leftovers(servers) == {}


def test_unreachable_server_and_changed_host_key_fail_in_seconds(servers, known_hosts, tmp_path):
    """A server whose address answers nothing (a third endorser at an unused address) and one whose host key
    changed since it was recorded (m06, reinstalled): the run fails at its first SSH contact, in seconds,
    naming both, and starts nothing anywhere."""
    if subprocess.run(["ssh-keygen", "-F", servers.ip("m06"), "-f", str(known_hosts)],
                      capture_output=True).returncode:
        # the test above did not run (selected alone): record m06's key as a first run would have
        keys = subprocess.run(["ssh-keyscan", "-t", "ed25519", servers.ip("m06")], capture_output=True, text=True)
        with open(known_hosts, "a") as f:
            f.write(keys.stdout)
    restart_sshd_with_new_key(servers, "m06", tmp_path / "sshd-m06.log")
    gone = servers.ip("m01").rsplit(".", 1)[0] + ".149"     # in the servers' subnet, no host there
    inv = inventory(servers, tmp_path / "servers.yml", address={"m13": gone}, extra={"endorser": ["m13"]})
    def recorded_m06() -> str:
        return subprocess.run(["ssh-keygen", "-F", servers.ip("m06"), "-f", str(known_hosts)],
                              capture_output=True, text=True).stdout

    before = recorded_m06()
    assert "ssh-ed25519" in before
    (run,), printed, took = run_table1(servers, tmp_path, inv, known_hosts, tmp_path / "remote")
    print(f"failed in {took:.1f}s")
    meta = Run.open(run.path).metadata
    assert meta["status"] == "failed", meta
    reason = meta["reason"]
    assert reason.startswith("2 host(s) of inventory") and "not reachable by SSH" in reason, reason
    assert f"m13 ({gone}, role endorser-2)" in reason, reason
    assert (f"m06 ({servers.ip('m06')}, role kafka-1): its host key is not the one recorded in {known_hosts}, "
            "line " in reason), reason
    assert f"ssh-keygen -f {known_hosts} -R {servers.ip('m06')}" in printed, printed   # the hint: how to accept it
    assert took < 20, f"the run took {took:.1f}s to fail"
    assert recorded_m06() == before                          # the changed key was not recorded over the old one
    assert not list((run.path / "points").glob("*/summary.json"))   # no point ran
    assert not exporter_pids(servers)
    assert wait_no_leftovers(servers) == {}
