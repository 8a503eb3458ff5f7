"""The upstream dry run for every variant, its negative cases, and the pins."""
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
import upstream_dryrun as dr

CASES = {
    "fastfabric": "fastfabric-15.example.yml",
    "validation-opt": "validation-opt.example.yml",
    "fujitsu-api": "fujitsu.example.yml",
    "bftsmart-orderer": "bftsmart-4.example.yml",
}


@pytest.mark.parametrize("variant", sorted(CASES))
def test_dry_run_renders_and_checks(variant, tmp_path):
    """The current templates pass for every variant: no unknown key, no required key missing."""
    rep = dr.dry_run(REPO / "infra" / "inventories" / CASES[variant], variant, tmp_path)
    assert rep.rendered, "nothing rendered"
    assert rep.problems == []
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["problems"] == [] and report["missing_required"] == []


def test_dry_run_covers_the_configuration_files(tmp_path):
    rep = dr.dry_run(REPO / "infra" / "inventories" / CASES["fastfabric"], "fastfabric", tmp_path)
    names = {r.rsplit("/", 1)[1] for r in rep.rendered}
    assert {"core.yaml", "orderer.yaml", "configtx.yaml", "crypto-config.yaml", "zoo.cfg", "server.properties"} <= names
    rep = dr.dry_run(REPO / "infra" / "inventories" / CASES["bftsmart-orderer"], "bftsmart-orderer", tmp_path / "b")
    names = {r.rsplit("/", 1)[1] for r in rep.rendered}
    assert {"hosts.config", "system.config", "node.config", "orderer.yaml"} <= names


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


def test_template_with_unknown_key_fails_the_run(tmp_path, monkeypatch):
    """A role template that writes a key Fabric 1.2 does not read makes the dry run fail."""
    roles = tmp_path / "roles"
    shutil.copytree(dr.ROLES, roles)
    tpl = roles / "fabric_peer" / "templates" / "core.yaml.j2"
    tpl.write_text(tpl.read_text().replace("  addressAutoDetect: false", "  addressAutoDetect: false\n  notAFabricKey: 1"))
    monkeypatch.setattr(dr, "ROLES", roles)
    rep = dr.dry_run(REPO / "infra" / "inventories" / CASES["fastfabric"], "fastfabric", tmp_path / "out")
    assert any("peer.notAFabricKey" in p for p in rep.problems)


def test_undefined_variable_fails_rendering(tmp_path, monkeypatch):
    roles = tmp_path / "roles"
    shutil.copytree(dr.ROLES, roles)
    (roles / "kafka" / "templates" / "server.properties.j2").write_text("broker.id={{ kafka_no_such_variable }}\n")
    monkeypatch.setattr(dr, "ROLES", roles)
    rep = dr.dry_run(REPO / "infra" / "inventories" / CASES["fastfabric"], "fastfabric", tmp_path / "out")
    assert any("render failed" in p and "kafka_no_such_variable" in p for p in rep.problems)


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


def test_template_missing_required_key_fails_the_run(tmp_path, monkeypatch):
    """A role template that drops a key Fabric 1.2 requires makes the dry run fail, and report.json lists it."""
    roles = tmp_path / "roles"
    shutil.copytree(dr.ROLES, roles)
    tpl = roles / "fabric_orderer" / "templates" / "orderer.yaml.j2"
    text = tpl.read_text()
    assert "  LocalMSPID: OrdererMSP\n" in text
    tpl.write_text(text.replace("  LocalMSPID: OrdererMSP\n", ""))
    monkeypatch.setattr(dr, "ROLES", roles)
    inv = REPO / "infra" / "inventories" / CASES["fastfabric"]
    out = tmp_path / "out"
    rep = dr.dry_run(inv, "fastfabric", out)
    assert any("missing required key General.LocalMSPID" in p for p in rep.problems)
    report = json.loads((out / "report.json").read_text())
    assert report["missing_required"]
    assert all(m["key"] == "General.LocalMSPID" and m["file"].endswith("/fabric_orderer/orderer.yaml")
               for m in report["missing_required"])
    assert dr.main(["--inventory", str(inv), "--variant", "fastfabric", "--out", str(tmp_path / "cli")]) == 1


def test_pbft_config_without_broadcast_timeout_is_caught():
    """v0.6.1 panics without general.timeout.broadcast (consensus/pbft/pbft-core.go)."""
    tpl = dr.ROLES / "fabric06_peer" / "templates" / "config.yaml.j2"
    assert "broadcast:" in tpl.read_text()
    text = "general:\n  mode: batch\n  \"N\": 4\n  f: 1\n  K: 10\n  logmultiplier: 4\n  batchsize: 500\n" \
           "  timeout:\n    batch: 1s\n    request: 2s\n    viewchange: 2s\n    resendviewchange: 2s\n"
    assert dr.check_rendered("config.yaml", text, ["fabric-0.6"]) == [
        "config.yaml: missing required key general.timeout.broadcast (marked in infra/upstream_keys/fabric-0.6/pbft-config.yaml.keys)"]


def test_cli_exit_codes(tmp_path):
    inv = REPO / "infra" / "inventories" / CASES["fujitsu-api"]
    assert dr.main(["--inventory", str(inv), "--variant", "fujitsu-api", "--out", str(tmp_path)]) == 0


# Systems still on the older server-only path (schema 1); build recipes (schema 2)
# are checked by tests/harness/test_upstream_build.py.
PINS = sorted(p for p in (REPO / "systems").glob("*/upstream.yaml")
              if yaml.safe_load(p.read_text())["schema_version"] == 1)


@pytest.mark.parametrize("path", PINS, ids=lambda p: p.parent.name)
def test_pins_are_commits_or_explained(path):
    pin = yaml.safe_load(path.read_text())
    assert pin["schema_version"] == 1 and pin["variant"] == path.parent.name
    assert (REPO / pin["deploy"]["playbook"]).exists()
    for name, comp in pin["components"].items():
        commit = comp.get("commit")
        if commit is None:
            assert comp.get("pin_status") in {"unresolved", "bundled"} and comp.get("pin_reason"), \
                f"{name}: commit null without pin_status/pin_reason"
        else:
            assert re.fullmatch(r"[0-9a-f]{40}", commit), f"{name}: {commit} is not a 40-hex commit"
            assert comp.get("pin_source"), f"{name}: pinned without saying how the commit was found"
    if not pin["code_available"]:
        assert pin.get("code_note")


def test_expected_toolchains():
    f06 = yaml.safe_load((REPO / "systems" / "fujitsu-api" / "upstream.yaml").read_text())
    assert f06["components"]["fabric"]["toolchain"]["go"].startswith("1.7")
    bft = yaml.safe_load((REPO / "systems" / "bftsmart-orderer" / "upstream.yaml").read_text())
    assert bft["components"]["ordering_service"]["toolchain"]["java"] == "8"
