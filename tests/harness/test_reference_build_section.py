"""An experiment's ``reference_build`` (harness/plan.py for_build, harness/builds.py build_kind).

Table I runs both columns on Kafka with the upstream builds; the reference
build has neither Kafka nor FastFabric, so there it runs Fabric 1.2 on its solo
driver and lists FastFabric as not runnable, with the reason.
"""

import copy
import json

import jsonschema
import pytest

from harness import REPO_ROOT, builds, upstream, upstream_source
from harness.catalogue import load_paper
from harness.errors import HarnessError
from harness.plan import for_build, make_plan
from harness.regress.build import reference_variants

PAPER = load_paper("fastfabric")
TABLE1 = PAPER.experiment("table1-end-to-end")


def test_upstream_plan_measures_both_columns_on_kafka():
    plan = make_plan(PAPER, for_build(TABLE1, "upstream"), "smoke")
    assert plan.experiment["driver"] == "end-to-end-kafka"
    assert [p.variant for p in plan.points] == ["fabric-1.2", "fastfabric"]
    assert plan.resolved["parameters"]["orderer_type"]["value"] == "kafka"
    assert plan.resolved["not_runnable_variants"] == {}


def test_reference_plan_runs_fabric_alone_on_its_solo_driver_and_says_why():
    plan = make_plan(PAPER, for_build(TABLE1, "reference"), "smoke")
    assert plan.experiment["driver"] == "end-to-end"
    assert [p.variant for p in plan.points] == ["fabric-1.2"]
    assert plan.resolved["parameters"]["orderer_type"]["value"] == "solo"
    assert "no FastFabric" in plan.resolved["not_runnable_variants"]["fastfabric"]
    assert TABLE1["driver"] == "end-to-end-kafka", "the catalogue's experiment is left as it is"
    # the reference build has the driver it names
    choice = builds.choose_build("reference", ["fabric-1.2"], plan.experiment["driver"])
    assert choice.drivers["fabric-1.2"]["playbook"] == "end-to-end.yml"


def test_experiment_without_the_section_is_the_same_on_both_builds():
    fig6 = PAPER.experiment("fig6-peer-throughput")
    assert for_build(fig6, "reference") is fig6 and for_build(TABLE1, "upstream") is TABLE1


def test_auto_falls_back_before_the_plan_when_upstream_is_not_at_hand(tmp_path, monkeypatch):
    monkeypatch.setenv("FABRICREPRO_UPSTREAM_SNAPSHOTS", str(tmp_path))
    monkeypatch.setattr(upstream.shutil, "which", lambda name: None)
    monkeypatch.setattr(upstream_source, "BUILDS", tmp_path / "builds")  # no cached build of the pin either
    kind, why = builds.build_kind("auto", TABLE1)
    assert kind == "reference" and "no snapshot" in why
    assert builds.build_kind("reference", TABLE1) == ("reference", None)
    assert builds.build_kind("upstream", TABLE1) == ("upstream", None)   # choose_build says why it cannot
    with pytest.raises(HarnessError, match="unknown build"):
        builds.build_kind("fast", TABLE1)


def test_auto_asks_upstream_for_the_runnable_variants_only(monkeypatch):
    asked = []
    monkeypatch.setattr(builds, "_upstream_unavailable",
                        lambda systems, driver, source, systems_dir: asked.append((systems, driver)))
    builds.build_kind("auto", TABLE1, only_variants=["fabric-1.2"])
    assert asked == [(["fabric-1.2"], "end-to-end-kafka")]


def test_regress_measures_the_reference_builds_variants():
    assert reference_variants(TABLE1) == ["fabric-1.2"]
    broken = copy.deepcopy(TABLE1)
    del broken["reference_build"]
    assert reference_variants(broken) == []   # no reference driver end-to-end-kafka


def test_schema_requires_the_reason():
    schema = json.loads((REPO_ROOT / "papers" / "schema.json").read_text(encoding="utf-8"))
    doc = copy.deepcopy(PAPER.doc)
    table = next(e for e in doc["experiments"] if e["id"] == "table1-end-to-end")
    jsonschema.validate(doc, schema)
    del table["reference_build"]["why"]
    with pytest.raises(jsonschema.ValidationError, match="'why' is a required property"):
        jsonschema.validate(doc, schema)
