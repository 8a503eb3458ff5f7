"""``reproduce(..., provider="ssh")`` end to end on netns servers, with the TEST DOUBLE of bin/.

tests/harness/fakebin stands in for the Go commands (contract-shaped files,
nothing measured). What is tested is the ssh path through the harness: the
user's inventory, the roles copying the commands to the servers over SSH,
links shaped with tc from the experiment's network, the run's Prometheus
scraping the servers' exporters, teardown, and nothing left afterwards. The
servers share one filesystem and one work_root, as servers with an NFS home
would. The whole run takes about 40 s.
"""

import io
import json
import os
from pathlib import Path

import pytest

from harness.reproduce import reproduce
from harness.rundir import Run

from provider_hosts import ROLES, exporter_pids, user_inventory

REPO = Path(__file__).resolve().parents[2]
FAKEBIN = REPO / "tests" / "harness" / "fakebin"
pytestmark = pytest.mark.netns


def test_table1_on_ssh_servers(cluster, tmp_path):
    inv = user_inventory(cluster, tmp_path / "servers.yml")
    remote = tmp_path / "remote"
    (run,) = reproduce("fastfabric", "table1-end-to-end", scale="smoke", repeat=1, provider="ssh",
                       results=tmp_path / "results", reports=tmp_path / "reports", stream=io.StringIO(),
                       # no clock check: see test_ssh.py (no systemd or chrony in these namespaces)
                       provider_options={"inventory": inv, "work_root": str(remote), "bin_dir": FAKEBIN,
                                         "controller_work_root": tmp_path / "work", "require_clock_sync": False},
                       papers_dir=REPO / "papers", build="reference", controls=False)
    meta = Run.open(run.path).metadata
    # The TEST DOUBLE's peer keeps no ledger: the point runs to its end on every server, and validity fails
    # it closed for that (and nothing the provider did).
    assert meta["status"] == "failed" and "1 of 1 points failed" in meta["reason"], meta.get("reason")
    (point,) = (run.path / "points").iterdir()
    reason = json.loads((point / "summary.json").read_text())["reason"]
    assert reason.startswith("validity:") and "no kept block files of peer on host peer-0" in reason, reason
    cluster_meta = meta["cluster"]
    assert cluster_meta["provider"] == "ssh" and set(cluster_meta["hosts"]) == {f"{r}-0" for r in ROLES}
    assert cluster_meta["hosts"]["peer-0"]["facts"]["vcpus"] >= 1
    assert meta["roles"]["loadgen"] == ["client-0"] and meta["roles"]["orderer"] == ["orderer-0"]
    # the paper's 1 Gbit/s switch: every host shaped towards every other, with tc on its eth0
    links = cluster_meta["links"]
    assert len(links) == 6 and all(l["rate_mbit"] == 1000 and l["rate_method"] == "tc htb"
                                   and l["device"] == "eth0" for l in links)
    # the roles copied the commands to the servers' work root
    for c in ("orderer", "peer", "loadgen", "blockwatch"):
        assert (remote / "bin" / c).is_file()
    assert (point / "logs" / "orderer-0" / "orderer.log").exists()
    assert (point / "logs" / "peer-0" / "peer.log").exists()
    # the netns servers share one filesystem and one work_root: each host's files are its own
    assert not (point / "logs" / "peer-0" / "orderer.log").exists()
    assert not (point / "logs" / "orderer-0" / "peer.log").exists()
    # per-host resources from the servers' exporters, scraped by the run's Prometheus
    res = json.loads((point / "metrics" / "resources.json").read_text())
    assert set(res["hosts"]) == {"orderer-0", "peer-0", "client-0"}
    assert res["hosts"]["peer-0"]["device"] is None            # every NIC but lo: a real server's
    # down(): no exporter, no shaping left
    assert not exporter_pids(cluster)
    for r in ROLES:
        assert "htb" not in cluster.exec(r, ["tc", "qdisc", "show", "dev", "eth0"]).stdout
