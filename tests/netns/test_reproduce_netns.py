"""``invoke reproduce --provider netns`` on the TEST DOUBLE of bin/ (tests/harness/fakebin).

The Go commands are replaced by the double, which writes contract-shaped files
and measures nothing; what is tested is the multi-host path: one namespace
host per role of the layout, deployment over SSH with the same roles as the
local provider, links shaped from the experiment's ``network``, per-host
metrics stored per point and shown in the report, and no namespace, sshd or
role process left afterwards, including when a host dies.
"""

import io
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.providers import netns as N
from harness.providers.netns_namespaces import REGISTRY_DIR
from harness.reproduce import reproduce
from harness.rundir import Run

REPO = Path(__file__).resolve().parents[2]
FAKEBIN = REPO / "tests" / "harness" / "fakebin"
pytestmark = pytest.mark.netns


def _leftovers(prefix: str, tmp_path: Path) -> list[str]:
    """Namespaces and registry entry of cluster ``prefix``, and processes of the test's files, still there."""
    left = [ns for ns in N.netns_list() if ns.startswith(prefix + "-")]
    if (REGISTRY_DIR / f"{prefix}.json").exists():
        left.append("registry entry")
    ps = subprocess.run(["ps", "-ww", "-eo", "args"], capture_output=True, text=True).stdout
    left += [line for line in ps.splitlines() if str(tmp_path) in line]
    return left


def _run(tmp_path, experiment="table1-end-to-end", **kw):
    return reproduce("fastfabric", experiment, scale="smoke", repeat=1, provider="netns",
                     results=tmp_path / "results", reports=tmp_path / "reports", stream=io.StringIO(),
                     provider_options={"bin_dir": FAKEBIN, "work_root": tmp_path / "work"},
                     papers_dir=REPO / "papers", build="reference", controls=False, **kw)


def test_table1_on_netns_hosts_over_ssh(tmp_path):
    (run,) = _run(tmp_path)
    meta = Run.open(run.path).metadata
    # The TEST DOUBLE's peer keeps no ledger: the point runs to its end on every host, and validity fails
    # it closed for that (and nothing the provider did).
    assert meta["status"] == "failed" and "1 of 1 points failed" in meta["reason"], meta["reason"]
    (point,) = (run.path / "points").iterdir()
    reason = json.loads((point / "summary.json").read_text())["reason"]
    assert reason.startswith("validity:") and "no kept block files of peer on host peer" in reason, reason
    cluster = meta["cluster"]
    # the paper's fifteen servers, each a namespace host: the reference build's three roles, and Table I's
    # ZooKeeper, Kafka, storage and endorser servers laid out idle (this build places nothing there)
    idle = {"storage", *(f"zookeeper-{i}" for i in range(3)), *(f"kafka-{i}" for i in range(3)),
            *(f"endorser-{i}" for i in range(5))}
    assert cluster["provider"] == "netns" and set(cluster["hosts"]) == {"orderer", "peer", "client"} | idle
    assert meta["topology"]["placement"] == {h: h for h in cluster["hosts"]}
    assert sum("laid out idle" in d for d in meta["topology"]["deviations"]) == 4
    assert meta["roles"]["loadgen"] == ["client"] and meta["roles"]["peer"] == ["peer"]
    assert meta["topology_not_deployed"] == {"endorser": 5, "kafka": 3, "storage": 1, "zookeeper": 3}
    assert meta["host_tuning"] == []   # FastFabric states no kernel settings
    # the paper's 1 Gbit/s switch, shaped on every host towards every other
    links = cluster["links"]
    assert len(links) == 15 * 14 and all(l["rate_mbit"] == 1000 and l["rate_method"] == "tc htb" for l in links)
    # each component ran on its own host and its logs were fetched over SSH
    assert (point / "logs" / "orderer" / "orderer.log").exists()
    assert (point / "logs" / "peer" / "peer.log").exists()
    assert (point / "logs" / "client" / "loadgen.out").exists()
    # per-host metrics of the point, each host's own network interface
    res = json.loads((point / "metrics" / "resources.json").read_text())
    assert set(res["hosts"]) == set(cluster["hosts"])
    for h in res["hosts"].values():
        assert h["device"] == "eth0" and h["metrics"]["cpu_util_ratio"]["samples"] > 0
        assert "net_rx_bytes_per_s" in h["metrics"]
    report = (tmp_path / "reports" / "fastfabric" / "report.md").read_text()
    assert "Per-host resources" in report and "| fabric-1.2__r0 | peer | peer |" in report
    assert "1000 Mbit/s via tc htb" in report
    assert _leftovers(cluster["prefix"], tmp_path) == []


def test_host_lost_mid_run_fails_the_run_naming_it_and_teardown_runs(tmp_path, monkeypatch):
    """The peer's sshd dies once the hosts are up: the point fails, the run stops naming the host."""
    real_up = N.NetnsProvider.up
    seen = {}

    def up_then_kill_peer_sshd(self, layout, run_dir):
        groups = real_up(self, layout, run_dir)
        seen["prefix"] = self.cluster.prefix
        sshd = next(p for p in self.cluster._procs if p["name"] == "sshd@peer")
        os.kill(sshd["pid"], signal.SIGKILL)
        sshd["popen"].wait(5)
        return groups

    monkeypatch.setattr(N.NetnsProvider, "up", up_then_kill_peer_sshd)
    (run,) = _run(tmp_path)
    meta = Run.open(run.path).metadata
    assert meta["status"] == "failed"
    assert "host(s) lost" in meta["reason"] and "peer: its sshd" in meta["reason"]
    (point,) = (run.path / "points").iterdir()
    summary = json.loads((point / "summary.json").read_text())
    assert summary["status"] == "failed" and "host peer unreachable" in summary["reason"]
    assert _leftovers(seen["prefix"], tmp_path) == []


def test_unknown_link_host_is_a_clear_error(tmp_path):
    from harness.reproduce import network_links
    with pytest.raises(HarnessError, match="'kafka' is not a role of this run"):
        network_links({"id": "x", "network": {"links": [{"from": "client", "to": "kafka", "delay_ms": 5}]}},
                      {"client": ["loadgen"], "orderer": ["orderer"]})
    links = network_links({"id": "x", "network": {"delay_ms": 20, "links": [{"from": "client", "to": "orderer",
                                                                             "rate_mbit": 100}]}},
                          {"client": ["loadgen"], "orderer": ["orderer"]})
    # delay towards a host without servers does nothing and is left out; the pair override replaces the default
    assert links == [{"from": "client", "to": "orderer", "rate_mbit": 100}]


def test_ctrl_c_mid_point_marks_run_interrupted_and_leaves_nothing(tmp_path):
    """SIGINT to the harness while the servers run on their hosts: teardown, then the cluster is removed."""
    import sys
    import time
    script = (f"import io, sys; sys.path.insert(0, {str(REPO)!r})\n"
              "from pathlib import Path\n"
              "from harness.reproduce import reproduce\n"
              "from harness.errors import Interrupted\n"
              "try:\n"
              f"    reproduce('fastfabric', 'table1-end-to-end', scale='smoke', repeat=1, provider='netns',\n"
              f"              results=Path({str(tmp_path / 'results')!r}), reports=Path({str(tmp_path / 'reports')!r}),\n"
              f"              provider_options={{'bin_dir': Path({str(FAKEBIN)!r}), 'work_root': Path({str(tmp_path / 'work')!r})}},\n"
              f"              papers_dir=Path({str(REPO / 'papers')!r}), build='reference', controls=False)\n"
              "except Interrupted:\n"
              "    sys.exit(130)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        # wait until the peer (the double) runs on its host: a point is under way
        while time.monotonic() < deadline:
            ps = subprocess.run(["ps", "-ww", "-eo", "args"], capture_output=True, text=True).stdout
            if any("fakebin/peer --config" in line for line in ps.splitlines()):
                break
            assert proc.poll() is None, proc.stderr.read().decode()
            time.sleep(0.2)
        else:
            pytest.fail("the peer never started")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(120) == 130, proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    (run_dir,) = [p for p in (tmp_path / "results" / "fastfabric" / "table1-end-to-end").iterdir() if p.name != "latest"]
    meta = Run.open(run_dir).metadata
    assert meta["status"] == "interrupted"
    (point,) = (run_dir / "points").iterdir()
    assert (point / "logs" / "peer" / "peer.log").exists(), "teardown fetched the logs before removing the hosts"
    assert _leftovers(meta["cluster"]["prefix"], tmp_path) == []
