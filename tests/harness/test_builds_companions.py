"""A driver's ``companions`` (harness/builds.py): other systems' builds its roles
also run, built beside the variant's and handed to the playbook by system."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from harness import builds


def _fake_build(system, source="auto", systems_dir=None, log=print, switches=None, pin=None):
    info = {"system": system, "key": f"{system}-key", "patches": [], "flavours": [], "base": None}
    return SimpleNamespace(path=Path("/builds") / system, info=info,
                           provenance=lambda: {"kind": "upstream", "path": f"/builds/{system}", **info})


def test_companion_builds_are_made_recorded_and_passed(monkeypatch):
    monkeypatch.setattr(builds.upstream, "build", _fake_build)
    spec = {"playbook": "p.yml", "roles": [], "binaries": [], "placement": {}, "companions": ["fastfabric"]}
    plain = {"playbook": "p.yml", "roles": [], "binaries": [], "placement": {}}
    choice = builds.Choice("upstream", {"fabric-1.2": spec, "fastfabric": plain}, driver="orderer-bench")
    builds.prepare(choice, {"fabric-1.2": ("fabric-1.2", {}), "opt-o2": ("fastfabric", {})}, log=lambda *a: None)
    assert choice.companion_dirs("fabric-1.2") == {"fastfabric": "/builds/fastfabric"}
    assert choice.companion_dirs("opt-o2") == {}
    assert choice.variants["fabric-1.2"]["companions"]["fastfabric"]["key"] == "fastfabric-key"
    assert "companions" not in choice.variants["opt-o2"]


def test_the_fabric12_orderer_bench_driver_runs_the_published_clients():
    spec = builds.upstream_driver("fabric-1.2", "orderer-bench")
    assert spec["companions"] == ["fastfabric"]
    assert builds.upstream_driver("fastfabric", "orderer-bench")["playbook"] == spec["playbook"]
