"""Where the ssh provider puts the paper's topology, known from the inventory alone, before any host is contacted.

FastFabric's Table I laid out (harness/topology.py) is 15 hosts; the i-th
instance of a role goes to the i-th host of the inventory group named like the
role. With the 15-server example inventory every host of the layout has a
server of its own; with one server per role the instances share them, which the
run prints before anything starts and records as a deviation, and
``strict_topology`` refuses before any run directory is made. The inventories'
addresses (TEST-NET-3) are never contacted: ``place`` only reads the file, and
``up`` is replaced where a run would reach it.
"""

import io
import shutil
from pathlib import Path

import pytest
import yaml

from harness import topology
from harness.errors import HarnessError
from harness.providers.ssh import SshProvider
from harness.reproduce import reproduce
from harness.rundir import Run

REPO = Path(__file__).resolve().parents[2]
FAKEBIN = REPO / "tests" / "harness" / "fakebin"
EXAMPLE = REPO / "infra" / "inventories" / "fastfabric-15.example.yml"
TABLE1 = {"orderer": 1, "kafka": 3, "zookeeper": 3, "peer": 1, "storage": 1, "endorser": 5, "client": 1}
#: The reference build's roles for the end-to-end driver (builds.Choice.layout()).
REFERENCE_ROLES = {"orderer": ["orderer"], "peer": ["peer"], "client": ["blockwatch", "loadgen"]}
pytestmark = pytest.mark.skipif(shutil.which("ansible-inventory") is None, reason="ansible is not installed")


def one_host_per_role(path: Path) -> Path:
    doc = {"all": {"vars": {"ansible_user": "repro"},
                   "children": {role: {"hosts": {f"{role}-0": {"ansible_host": f"203.0.113.{10 + i}"}}}
                                for i, role in enumerate(TABLE1)}}}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def reproduce_table1(tmp_path: Path, inventory: Path, **kwargs):
    stream = io.StringIO()
    runs = reproduce("fastfabric", "table1-end-to-end", scale="smoke", repeat=1, provider="ssh",
                     results=tmp_path / "results", reports=tmp_path / "reports", stream=stream,
                     provider_options={"inventory": inventory, "bin_dir": FAKEBIN,
                                       "controller_work_root": tmp_path / "work",
                                       "known_hosts": tmp_path / "known_hosts"},
                     papers_dir=REPO / "papers", build="reference", controls=False, **kwargs)
    return runs, stream.getvalue()


def test_example_inventory_gives_every_host_of_table1_a_server_of_its_own():
    layout = topology.lay_out(TABLE1, REFERENCE_ROLES)
    assert len(layout.hosts) == 15
    placed = SshProvider(EXAMPLE, strict_topology=True).place(layout)
    # the i-th instance of a role on the i-th host of its group; a role of one host on the group's only host
    assert placed == {h.name: f"{h.role}-{h.index}" for h in layout.hosts}
    assert len(set(placed.values())) == 15
    assert topology.placement_deviations(layout, placed, "ssh") == []


def test_one_host_per_role_prints_the_placement_and_records_the_deviation(tmp_path, monkeypatch):
    asked = []

    def no_ssh(self, layout, run_dir):
        asked.append(layout)
        raise HarnessError("test: the hosts are not contacted")

    monkeypatch.setattr(SshProvider, "up", no_ssh)
    (run,), printed = reproduce_table1(tmp_path, one_host_per_role(tmp_path / "servers.yml"))
    assert [len(layout.hosts) for layout in asked] == [15]
    lines = printed.splitlines()
    head = lines.index("table1-end-to-end: 15 hosts of the topology on 7 ssh host(s):")
    # the placement, printed before the run's first line
    assert head < next(i for i, ln in enumerate(lines) if "points at scale smoke" in ln)
    table = [ln.split()[:3] for ln in lines[head + 1:head + 16]]
    assert ["kafka-2", "->", "kafka-0"] in table and ["endorser-4", "->", "endorser-0"] in table
    assert ["orderer", "->", "orderer-0"] in table
    shared = ["endorser-0, endorser-1, endorser-2, endorser-3, endorser-4 share endorser-0 (ssh provider)",
              "kafka-0, kafka-1, kafka-2 share kafka-0 (ssh provider)",
              "zookeeper-0, zookeeper-1, zookeeper-2 share zookeeper-0 (ssh provider)"]
    for sentence in shared:
        assert f"  deviation: {sentence}" in lines
    topo = Run.open(run.path).metadata["topology"]
    assert topo["provider"] == "ssh" and topo["published"] == TABLE1
    assert topo["placement"]["kafka-1"] == "kafka-0" and topo["placement"]["storage"] == "storage-0"
    assert all(s in topo["deviations"] for s in shared)


def test_strict_topology_refuses_naming_the_missing_hosts_before_any_run_directory(tmp_path, monkeypatch):
    monkeypatch.setattr(SshProvider, "up", lambda *a: pytest.fail("up() called under a refused topology"))
    with pytest.raises(HarnessError) as e:
        reproduce_table1(tmp_path, one_host_per_role(tmp_path / "servers.yml"), strict_topology=True)
    msg = str(e.value)
    assert msg.startswith("--strict-topology:"), msg
    assert "group kafka has 1 (kafka-0), the topology lays out 3: 2 host(s) missing, for kafka-1, kafka-2" in msg
    assert "group zookeeper has 1 (zookeeper-0), the topology lays out 3: 2 host(s) missing" in msg
    assert "group endorser has 1 (endorser-0), the topology lays out 5: 4 host(s) missing, for endorser-1, endorser-2, endorser-3, endorser-4" in msg
    assert "group orderer" not in msg and "group peer" not in msg       # groups with enough hosts are not named
    assert not list((tmp_path / "results").rglob("metadata.json"))     # no run directory was made
