"""A variant that runs a driver of its own (catalogue ``variants[].driver``): Fabric 1.2 on Kafka beside v2.5 and
v3.1 on Raft in one run (fastfabric's table1-today-raft), so that their ratios are same-run ratios."""

import copy

import pytest

from harness import REPO_ROOT, builds, upstream, validity
from harness.catalogue import load_paper, validate_catalogue
from harness.errors import HarnessError
from harness.plan import driver_of, own_drivers
from harness.reproduce import _mutations_of, skip_reason

TODAY = next(e for e in load_paper("fastfabric").doc["experiments"] if e["id"] == "table1-today-raft")


def test_the_variant_names_its_driver_and_the_others_run_the_experiments():
    assert driver_of(TODAY, "fabric-1.2-kafka") == "end-to-end-kafka"
    assert driver_of(TODAY, "fabric-3.1-raft") == driver_of(TODAY, "fabric-2.5-raft") == TODAY["driver"] == "end-to-end"
    assert own_drivers(TODAY) == {"fabric-1.2-kafka": ("fabric-1.2", "end-to-end-kafka")}
    assert own_drivers(TODAY, {"fabric-3.1-raft"}) == {}  # a run of the v3.1 column alone has none


@pytest.fixture
def sources_at_hand(monkeypatch):
    """TEST DOUBLE: every recipe's source counts as available (no build is made; only the drivers are chosen)."""
    monkeypatch.setattr(upstream, "source_available", lambda recipe, source: None)


def test_the_build_holds_each_variants_own_driver_and_the_hosts_it_needs(sources_at_hand):
    own = own_drivers(TODAY)
    choice = builds.choose_build("upstream", ["fabric-2.5", "fabric-3.1"], "end-to-end", own=own)
    kafka = choice.driver_spec("fabric-1.2-kafka", "fabric-1.2")
    assert "kafka" in kafka["roles"] and "zookeeper" in kafka["roles"]
    assert choice.driver_spec("fabric-3.1-raft", "fabric-3.1")["playbook"] == "fabric3-end-to-end.yml"
    assert set(choice.drivers) == {"fabric-2.5", "fabric-3.1"}  # fabric-1.2's experiment driver is not deployed
    assert choice.systems() == ["fabric-1.2", "fabric-2.5", "fabric-3.1"]
    assert choice.driver_name("fabric-1.2-kafka") == "end-to-end-kafka" and choice.driver_name("x") == "end-to-end"
    layout = choice.layout()
    assert {"kafka", "zookeeper", "orderer", "orderer0", "peer", "client"} <= set(layout)
    assert choice.metadata({})["variant_driver_names"] == {"fabric-1.2-kafka": "end-to-end-kafka"}
    # negative control: without the variant's own driver, no Kafka host is laid out
    alone = builds.choose_build("upstream", ["fabric-2.5", "fabric-3.1"], "end-to-end")
    assert "kafka" not in alone.layout() and "variant_driver_names" not in alone.metadata({})


def test_a_driver_the_variants_system_lacks_is_refused_by_name(sources_at_hand):
    with pytest.raises(HarnessError, match="system fabric-3.1 has no upstream driver 'end-to-end-kafka'"):
        builds.choose_build("upstream", ["fabric-2.5"], "end-to-end", own={"v": ("fabric-3.1", "end-to-end-kafka")})
    wrong = copy.deepcopy(TODAY)
    wrong["variants"][0]["driver"] = "no-such-driver"
    assert "driver 'no-such-driver' has no runner" in skip_reason(wrong)
    doc = copy.deepcopy(load_paper("fastfabric").doc)
    doc["experiments"] = [wrong]
    assert any("no-such-driver" in e for e in validate_catalogue(doc, REPO_ROOT / "papers/fastfabric.yaml",
                                                                  REPO_ROOT / "papers"))
    assert skip_reason(TODAY) is None


def test_control_points_and_validity_take_the_variants_driver(tmp_path):
    kinds = _mutations_of(TODAY, "upstream", None)
    assert kinds("fabric-1.2-kafka", "fabric-1.2")  # end-to-end-kafka corrupts transactions on purpose
    # the point's evidence is its variant's driver's: a driver with no evidence fails the point, naming it
    context = {"experiment": {"driver": "end-to-end-kafka", "variants": [{"id": "odd", "driver": "no-such-driver"},
                                                                          {"id": "plain"}]}, "build": "upstream",
               "primitives": {}, "build_paths": {}}
    _, problems = validity.check_point(tmp_path, {"system": "fabric-1.2", "variant": "odd", "parameters": {}}, {},
                                       context=context)
    assert any("no evidence for driver 'no-such-driver'" in p for p in problems)
    _, problems = validity.check_point(tmp_path, {"system": "fabric-1.2", "variant": "plain", "parameters": {}}, {},
                                       context=context)
    assert not any("declares no evidence" in p for p in problems)


def test_each_variant_names_its_ordering_service_by_its_own_parameter():
    from harness.plan import make_plan
    from harness.systems import plugin
    paper = load_paper("fastfabric")
    points = {p.variant: p for p in make_plan(paper, TODAY, "smoke", environ={}).points}
    assert points["fabric-1.2-kafka"].parameters["orderer_type"] == "kafka"
    assert "orderer_type" not in points["fabric-3.1-raft"].parameters  # negative control: another system's
    assert points["fabric-3.1-raft"].parameters["ordering"] == "etcdraft"
    assert [plugin(p.system).ordering_service(p.parameters) for p in points.values()] == ["Kafka", "Raft", "Raft"]
    # the command line still wins over a variant's own value
    solo = make_plan(paper, TODAY, "smoke", overrides={"orderer_type": "solo"}, environ={}).points
    assert {p.parameters.get("orderer_type") for p in solo} == {"solo"}
