"""The configuration-key checker (infra/config_keys.py): known and required keys of each upstream version."""
import json
import os
import re
import shutil
import tarfile
from pathlib import Path

import pytest
import yaml

import sys

REPO = Path(__file__).resolve().parents[2]
for _p in (REPO / "infra", REPO / "infra" / "terraform"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))
import config_keys as dr







def test_unknown_yaml_key_is_caught():
    problems = dr.check_rendered("core.yaml", "peer:\n  id: p0\n  bogusKey: 1\n", ["fabric-1.2"])
    assert any("peer.bogusKey" in p for p in problems)


def test_known_yaml_key_passes():
    problems = dr.check_rendered("core.yaml", "peer:\n  id: p0\n  validatorPoolSize: 16\n", ["fabric-1.2"])
    assert not [p for p in problems if "unknown key" in p]


def test_unknown_property_is_caught():
    problems = dr.check_rendered("server.properties", "broker.id=0\nbroker.bogus=1\n", ["kafka-1.0"])
    assert problems == ["server.properties: unknown key broker.bogus (not in infra/upstream_keys/kafka-1.0/server.properties.keys)"]


def test_wildcard_property_and_unset_value():
    cfg = "tickTime=2000\ndataDir=/d\nclientPort=2181\nserver.1=a:2888:3888\n"
    assert dr.check_rendered("zoo.cfg", cfg, ["zookeeper-3.4"]) == []
    assert dr.check_rendered("zoo.cfg", "dataDir=None\nclientPort=2181\n", ["zookeeper-3.4"])


def test_bad_bftsmart_hosts_line_is_caught():
    assert dr.check_rendered("hosts.config", "0 10.0.0.1 11000\nzero host\n", ["bftsmart-os"])






# ---------------------------------------------------------------- required keys

def test_required_marks_are_read():
    """`!` marks a key required; the mark is not part of the key."""
    ks = dr.load_key_set(dr.KEYS / "fabric-1.2" / "orderer.yaml.keys")
    required = {".".join(p) for p in ks.required}
    assert {"General.ListenAddress", "General.ListenPort", "General.LedgerType", "General.GenesisMethod",
            "General.GenesisFile", "General.LocalMSPDir", "General.LocalMSPID"} <= required
    assert "General.Kafka" not in required and ["General", "ListenAddress"] in ks.known
    assert not any(s.startswith("!") for p in ks.known for s in p)
    core = {".".join(p) for p in dr.load_key_set(dr.KEYS / "fabric-1.2" / "core.yaml.keys").required}
    assert {"peer.address", "peer.listenAddress", "peer.mspConfigPath", "peer.localMspId",
            "peer.fileSystemPath"} <= core
    bft = {".".join(p) for p in dr.load_key_set(dr.KEYS / "bftsmart-os" / "system.config.keys").required}
    assert bft == {"system.servers.num"}  # system.servers.f defaults to (n - 1) / 3 in the shipped jar


def test_every_key_file_names_its_source():
    for f in sorted(dr.KEYS.glob("*/*.keys")):
        assert f.read_text().startswith("# source:"), f


def test_missing_required_yaml_key_is_caught():
    problems = dr.check_rendered("orderer.yaml", "General:\n  LedgerType: file\n  ListenPort: 7050\n", ["fabric-1.2"])
    missing = {p.split("missing required key ")[1].split(" ")[0] for p in problems if "missing required key" in p}
    assert missing == {"General.ListenAddress", "General.GenesisMethod", "General.GenesisFile",
                       "General.LocalMSPDir", "General.LocalMSPID"}
    assert "orderer.yaml: missing required key General.ListenAddress (marked in infra/upstream_keys/fabric-1.2/orderer.yaml.keys)" in problems


def test_empty_required_value_counts_as_missing():
    problems = dr.check_rendered("orderer.yaml", "General:\n  ListenAddress:\n", ["fabric-1.2"])
    assert any("missing required key General.ListenAddress" in p for p in problems)
    assert dr.check_rendered("zoo.cfg", "dataDir=/d\nclientPort=\n", ["zookeeper-3.4"]) == [
        "zoo.cfg: missing required key clientPort (marked in infra/upstream_keys/zookeeper-3.4/zoo.cfg.keys)"]


def test_missing_required_property_is_caught():
    assert dr.check_rendered("system.config", "system.servers.f = 1\n", ["bftsmart-os"]) == [
        "system.config: missing required key system.servers.num (marked in infra/upstream_keys/bftsmart-os/system.config.keys)"]
    problems = dr.check_rendered("node.config", "MSPID=OrdererMSP\n", ["bftsmart-os"])
    assert any("missing required key GENESIS" in p for p in problems)


@pytest.fixture
def toy_keys(tmp_path, monkeypatch):
    """A key set exercising sections, optional parents, `*` and `[]`."""
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "core.yaml.keys").write_text(
        "# source: test\n!a\n!a.b\na.opt.x\n!a.opt.y\n!s.*\nl[].m\n!l[].n\n!p.*.q\np.*.r\n")
    monkeypatch.setattr(dr, "KEYS", tmp_path)
    monkeypatch.setattr(dr, "REPO", tmp_path)
    return lambda text: dr.check_file("core.yaml", text, ["toy"]).missing


def test_required_key_under_optional_parent(toy_keys):
    full = "a: {b: 1, opt: {x: 1, y: 2}}\ns: {any: 1}\nl: [{m: 1, n: 2}]\np: {one: {q: 1}}\n"
    assert toy_keys(full) == []
    # a.opt absent altogether: a.opt.y does not count, a.opt is not required
    assert toy_keys("a: {b: 1}\ns: {z: 1}\n") == []
    # a.opt present without y: it counts
    assert toy_keys("a: {b: 1, opt: {x: 1}}\ns: {z: 1}\n") == ["a.opt.y"]
    # a required section absent: it and its required keys are reported, not the optional subtree's
    assert toy_keys("s: {z: 1}\n") == ["a", "a.b"]


def test_required_wildcard_and_list_items(toy_keys):
    base = "a: {b: 1}\n"
    assert toy_keys(base + "s: {whatever: 1}\n") == []  # any name satisfies `*`
    assert toy_keys(base + "s: {}\n") == ["s.*"]
    assert toy_keys(base) == []  # s is not itself required: absent altogether, s.* does not count
    # every item of a list of maps needs the key; no list, nothing required
    assert toy_keys(base + "s: {z: 1}\nl: [{m: 1, n: 1}, {m: 2}]\n") == ["l[].n"]
    # every instance of a `*` parent needs the key
    assert toy_keys(base + "s: {z: 1}\np: {one: {q: 1}, two: {r: 1}}\n") == ["p.two.q"]


SNAPSHOTS = Path(os.environ.get("FABRICREPRO_UPSTREAM_SNAPSHOTS", REPO.parent / "shared" / "upstream"))
# The sample files each key set was read from: (snapshot, member, rendered name, key set).
SAMPLES = [
    ("fabric-1.2.0", "sampleconfig/core.yaml", "core.yaml", "fabric-1.2"),
    ("fabric-1.2.0", "sampleconfig/orderer.yaml", "orderer.yaml", "fabric-1.2"),
    ("fabric-1.2.0", "sampleconfig/configtx.yaml", "configtx.yaml", "fabric-1.2"),
    ("fastfabric", "sampleconfig/core.yaml", "core.yaml", "fabric-1.2"),
    ("fabric-1.1.0", "sampleconfig/orderer.yaml", "orderer.yaml", "fabric-1.2"),
    ("fabric-bftsmart-1.2", "sampleconfig/orderer.yaml", "orderer.yaml", "fabric-1.1-bftsmart"),
    ("fabric-0.6.1", "consensus/pbft/config.yaml", "config.yaml", "fabric-0.6"),
    ("bftsmart-os-zeromq", "config/system.config", "system.config", "bftsmart-os"),
    ("bftsmart-os-1.2", "config/system.config", "system.config", "bftsmart-os"),
]


@pytest.mark.parametrize("snapshot,member,name,keyset", SAMPLES, ids=lambda v: str(v))
def test_upstream_sample_files_pass(snapshot, member, name, keyset, tmp_path):
    """The real sample files the lists were read from pass: every key known, every required key there."""
    archives = sorted(SNAPSHOTS.glob(f"{snapshot}-*.tar.xz"))
    if not archives:
        pytest.skip(f"no {snapshot} snapshot in {SNAPSHOTS}")
    with tarfile.open(archives[0]) as tar:
        text = tar.extractfile(f"{snapshot}/{member}").read().decode()
    assert dr.check_rendered(name, text, [keyset]) == []




def test_pbft_config_without_broadcast_timeout_is_caught():
    """v0.6.1 panics without general.timeout.broadcast (consensus/pbft/pbft-core.go)."""
    text = "general:\n  mode: batch\n  \"N\": 4\n  f: 1\n  K: 10\n  logmultiplier: 4\n  batchsize: 500\n" \
           "  timeout:\n    batch: 1s\n    request: 2s\n    viewchange: 2s\n    resendviewchange: 2s\n"
    assert dr.check_rendered("config.yaml", text, ["fabric-0.6"]) == [
        "config.yaml: missing required key general.timeout.broadcast (marked in infra/upstream_keys/fabric-0.6/pbft-config.yaml.keys)"]






