"""Which build a run uses (harness/builds.py), on the repository's own systems."""

import pytest

from harness import builds, upstream, upstream_source
from harness.errors import HarnessError


def test_reference_build_uses_the_systems_reference_drivers():
    choice = builds.choose_build("reference", ["fabric-1.2"], "end-to-end")
    assert choice.kind == "reference" and choice.fallback_reason is None
    assert choice.drivers["fabric-1.2"]["playbook"] == "end-to-end.yml"
    assert choice.layout() == {"orderer": ["orderer"], "peer": ["peer"], "client": ["blockwatch", "loadgen"]}
    meta = choice.metadata({"fabric-1.2": {}})
    assert meta["kind"] == "reference" and meta["source"]
    assert meta["role_settings"]["peer"]  # the roles' defaults travel with the run


def test_upstream_refuses_a_driver_the_recipe_lacks():
    with pytest.raises(HarnessError, match="no upstream driver 'chaincode-api'"):
        builds.choose_build("upstream", ["fabric-1.2"], "chaincode-api")


def test_auto_falls_back_to_reference_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setattr(builds, "reference_driver", lambda system, driver, systems_dir=None: {
        "playbook": "x.yml", "roles": [], "binaries": [], "placement": {}})
    choice = builds.choose_build("auto", ["fabric-1.2"], "chaincode-api")
    assert choice.kind == "reference" and "no upstream driver" in choice.fallback_reason
    assert choice.metadata({})["fallback_reason"] == choice.fallback_reason


def test_auto_without_a_snapshot_or_git_falls_back(tmp_path, monkeypatch):
    monkeypatch.setenv("FABRICREPRO_UPSTREAM_SNAPSHOTS", str(tmp_path))
    monkeypatch.setattr(upstream.shutil, "which", lambda name: None)
    monkeypatch.setattr(upstream_source, "BUILDS", tmp_path / "builds")  # no cached build of the pin either
    choice = builds.choose_build("auto", ["fabric-1.2"], "end-to-end")
    assert choice.kind == "reference" and "no snapshot 'fabric-1.2.0'" in choice.fallback_reason


@pytest.mark.skipif(upstream.source_available(upstream.load_recipe("fabric-1.2"), "snapshot") is not None,
                    reason="no Fabric v1.2.0 snapshot in ../shared/upstream")
def test_auto_takes_upstream_where_its_source_is_at_hand():
    choice = builds.choose_build("auto", ["fabric-1.2"], "committer-bench")
    assert choice.kind == "upstream"
    assert choice.drivers["fabric-1.2"]["playbook"] == "fabric-peer-bench.yml"
    assert set(choice.layout()) == {"peer"}  # the benchmark runs in one process on the peer host


def test_unknown_build_kind_lists_the_valid_ones():
    with pytest.raises(HarnessError, match="unknown build 'fast'; valid builds: auto, reference, upstream"):
        builds.choose_build("fast", ["fabric-1.2"], "end-to-end")
