"""The netns provider and per-host metrics, end to end on this machine (needs root).

One 3-host cluster serves the module's SSH, Ansible and metrics tests; the
last of them tears it down and checks that nothing is left. Signal, failure
and link tests make their own small clusters. Every cluster is torn down in a
fixture finaliser even when a test fails.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.providers import netns as N
from harness.providers import netns_links as NL
from harness.providers import netns_namespaces as NS
from harness import resources as R

HERE = Path(__file__).resolve().parent
pytestmark = pytest.mark.netns

# ICMP echo without the ping binary (not installed here): a raw socket inside the source host
PING = r"""
import socket, struct, sys, time
def csum(b):
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b)); s = (s >> 16) + (s & 0xffff); s += s >> 16
    return ~s & 0xffff
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); s.settimeout(2)
hdr = struct.pack('!BBHHH', 8, 0, 0, 0x4652, 1); pkt = struct.pack('!BBHHH', 8, 0, csum(hdr + b'fabricrepro!'), 0x4652, 1) + b'fabricrepro!'
t = time.monotonic(); s.sendto(pkt, (sys.argv[1], 0))
while True:
    data, addr = s.recvfrom(1500)
    if addr[0] == sys.argv[1] and data[20] == 0:
        print('%.3f' % ((time.monotonic() - t) * 1e3)); break
"""


def our_pids_alive(pids):
    return [p for p in pids if Path(f"/proc/{p}").exists() and
            Path(f"/proc/{p}/stat").read_text().split(") ")[1][0] != "Z"]


def assert_gone(prefix, pids=()):
    assert not [n for n in N.netns_list() if n.startswith(prefix + "-")], "namespaces left"
    assert not Path(f"/sys/class/net/{prefix}-c").exists(), "controller veth left"
    assert not our_pids_alive(pids), "processes left"
    assert not (NS.REGISTRY_DIR / f"{prefix}.json").exists(), "registry entry left"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = N.NetnsCluster(tmp_path_factory.mktemp("netns"), 3,
                       roles={"h1": ["orderer"], "h2": ["peer"], "h3": ["peer", "client"]})
    t = time.monotonic()
    try:
        c.start()
        print(f"3-host cluster up in {time.monotonic() - t:.2f}s")
        yield c
    finally:
        c.teardown()


def test_ssh_reaches_each_host_by_its_own_name(cluster):
    for h in cluster.hosts:
        out = subprocess.run(["ssh", "-i", str(cluster.key_path), "-o", "StrictHostKeyChecking=no",
                              "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
                              f"root@{cluster.ip(h)}", "hostname"], capture_output=True, text=True, timeout=20)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == h


def test_hosts_ping_each_other_by_name(cluster):
    rtt = cluster.exec("h1", ["python3", "-c", PING, cluster.ip("h2")]).stdout
    assert float(rtt) < 1000
    # names resolve inside a host (its /etc/hosts from /etc/netns/<ns>/hosts)
    out = subprocess.run(cluster.ssh_argv("h1") + ["getent hosts h3"], capture_output=True, text=True)
    assert out.stdout.split()[0] == cluster.ip("h3")


def test_inventory_and_ansible_ping(cluster):
    inv = cluster.inventory_path
    import yaml
    doc = yaml.safe_load(inv.read_text())
    assert doc["all"]["hosts"]["h1"]["ansible_host"] == cluster.ip("h1")
    assert set(doc["all"]["children"]["peer"]["hosts"]) == {"h2", "h3"}
    assert cluster.role_map() == {"orderer": ["h1"], "peer": ["h2", "h3"], "client": ["h3"]}
    env = dict(os.environ, ANSIBLE_HOST_KEY_CHECKING="False", ANSIBLE_NOCOLOR="1")
    out = subprocess.run(["ansible", "-i", str(inv), "all", "-m", "ansible.builtin.ping", "-o"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("SUCCESS") == 3


def test_per_host_network_metrics(cluster, tmp_path):
    mon = R.ResourceMonitor(tmp_path / "prom", R.netns_targets(cluster), track=cluster.track)
    try:
        mon.start()
        start = time.time_ns()
        blob = tmp_path / "www" / "blob"
        blob.parent.mkdir()
        blob.write_bytes(os.urandom(8 << 20))
        cluster.popen("h1", ["python3", "-m", "http.server", "--bind", cluster.ip("h1"), "8000"],
                      name="http", log=tmp_path / "http.log", cwd=blob.parent)
        for _ in range(50):
            r = cluster.exec("h2", ["curl", "-s", "-o", "/dev/null", f"http://{cluster.ip('h1')}:8000/blob"], check=False)
            if r.returncode == 0:
                break
            time.sleep(0.1)
        for _ in range(2):
            time.sleep(1)
            cluster.exec("h2", ["curl", "-sf", "-o", "/dev/null", f"http://{cluster.ip('h1')}:8000/blob"])
        end = time.time_ns()
        df = mon.collect(start, end, tmp_path / "out")
    finally:
        mon.stop()
    assert not our_pids_alive(mon.pids())
    rx = df[(df.metric == "net_rx_bytes_per_s")].groupby("host")["value"].max()
    tx = df[(df.metric == "net_tx_bytes_per_s")].groupby("host")["value"].max()
    assert rx["h2"] > 1e6 and tx["h1"] > 1e6          # the download shows on both ends...
    assert rx["h3"] < 1e5                              # ...and not on a bystander
    assert set(df.columns) == {"time_ns", "host", "role", "metric", "value"}
    assert set(df.metric) >= {"cpu_util_ratio", "mem_used_bytes", "net_rx_bytes_per_s", "net_tx_bytes_per_s"}
    summary = json.loads((tmp_path / "out" / "resources.json").read_text())
    assert summary["schema_version"] == R.RESOURCES_SCHEMA_VERSION
    assert summary["hosts"]["h3"]["roles"] == ["peer", "client"]
    import pandas as pd
    assert len(pd.read_parquet(tmp_path / "out" / "resources.parquet")) == len(df)


def test_teardown_leaves_nothing(cluster):
    pids = [p["pid"] for p in cluster._procs]
    stray = subprocess.run(cluster.ssh_argv("h2") + ["sh -c 'sleep 300 >/dev/null 2>&1 & echo $!'"],
                           capture_output=True, text=True).stdout.strip()
    t = time.monotonic()
    cluster.teardown()
    print(f"3-host cluster down in {time.monotonic() - t:.2f}s")
    assert_gone(cluster.prefix, pids + [int(stray)])
    assert not cluster.key_path.exists()
    assert not (NS.ETC_NETNS / cluster.netns("h1")).exists()
    cluster.teardown()  # idempotent


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_to_holder_leaves_nothing(tmp_path, sig):
    proc = subprocess.Popen([sys.executable, str(HERE / "hold_cluster.py"), str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    info = None
    try:
        info = json.loads(proc.stdout.readline() or "null")
        assert info, proc.stderr.read()
        proc.send_signal(sig)
        proc.wait(timeout=30)
        assert_gone(info["prefix"], info["pids"] + [info["stray"]])
        assert not Path(info["key"]).exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if info:
            N.cleanup(info["prefix"])


def test_cleanup_command_removes_leftovers_of_a_killed_harness(tmp_path):
    proc = subprocess.Popen([sys.executable, str(HERE / "hold_cluster.py"), str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    info = None
    try:
        info = json.loads(proc.stdout.readline() or "null")
        assert info, proc.stderr.read()
        proc.kill()  # SIGKILL: no handler runs, everything is left behind
        proc.wait()
        assert N.list_clusters().get(info["prefix"])
        out = subprocess.run([sys.executable, "-m", "harness.providers.netns", "--cleanup", info["prefix"]],
                             capture_output=True, text=True, cwd=HERE.parents[1], timeout=60)
        assert out.returncode == 0, out.stderr
        assert_gone(info["prefix"], info["pids"] + [info["stray"]])
        assert not Path(info["key"]).exists()
    finally:
        if info:
            N.cleanup(info["prefix"])


def test_unreachable_host_is_named_and_teardown_runs(tmp_path):
    c = N.NetnsCluster(tmp_path, 3, ssh_timeout_s=4)
    real_wait = c.wait_ready

    def kill_h2_then_wait(*a, **kw):
        sshd = next(p for p in c._procs if p["name"] == "sshd@h2")
        sshd["popen"].kill()
        return real_wait(*a, **kw)

    c.wait_ready = kill_h2_then_wait
    try:
        with pytest.raises(HarnessError, match=r"netns host h2 \(10\.77\.\d+\.2\) not reachable by SSH") as e:
            with c:
                pass
        assert "sshd exited" in str(e.value)
        assert c._torn_down
        assert_gone(c.prefix, [p["pid"] for p in c._procs])
    finally:
        c.teardown()


def test_link_delay_and_rate(tmp_path):
    try:
        NL.find_toxiproxy()
        have_toxiproxy = True
    except HarnessError:
        have_toxiproxy = False
    c = N.NetnsCluster(tmp_path, 2)
    try:
        c.start()
        www = tmp_path / "www"
        www.mkdir()
        (www / "small").write_text("x")
        (www / "big").write_bytes(os.urandom(4 << 20))
        c.popen("h2", ["python3", "-m", "http.server", "--bind", c.ip("h2"), "8000"], name="http",
                log=tmp_path / "http.log", cwd=www)

        def fetch(url):
            for _ in range(50):
                r = c.exec("h1", ["curl", "-sf", "-o", "/dev/null", "-w", "%{time_total} %{speed_download}", url],
                           check=False)
                if r.returncode == 0:
                    return [float(x) for x in r.stdout.split()]
                time.sleep(0.1)
            raise AssertionError(f"{url}: {r.stderr}")

        direct = min(fetch(f"http://{c.ip('h2')}:8000/small")[0] for _ in range(3))
        links = [{"from": "h2", "to": "h1", "rate_mbit": 40}]
        if have_toxiproxy:
            links.append({"from": "h1", "to": "h2", "port": 8000, "delay_ms": 50})
        applied = c.apply_links(links)
        assert c.describe()["links"] == applied
        # bandwidth: h2 -> h1 is shaped to 40 Mbit/s (5 MB/s)
        speed = fetch(f"http://{c.ip('h2')}:8000/big")[1] * 8 / 1e6
        assert 25 < speed < 44, f"{speed:.1f} Mbit/s under a 40 mbit htb class"
        assert applied[0]["rate_method"] == "tc htb"
        if not have_toxiproxy:
            pytest.skip(f"toxiproxy not installed ({NL.TOXIPROXY_INSTALL}); bandwidth path checked")
        # delay: by name, h1 reaches h2 through the proxy; each direction +50 ms
        delayed = min(fetch("http://h2:8000/small")[0] for _ in range(3))
        assert applied[1]["delay_method"] == "toxiproxy" and applied[1]["rtt_added_ms"] == 100
        assert delayed - direct > 0.09, (direct, delayed)
    finally:
        c.teardown()
    assert_gone(c.prefix)


def test_preflight_names_missing_tool(monkeypatch):
    import shutil
    real = shutil.which
    monkeypatch.setattr(NS.shutil, "which", lambda t: None if t == "unshare" else real(t))
    with pytest.raises(HarnessError, match="unshare") as e:
        NS.preflight()
    assert "invoke setup" in str(e.value)


def test_missing_toxiproxy_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("GOPATH", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("FABRICREPRO_TOXIPROXY", raising=False)
    monkeypatch.setattr(NL.shutil, "which", lambda t: None)
    monkeypatch.setattr(NL.Path, "home", lambda: tmp_path)
    with pytest.raises(HarnessError, match="toxiproxy") as e:
        NL.find_toxiproxy()
    assert "go install github.com/Shopify/toxiproxy" in str(e.value)


def test_provider_one_host_per_layout_role(tmp_path):
    p = N.NetnsProvider(work_root=tmp_path / "work", bin_dir=tmp_path / "bin")
    layout = {"orderer": ["orderer"], "peer": ["peer"], "client": ["blockwatch", "loadgen"]}
    try:
        groups = p.up(layout, tmp_path / "run")
        assert groups == {"orderer": ["orderer"], "peer": ["peer"], "blockwatch": ["client"], "loadgen": ["client"]}
        c = p.cluster
        assert c.hosts == ["orderer", "peer", "client"]
        out = subprocess.run(c.ssh_argv("client") + ["hostname"], capture_output=True, text=True)
        assert out.stdout.strip() == "client"
        hv = p.host_vars("peer")
        assert hv["fabricrepro_bin_dir"] == str(tmp_path / "bin") and hv["fabricrepro_address"] == "peer"
        import yaml
        inv = yaml.safe_load(p.inventory(tmp_path / "inv.yaml", groups).read_text())
        assert set(inv["all"]["children"]["loadgen"]["hosts"]) == {"client"}
        assert p.unreachable() == {}
        sshd = next(x for x in c._procs if x["name"] == "sshd@peer")
        os.kill(sshd["pid"], signal.SIGKILL)
        sshd["popen"].wait(5)
        assert "sshd" in p.unreachable()["peer"]
    finally:
        p.down()
    assert_gone(c.prefix)


def test_sigint_during_start_leaves_nothing(tmp_path):
    prefix = "fr-t" + os.urandom(3).hex()
    script = (f"import sys; sys.path.insert(0, {str(HERE.parents[1])!r})\n"
              # Ctrl-C as in a terminal, even when this test run was started in the background (SIGINT ignored)
              "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"
              "from harness.providers.netns import NetnsCluster\n"
              f"c = NetnsCluster({str(tmp_path)!r}, 12, prefix={prefix!r})\n"
              "print('go', flush=True)\n"
              "with c:\n    print('up', flush=True)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "go"
        # wait until half the hosts exist, then interrupt while the rest are being built
        deadline = time.monotonic() + 20
        while len([n for n in N.netns_list() if n.startswith(prefix)]) < 6 and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        assert "up" not in out and "KeyboardInterrupt" in err
        assert_gone(prefix)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        N.cleanup(prefix)


def test_provider_sets_net_parameters_per_host_namespace_only(tmp_path):
    p = N.NetnsProvider(work_root=tmp_path / "work", bin_dir=tmp_path / "bin")
    root_before = subprocess.run(["sysctl", "-n", "net.ipv4.tcp_fin_timeout"], capture_output=True, text=True).stdout
    try:
        p.up({"peer": ["peer"], "client": ["loadgen"]}, tmp_path / "run")
        applied = p.tune({"net.ipv4.tcp_fin_timeout": 5, "vm.swappiness": 10})
        assert applied[0]["applied"] and applied[0]["before"]["peer"] == root_before.strip()
        assert not applied[1]["applied"] and "per-namespace" in applied[1]["reason"]
        for h in ("peer", "client"):
            assert p.cluster.exec(h, ["sysctl", "-n", "net.ipv4.tcp_fin_timeout"]).stdout.strip() == "5"
        # this machine's own setting is untouched
        assert subprocess.run(["sysctl", "-n", "net.ipv4.tcp_fin_timeout"], capture_output=True,
                              text=True).stdout == root_before
    finally:
        p.down()
