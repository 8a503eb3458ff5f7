"""Issue 24, items 3 and 4: a point that did not complete carries no measurement, and a resumed point keeps
every earlier attempt under ``points/<point>/attempts/<n>/``."""

import json
import shutil
from pathlib import Path

import pytest

from harness import analyze, judge, validity
from harness.collect import read_csv, write_table
from harness.rundir import Run

GOLDEN = Path(__file__).resolve().parent / "fixtures" / "golden"
POINT = {"id": "v__r0", "variant": "v", "system": "mini-system", "sweep": {}, "repetition": 0, "parameters": {}}


@pytest.fixture
def point_dir(tmp_path, monkeypatch):
    """A point with the golden tables, and a validity check that finds nothing."""
    monkeypatch.setattr(validity, "check_point", lambda *a, **k: ({"rules": []}, []))
    d = tmp_path / "points" / POINT["id"]
    d.mkdir(parents=True)
    for t in ("blocks", "deliveries", "txs", "block_txs"):
        write_table(read_csv(GOLDEN / f"{t}.csv", t), d / f"{t}.parquet", t)
    return d


def test_a_complete_point_has_its_metrics_and_no_partial_ones(point_dir):
    s = analyze.point_summary(point_dir, POINT, "complete")
    assert s["metrics"]["throughput_tps"] is not None
    assert "partial" not in s and "partial_metrics" not in s and s["validity"] == {"rules": []}


@pytest.mark.parametrize("status", ["failed", "interrupted"])
def test_a_point_that_did_not_complete_keeps_its_numbers_only_as_partial(point_dir, status):
    complete = analyze.point_summary(point_dir, POINT, "complete")["metrics"]
    s = analyze.point_summary(point_dir, POINT, status, "playbook did not finish", {"duration_s": 3.0})
    assert s["metrics"] == {} and s["partial"] is True and s["partial_metrics"] == complete
    assert s["status"] == status and s["reason"] == "playbook did not finish" and s["duration_s"] == 3.0
    assert s["validity"] == {"rules": []}
    assert json.loads((point_dir / "summary.json").read_text()) == s


def test_a_validity_problem_makes_the_numbers_partial_too(point_dir, monkeypatch):
    monkeypatch.setattr(validity, "check_point", lambda *a, **k: ({"problems": ["x"]}, ["ledger counts 0 valid"]))
    s = analyze.point_summary(point_dir, POINT, "complete")
    assert s["status"] == "failed" and s["partial"] is True and s["metrics"] == {}
    assert s["partial_metrics"]["throughput_tps"] is not None


def test_reanalysis_keeps_no_stale_partial_numbers(point_dir):
    s = analyze.point_summary(point_dir, POINT, "complete", None, {"partial": True, "partial_metrics": {"a": 1}})
    assert "partial" not in s and "partial_metrics" not in s


def test_aggregates_and_reports_never_take_partial_numbers(point_dir):
    done = analyze.point_summary(point_dir, POINT, "complete")
    failed = analyze.point_summary(point_dir, {**POINT, "id": "v__r1", "repetition": 1}, "failed", "peer died")
    failed["partial_metrics"] = {k: 10**9 for k in failed["partial_metrics"]}  # would show in any mean
    (group,) = judge.aggregate({"r": [done, failed]})
    assert group["metrics"]["throughput_tps"]["n"] == 1
    assert group["metrics"]["throughput_tps"]["mean"] == done["metrics"]["throughput_tps"]
    # what the report draws and tabulates comes from the groups only (harness/report/)
    from harness import report
    sources = sorted(Path(report.__file__).parent.glob("*.py"))
    assert len(sources) > 1 and not [p.name for p in sources if "partial_metrics" in p.read_text()]


def _run(tmp_path) -> Run:
    return Run.create(tmp_path, {"id": "mini"}, {"id": "bench"}, {"scale": "smoke"}, provider="local",
                      build={"kind": "reference"})


def test_an_earlier_attempt_is_moved_to_attempts_n(tmp_path):
    run = _run(tmp_path)
    assert run.keep_attempt("p__r0") is None                      # never ran: nothing to keep
    d = run.point_dir("p__r0")
    assert run.keep_attempt("p__r0") is None                      # an empty directory neither
    for attempt in (1, 2):
        (d / "logs" / "localhost").mkdir(parents=True)
        (d / "logs" / "ansible-run.log").write_text(f"attempt {attempt}\n")
        (d / "raw" / "localhost").mkdir(parents=True)
        (d / "raw" / "localhost" / "blocks.csv").write_text("block_number\n")
        (d / "metrics").mkdir()
        (d / "metrics" / "resources.json").write_text("{}")
        (d / "summary.json").write_text(json.dumps({"status": "failed", "attempt": attempt}))
        kept = run.keep_attempt("p__r0")
        assert kept == d / "attempts" / str(attempt)
        assert sorted(p.name for p in d.iterdir()) == ["attempts"]
    for attempt in (1, 2):
        a = d / "attempts" / str(attempt)
        assert (a / "logs" / "ansible-run.log").read_text() == f"attempt {attempt}\n"
        assert json.loads((a / "summary.json").read_text())["attempt"] == attempt
        assert (a / "raw" / "localhost" / "blocks.csv").exists() and (a / "metrics" / "resources.json").exists()


@pytest.mark.network
@pytest.mark.skipif(shutil.which("ansible-playbook") is None, reason="needs ansible-playbook")
def test_a_resumed_point_keeps_the_failed_attempt(failed_then_resumed):
    """The fixture spine on the TEST DOUBLE of bin/: both points fail, then a resume completes them;
    each point keeps its failed attempt (summary with partial numbers, logs) under attempts/1/.
    (The run is tests/harness/conftest.py's, which test_spine.py reads too.)"""
    run = failed_then_resumed.run
    assert Run.open(failed_then_resumed.failed).metadata["status"] == "failed"
    assert Run.open(run).metadata["status"] == "complete"
    points = sorted((run / "points").iterdir())
    assert points
    for p in points:
        now = json.loads((p / "summary.json").read_text())
        before = json.loads((p / "attempts" / "1" / "summary.json").read_text())
        assert now["status"] == "complete" and "partial" not in now
        assert before["status"] == "failed" and before["partial"] is True and before["metrics"] == {}
        assert (p / "attempts" / "1" / "logs" / "ansible-run.log").exists()
        assert (p / "logs" / "ansible-run.log").exists()
        assert not (p / "attempts" / "2").exists()
