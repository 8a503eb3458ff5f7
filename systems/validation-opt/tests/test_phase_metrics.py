"""The validation-phase paper's metrics over the peer's phase log (phase_metrics.py), pinned on a golden sample.

fixtures/phases.csv is hand-made test input in
the format patch 0003 of systems/validation-opt writes (its block 5 is the
row the patch's Go test pins); this checks that the harness reads it as the
``phases`` table and computes every catalogue metric of the paper from it.
"""

import math
import shutil
from pathlib import Path

import pytest

from harness import analyze
from harness.collect import convert_point, load_point

FIXTURE = Path(__file__).parent / "fixtures" / "phases.csv"


@pytest.fixture()
def phases(tmp_path):
    raw = tmp_path / "raw" / "peer0"
    raw.mkdir(parents=True)
    shutil.copy(FIXTURE, raw / "phases.csv")
    assert convert_point(tmp_path) == ["phases"]
    return load_point(tmp_path)["phases"]


def test_phase_metrics_of_the_golden_sample(phases):
    got = analyze.compute_all({"phases": phases})
    want = {
        # the valid transactions of blocks 6 and 7 (50 + 50) from block 5's commit (1.09 s) to block 7's (1.28 s)
        "commit_throughput_tps": 100 / 0.19,
        "block_validation_latency_ms": (90 + 80 + 80) / 3,
        "vscc_latency_ms": (40 + 30 + 38) / 3,
        "statedb_read_latency_ms": (10 + 10 + 12) / 3,
        "mvcc_latency_ms": (15 + 15 + 24) / 3,
        "ledger_write_latency_ms": (6 + 6 + 5) / 3,
        "statedb_write_latency_ms": (3 + 3 + 4) / 3,
        "others_latency_ms": (16 + 16 + 4) / 3,
        "history_write_latency_ms": 2,
        "vsc_statedb_read_latency_ms": 41 / 3,
        "ledger_statedb_write_latency_ms": 11 / 3,
        "vscc_plus_statedb_read_latency_ms": (50 + 40 + 50) / 3,
        "commit_phases_latency_ms": (25 + 25 + 13) / 3,
    }
    # The committer's time on blocks 5-7 over the span from block 5's arrival (1.0 s) to block 7's commit (1.28 s).
    assert math.isclose(got["committer_busy_ratio"], (90 + 80 + 80) / 280, rel_tol=1e-9), got["committer_busy_ratio"]
    for name, value in want.items():
        assert math.isclose(got[name], value, rel_tol=1e-9), (name, got[name], value)
    assert {analyze.all_metrics()[n].unit for n in want if n.endswith("_ms")} == {"ms"}


def test_phase_log_with_a_wrong_header_is_refused(tmp_path):
    raw = tmp_path / "raw" / "peer0"
    raw.mkdir(parents=True)
    (raw / "phases.csv").write_text(FIXTURE.read_text().replace("others_ns", "other_ns"))
    with pytest.raises(Exception, match="differs from the contract"):
        convert_point(tmp_path)
