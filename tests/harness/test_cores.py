"""Cores as a dimension (issue 23, item 3): the ``cpus`` parameter, its sweep, the CPUs each point's
processes were allowed, read back, and the verdict of a claim at the paper's hardware threads.

The run stores here are TEST DOUBLES of runs of the fixture paper ``mini`` (64 hardware threads), written
directly like tests/harness/test_pooling.py's: each point a two-block ``blocks.parquet`` whose throughput
the test chose and an ``affinity_<name>.csv`` as the process role writes it. The last two tests are real:
the process role started by Ansible, and a smoke reproduction of the reference build with ``cpus=1``.
"""

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness import SCHEMA_VERSION
from harness.analyze import analyze_pool
from harness.config import parse_assignments
from harness.errors import HarnessError
from harness.plan import make_plan
from harness.providers.local import LocalProvider
from harness.report import render_paper
from harness.rundir import Run, write_json, write_yaml
from harness.selection import configuration, select_runs
from tests.harness.doubles import store_point_tables
from tests.harness.test_pooling import _blocks

REPO = Path(__file__).resolve().parents[2]


def make_sweep_run(results, root, name: str, ratios: dict, *, fixed_cpus: int | None = None,
                   started="2026-01-01T00:00:00Z", read_back: bool = True, asked: bool = True) -> Run:
    """A TEST DOUBLE of a complete run of mini/bench at batch_timeout_ms=100 sweeping cpus (or with
    ``fixed_cpus`` set): ``ratios`` maps cpus to each repetition's quick/slow throughput ratio (slow:
    1000 tx/s). Each point records its processes' CPUs (0..cpus-1) unless ``read_back`` is False.
    ``asked`` False: the run sets no ``cpus`` parameter at all, and its processes were confined to
    those CPUs by something else."""
    import yaml
    paper = yaml.safe_load((root / "papers" / "mini.yaml").read_text())
    experiment = next(e for e in paper["experiments"] if e["id"] == "bench")
    path = results / "mini" / "bench" / name
    (path / "points").mkdir(parents=True)
    write_yaml(path / "experiment.yaml", {"schema_version": SCHEMA_VERSION, "paper": paper["paper"],
                                          "experiment": experiment})
    points = []
    for cpus, values in sorted(ratios.items()):
        for rep, ratio in enumerate(values):
            for variant, tps in (("slow", 1000), ("quick", 1000 * ratio)):
                sweep = {"batch_timeout_ms": 100, **({} if fixed_cpus or not asked else {"cpus": cpus})}
                point_id = f"{variant}__" + "__".join(f"{k}={v}" for k, v in sweep.items()) + f"__r{rep}"
                points.append(point_id)
                d = path / "points" / point_id
                (d / "raw" / "localhost").mkdir(parents=True)
                write_json(d / "point.json", {"schema_version": SCHEMA_VERSION, "id": point_id, "variant": variant,
                                              "system": "base", "sweep": sweep, "repetition": rep, "switches": {},
                                              "parameters": {"block_size": 10, **({"cpus": cpus} if asked else {}),
                                                             **sweep}})
                store_point_tables(d, {"blocks": _blocks(tps)})
                if read_back:
                    allowed = "0" if cpus == 1 else f"0-{cpus - 1}"
                    (d / "raw" / "localhost" / "affinity_committerbench.csv").write_text(
                        f'component,pid,cpus_allowed_list\ncommitterbench,4242,"{allowed}"\n')
                write_json(d / "summary.json", {"schema_version": SCHEMA_VERSION, "status": "complete", "reason": None})
    parameters = {"block_size": {"value": 10, "source": "experiment"},
                  **({"cpus": {"value": fixed_cpus, "source": "cli"}} if fixed_cpus else {})}
    write_yaml(path / "resolved.yaml", {"schema_version": SCHEMA_VERSION, "scale": "smoke", "repetitions": 3,
                                        "parameters": parameters,
                                        "sweep": {"batch_timeout_ms": [100], **({} if fixed_cpus or not asked else
                                                                                {"cpus": sorted(ratios)})},
                                        "variants": {}, "not_runnable_variants": {"future": "not built"},
                                        "points": points})
    write_json(path / "metadata.json", {
        "schema_version": SCHEMA_VERSION, "paper": "mini", "experiment": "bench", "run_id": name,
        "status": "complete", "reason": None, "scale": "smoke",
        "git": {"sha": "a" * 40, "short": "aaaaaaa", "dirty": False},
        "build": {"kind": "reference", "source": "a" * 40}, "provider": "local", "systems_dir": str(root / "systems"),
        "host": {"cores": 2, "cpu_model": "Test CPU"}, "started_utc": started, "ended_utc": started,
        "resumed_utc": [], "harness_pid": None})
    return Run.open(path)


def _claim(summary: dict, claim_id: str = "c1") -> dict:
    return next(c for c in summary["claims"] if c["id"] == claim_id)


def test_set_with_several_values_sweeps_the_parameter_and_one_value_fixes_it(mini, root):
    assert parse_assignments(["cpus=1,2", "seed=3"]) == {"cpus": [1, 2], "seed": 3}
    plan = make_plan(mini, mini.experiment("bench"), "smoke", overrides=parse_assignments(["cpus=1,2"]), environ={},
                     root=root)
    assert plan.resolved["sweep"]["cpus"] == [1, 2]
    assert {p.parameters["cpus"] for p in plan.points} == {1, 2}
    assert "slow__batch_timeout_ms=100__cpus=1__r0" in [p.id for p in plan.points]
    fixed = make_plan(mini, mini.experiment("bench"), "smoke", overrides={"cpus": 1}, environ={}, root=root)
    assert fixed.resolved["parameters"]["cpus"]["value"] == 1 and "cpus" not in fixed.resolved["sweep"]
    with pytest.raises(HarnessError, match=r"parameter cpus=0 .*expected an integer in \[1, 4096\]"):
        make_plan(mini, mini.experiment("bench"), "smoke", overrides={"cpus": [0, 1]}, environ={}, root=root)


def test_a_cpus_sweep_gives_two_configurations_judged_apart_with_a_trend_at_the_papers_cores(root, tmp_path):
    """The quick/slow ratio doubles with each doubling of cores: at 64 (the paper's) the trend says 64, far
    outside the claim's band [0.9, 1.1], so the claim is not reproduced at the paper's cores, decided by the
    trend, while each measured core count is judged on its own."""
    results = tmp_path / "results"
    run = make_sweep_run(results, root, "r1", {1: [1.0, 1.02, 0.98], 2: [2.0, 2.04, 1.96]})
    assert configuration(run)["cores"] == [1, 2] and "cpus" not in configuration(run)["parameters"]
    claim = _claim(analyze_pool([run]))
    at = {m["cores"]: m for m in claim["cores"]["measured"]}
    assert set(at) == {1, 2} and all(m["known"] == "read back" for m in at.values())
    assert at[1]["verdict"] == "reproduced" and at[2]["verdict"] == "not reproduced"
    assert claim["verdict"] == "not reproduced" and claim["reason"].startswith("at 2 cores, the most measured")
    trend = claim["cores"]["trend"]
    assert trend["slope_per_doubling"] == pytest.approx(0.693, abs=0.01)   # log 2: x2 per doubling
    assert trend["estimate"] == pytest.approx(64, rel=0.05) and trend["extrapolated"]
    assert trend["interval"][0] > 1.1 and claim["cores"]["verdict"] == "not reproduced"
    assert "assumes the statistic keeps changing by the same factor" in claim["cores"]["why"]


def test_a_flat_trend_reproduces_at_the_papers_cores_and_a_noisy_one_stays_inconclusive(root, tmp_path):
    flat = make_sweep_run(tmp_path / "a", root, "r1", {1: [1.0, 1.002, 0.998], 2: [1.0, 1.001, 0.999]})
    claim = _claim(analyze_pool([flat]))
    assert claim["cores"]["verdict"] == "reproduced"
    low, high = claim["cores"]["trend"]["interval"]
    assert 0.9 <= low < 1.0 < high <= 1.1
    # the same means with a spread that, carried six doublings beyond the data, crosses the band's edges
    noisy = make_sweep_run(tmp_path / "b", root, "r1", {1: [1.0, 1.08, 0.93], 2: [0.95, 1.05, 1.0]})
    claim = _claim(analyze_pool([noisy]))
    assert claim["cores"]["verdict"] == "inconclusive" and claim["cores"]["trend"]["interval"][1] > 1.1


def test_measured_at_one_core_count_below_the_papers_the_claim_is_inconclusive_there(root, tmp_path):
    run = make_sweep_run(tmp_path / "results", root, "r1", {2: [1.0, 1.01, 0.99]}, fixed_cpus=2)
    assert configuration(run)["cores"] == 2
    claim = _claim(analyze_pool([run]))
    assert claim["verdict"] == "reproduced"
    assert claim["cores"]["verdict"] == "inconclusive" and claim["cores"]["paper"] == 64
    assert "measured only at 2 cores, the paper's hardware had 64" in claim["cores"]["why"]
    assert claim["cores"]["measured"][0]["known"] == "read back"


def test_runs_with_other_cpus_are_other_configurations_and_the_report_draws_the_trend(root, tmp_path):
    results = tmp_path / "results"
    make_sweep_run(results, root, "r1", {1: [1.0, 1.02, 0.98], 2: [2.0, 2.04, 1.96]}, started="2026-01-01T00:00:00Z")
    make_sweep_run(results, root, "r2", {1: [1.0, 1.01, 0.99]}, fixed_cpus=1, started="2026-01-02T00:00:00Z")
    chosen = select_runs(results, "mini", "bench")
    # the older sweep is the stronger evidence (a trend to the paper's cores): it is pooled, the newer run listed
    assert [r.id for r in chosen.pooled] == ["r1"]
    assert next(r for r in chosen.listed if r["run_id"] == "r2")["why"] == "another configuration: cores 1, not [1, 2]"
    out = render_paper("mini", results, tmp_path / "reports", root / "papers", runs=[results / "mini/bench/r1"])
    md = (out / "report.md").read_text()
    assert "1, 2 cores (swept)" in md and "**not reproduced** at 2 cores; at the paper's 64: **not reproduced**" in md
    assert "Trend model: log-linear in log2(cores)" in md and "Caveat: an extrapolation" in md
    assert (out / "figures" / "bench-cores-c1.png").stat().st_size > 1000
    assert "| c1 | 64 (the paper's, trend) |" in md


def test_a_run_confined_to_fewer_cpus_than_asked_for_is_never_pooled_with_one_that_was_not(root, tmp_path):
    """No ``cpus`` parameter in either run, but the first one's processes could use 1 CPU of the host's 2
    (as Mitogen's strategy once confined them): its points read that back, so it is another configuration,
    and a report of it alone says 1 core, not the host's 2."""
    results = tmp_path / "results"
    make_sweep_run(results, root, "pinned", {1: [1.0, 1.02, 0.98]}, asked=False, started="2026-01-01T00:00:00Z")
    make_sweep_run(results, root, "whole", {2: [1.0, 1.01, 0.99]}, asked=False, started="2026-01-02T00:00:00Z")
    chosen = select_runs(results, "mini", "bench")
    assert [r.id for r in chosen.pooled] == ["whole"] and chosen.configuration["cores"] == 2
    assert next(r for r in chosen.listed if r["run_id"] == "pinned")["why"] == "another configuration: cores 1, not 2"
    out = render_paper("mini", results, tmp_path / "reports", root / "papers", runs=[results / "mini/bench/pinned"])
    md = (out / "report.md").read_text()
    assert "; 1 cores (Test CPU);" in md and "2 cores" not in md


def test_cpus_not_read_back_counts_as_asked_and_says_so(root, tmp_path):
    run = make_sweep_run(tmp_path / "results", root, "r1", {1: [1.0, 1.0, 1.0], 2: [1.0, 1.0, 1.0]},
                         read_back=False)
    assert configuration(run)["cores"] == [1, 2]
    claim = _claim(analyze_pool([run]))
    assert {m["known"] for m in claim["cores"]["measured"]} == {"asked, not read back"}


def test_local_provider_refuses_more_cpus_than_this_machine_allows():
    allowed = len(os.sched_getaffinity(0))
    assert LocalProvider().cpus_problems(allowed) == [] and LocalProvider().cpus_problems(None) == []
    (problem,) = LocalProvider().cpus_problems(allowed + 1)
    assert f"cpus={allowed + 1}" in problem and f"lets the run use {allowed} CPUs" in problem


@pytest.mark.skipif(shutil.which("ansible-playbook") is None or shutil.which("taskset") is None,
                    reason="needs ansible-playbook and taskset")
def test_process_role_pins_both_start_modes_and_records_the_cpus_read_back(tmp_path):
    """The real process role, local connection: a server and a command run to completion on one CPU."""
    work = tmp_path / "comp"
    work.mkdir()
    play = tmp_path / "play.yml"
    play.write_text(json.dumps([{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"include_role": {"name": "process", "tasks_from": "start"},
         "vars": {"process_name": "comp", "process_dir": str(work), "process_command": ["sleep", "60"]}},
        {"include_role": {"name": "process", "tasks_from": "start"},
         "vars": {"process_name": "once", "process_dir": str(work), "process_wait": True,
                  "process_command": [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"]}},
    ]}]))
    env = {**os.environ, "ANSIBLE_ROLES_PATH": str(REPO / "playbooks" / "roles")}

    def play_with(*extra):
        return subprocess.run(["ansible-playbook", "-i", "localhost,", "-c", "local", str(play),
                               "-e", f"ansible_python_interpreter={sys.executable}", *extra],
                              capture_output=True, text=True, env=env, timeout=120)

    first = min(os.sched_getaffinity(0))
    done = play_with("-e", "process_cpus=1")
    pid = int((work / "comp.pid").read_text())
    try:
        assert done.returncode == 0, done.stdout[-2000:]
        status = Path(f"/proc/{pid}/status").read_text()
        assert f"Cpus_allowed_list:\t{first}\n" in status
        assert (work / "affinity_comp.csv").read_text().splitlines()[1] == f'comp,{pid},"{first}"'
        assert (work / "affinity_once_comp.csv").read_text().splitlines()[1].endswith(f',"{first}"')
        assert (work / "once.out").read_text().strip() == f"[{first}]"
    finally:
        os.kill(pid, 15)
    for f in work.iterdir():
        f.unlink()
    refused = play_with("-e", f"process_cpus={len(os.sched_getaffinity(0)) + 1}")
    assert refused.returncode != 0 and "but this host lets processes run on" in refused.stdout


@pytest.mark.network
@pytest.mark.skipif(shutil.which("ansible-playbook") is None or not (REPO / "bin" / "committerbench").exists(),
                    reason="needs ansible-playbook and the reference build in bin/ (invoke build)")
def test_smoke_reproduction_with_one_cpu_reads_back_one_cpu_per_process(tmp_path):
    """The reference build's peer benchmark (FastFabric Fig. 6, one variant) with --set cpus=1: every
    process the point started was allowed one CPU, and the summary says so."""
    from harness.reproduce import reproduce
    (run,) = reproduce("fastfabric", "fig6-peer-throughput", scale="smoke", repeat=1, overrides={"cpus": 1},
                       results=tmp_path / "results", reports=tmp_path / "reports", stream=io.StringIO(),
                       provider_options={"work_root": tmp_path / "work"}, build="reference",
                       variants=["fabric-1.2"], controls=False)
    assert Run.open(run.path).metadata["status"] == "complete"
    (point,) = (run.path / "points").iterdir()
    records = sorted(point.glob("raw/*/affinity_*.csv"))
    assert records, "the process role recorded no CPUs"
    first = str(min(os.sched_getaffinity(0)))
    for record in records:
        assert all(line.endswith(f',"{first}"') for line in record.read_text().splitlines()[1:]), record
    summary = json.loads((point / "summary.json").read_text())
    assert summary["cpus"]["effective"] == 1


def test_a_point_whose_components_read_back_other_cpus_than_intended_names_them(tmp_path):
    """runner.cpus_mismatch on a point's affinity_*.csv as the process role writes them."""
    from harness.cpus import read_back as read
    from harness.measure import cpus_mismatch
    allowed = len(os.sched_getaffinity(0))
    host = tmp_path / "raw" / "localhost"
    host.mkdir(parents=True)

    def read_back(**lists):
        for name, cpus in lists.items():
            (host / f"affinity_{name}.csv").write_text(f'component,pid,cpus_allowed_list\n{name},7,"{cpus}"\n')

    everything = "0" if allowed == 1 else f"0-{allowed - 1}"
    assert cpus_mismatch(read(tmp_path), {}, "local") is None                      # nothing read back
    read_back(peer=everything, orderer=everything)
    assert cpus_mismatch(read(tmp_path), {}, "local") is None
    assert cpus_mismatch(read(tmp_path), {"cpus": allowed}, "local") is None
    read_back(peer="0", orderer="0")                                         # as Mitogen's pinning left them
    if allowed > 1:
        why = cpus_mismatch(read(tmp_path), {}, "local")
        assert why.startswith(f"cpus: the components could use 1 CPU(s) together, but the harness may use {allowed}")
        assert 'localhost/orderer 0, localhost/peer 0' in why
        assert cpus_mismatch(read(tmp_path), {}, "ssh") is None                    # another machine's CPUs: no basis
    assert cpus_mismatch(read(tmp_path), {"cpus": 1}, "ssh") is None
    why = cpus_mismatch(read(tmp_path), {"cpus": 2}, "ssh")
    assert why.startswith("cpus: the components could use 1 CPU(s) together, but cpus=2 was asked for")
