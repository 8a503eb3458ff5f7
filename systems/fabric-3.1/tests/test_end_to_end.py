"""Today's Fabric as harness points: ``invoke reproduce`` of the catalogue's table1-today-bft (v3.1.5, Raft
then SmartBFT) and table1-today-raft's v2.5.16 column, at the smoke scale with fewer transfers, on the
builds of conftest.py. Each run has its mutation control point first (the plan adds it: forged
endorsements, bad creators, stale reads) and every point must pass the validity checks: the peer's ledger
codes, re-derived by our verifier (its v2 rules) in agreement, the block watcher's deliveries, v3.1's log
patterns, the work check. About 40 s a point here."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
TRANSFERS = 400

pytestmark = [pytest.mark.integration, pytest.mark.network]


def reproduce(tmp_path: Path, experiment: str, *options: str) -> Path:
    """Run the experiment into tmp_path's results; the run's directory."""
    env = {**os.environ, "FABRICREPRO_RESULTS": str(tmp_path / "results"),
           "FABRICREPRO_REPORTS": str(tmp_path / "reports")}
    r = subprocess.run([sys.executable, "-m", "invoke", "reproduce", "--paper", "fastfabric", "--experiment", experiment,
                        "--build", "upstream", "--set", f"transactions={TRANSFERS}", *options],
                       capture_output=True, text=True, timeout=900, cwd=REPO, env=env)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    (run,) = [d for d in (tmp_path / "results" / "fastfabric" / experiment).iterdir() if not d.is_symlink()]
    return run


def points(run: Path) -> dict[str, dict]:
    return {p.name: json.loads((p / "summary.json").read_text()) for p in sorted((run / "points").iterdir())}


def assert_verified(v: dict) -> None:
    """Our verifier's v2 rules (internal/txverify/v2.go) re-derived every code of the peer's kept ledger, its
    blocks' orderer signatures included, and agreed with the peer on each (systems/fabric-3.1/validity.yaml)."""
    (checked,) = v["verifier"]
    assert checked["status"] == "agreed" and checked["rules"] == "v2" and checked["disagree"] == 0, checked
    assert checked["txs"] == checked["checked"] == checked["agree"] > 0 and checked["sample"] is None, checked


def assert_measured_point(run: Path, name: str, summary: dict, orderers: int) -> None:
    assert summary["status"] == "complete" and summary["valid"], (name, summary.get("reason"), summary["validity"])
    v = summary["validity"]
    assert v["evidence"] == "ledger-proven" and v["problems"] == [] and v["work"]["status"] == "passed", v
    assert v["counts_from"].startswith("block files of") and "fabric3_peer" in v["counts_from"]
    assert_verified(v)
    # genesis, the lifecycle's approve and commit, 2 creates per transfer, the transfers: all VALID
    assert v["ledger_valid"] == 1 + 2 + 3 * TRANSFERS and v["ledger_invalid"] == {}, v
    measured = json.loads((run / "points" / name / "measured.json").read_text())
    assert measured["transfer_transactions"] == measured["transfer_valid"] == TRANSFERS, measured
    assert summary["metrics"]["delivery_throughput_tps"] > 0
    started = [c for c in summary["cpus"]["processes"] if "fabric3_orderer" in c]
    assert len(started) == orderers, summary["cpus"]["processes"]


def test_v31_raft_and_bft_points_pass_validity(fabric31_build, tmp_path):
    run = reproduce(tmp_path, "table1-today-bft")
    summaries = points(run)
    # a control per ordering service (ordering is a path parameter): SmartBFT's checks are not proven by Raft's
    assert sorted(summaries) == ["control__fabric-3.1__ordering=BFT__r0", "control__fabric-3.1__ordering=etcdraft__r0",
                                 "fabric-3.1__ordering=BFT__r0", "fabric-3.1__ordering=etcdraft__r0"], sorted(summaries)
    for ordering in ("etcdraft", "BFT"):
        control = summaries[f"control__fabric-3.1__ordering={ordering}__r0"]
        assert control["status"] == "complete" and control["valid"], (ordering, control["validity"])
        # the control's mutations were seen where planned: forged endorsements (4 peer lines each), stale reads
        assert control["validity"]["log_counts"]["endorsement_policy_failure"] > 0, ordering
        assert control["validity"]["log_counts"]["mvcc_read_conflict"] > 0, ordering
        # our verifier derived the planted codes too: the control is ledger-proven
        assert control["validity"]["evidence"] == "ledger-proven", (ordering, control["validity"])
        assert_verified(control["validity"])
        assert summaries[f"fabric-3.1__ordering={ordering}__r0"]["controlled"] == "passed"
    assert_measured_point(run, "fabric-3.1__ordering=etcdraft__r0", summaries["fabric-3.1__ordering=etcdraft__r0"], 3)
    assert_measured_point(run, "fabric-3.1__ordering=BFT__r0", summaries["fabric-3.1__ordering=BFT__r0"], 4)
    metadata = json.loads((run / "metadata.json").read_text())
    print(json.dumps({n: s["metrics"].get("delivery_throughput_tps") for n, s in summaries.items()}))
    assert "3.1.5" in json.dumps(metadata), "the release is recorded in metadata.json"


def test_v25_raft_point_passes_validity(fabric25_build, tmp_path):
    run = reproduce(tmp_path, "table1-today-raft", "--variant", "fabric-2.5-raft")
    summaries = points(run)
    assert sorted(summaries) == ["control__fabric-2.5-raft__r0", "fabric-2.5-raft__r0"], sorted(summaries)
    assert summaries["control__fabric-2.5-raft__r0"]["valid"], summaries["control__fabric-2.5-raft__r0"]["validity"]
    assert_verified(summaries["control__fabric-2.5-raft__r0"]["validity"])
    assert_measured_point(run, "fabric-2.5-raft__r0", summaries["fabric-2.5-raft__r0"], 3)
    assert "2.5.16" in (run / "metadata.json").read_text()
