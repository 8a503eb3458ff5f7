"""Pooled evidence (issue 23, item 1): the report pools every complete run of one configuration.

The run store here is made of TEST DOUBLES of runs: small run directories of the fixture paper
``mini`` (experiment ``bench``) written directly, each point with a two-block ``blocks.parquet``
whose throughput is the number the test chose. Nothing is deployed.
"""

import json
import os

import pandas as pd
import pytest
import yaml

from harness import SCHEMA_VERSION
from harness.errors import HarnessError
from harness.report import render_paper

from tests.harness.doubles import store_point_tables
from harness.rundir import Run, read_json, write_json, write_yaml
from harness.selection import select_runs

BLOCK_COLUMNS = ("vscc_ns", "mvcc_ns", "block_commit_ns", "state_commit_ns", "history_commit_ns")


def _blocks(tps: float) -> pd.DataFrame:
    """Two committed blocks one second apart: ``throughput_tps`` is the second block's valid count."""
    t0 = 1_700_000_000_000_000_000
    rows = [{"host": "localhost", "block_number": b, "tx_count": tx, "valid_count": tx, "size_bytes": 1000,
             "received_ns": t0 + b * 10**9 - 10**6, "validated_ns": t0 + b * 10**9 - 5 * 10**5,
             "committed_ns": t0 + b * 10**9, **dict.fromkeys(BLOCK_COLUMNS, 1000)}
            for b, tx in ((0, 10), (1, int(tps)))]
    return pd.DataFrame(rows)


def make_run(results, root, name: str, tps: dict, *, status="complete", cores=2, started="2026-01-01T00:00:00Z",
             reps=3, left_out=(), source="a" * 40, scale="smoke", parameters=None) -> Run:
    """A TEST DOUBLE of a stored run of mini/bench: ``tps`` maps (variant, batch_timeout_ms) to the
    throughput of each repetition (a list, one value per repetition index); ``parameters``: resolved
    parameters beside ``block_size``."""
    paper = yaml.safe_load((root / "papers" / "mini.yaml").read_text())
    experiment = next(e for e in paper["experiments"] if e["id"] == "bench")
    path = results / "mini" / "bench" / name
    (path / "points").mkdir(parents=True)
    write_yaml(path / "experiment.yaml", {"schema_version": SCHEMA_VERSION, "paper": paper["paper"],
                                          "experiment": experiment})
    not_runnable = {"future": "not built"}
    not_runnable.update({v: "left out of this run (variants: slow)" for v in left_out})
    points = []
    for (variant, timeout), values in sorted(tps.items()):
        for rep, value in enumerate(values[:reps]):
            point_id = f"{variant}__batch_timeout_ms={timeout}__r{rep}"
            points.append(point_id)
            d = path / "points" / point_id
            d.mkdir()
            point = {"schema_version": SCHEMA_VERSION, "id": point_id, "variant": variant, "system": "base",
                     "sweep": {"batch_timeout_ms": timeout}, "repetition": rep, "switches": {},
                     "parameters": {"block_size": 10, "batch_timeout_ms": timeout}}
            write_json(d / "point.json", point)
            store_point_tables(d, {"blocks": _blocks(value)})
            write_json(d / "summary.json", {"schema_version": SCHEMA_VERSION, "status": "complete", "reason": None})
    write_yaml(path / "resolved.yaml", {"schema_version": SCHEMA_VERSION, "scale": scale, "repetitions": reps,
                                        "parameters": {"block_size": {"value": 10, "source": "experiment"},
                                                       **{k: {"value": v, "source": "scale"}
                                                          for k, v in (parameters or {}).items()}},
                                        "sweep": {"batch_timeout_ms": [100, 200]}, "variants": {},
                                        "not_runnable_variants": not_runnable, "points": points})
    write_json(path / "metadata.json", {
        "schema_version": SCHEMA_VERSION, "paper": "mini", "experiment": "bench", "run_id": name,
        "status": status, "reason": None if status == "complete" else "SIGINT", "scale": scale,
        "git": {"sha": "a" * 40, "short": "aaaaaaa", "dirty": False},
        "build": {"kind": "reference", "source": source}, "provider": "local", "systems_dir": str(root / "systems"),
        "host": {"cores": cores, "cpu_model": "Test CPU"}, "started_utc": started, "ended_utc": started,
        "resumed_utc": [], "harness_pid": os.getpid() if status == "running" else None})
    return Run.open(path)


def _equal_speed(quick, slow):
    return {("quick", 100): quick, ("slow", 100): slow, ("quick", 200): quick, ("slow", 200): slow}


@pytest.fixture
def store(root, tmp_path):
    """Two complete runs of one configuration and an interrupted newer one."""
    results = tmp_path / "results"
    make_run(results, root, "20260101T000000Z-aaaaaaa", _equal_speed([1000, 1010, 990], [1000, 1000, 1000]),
             started="2026-01-01T00:00:00Z")
    make_run(results, root, "20260102T000000Z-aaaaaaa", _equal_speed([1020, 995, 1005], [1000, 1000, 1000]),
             started="2026-01-02T00:00:00Z")
    make_run(results, root, "20260103T000000Z-aaaaaaa", _equal_speed([3000], [1000]), status="interrupted",
             started="2026-01-03T00:00:00Z", reps=1)
    (results / "mini" / "bench" / "latest").symlink_to("20260103T000000Z-aaaaaaa")
    return results


def test_two_complete_runs_are_pooled_and_the_interrupted_latest_is_listed_not_shown(store):
    chosen = select_runs(store, "mini", "bench")
    assert [r.id for r in chosen.pooled] == ["20260101T000000Z-aaaaaaa", "20260102T000000Z-aaaaaaa"]
    assert chosen.complete and chosen.shown.id == "20260102T000000Z-aaaaaaa"
    (interrupted,) = [r for r in chosen.listed if not r["pooled"]]
    assert interrupted["run_id"] == "20260103T000000Z-aaaaaaa" and interrupted["why"] == "interrupted: SIGINT"


def test_report_pools_both_complete_runs_lists_all_three_with_intervals_and_verdicts(root, store, tmp_path):
    out = render_paper("mini", store, tmp_path / "reports", root / "papers")
    md = (out / "report.md").read_text()
    for name in ("20260101T000000Z-aaaaaaa", "20260102T000000Z-aaaaaaa", "20260103T000000Z-aaaaaaa"):
        assert name in md
    assert "Pooled: 2 complete run(s)" in md and "| `20260103T000000Z-aaaaaaa` | interrupted |" in md
    # six repetitions per configuration, each with its interval; the ratio claim from six paired repetitions
    assert "(n=6), 95% CI [" in md
    claim = next(line for line in md.splitlines() if line.startswith("| bench | Quick is as fast as slow"))
    assert "**reproduced**" in claim and "(n=6)" in claim and "[" in claim
    # the interrupted run's 3x speed-up (one repetition) is not what the report shows
    assert "| 3 " not in claim and "3,000" not in claim


def test_pooled_ratio_pairs_repetitions_within_each_run(root, store, tmp_path):
    from harness.analyze import analyze_pool
    chosen = select_runs(store, "mini", "bench")
    summary = analyze_pool(chosen.pooled)
    assert summary["runs"] == [r.id for r in chosen.pooled]
    claim = next(c for c in summary["claims"] if c["id"] == "c1")
    assert claim["repetitions"] == 6 and claim["verdict"] == "reproduced"
    low, high = claim["interval"]
    assert 0.99 < low < 1.0 < high < 1.02
    slow = next(g for g in summary["groups"] if g["variant"] == "slow" and g["sweep"]["batch_timeout_ms"] == 100)
    reps = slow["metrics"]["throughput_tps"]["repetitions"]
    assert [r[:2] for r in reps] == [[run, i] for run in summary["runs"] for i in range(3)]


def test_runs_of_another_configuration_are_not_pooled_and_the_newest_complete_one_is_shown(root, tmp_path):
    results = tmp_path / "results"
    make_run(results, root, "r1", _equal_speed([1000] * 3, [1000] * 3), started="2026-01-01T00:00:00Z")
    make_run(results, root, "r2", _equal_speed([1000] * 3, [1000] * 3), started="2026-01-02T00:00:00Z", cores=16)
    chosen = select_runs(results, "mini", "bench")
    assert [r.id for r in chosen.pooled] == ["r2"] and chosen.configuration["cores"] == 16
    (other,) = [r for r in chosen.listed if not r["pooled"]]
    assert other["run_id"] == "r1" and other["why"] == "another configuration: cores 2, not 16"
    make_run(results, root, "r3", _equal_speed([1000] * 3, [1000] * 3), started="2026-01-03T00:00:00Z", cores=16,
             source="b" * 40)
    chosen = select_runs(results, "mini", "bench")
    assert [r.id for r in chosen.pooled] == ["r3"]
    assert next(r for r in chosen.listed if r["run_id"] == "r2")["why"] == \
        "another configuration: build of commit aaaaaaaaaaaa, not bbbbbbbbbbbb"


def test_a_variant_restricted_run_is_listed_not_shown(root, tmp_path):
    results = tmp_path / "results"
    make_run(results, root, "r1", _equal_speed([1000] * 3, [1000] * 3), started="2026-01-01T00:00:00Z")
    make_run(results, root, "r2", {("slow", 100): [900] * 3}, started="2026-01-02T00:00:00Z", left_out=("quick",))
    chosen = select_runs(results, "mini", "bench")
    assert [r.id for r in chosen.pooled] == ["r1"]
    assert next(r for r in chosen.listed if r["run_id"] == "r2")["why"].startswith("restricted to some variants")


def test_without_a_complete_run_the_newest_is_shown_alone(root, tmp_path):
    results = tmp_path / "results"
    make_run(results, root, "r1", _equal_speed([1000], [1000]), status="failed", started="2026-01-01T00:00:00Z", reps=1)
    make_run(results, root, "r2", _equal_speed([1000], [1000]), status="interrupted", started="2026-01-02T00:00:00Z",
             reps=1)
    chosen = select_runs(results, "mini", "bench")
    assert not chosen.complete and [r.id for r in chosen.pooled] == ["r2"]


def test_named_runs_and_since_restrict_what_is_pooled(root, store, tmp_path):
    first = store / "mini" / "bench" / "20260101T000000Z-aaaaaaa"
    chosen = select_runs(store, "mini", "bench", named=[first])
    assert [r.id for r in chosen.pooled] == [first.name] and len(chosen.listed) == 1
    chosen = select_runs(store, "mini", "bench", since="2026-01-02")
    assert [r.id for r in chosen.pooled] == ["20260102T000000Z-aaaaaaa"] and len(chosen.listed) == 2
    out = render_paper("mini", store, tmp_path / "reports", root / "papers", runs=[first])
    md = (out / "report.md").read_text()
    assert "those named with --run (1)" in md and "20260102T000000Z-aaaaaaa" not in md
    with pytest.raises(HarnessError, match="--since"):
        select_runs(store, "mini", "bench", since="yesterday")


def test_a_named_directory_that_is_not_a_run_of_the_paper_is_refused(root, store, tmp_path):
    with pytest.raises(HarnessError, match="not a run directory"):
        render_paper("mini", store, tmp_path / "reports", root / "papers", runs=[tmp_path])
    other = store / "other" / "x" / "r"
    other.mkdir(parents=True)
    meta = json.loads((store / "mini" / "bench" / "20260101T000000Z-aaaaaaa" / "metadata.json").read_text())
    write_json(other / "metadata.json", {**meta, "paper": "other"})
    with pytest.raises(HarnessError, match="a run of paper 'other'"):
        render_paper("mini", store, tmp_path / "reports", root / "papers", runs=[other])


def test_a_newer_smoke_run_does_not_hide_the_verdicts_of_a_stored_local_run(root, tmp_path):
    """Issue 46, item 5: a complete local-scale run, then a newer smoke run of the same experiment (whose
    1 repetition and 40 transactions cannot judge the claims): the report and the export still judge the
    claims from the local run, say so and list the smoke run, and "Run next" does not propose the local
    configuration again (on this 1-CPU host, nothing stored can be bettered by running it again)."""
    from harness.export import export_paper
    path = root / "papers" / "mini.yaml"
    doc = yaml.safe_load(path.read_text())
    bench = next(e for e in doc["experiments"] if e["id"] == "bench")
    bench["judged_when"] = [{"what": "transactions", "parameter": "transactions", "min": 400, "scale": "local",
                             "why": "a pipeline must fill"}]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    results = tmp_path / "results"
    make_run(results, root, "20260101T000000Z-local", _equal_speed([1000, 1010, 990], [1000, 1000, 1000]),
             started="2026-01-01T00:00:00Z", scale="local", parameters={"transactions": 400}, cores=1)
    make_run(results, root, "20260102T000000Z-smoke", _equal_speed([3000], [1000]), started="2026-01-02T00:00:00Z",
             reps=1, parameters={"transactions": 40}, cores=1)
    chosen = select_runs(results, "mini", "bench")
    assert [r.id for r in chosen.pooled] == ["20260101T000000Z-local"] and chosen.configuration["scale"] == "local"
    assert [c["runs"] for c in chosen.configurations] == [["20260101T000000Z-local"], ["20260102T000000Z-smoke"]]
    out = render_paper("mini", results, tmp_path / "reports", root / "papers")
    md = (out / "report.md").read_text()
    claim = next(line for line in md.splitlines() if line.startswith("| bench | Quick is as fast as slow"))
    assert "**reproduced**" in claim and "not comparable" not in claim
    assert "reference, scale local, 1 cores, 1 run(s): 20260101T000000Z-local" in md  # the claims' evidence
    assert ("judged from this configuration (scale local, 1 core(s), 3 repetition(s), meets its judging "
            "conditions)") in md
    assert "| scale smoke, 1 core(s), 1 repetition(s), falls short of transactions | `20260102T000000Z-smoke` | no |" in md
    assert "another configuration: scale smoke, not local; transactions=40, not 400" in md
    glance = md[md.index("## At a glance"):md.index("## Claims")]
    assert "Run next" not in glance and "scale local" in glance
    assert read_json(out / "glance.json")["next"] == []
    claims = export_paper("mini", results, tmp_path / "export", root / "papers")["claims"]
    c1 = claims[claims.claim == "c1"].iloc[0]
    assert c1.verdict == "reproduced" and json.loads(c1.runs) == ["20260101T000000Z-local"]


def test_run_next_asks_for_more_repetitions_than_a_stored_configuration_has():
    """Issue 46, item 5: where the command would make a configuration stored complete with as many
    repetitions, "Run next" asks for twice them (they pool with it), and names it."""
    from harness.report.glance import next_run
    stored = {"configuration": {"scale": "local", "build": {"kind": "reference"}, "cores": 1}, "repetitions": 3,
              "runs": ["r1"], "strength": "scale local, 1 core(s), 3 repetition(s), meets its judging conditions",
              "pooled": True}
    selection = type("S", (), {"configuration": stored["configuration"], "configurations": [stored], "pooled": [],
                               "shown": type("R", (), {"metadata": {"host": {"cores": 1}}})()})()
    n = next_run("p", "e", [{"verdict": "inconclusive"}], selection)
    assert "--scale local --build reference --repeat 6" in n["command"] and "stored already (r1)" in n["why"]
    selection.configurations = [{**stored, "repetitions": 2}]
    assert "--repeat 3" in next_run("p", "e", [{"verdict": "inconclusive"}], selection)["command"]
