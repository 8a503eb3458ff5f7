"""The whole spine on the fixture catalogue, with the TEST DOUBLE of bin/ (fakebin/).

Runs real ansible-playbook with the local provider: crypto and committerbench
roles, teardown by PID, collect, analyze, report. The commands themselves are
fakebin/_fake.py, which writes contract-shaped CSVs; no number here measures
anything. Also checks that a failed point is resumed and that the report is
re-rendered byte-identically from the stored runs (on the failed-then-resumed run
that test_attempts.py reads too, made once: tests/harness/conftest.py).
"""

import io
import shutil

import pytest

from harness.errors import HarnessError
from harness.report import render_paper
from harness.reproduce import reproduce
from harness.rundir import Run

FAKEBIN = __import__("pathlib").Path(__file__).resolve().parent / "fakebin"

# network: the double's orderer and peer listen on the catalogue's fixed ports (7050...), so these runs take
# the machine's network lock like real networks (unlocked, one collided with a real run's orderer)
pytestmark = [pytest.mark.skipif(shutil.which("ansible-playbook") is None, reason="needs ansible-playbook"),
              pytest.mark.network]


def test_failed_point_is_kept_then_resumed_and_report_is_deterministic(failed_then_resumed, monkeypatch):
    # the run (tests/harness/conftest.py, shared with test_attempts.py): 2 points failed, then resumed
    done = failed_then_resumed
    meta = Run.open(done.failed).metadata                         # as the failed run left it
    assert meta["status"] == "failed" and "2 of 2 points failed" in meta["reason"]
    assert (done.failed / "points" / "slow__batch_timeout_ms=100__r0" / "logs" / "localhost" / "committerbench.log").exists()

    meta = Run.open(done.run).metadata                            # after the resume
    assert meta["status"] == "complete" and len(meta["resumed_utc"]) == 1
    assert not list(done.work.rglob("*.pid")), "teardown leaves no working files"

    report = done.reports / "mini"
    first = {p.name: p.read_bytes() for p in report.rglob("*") if p.is_file()}
    assert b"data:image/png;base64," in first["report.html"]
    assert b"Quick is as fast as slow" in first["report.md"] and b"reproduced" in first["report.md"]
    monkeypatch.setattr("harness.plan.REPO_ROOT", done.root)
    render_paper("mini", done.results, done.reports, done.root / "papers")
    assert {p.name: p.read_bytes() for p in report.rglob("*") if p.is_file()} == first


def test_unknown_provider_lists_the_valid_ones(root, tmp_path):
    with pytest.raises(HarnessError, match="unknown provider 'cloud'; valid providers: auto, aws, local, netns, ssh"):
        reproduce("mini", provider="cloud", papers_dir=root / "papers", results=tmp_path, reports=tmp_path)


def test_missing_binaries_say_which_command_builds_them(root, tmp_path, monkeypatch):
    monkeypatch.setattr("harness.plan.REPO_ROOT", root)
    with pytest.raises(HarnessError, match=r"not built: bin/cryptogen.*\n  hint: run `invoke build`"):
        reproduce("mini", "bench", papers_dir=root / "papers", results=tmp_path, reports=tmp_path,
                  provider_options={"bin_dir": tmp_path / "empty"}, stream=io.StringIO())


def test_not_runnable_experiment_is_skipped_with_its_reason(root, tmp_path):
    out = io.StringIO()
    assert reproduce("mini", "later", papers_dir=root / "papers", results=tmp_path / "r",
                     reports=tmp_path / "rep", stream=out) == []
    assert "skip later: needs a driver nobody wrote" in out.getvalue()
    assert "needs a driver nobody wrote" in (tmp_path / "r" / "mini" / "skipped.json").read_text()


def test_end_to_end_runs_setup_then_transfer_and_measures_only_transfer_blocks(tmp_path):
    """fastfabric's end-to-end experiment on the TEST DOUBLE: loadgen runs twice, analysis keeps transfer blocks."""
    import json
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    (run,) = reproduce("fastfabric", "table1-end-to-end", scale="smoke", repeat=1,
                       results=tmp_path / "results", reports=tmp_path / "reports", stream=io.StringIO(),
                       provider_options={"bin_dir": FAKEBIN, "work_root": tmp_path / "work"},
                       papers_dir=repo / "papers", build="reference", controls=False)
    # the double keeps no ledger: its point runs to the end, and validity fails it (fail closed)
    assert Run.open(run.path).metadata["status"] == "failed"
    (point,) = (run.path / "points").iterdir()
    logs = point / "logs" / "localhost"
    assert (logs / "loadgen-setup.out").exists() and (logs / "loadgen.out").exists()
    window = json.loads((point / "measured.json").read_text())
    # 1 deploy + 4000 creates = blocks 1..41 of the double; transfers are blocks 42..61.
    assert window["first_block"] == 42 and window["transfer_transactions"] == 2000
    summary = json.loads((point / "summary.json").read_text())
    assert summary["status"] == "failed" and "no kept block files of peer on host localhost" in summary["reason"]
    assert summary["partial_metrics"]["throughput_tps"] == pytest.approx(100 / 0.05)
    assert not list((tmp_path / "work").rglob("*.pid")), "teardown leaves no working files"
