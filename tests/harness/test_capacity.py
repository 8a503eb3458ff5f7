"""Issue 48, item 4: a known limit of the machine's cores is a verdict, not a crash (harness/capacity.py).

A point whose every validity problem is a capacity limit its system declares (``capacity_limits`` of its
validity.yaml) is kept complete but not valid, with its counts and reasons, and the claims resting on it read
"not comparable on N cores" with the command that would judge them on a bigger host. A point with any other
problem still fails (and so fails its run: point_loop counts every point that is not complete)."""

import json
from pathlib import Path

import pytest
import yaml

from harness import analyze, capacity, judge, validity
from harness.collect import read_csv, write_table
from harness.errors import HarnessError

GOLDEN = Path(__file__).resolve().parent / "fixtures" / "golden"
POINT = {"id": "bftsmart__nodes-4__r0", "variant": "bftsmart", "system": "bftsmart-orderer",
         "sweep": {"nodes": 4, "block_size": 10}, "repetition": 0, "parameters": {}}
LAG = ("independent check bft-receivers: receiver 1000 is short of blocks: it got blocks up to #634 (6,340 envelopes "
       "of 10), node 0 had counted 10,000 when teardown began stopping the receivers (tolerance 2,020: blocks in "
       "flight)")
OTHER = "logs: java_uncaught_exception matched 1 line(s) in logs/orderer/bftsmart_node-2.log"


@pytest.fixture
def point_with(tmp_path, monkeypatch):
    """A point with the golden tables whose validity check finds ``problems``."""
    def make(problems: list[str], name: str = POINT["id"]) -> Path:
        monkeypatch.setattr(validity, "check_point", lambda *a, **k: ({"problems": list(problems)}, list(problems)))
        d = tmp_path / "points" / name
        d.mkdir(parents=True)
        for t in ("blocks", "deliveries", "txs", "block_txs"):
            write_table(read_csv(GOLDEN / f"{t}.csv", t), d / f"{t}.parquet", t)
        return d
    return make


def test_bftsmart_declares_delivery_lagging_ordering_a_capacity_limit():
    limits = capacity.load("bftsmart-orderer")
    assert [r["name"] for r in limits] == ["delivery_lags_ordering"]
    assert capacity.classify(limits, [LAG])["limits"] == ["delivery_lags_ordering"]
    after = ("independent check bft-receivers: node 0 counted 5,000 envelopes after teardown began stopping the "
             "receivers, more than can be in flight (2,020): no receiver can confirm them")
    assert capacity.classify(limits, [LAG, after])["problems"] == [LAG, after]
    # any other problem beside it, or alone, is not a limit of the machine: the point fails as before
    assert capacity.classify(limits, [LAG, OTHER]) is None
    assert capacity.classify(limits, ["independent check bft-receivers: only 1 of the 3 other replicas executed as "
                                      "many envelopes as node 0 counted"]) is None
    assert capacity.classify(limits, []) is None
    # a system that declares none has none
    assert capacity.load("fabric-2.5") == []


def test_a_capacity_limit_must_be_declared_whole(tmp_path):
    # harness/validity.py's load_rules reads them with the checks of its log patterns (test doubles: systems
    # of a temporary folder)
    def rules_of(entries, base=None):
        for name, doc in (("base", {"capacity_limits": base or []}), ("child", {"capacity_limits": entries})):
            (tmp_path / name).mkdir(exist_ok=True)
            (tmp_path / name / "validity.yaml").write_text(
                yaml.safe_dump({"schema_version": validity.RULES_SCHEMA_VERSION, **doc}))
            (tmp_path / name / "system.yaml").write_text(yaml.safe_dump({"extends": "base"} if name == "child" else {}))
        return capacity.load("child", tmp_path)

    good = {"name": "x", "regex": "y", "meaning": "m"}
    assert rules_of([good]) == [good]
    # the base's are inherited, one of the same name replaced
    assert rules_of([{**good, "meaning": "n"}], [good, {**good, "name": "z"}]) == [{**good, "meaning": "n"},
                                                                                  {**good, "name": "z"}]
    with pytest.raises(HarnessError, match=r"capacity_limits\[0\] lacks meaning"):
        rules_of([{"name": "x", "regex": "y"}])
    with pytest.raises(HarnessError, match="does not compile"):
        rules_of([{"name": "x", "regex": "(", "meaning": "m"}])
    with pytest.raises(HarnessError, match="unknown key"):
        rules_of([{"name": "x", "regex": "y", "meaning": "m", "fatal": True}])
    with pytest.raises(HarnessError, match="must be a list"):
        rules_of({"name": "x"})


def test_a_point_the_machine_could_not_carry_is_kept_complete_but_not_valid(point_with):
    s = analyze.point_summary(point_with([LAG]), POINT, "complete", None, {"cpus": {"effective": 2}})
    assert s["status"] == "complete" and s["valid"] is False and s["invalid_kind"] == capacity.CAPACITY
    # both counts and the reason are kept
    assert "6,340 envelopes" in s["invalid_reason"] and "10,000" in s["invalid_reason"]
    assert s["validity"]["capacity"]["limits"] == ["delivery_lags_ordering"]
    assert s["metrics"]  # its numbers are kept (left out of the aggregates: not valid)
    assert judge.aggregate({"r": [s]}) == []


def test_a_point_that_fails_for_another_reason_still_fails(point_with):
    s = analyze.point_summary(point_with([LAG, OTHER]), POINT, "complete")
    assert s["status"] == "failed" and s["reason"].startswith("validity: ") and OTHER in s["reason"]
    assert "invalid_kind" not in s and not capacity.limited(s)
    # and a point that did not complete is not rescued by a capacity limit
    s = analyze.point_summary(point_with([LAG], "p2"), {**POINT, "id": "p2"}, "failed", "playbook failed")
    assert s["status"] == "failed" and not capacity.limited(s)


CLAIM = {"id": "below-signing-capacity", "compare": "ratio", "aggregate": "max_over_sweep",
         "numerator": {"variant": "bftsmart", "params": {"block_size": 10}},
         "denominator": {"experiment": "text-signature-bench", "variant": "bftsmart", "params": {"block_size": 10}},
         "expected": 0.6, "tolerance": {"relative": 0.3}}


def _summary(point: str, sweep: dict, limited: bool) -> dict:
    s = {"point": point, "variant": "bftsmart", "sweep": sweep, "status": "complete", "valid": not limited,
         "control": False, "cpus": {"effective": 2}, "invalid_reason": "the machine could not carry it: " + LAG}
    return {**s, "invalid_kind": capacity.CAPACITY} if limited else s


def test_a_claim_on_such_points_is_not_comparable_on_this_many_cores():
    points = [_summary("a", {"block_size": 10, "nodes": 4}, True), _summary("b", {"block_size": 10, "nodes": 7}, False),
              _summary("c", {"block_size": 100, "nodes": 4}, True)]
    measured = {"id": CLAIM["id"], "verdict": "inconclusive", "reason": "measured 0.2", "cores": {"verdict": "x"}}
    where = {"cores": 2, "paper": "bftsmart-orderer", "experiment": "fig6-lan-throughput"}
    out = judge.with_capacity(measured, CLAIM, points, where)
    assert out["verdict"] == "not comparable" and out["reason"].startswith("not comparable on 2 cores: 1 of 2 points")
    assert "6,340 envelopes" in out["reason"]
    assert "invoke kit --paper bftsmart-orderer --experiment fig6-lan-throughput" in out["reason"]
    assert out["capacity"]["points"] == ["a"] and out["cores"]["verdict"] is None
    # the reason names each point's problem without the check's name where the point says which problems they were
    points[0]["validity"] = {"capacity": {"problems": [LAG]}}
    assert "(a: receiver 1000 is short of blocks: it got blocks up to #634" in \
        judge.with_capacity(measured, CLAIM, points, where)["reason"]
    # the block_size 100 point is not this claim's; without a limited point of its own the claim stands
    assert judge.with_capacity(measured, CLAIM, points[1:], where) == measured
    # a qualitative claim is judged from the figure, as before
    qualitative = {"id": "q", "compare": "qualitative"}
    assert judge.with_capacity({"verdict": "not comparable"}, qualitative, points, where) == {"verdict": "not comparable"}


def test_a_lagging_load_generator_is_a_capacity_limit_too(point_with):
    point = {**POINT, "system": "mini-system", "parameters": {"rate_tps": 100, "max_lag_ms": 1}}
    d = point_with([])
    s = analyze.point_summary(d, point, "complete")
    if s["metrics"].get("loadgen_max_lag_ms") is None or s["metrics"]["loadgen_max_lag_ms"] <= 1:
        pytest.skip("the golden tables record no generator lag over 1 ms")
    assert s["status"] == "complete" and not s["valid"] and s["invalid_kind"] == capacity.CAPACITY
    assert "load generator lagged" in s["invalid_reason"]
    json.dumps(s)


def test_a_finished_run_says_what_the_machine_could_not_carry(tmp_path):
    for name, limited in (("a", True), ("b", False)):
        (tmp_path / "points" / name).mkdir(parents=True)
        s = {**_summary(name, {}, limited), **({"validity": {"capacity": {"limits": ["delivery_lags_ordering"]}}}
                                               if limited else {})}
        (tmp_path / "points" / name / "summary.json").write_text(json.dumps(s))
    note = capacity.run_note(tmp_path, "bftsmart-orderer", "fig6-lan-throughput")
    assert note.startswith("1 of 2 points were more than this machine could carry (delivery_lags_ordering): "
                           "the claims on them read \"not comparable on 2 cores\"")
    assert note.endswith("invoke kit --paper bftsmart-orderer --experiment fig6-lan-throughput, then ./kit/run on a "
                         "host with more cores and invoke ingest its run.tar.gz here")
    (tmp_path / "points" / "a" / "summary.json").write_text(json.dumps(_summary("a", {}, False)))
    assert capacity.run_note(tmp_path, "p", "e") is None
