"""The labs' expected outcomes (labs/expectations.yaml) and ``invoke lab N --check`` (harness/labs.py).

The stored runs here are TEST DOUBLES of runs of FastFabric's Fig. 5 on the reference build: each point's
blocks are written as the committer's raw CSV and converted by the harness's own conversion
(tests/harness/doubles.py), its metrics computed by the harness's metric code from those tables, and the
run's claims judged by the harness's judge (``judge.aggregate`` and ``evaluate_claim``). Nothing is deployed;
``test_lab01_check_on_the_real_lab_run`` reads the run lab 01's own command made (tests/labs/test_labs.py).
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from harness import SCHEMA_VERSION, lab_pages, labs
from harness.analyze import compute_all
from harness.collect import load_measured
from harness.rundir import write_json, write_yaml
from tests.harness.doubles import store_point_tables

REPO = Path(__file__).resolve().parents[2]
PAPER = yaml.safe_load((REPO / "papers" / "fastfabric.yaml").read_text())
FIG5 = next(e for e in PAPER["experiments"] if e["id"] == "fig5-peer-block-latency")
PHASES = ("vscc", "mvcc", "block_commit", "state_commit", "history_commit")


# ------------------------------------------------------------------------------------ the data and the pages

def test_every_lab_page_has_its_expectations_and_quotes_them_as_the_data_says():
    data = lab_pages.load()
    pages = sorted((REPO / "labs").glob("[0-9][0-9]-*.md"))
    assert sorted(data) == [int(p.name[:2]) for p in pages], "one entry in labs/expectations.yaml per lab page"
    for n in data:
        text = lab_pages.page(n).read_text(encoding="utf-8")
        assert lab_pages.page_block(text, n) == lab_pages.render(n), (
            f"{lab_pages.page(n).name}: its expected outcomes differ from labs/expectations.yaml; "
            f"run `invoke lab {n} --write`")
        assert len(data[n]["expectations"]) >= 3, f"lab {n}: an expectation per question"


def test_a_page_that_drifted_from_the_data_is_caught(tmp_path):
    labs_dir = tmp_path / "labs"
    shutil.copytree(REPO / "labs", labs_dir)
    page = next(labs_dir.glob("01-*.md"))
    page.write_text(page.read_text().replace("in [0.45, 0.85]", "in [0.3, 0.85]"))
    assert lab_pages.page_block(page.read_text(), 1) != lab_pages.render(1)
    assert lab_pages.write_page(1, labs_dir) is True
    assert lab_pages.page_block(page.read_text(), 1) == lab_pages.render(1)


def _option(words: list[str], name: str):
    return words[words.index(name) + 1] if name in words else None


def test_each_expectation_s_command_makes_the_run_it_is_checked_on():
    """The command a student is told to run names the experiment and build its check reads."""
    for n, lab in lab_pages.load().items():
        for e in lab["expectations"]:
            check = e["check"]
            commands = [shlex.split(c) for c in e["run"].split("&&")]
            assert all(c[0] == "invoke" for c in commands), e["id"]
            if "experiment" not in check:
                continue
            reproduce = [c for c in commands if c[1] == "reproduce"]
            assert reproduce, f"lab {n} {e['id']}: no reproduce command"
            assert {_option(c, "--experiment") for c in reproduce} == {check["experiment"]}, e["id"]
            builds = {_option(c, "--build") for c in reproduce}
            wanted = {check.get("build")} if check.get("build") else \
                {s.get("build") for s in (check.get("numerator") or {}, check.get("denominator") or {})} - {None}
            # a ratio across builds may take one side from the lab's main run (lab 01's reference run)
            assert not wanted or (builds <= wanted if len(wanted) > 1 else builds == wanted), \
                f"lab {n} {e['id']}: runs {builds}, checks {wanted}"
            for side in ("points", "numerator", "denominator"):
                for name, value in (check.get(side) or {}).items():
                    if name in ("variant", "build") or value == FIG5["parameters"]["fixed"].get(name):
                        continue
                    sets = " ".join(c for words in reproduce for c in words)
                    assert re.search(rf"{name}=[^ ]*\b{value}\b", sets), f"{e['id']}: nothing sets {name}={value}"


def test_lab03_lists_every_verdict_the_tool_gives():
    from harness import stats
    from harness.judge import VERDICTS
    from harness.questions import ANSWERS
    text = lab_pages.page(3).read_text(encoding="utf-8")
    assert set(VERDICTS) == {stats.REPRODUCED, stats.NOT_REPRODUCED, stats.INCONCLUSIVE, "not comparable"}
    for word in [*VERDICTS, *ANSWERS.values()]:
        assert f"*{word}*" in text, f"lab 03 does not name the verdict or answer {word!r}"


def test_the_readmes_list_the_six_labs():
    pages = sorted((REPO / "labs").glob("[0-9][0-9]-*.md"))
    index = (REPO / "labs" / "README.md").read_text()
    for p in pages:
        assert f"]({p.name})" in index, f"labs/README.md does not link {p.name}"
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## Teaching labs"):]
    section = section[:section.index("\n## ", 4)]
    assert "invoke lab N --check" in section
    for p in pages:
        assert re.search(rf"\b{p.name[:2]}\s", section), f"README.md's lab list lacks lab {p.name[:2]}"


# ------------------------------------------------------------------------------------ a stored run

def _blocks(block_size: int, per_tx_ms: float, vscc_share: float, transactions: int = 2000) -> pd.DataFrame:
    """Blocks committed one after the other, each ``block_size`` valid transfers taking ``per_tx_ms`` each,
    split into the five phases with VSCC's share ``vscc_share`` and the rest evenly."""
    t = 1_700_000_000_000_000_000
    latency = int(block_size * per_tx_ms * 1e6)
    vscc = int(latency * vscc_share)
    rest = (latency - vscc) // 4
    rows = []
    for b in range(1, transactions // block_size + 1):
        rows.append({"host": "localhost", "block_number": b, "tx_count": block_size, "valid_count": block_size,
                     "size_bytes": 3000 * block_size, "received_ns": t, "validated_ns": t + vscc + rest,
                     "committed_ns": t + vscc + 4 * rest, "vscc_ns": vscc, "mvcc_ns": rest,
                     "block_commit_ns": rest, "state_commit_ns": rest, "history_commit_ns": rest})
        t += vscc + 4 * rest
    return pd.DataFrame(rows)


def store_run(results: Path, name: str, points: dict, *, build="reference", started="2026-12-07T10:00:00Z",
              status="complete") -> Path:
    """A run of fig5-peer-block-latency holding ``points`` ({(block_size, repetition): (per_tx_ms, vscc_share)}),
    a control point that must never count, and the run's summary with its claims judged by the harness."""
    from harness.judge import aggregate, evaluate_claim
    run = results / "fastfabric" / FIG5["id"] / name
    (run / "points").mkdir(parents=True)
    write_yaml(run / "experiment.yaml", {"schema_version": SCHEMA_VERSION, "paper": PAPER["paper"], "experiment": FIG5})
    summaries, ids = [], []
    sweep = sorted({size for size, _ in points})
    every = {**points, ("control", 0): (0.001, 0.01)}
    for (size, rep), (per_tx_ms, share) in every.items():
        control = size == "control"
        block_size = 100 if control else size
        point_id = (f"control__fabric-1.2__r0" if control else
                    f"fabric-1.2__block_size={size}__r{rep}" if len(sweep) > 1 else f"fabric-1.2__r{rep}")
        ids.append(point_id)
        d = run / "points" / point_id
        d.mkdir()
        point = {"schema_version": SCHEMA_VERSION, "id": point_id, "variant": "fabric-1.2", "system": "fabric-1.2",
                 "sweep": {"block_size": block_size} if len(sweep) > 1 else {}, "repetition": rep, "switches": {},
                 "parameters": {"block_size": block_size, "transactions": 2000}, "control": control}
        write_json(d / "point.json", point)
        store_point_tables(d, {"blocks": _blocks(block_size, per_tx_ms, share)})
        metrics = compute_all(load_measured(d))  # the harness's own metrics of the converted tables
        summary = {"schema_version": SCHEMA_VERSION, "point": point_id, "variant": "fabric-1.2",
                   "sweep": point["sweep"], "repetition": rep, "control": control, "status": "complete",
                   "reason": None, "valid": True, "metrics": metrics, "cpus": None,
                   "validity": {"evidence": "ledger-proven"}}
        write_json(d / "summary.json", summary)
        summaries.append(summary)
    reps = max(rep for _, rep in points) + 1
    write_yaml(run / "resolved.yaml", {"schema_version": SCHEMA_VERSION, "scale": "smoke", "repetitions": reps,
                                       "parameters": {"block_size": {"value": 100, "source": "experiment"}},
                                       "sweep": {"block_size": sweep} if len(sweep) > 1 else {},
                                       "variants": {"fabric-1.2": {}}, "points": ids,
                                       "not_runnable_variants": {v: "left out of this run (variants: fabric-1.2)"
                                                                 for v in ("opt-p1", "opt-p2", "opt-p3")}})
    context = {"cores": 2, "scale": "smoke", "paper_hardware": PAPER["paper"].get("hardware"),
               "not_runnable": {v: "left out of this run (variants: fabric-1.2)" for v in ("opt-p1", "opt-p2", "opt-p3")},
               "other_runs": {}}
    groups = aggregate({name: summaries})
    write_json(run / "summary.json", {"schema_version": SCHEMA_VERSION, "paper": "fastfabric",
                                      "experiment": FIG5["id"], "run_id": name,
                                      "claims": [evaluate_claim(c, FIG5, groups, context) for c in FIG5["claims"]]})
    write_json(run / "metadata.json", {
        "schema_version": SCHEMA_VERSION, "paper": "fastfabric", "experiment": FIG5["id"], "run_id": name,
        "status": status, "reason": None, "scale": "smoke", "build": {"kind": build, "source": "a" * 40},
        "git": {"sha": "a" * 40, "short": "aaaaaaa", "dirty": False}, "provider": "local",
        "host": {"cpus_usable": 2, "cpu_model": "Test CPU"}, "started_utc": started, "ended_utc": started})
    return run


#: Per-transaction cost (ms) and VSCC's share of each point, as lab 01's runs measured them: latency in
#: proportion to the block size, throughput flat within the machine's spread.
LAB01 = {(size, rep): (0.15 * (1.0, 1.3, 0.9)[rep], 0.65) for size in (50, 100, 200) for rep in range(3)}


def _by_id(outcomes):
    return {o["id"]: o for o in outcomes}


def test_lab01_check_says_which_expectations_held(tmp_path):
    results = tmp_path / "results"
    store_run(results, "20261207T100000Z-aaaaaaa", {(100, 0): (0.17, 0.68)}, started="2026-12-07T10:00:00Z")
    store_run(results, "20261207T110000Z-aaaaaaa", LAB01, started="2026-12-07T11:00:00Z")
    out = _by_id(labs.check(1, results=results, reports=tmp_path / "reports"))
    for held in ("vscc-dominates", "phases-add-up", "latency-grows-with-block-size", "throughput-flat",
                 "vscc-share-holds", "repetitions-spread"):
        assert out[held]["status"] == labs.HELD, out[held]
        assert out[held]["evidence"].endswith("20261207T110000Z-aaaaaaa"), "the newest run holding the points"
    assert out["latency-grows-with-block-size"]["measured"].startswith("4 (")
    assert out["repetitions-spread"]["measured"].startswith("1.44 (n=3)")  # 1.3 / 0.9: the control never counts
    # the upstream build has not run: said so, with the command that runs it
    assert out["upstream-slower"]["status"] == labs.NOT_RUN
    assert "--build upstream" in out["upstream-slower"]["run"]
    text = labs.report(1, list(out.values()))
    assert "6 held, 0 did not hold, 1 not yet run" in text
    assert "run:      invoke reproduce --paper fastfabric --experiment fig5-peer-block-latency --build upstream" in text


def test_an_expectation_that_does_not_hold_is_reported_so(tmp_path):
    results = tmp_path / "results"
    # a peer whose VSCC is a fifth of the block latency and whose blocks of 200 cost no more than blocks of 50
    flat = {(size, rep): (0.15 * 50 / size, 0.2) for size in (50, 100, 200) for rep in range(3)}
    store_run(results, "20261207T110000Z-aaaaaaa", flat)
    out = _by_id(labs.check(1, results=results, reports=tmp_path / "reports"))
    assert out["vscc-dominates"]["status"] == labs.NOT_HELD and out["vscc-dominates"]["measured"].startswith("0.2 (")
    assert out["latency-grows-with-block-size"]["status"] == labs.NOT_HELD
    assert out["throughput-flat"]["status"] == labs.NOT_HELD  # 4x the throughput at blocks of 200
    assert out["phases-add-up"]["status"] == labs.HELD


def test_without_runs_every_expectation_is_not_yet_run_and_incomplete_runs_do_not_count(tmp_path):
    results = tmp_path / "results"
    store_run(results, "20261207T110000Z-aaaaaaa", LAB01, status="interrupted")
    out = labs.check(1, results=results, reports=tmp_path / "reports")
    assert {o["status"] for o in out} == {labs.NOT_RUN}


def test_lab03_reads_the_verdicts_the_judge_gave(tmp_path):
    results = tmp_path / "results"
    store_run(results, "20261207T110000Z-aaaaaaa", {(100, 0): (0.17, 0.68)})
    out = _by_id(labs.check(3, results=results, reports=tmp_path / "reports"))
    assert out["lab01-claim-not-comparable"]["status"] == labs.HELD, out["lab01-claim-not-comparable"]
    assert out["qualitative-not-comparable"]["status"] == labs.HELD
    assert out["upper-bound-rejected"]["status"] == labs.HELD  # the catalogue's check, on a changed copy
    assert out["one-smoke-repetition-inconclusive"]["status"] == labs.NOT_RUN


def test_cross_build_ratio_reads_the_newest_run_of_each_build(tmp_path):
    results = tmp_path / "results"
    store_run(results, "20261207T100000Z-aaaaaaa", {(100, 0): (0.30, 0.62)}, build="upstream")
    store_run(results, "20261207T110000Z-aaaaaaa", {(100, 0): (0.17, 0.68)})
    (o,) = [x for x in labs.check(1, results=results, reports=tmp_path / "reports") if x["id"] == "upstream-slower"]
    assert o["status"] == labs.HELD and o["measured"].startswith("1.76 ("), o


def _regress_page(reports: Path, page: str, doc: dict) -> None:
    (reports / "regress" / page).mkdir(parents=True)
    write_json(reports / "regress" / page / "regress.json", {"schema_version": SCHEMA_VERSION, **doc})


def test_lab04_reads_the_regress_pages(tmp_path):
    reports = tmp_path / "reports"
    _regress_page(reports, "reference/fig6-peer-throughput", {"noise_pairs": [{"flagged": True, "changed": False}]})
    _regress_page(reports, "reference/fig6-peer-throughput--noise",
                  {"noise_pairs": [{"flagged": True, "changed": True}] * 2 + [{"changed": False}] * 4})
    _regress_page(reports, "reference/fig6-peer-throughput--bisect",
                  {"bisect": {"first_changed": "b" * 40, "ends": {"changed": True, "relative_change": -0.55, "p": 0.008}}})
    _regress_page(reports, "reference/fig6-peer-throughput--smallest",
                  {"bisect": {"first_changed": None, "ends": {"changed": False, "relative_change": -0.06, "p": 0.3}}})
    out = _by_id(labs.check(4, results=tmp_path / "results", reports=reports))
    assert out["same-code-not-called"]["status"] == labs.HELD
    assert out["false-positive-rate"]["status"] == labs.NOT_HELD  # 2 of 6 called
    assert out["bisect-finds-sleep"]["status"] == labs.HELD
    assert out["smallest-detectable"]["status"] == labs.HELD  # a 6% change missed: below the 10% minimum


# ------------------------------------------------------------------------------------ the command

def _invoke(*args, env):
    return subprocess.run([sys.executable, "-m", "invoke", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env={**os.environ, **env})


def test_invoke_lab_check_exits_1_when_an_expectation_did_not_hold(tmp_path):
    results = tmp_path / "results"
    store_run(results, "20261207T110000Z-aaaaaaa", {(100, 0): (0.17, 0.2)})
    env = {"FABRICREPRO_RESULTS": str(results), "FABRICREPRO_REPORTS": str(tmp_path / "reports")}
    out = _invoke("lab", "1", "--check", env=env)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "DID NOT HOLD  vscc-dominates" in out.stdout and "NOT YET RUN   latency-grows-with-block-size" in out.stdout
    store_run(results, "20261207T120000Z-aaaaaaa", LAB01, started="2026-12-07T12:00:00Z")
    out = _invoke("lab", "1", "--check", "--plot", env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "HELD          vscc-dominates" in out.stdout
    assert (tmp_path / "reports" / "labs" / "lab01-block-size.png").stat().st_size > 1000
    out = _invoke("lab", "9", env=env)
    assert out.returncode == 1 and "no lab 9" in out.stderr


@pytest.mark.network
@pytest.mark.skipif(shutil.which("ansible-playbook") is None, reason="needs ansible-playbook")
def test_lab01_check_on_the_real_lab_run(lab_run):
    """Lab 01's own command (its "Run it" block, run by tests/labs/test_labs.py), then `invoke lab 1 --check`."""
    where, _ = lab_run("01")
    env = {"FABRICREPRO_RESULTS": str(where / "results"), "FABRICREPRO_REPORTS": str(where / "reports")}
    out = _invoke("lab", "1", "--check", env=env)
    assert "HELD          vscc-dominates" in out.stdout and "HELD          phases-add-up" in out.stdout, out.stdout
    assert "NOT YET RUN   latency-grows-with-block-size" in out.stdout
    three = _by_id(labs.check(3, results=where / "results", reports=where / "reports"))
    assert three["lab01-claim-not-comparable"]["status"] == labs.HELD, three["lab01-claim-not-comparable"]
