"""Evidence labels say who re-derived the codes, and a claim rests on a passed control (issue 45, item 6).

* "ledger-proven" only where our verifier re-derived the ledger's codes; codes only the validator vouches for
  ("validator's codes") keep a claim from "reproduced".
* A control runs for every ordering or validation path a run sweeps (v3.1's SmartBFT beside Raft).
* A measured point no passed control proved keeps its claims from "reproduced"; a run made without controls
  never pools with controlled ones.
"""

from __future__ import annotations

import yaml

from harness import SCHEMA_VERSION, stats, validity
from harness.analyze import control_status
from harness.catalogue import load_paper
from harness.judge import with_evidence
from harness.plan import add_controls, control_points, make_plan
from harness.reproduce import _mutations_of
from harness.selection import select_runs
from tests.harness.test_pooling import _equal_speed, make_run

REPRODUCED = {"id": "c", "verdict": stats.REPRODUCED, "reason": "measured 1.5, expected ≥ 1.2"}


def _point(evidence: str, controlled: str | None = "passed", **more) -> dict:
    return {"status": "complete", "valid": True, "control": False, "variant": "v",
            "validity": {"evidence": evidence}, **({"controlled": controlled} if controlled else {}), **more}


def test_codes_only_the_validator_vouches_for_cannot_make_a_claim_reproduced():
    proven = with_evidence(REPRODUCED, [_point(validity.LEDGER_PROVEN)])
    assert proven["verdict"] == stats.REPRODUCED and proven["evidence_class"] == validity.LEDGER_PROVEN
    vouched = with_evidence(REPRODUCED, [_point(validity.LEDGER_PROVEN), _point(validity.VALIDATOR_CODES)])
    assert vouched["verdict"] == stats.INCONCLUSIVE and vouched["evidence_class"] == validity.VALIDATOR_CODES
    assert "derived only by the validator" in vouched["reason"]
    # an independent check (a second source beside the driver) still lets a claim be reproduced
    checked = with_evidence(REPRODUCED, [_point(validity.INDEPENDENT_CHECK, controlled=None)])
    assert checked["verdict"] == stats.REPRODUCED


def test_a_claim_whose_points_no_passed_control_proved_is_inconclusive():
    for control, why in (("not run", "no control point ran"), ("failed", "a control point of its run failed")):
        out = with_evidence(REPRODUCED, [_point(validity.LEDGER_PROVEN), _point(validity.LEDGER_PROVEN, control)])
        assert out["verdict"] == stats.INCONCLUSIVE and out["control"] == control and why in out["reason"], out
    # a system whose driver cannot corrupt transactions has no control to run: its points carry none
    assert with_evidence(REPRODUCED, [_point(validity.LEDGER_PROVEN, controlled=None)])["verdict"] == stats.REPRODUCED


def test_each_ordering_path_swept_gets_a_control_of_its_own():
    """table1-today-bft sweeps v3.1's ordering service: SmartBFT's control is not Raft's."""
    paper = load_paper("fastfabric")
    experiment = {e["id"]: e for e in paper.doc["experiments"]}
    plan = make_plan(paper, experiment["table1-today-bft"], "smoke", environ={})
    add_controls(plan, _mutations_of(plan.experiment, "upstream", None))
    controls = [p for p in plan.points if p.control]
    assert sorted(p.sweep["ordering"] for p in controls) == ["BFT", "etcdraft"], [p.id for p in controls]
    assert plan.resolved["control"]["paths"] == ["ordering"]
    assert all(p.parameters["ordering"] == p.sweep["ordering"] for p in controls)
    # negative control: a sweep over a parameter that does not change the path (the offered rate) gets one
    saturation = make_plan(paper, experiment["table1-today-saturation"], "smoke", environ={})
    add_controls(saturation, _mutations_of(saturation.experiment, "upstream", None))
    assert sum(p.control for p in saturation.points) == 1 and saturation.resolved["control"]["paths"] == []
    # a run stored before controls covered paths (no ``paths``) rebuilds its one control as before
    old = {**plan.resolved, "control": {k: v for k, v in plan.resolved["control"].items() if k != "paths"}}
    assert [p.sweep["ordering"] for p in control_points(old)] == ["etcdraft"]


def test_a_measured_points_control_is_the_one_on_its_path():
    def control(ordering, status="complete"):
        return {"control": True, "variant": "v", "sweep": {"ordering": ordering, "rate": 1}, "status": status}
    bft = {"control": False, "variant": "v", "sweep": {"ordering": "BFT", "rate": 2}}
    assert control_status(bft, [control("etcdraft"), control("BFT")], ["ordering"]) == "passed"
    assert control_status(bft, [control("etcdraft"), control("BFT", "failed")], ["ordering"]) == "failed"
    assert control_status(bft, [control("etcdraft")], ["ordering"]) == "not run"  # Raft's does not prove BFT's
    assert control_status(bft, [], []) == "not run"


def test_a_run_made_without_controls_never_pools_with_controlled_runs(root, tmp_path):
    results = tmp_path / "results"
    for name, day in (("r1", "01"), ("r2", "02")):
        run = make_run(results, root, name, _equal_speed([1000] * 3, [1000] * 3), started=f"2026-01-{day}T00:00:00Z")
        if name == "r1":  # the older run planned its control points; the newer was made with --no-control
            resolved = yaml.safe_load((run.path / "resolved.yaml").read_text())
            resolved["control"] = {"parameters": {}, "max_transactions": 2000, "paths": []}
            (run.path / "resolved.yaml").write_text(yaml.safe_dump(resolved))
    chosen = select_runs(results, "mini", "bench")
    assert [r.id for r in chosen.pooled] == ["r1"], chosen.listed
    (other,) = [r for r in chosen.listed if not r["pooled"]]
    assert other["run_id"] == "r2" and "made without control points (--no-control)" in other["why"]


def test_a_regress_page_says_what_each_measurement_rests_on(tmp_path):
    from harness.regress.run import evidence
    from harness.rundir import write_json
    for name, summary in (("control__v__r0", {"control": True, "status": "complete"}),
                          ("v__r0", _point(validity.LEDGER_PROVEN, "not run")),
                          ("v__r1", _point(validity.VALIDATOR_CODES, "not run"))):
        (tmp_path / "points" / name).mkdir(parents=True)
        write_json(tmp_path / "points" / name / "summary.json", {"schema_version": SCHEMA_VERSION, **summary})
    assert evidence(tmp_path) == "validator's codes; control not run"


def test_the_first_screen_counts_validators_codes_as_not_ledger_proven():
    from harness.report.glance import counts
    tally = counts([{"verdict": "inconclusive", "evidence_class": validity.VALIDATOR_CODES},
                    {"verdict": "inconclusive", "evidence_class": validity.LEDGER_PROVEN}])
    assert tally["inconclusive"]["evidence"] == {"not ledger-proven": 1, "ledger-proven": 1}
