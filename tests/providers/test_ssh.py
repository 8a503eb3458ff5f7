"""The ssh provider against real hosts: netns servers with their own sshd.

One provider is brought up once for the module (preflight included) and
serves the exporter, inventory, binary-copy and link tests; the down test
then checks nothing is left. Failure cases (a host that does not answer, a
preflight that fails, a missing or clashing exporter, a host lost after up)
use their own providers on the same servers. The servers are torn down in
the cluster fixture's finally; each provider is brought down in a finally.
"""

import json
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from harness.deploy import run_playbook
from harness.errors import HarnessError
from harness.providers.netns_namespaces import netns_pids
from harness.providers.ssh import SshProvider

from provider_hosts import LAYOUT, ROLES, exporter_pids, user_inventory

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
pytestmark = pytest.mark.netns
COMPONENTS = ["orderer", "peer", "loadgen", "blockwatch", "committerbench"]

# TCP throughput from inside a host: the receiver counts bytes until EOF, the sender sends N bytes
RECEIVER = r"""
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(1); print("ready", flush=True); c, _ = s.accept(); n = 0
while True:
    b = c.recv(1 << 16)
    if not b: break
    n += len(b)
print(n, flush=True)
"""
SENDER = r"""
import socket, sys, time
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10); buf = b"x" * (1 << 16)
t = time.monotonic(); left = int(sys.argv[3])
while left > 0:
    c.sendall(buf[:left]); left -= len(buf)
c.shutdown(socket.SHUT_WR); c.recv(1); print("%.4f" % (time.monotonic() - t))
"""


def metrics(address: str) -> str:
    with urllib.request.urlopen(f"http://{address}:9100/metrics", timeout=5) as r:
        return r.read().decode()


def throughput_mbit(cluster, src: str, dst: str, nbytes: int, port: int) -> float:
    """Send ``nbytes`` over TCP from host ``src`` to ``dst``; the rate measured at the sender, Mbit/s."""
    rx = subprocess.Popen(["ip", "netns", "exec", cluster.netns(dst), "python3", "-c", RECEIVER, cluster.ip(dst),
                           str(port)], stdout=subprocess.PIPE, text=True)
    try:
        assert rx.stdout.readline().strip() == "ready"
        secs = float(cluster.exec(src, ["python3", "-c", SENDER, cluster.ip(dst), str(port), str(nbytes)]).stdout)
        assert int(rx.stdout.readline()) == nbytes
        return nbytes * 8 / secs / 1e6
    finally:
        rx.kill()
        rx.wait()


def tc(cluster, host: str, *args: str) -> str:
    return cluster.exec(host, ["tc", *args, "dev", "eth0"]).stdout


@pytest.fixture(scope="module")
def provider(cluster, tmp_path_factory):
    """The provider brought up once on the three servers (real preflight; see the clock note)."""
    d = tmp_path_factory.mktemp("ssh")
    inv = user_inventory(cluster, d / "servers.yml")
    # require_clock_sync=False: the servers are namespaces of a container without systemd
    # (timedatectl: "System has not been booted with systemd") or chrony, so the
    # preflight cannot learn whether the clock is synchronised; the other checks run
    p = SshProvider(inv, work_root=str(d / "remote"), require_clock_sync=False)
    t = time.monotonic()
    try:
        p.groups = p.up(LAYOUT, d / "run")
        p.up_s = time.monotonic() - t
        print(f"ssh provider up (check, preflight, exporters) in {p.up_s:.1f}s")
        yield p
    finally:
        p.down()


def test_up_chooses_first_hosts_and_records_facts(provider):
    assert provider.groups == {"orderer": ["orderer-0"], "peer": ["peer-0"], "blockwatch": ["client-0"],
                               "loadgen": ["client-0"]}
    d = provider.describe()
    assert d["provider"] == "ssh" and d["inventory"].endswith("servers.yml")
    assert set(d["hosts"]) == {"orderer-0", "peer-0", "client-0"}
    for h, info in d["hosts"].items():
        assert info["facts"]["vcpus"] >= 1 and info["facts"]["memory_mb"] > 0   # from the preflight
        assert info["facts"]["distribution"].startswith(("Debian", "Ubuntu"))
        assert info["node_exporter"]["reused"] is False and info["node_exporter"]["pid"] > 1
    json.dumps(d)


def test_node_exporter_answers_from_the_controller(provider, cluster):
    targets = provider.monitor_targets(provider.groups)
    assert {t.host: (t.address, t.port, t.device, t.external) for t in targets} == \
        {f"{r}-0": (cluster.ip(r), 9100, None, True) for r in ROLES}
    for t in targets:
        text = metrics(t.address)
        assert "node_exporter_build_info" in text
        # the host's own network device: its metrics are its own, not the controller's
        assert 'node_network_receive_bytes_total{device="eth0"}' in text
    # one exporter per host, each in that host's namespace, with the PID its file says
    pids = {h: i["node_exporter"]["pid"] for h, i in provider.describe()["hosts"].items()}
    assert sorted(exporter_pids(cluster)) == sorted(pids.values())


def test_run_prometheus_scrapes_the_exporters(provider, tmp_path):
    """The harness' ResourceMonitor with these targets: it starts only Prometheus and sees every host up."""
    from harness.resources import ResourceMonitor
    mon = ResourceMonitor(tmp_path / "monitor", provider.monitor_targets(provider.groups))
    try:
        mon.start(timeout_s=30)
        assert [p.name for p in mon._procs] == ["prometheus"]      # the exporters are external
        now = time.time()
        for h in ("orderer-0", "peer-0", "client-0"):
            q = f'node_network_receive_bytes_total{{host="{h}",device!="lo"}}'
            assert mon.query_range(q, now - 5, now), h
    finally:
        mon.stop()


def test_generated_inventory_copies_the_built_commands(provider, cluster, tmp_path):
    """The orderer role's install tasks, over SSH, copy bin/orderer to <work_root>/bin on every host.

    Only the orderer role runs here (each task is an SSH round trip); the other
    roles' copy tasks are the same but for the name, which
    test_every_role_copies_its_own_command checks.
    """
    fakebin = tmp_path / "bin"
    fakebin.mkdir()
    (fakebin / "orderer").write_text("#!/bin/sh\necho orderer copied\n")
    inv = provider.inventory(tmp_path / "inventory.yml", provider.groups)
    run_playbook(str(HERE / "install_roles.yml"), inv, {"fabricrepro_controller_bin_dir": str(fakebin),
                                                        "install_roles_components": ["orderer"]},
                 tmp_path / "install.log", timeout=300)
    for r in ROLES:
        out = subprocess.run(cluster.ssh_argv(r) + [f"{provider.remote_work_root}/bin/orderer"],
                             capture_output=True, text=True, timeout=30)
        assert out.stdout == "orderer copied\n", out.stderr


def test_rate_link_is_shaped_measured_and_recorded(provider, cluster):
    fast = throughput_mbit(cluster, "orderer", "client", 4_000_000, 7001)
    [rec] = provider.apply_links([{"from": "orderer", "to": "peer", "rate_mbit": 40}])
    assert rec["applied"] and rec["rate_method"] == "tc htb" and rec["device"] == "eth0"
    assert rec["to_address"] == cluster.ip("peer") and rec["rate_mbit"] == 40 and rec["delay_method"] is None
    assert "rate 40Mbit" in tc(cluster, "orderer", "class", "show")
    shaped = throughput_mbit(cluster, "orderer", "peer", 3_000_000, 7002)
    unshaped = throughput_mbit(cluster, "orderer", "client", 4_000_000, 7003)
    print(f"orderer->peer {shaped:.1f} Mbit/s shaped to 40; orderer->client {unshaped:.0f} Mbit/s "
          f"(before shaping {fast:.0f})")
    assert 20 < shaped < 48           # the class holds the rate (a TCP flow gets a little under it)
    assert unshaped > 200             # other destinations bypass the shaping
    assert provider.describe()["links"] == [rec]


def test_delay_link_applies_or_names_missing_netem(provider, cluster):
    """This kernel has no netem: the error names the host, the command and how to get it."""
    try:
        [rec] = provider.apply_links([{"from": "client", "to": "orderer", "delay_ms": 5}])
    except HarnessError as e:
        msg = str(e)
        assert "client-0" in msg and "netem delay 5ms" in msg and "qdisc kind is unknown" in msg
        assert "sch_netem" in msg
    else:  # a kernel with netem
        assert rec["delay_method"] == "tc netem" and "delay 5ms" in tc(cluster, "client", "qdisc", "show")


def test_unreachable_is_empty_while_hosts_answer(provider):
    t = time.monotonic()
    assert provider.unreachable() == {}
    assert time.monotonic() - t < 20


def test_down_stops_exporters_clears_links_and_is_idempotent(provider, cluster):
    pids = [i["node_exporter"]["pid"] for i in provider.describe()["hosts"].values()]
    provider.down()
    assert not exporter_pids(cluster)
    assert not any(Path(f"/proc/{p}").exists() and
                   Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z" for p in pids)
    for r in ROLES:
        assert "htb" not in tc(cluster, r, "qdisc", "show")      # the kernel's default qdisc is back
    assert not list(Path(provider.remote_work_root, "node-exporter").glob("*.pid"))
    t = time.monotonic()
    provider.down()                                             # a second down does nothing
    assert time.monotonic() - t < 1


def test_unreachable_host_is_named_and_nothing_is_left(cluster, tmp_path):
    free = cluster.ip("orderer").rsplit(".", 1)[0] + ".99"      # in the cluster's subnet, no host there
    inv = user_inventory(cluster, tmp_path / "servers.yml",
                         hosts={"orderer": free, "peer": cluster.ip("peer"), "client": cluster.ip("client")})
    p = SshProvider(inv, work_root=str(tmp_path / "remote"))
    try:
        with pytest.raises(HarnessError) as e:
            p.up(LAYOUT, tmp_path / "run")
        msg = str(e.value)
        assert "orderer-0" in msg and free in msg and "not reachable by SSH" in msg
        assert "peer-0" not in msg and "client-0" not in msg
    finally:
        t = time.monotonic()
        p.down()
        assert time.monotonic() - t < 5      # no exporter was started: nothing to stop on a dead host
    assert not exporter_pids(cluster)


def test_preflight_failure_names_host_and_reason(cluster, tmp_path):
    inv = user_inventory(cluster, tmp_path / "servers.yml")
    p = SshProvider(inv, work_root=str(tmp_path / "remote"), require_clock_sync=False, min_cores=4096)
    try:
        with pytest.raises(HarnessError) as e:
            p.up(LAYOUT, tmp_path / "run")
        msg = str(e.value)
        assert msg.startswith("preflight failed on ")
        assert "needs 4096" in msg and "vCPUs" in msg and "orderer-0" in msg
        assert e.value.log.endswith("provider/preflight.log")
    finally:
        p.down()
    assert not exporter_pids(cluster)


def test_exporter_reused_missing_or_blocked_port_per_host(cluster, tmp_path):
    """Three cases in one up(): on the peer an exporter already listens on :9100 (as
    Debian's service would): it is used and left running; the orderer has no
    exporter binary: the error says how to install it; on the client another
    program holds :9100: the error names it."""
    theirs = cluster.popen("peer", ["prometheus-node-exporter", "--web.listen-address=:9100"], name="their-exporter",
                           log=tmp_path / "theirs.log")
    other = cluster.popen("client", ["python3", "-m", "http.server", "9100", "--bind", cluster.ip("client")],
                          name="http", log=tmp_path / "http.log")
    try:
        for r in ("peer", "client"):
            deadline = time.monotonic() + 10
            while subprocess.run(cluster.ssh_argv(r) + ["ss -Hltn 'sport = :9100' | grep -q ."]).returncode:
                assert time.monotonic() < deadline, f"nothing listens on {r}:9100"
                time.sleep(0.1)
        inv = user_inventory(cluster, tmp_path / "servers.yml")
        # where the orderer looks for the exporter: a host variable of the user's inventory
        doc = yaml.safe_load(inv.read_text())
        doc["all"]["children"]["orderer"]["hosts"]["orderer-0"]["fabricrepro_exporter_binaries"] = \
            ["/nonexistent/node_exporter"]
        inv.write_text(yaml.safe_dump(doc))
        p = SshProvider(inv, work_root=str(tmp_path / "remote"), preflight=False)
        try:
            with pytest.raises(HarnessError) as e:
                p.up(LAYOUT, tmp_path / "run")
            msg = str(e.value)
            assert msg.startswith("starting node-exporter failed on ") and "peer-0" not in msg
            assert "orderer-0" in msg and "node-exporter not found (/nonexistent/node_exporter)" in msg
            assert "apt-get install prometheus-node-exporter" in msg
            assert "client-0" in msg and "is taken by a program that is not node-exporter" in msg
            rec = json.loads((tmp_path / "run" / "provider" / "exporters" / "peer-0.json").read_text())
            assert rec["reused"] is True and rec["pid"] is None
        finally:
            p.down()
        assert theirs.poll() is None, "an exporter the harness did not start was stopped"
        assert exporter_pids(cluster) == [theirs.pid]
    finally:
        for proc in (theirs, other):
            proc.kill()
            proc.wait()


def test_host_lost_after_up_is_reported_and_down_still_runs(cluster, tmp_path):
    """Last: it stops the peer's sshd. unreachable() names it; down() stops the others and does not raise."""
    inv = user_inventory(cluster, tmp_path / "servers.yml")
    p = SshProvider(inv, work_root=str(tmp_path / "remote"), preflight=False)
    try:
        p.up(LAYOUT, tmp_path / "run")
        sshd = next(x for x in cluster._procs if x["name"] == "sshd@peer")
        sshd["popen"].kill()
        sshd["popen"].wait()
        lost = p.unreachable()
        assert list(lost) == ["peer-0"] and "Connection refused" in lost["peer-0"]
    finally:
        p.down()
    # the peer's exporter could not be stopped: the cluster teardown kills what is left in its namespaces
    left = exporter_pids(cluster)
    assert [netns_pids(cluster.netns("peer")).count(pid) for pid in left] == [1]
