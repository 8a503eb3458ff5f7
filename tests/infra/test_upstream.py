"""The upstream dry run for every variant, its negative cases, and the pins."""
import re
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
    rep = dr.dry_run(REPO / "infra" / "inventories" / CASES[variant], variant, tmp_path)
    assert rep.rendered, "nothing rendered"
    assert rep.problems == []
    assert (tmp_path / "report.json").exists()


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
    assert dr.check_rendered("core.yaml", "peer:\n  id: p0\n  validatorPoolSize: 16\n", ["fabric-1.2"]) == []


def test_unknown_property_is_caught():
    problems = dr.check_rendered("server.properties", "broker.id=0\nbroker.bogus=1\n", ["kafka-1.0"])
    assert problems == ["server.properties: unknown key broker.bogus (not in infra/upstream_keys/kafka-1.0/server.properties.keys)"]


def test_wildcard_property_and_unset_value():
    assert dr.check_rendered("zoo.cfg", "tickTime=2000\nserver.1=a:2888:3888\n", ["zookeeper-3.4"]) == []
    assert dr.check_rendered("zoo.cfg", "dataDir=None\n", ["zookeeper-3.4"])


def test_bad_bftsmart_hosts_line_is_caught():
    assert dr.check_rendered("hosts.config", "0 10.0.0.1 11000\nzero host\n", ["bftsmart-os"])


def test_template_with_unknown_key_fails_the_run(tmp_path, monkeypatch):
    """A role template that writes a key Fabric 1.2 does not read makes the dry run fail."""
    roles = tmp_path / "roles"
    import shutil
    shutil.copytree(dr.ROLES, roles)
    tpl = roles / "fabric_peer" / "templates" / "core.yaml.j2"
    tpl.write_text(tpl.read_text().replace("  addressAutoDetect: false", "  addressAutoDetect: false\n  notAFabricKey: 1"))
    monkeypatch.setattr(dr, "ROLES", roles)
    rep = dr.dry_run(REPO / "infra" / "inventories" / CASES["fastfabric"], "fastfabric", tmp_path / "out")
    assert any("peer.notAFabricKey" in p for p in rep.problems)


def test_undefined_variable_fails_rendering(tmp_path, monkeypatch):
    roles = tmp_path / "roles"
    import shutil
    shutil.copytree(dr.ROLES, roles)
    (roles / "kafka" / "templates" / "server.properties.j2").write_text("broker.id={{ kafka_no_such_variable }}\n")
    monkeypatch.setattr(dr, "ROLES", roles)
    rep = dr.dry_run(REPO / "infra" / "inventories" / CASES["fastfabric"], "fastfabric", tmp_path / "out")
    assert any("render failed" in p and "kafka_no_such_variable" in p for p in rep.problems)


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
