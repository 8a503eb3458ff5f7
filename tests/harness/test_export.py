"""Open data (issue 23, item 7): ``invoke export`` writes the pooled measurements and the claims, and the
pandas snippet of docs/results-format.md ("Export") recomputes every verdict and interval from them.

The run store is made of TEST DOUBLES of runs (tests/harness/test_pooling.py ``make_run``): run
directories of the fixture paper ``mini`` written directly. Nothing is deployed.
"""

import contextlib
import io
import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from harness.collect import read_table, write_table
from harness.errors import HarnessError
from harness.export import CLAIM_COLUMNS, MEASUREMENT_COLUMNS, QUESTION_COLUMNS, export_paper
from harness.rundir import write_json
from tests.harness.test_pooling import make_run

DOC = Path(__file__).resolve().parents[2] / "docs" / "results-format.md"

#: Claims beside mini's own, one of each way a claim is computed (the catalogue's schema admits them).
MORE_CLAIMS = [
    {"id": "mean-ratio", "statement": "Quick is 1.2x slow over the sweep", "compare": "ratio",
     "numerator": {"variant": "quick"}, "denominator": {"variant": "slow"}, "metric": "throughput_tps",
     "aggregate": "mean_over_sweep", "expected": 1.2, "tolerance": {"relative": 0.2}},
    {"id": "each-ratio", "statement": "Quick beats slow at every timeout", "compare": "ratio",
     "numerator": {"variant": "quick"}, "denominator": {"variant": "slow"}, "metric": "throughput_tps",
     "expected": 1.0, "tolerance": {"relative": 0.05}, "bound": "lower", "every_point": {"lower": 1.0}},
    {"id": "peak-ratio", "statement": "Quick's peak is twice slow's", "compare": "ratio",
     "numerator": {"variant": "quick"}, "denominator": {"variant": "slow"}, "metric": "throughput_tps",
     "aggregate": "max_over_sweep", "expected": 2.0, "tolerance": {"relative": 0.1}},
    {"id": "slowest", "statement": "Slow never drops below 950 tx/s", "compare": "absolute", "variant": "slow",
     "metric": "throughput_tps", "aggregate": "min_over_sweep", "expected": 950, "tolerance": {"absolute": 1},
     "bound": "lower"},
]


#: A question of ours (catalogue ``questions``): exported with its answer.
QUESTION = {"id": "q1", "question": "Is quick faster than slow at 100 ms?",
            "numerator": {"variant": "quick", "params": {"batch_timeout_ms": 100}},
            "denominator": {"variant": "slow", "params": {"batch_timeout_ms": 100}}}


@pytest.fixture
def store(root, tmp_path):
    """Two complete runs of mini/bench at the paper's scale and cores, and an interrupted newer one."""
    paper_file = root / "papers" / "mini.yaml"
    paper = yaml.safe_load(paper_file.read_text())
    paper["paper"]["hardware"]["cores"] = 2  # so that the absolute claims are comparable here
    paper["experiments"][0]["claims"] += MORE_CLAIMS
    paper["experiments"][0]["questions"] = [QUESTION]
    paper["experiments"][0]["revisits"] = ["later"]  # marked as a revisit of ours: exported as such
    paper_file.write_text(yaml.safe_dump(paper, sort_keys=False))
    results = tmp_path / "results"
    speeds = [({("quick", 100): [1200, 1260, 1150], ("slow", 100): [1000, 1010, 990],
                ("quick", 200): [1100, 1150, 1120], ("slow", 200): [980, 1000, 1020]}, "2026-01-01T00:00:00Z"),
              ({("quick", 100): [1230, 1190, 1210], ("slow", 100): [1005, 995, 1000],
                ("quick", 200): [1130, 1090, 1140], ("slow", 200): [990, 1010, 1000]}, "2026-01-02T00:00:00Z")]
    for i, (tps, started) in enumerate(speeds, 1):
        run = make_run(results, root, f"2026010{i}T000000Z-aaaaaaa", tps, started=started)
        write_json(run.path / "metadata.json", {**run.metadata, "scale": "paper"})
    make_run(results, root, "20260103T000000Z-aaaaaaa", {("quick", 100): [3000], ("slow", 100): [1000]},
             status="interrupted", started="2026-01-03T00:00:00Z", reps=1)
    return results


def snippet() -> str:
    """The first Python block of the "Export" section of docs/results-format.md."""
    section = DOC.read_text(encoding="utf-8").split("\n## Export\n", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_export_writes_every_pooled_measurement_and_claim_as_parquet_and_csv(root, store, tmp_path):
    out = tmp_path / "export"
    tables = export_paper("mini", store, out, root / "papers")
    m = read_table(out / "measurements.parquet")
    assert list(m.columns) == list(MEASUREMENT_COLUMNS)
    assert list(read_table(out / "claims.parquet").columns) == list(CLAIM_COLUMNS)
    assert len(pd.read_csv(out / "measurements.csv")) == len(m) == len(tables["measurements"])
    # the two complete runs only: 2 runs x 2 variants x 2 timeouts x 3 repetitions, every metric of each
    assert sorted(m.run_id.unique()) == ["20260101T000000Z-aaaaaaa", "20260102T000000Z-aaaaaaa"]
    tps = m[m.metric == "throughput_tps"]
    assert len(tps) == 24 and set(tps.unit) == {"tx/s"} and 3000 not in set(tps.value)
    row = tps.iloc[0]
    assert row.build_kind == "reference" and row.commit == "a" * 40 and row.scale == "paper"
    assert row.host_cpus_usable == 2 and row.cpu_model == "Test CPU" and json.loads(row.sweep) in (
        {"batch_timeout_ms": 100}, {"batch_timeout_ms": 200})
    claims = tables["claims"].set_index("claim")
    assert claims.loc["c2", "verdict"] == "not comparable"
    numerator = json.loads(claims.loc["c1", "sides"])["numerator"]
    assert numerator == {"variant": "quick", "params": {"batch_timeout_ms": 100}}
    assert claims.loc["c1", "n"] == 6 and json.loads(claims.loc["c1", "runs"]) == sorted(m.run_id.unique())
    questions = read_table(out / "questions.parquet").set_index("question_id")
    assert list(pd.read_csv(out / "questions.csv").columns) == list(QUESTION_COLUMNS)
    assert questions.loc["q1", "n"] == 6 and questions.loc["q1", "measured"] > 1.15
    assert questions.loc["q1", "answer"] == tables["questions"].set_index("question_id").loc["q1", "answer"]
    assert questions.loc["q1", "answer"] == "yes"  # 1.2 [1.17, 1.24] over 6 pooled repetitions
    assert questions.loc["q1", "revisits"] == '["later"]'
    assert set(read_table(out / "measurements.parquet")["revisits"]) == {'["later"]'}


def test_the_documented_snippet_recomputes_every_verdict_and_interval(root, store, tmp_path, monkeypatch):
    out = tmp_path / "reports" / "mini" / "export"
    claims = export_paper("mini", store, out, root / "papers")["claims"]
    recomputed = _recompute(out, tmp_path, monkeypatch)
    judged = claims[claims.verdict != "not comparable"].set_index("claim")
    assert set(recomputed.index) == set(judged.index) == {"c1", "c3", *(c["id"] for c in MORE_CLAIMS)}
    # every way of computing a claim, and more than one verdict, are exercised
    assert {"reproduced", "not reproduced"} <= set(judged.verdict)
    close = lambda a, b: math.isclose(a, b, rel_tol=2e-5)  # the harness rounds to 6 significant digits
    for claim, row in judged.iterrows():
        assert recomputed.loc[claim, "verdict"] == row.verdict, claim
        estimates = recomputed.loc[claim, "estimates"]
        if pd.isna(row.intervals):
            expected = [(row.measured, (row.interval_low, row.interval_high))]
        else:
            each = json.loads(row.intervals)
            expected = list(zip(each["measured"], [tuple(i) for i in each["intervals"]]))
        assert len(estimates) == len(expected), claim
        for (value, interval), (want, want_interval) in zip(estimates, expected):
            assert close(value, want) and all(map(close, interval, want_interval)), \
                (claim, value, interval, want, want_interval)


def _recompute(export_dir: Path, cwd: Path, monkeypatch) -> pd.DataFrame:
    """The documented snippet's ``recomputed`` table, run from ``cwd`` on the export in ``export_dir``."""
    monkeypatch.chdir(cwd)
    namespace = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(snippet().replace('"reports/mini/export"', repr(str(export_dir))), str(DOC), "exec"), namespace)
    return namespace["recomputed"].set_index("claim")


def test_the_snippet_judges_a_cores_sweep_at_the_most_cores(root, tmp_path, monkeypatch):
    """Points sweeping ``cpus`` (1 and 2; here in place of the timeouts): the harness's verdict is the one
    at 2 cores, where quick is 1.2x slow (at 1 core they are equal)."""
    results = tmp_path / "results"
    run = make_run(results, root, "r1", {("quick", 1): [1000, 1010, 990], ("slow", 1): [1000, 1000, 1005],
                                         ("quick", 2): [1200, 1210, 1190], ("slow", 2): [1000, 990, 1010]})
    for point_json in sorted((run.path / "points").glob("*/point.json")):
        point = json.loads(point_json.read_text())
        cpus = point["sweep"].pop("batch_timeout_ms")
        write_json(point_json, {**point, "sweep": {"cpus": cpus}, "parameters": {"block_size": 10, "cpus": cpus}})
    claims = export_paper("mini", results, tmp_path / "export", root / "papers")["claims"].set_index("claim")
    assert claims.loc["c1", "verdict"] == "not reproduced" and claims.loc["c1", "measured"] > 1.15
    recomputed = _recompute(tmp_path / "export", tmp_path, monkeypatch)
    assert recomputed.loc["c1", "verdict"] == "not reproduced"
    assert math.isclose(recomputed.loc["c1", "estimates"][0][0], claims.loc["c1", "measured"], rel_tol=2e-5)


def test_export_refuses_a_paper_without_runs_and_a_run_of_another_paper(root, store, tmp_path):
    with pytest.raises(HarnessError, match="no stored runs"):
        export_paper("mini", tmp_path / "empty", tmp_path / "out", root / "papers")
    with pytest.raises(HarnessError, match="not a run directory"):
        export_paper("mini", store, tmp_path / "out", root / "papers", runs=[tmp_path])


def test_a_question_answered_per_configuration_exports_its_estimates_as_intervals(tmp_path):
    """A question over a sweep (fig6-revisit-smartbft's, per block size) has one estimate per configuration: its
    row carries them in ``intervals`` (as a claim's), so the table stays one type per column and parquet writes."""
    from harness.export import _question_row
    stored = {"id": "e", "questions": [{"id": "q", "numerator": {"variant": "a"}, "denominator": {"variant": "b"}}]}
    per_config = {"id": "q", "question": "a over b?", "threshold": 1.0, "measured": [2.26, 0.96],
                  "interval": [None, None], "configurations": ["block_size=10", "block_size=100"],
                  "answer": "undecided", "repetitions": 1}
    row = _question_row(per_config, "p", stored, ["r"])
    assert row["measured"] is None and row["interval_low"] is None
    assert json.loads(row["intervals"]) == {"configurations": ["block_size=10", "block_size=100"],
                                            "measured": [2.26, 0.96], "intervals": [None, None]}
    single = _question_row({**per_config, "measured": 1.2, "interval": [1.1, 1.3]}, "p", stored, ["r"])
    assert (single["measured"], single["interval_low"], single["interval_high"], single["intervals"]) == (1.2, 1.1, 1.3, None)
    frame = pd.DataFrame([row, single], columns=list(QUESTION_COLUMNS))
    write_table(frame, tmp_path / "questions.parquet", "questions")  # pyarrow refused the mixed column before
