"""Each lab's commands (the block under "## Run it" of labs/NN-*.md) run end to end at smoke scale.

The commands run as a student types them (``python -m invoke ...`` in the
repository), with the run store and reports moved to a temporary directory
(FABRICREPRO_RESULTS, FABRICREPRO_REPORTS). They start real networks on
loopback, so each holds the machine's network lock (the ``network`` marker,
conftest.py), which is why ``invoke regress`` is told not to take it again.
Labs 01, 02 and 05 run once per session (the fixture ``lab_run``, tests/conftest.py):
tests/harness/test_verify_stored_run.py tampers with copies of the runs of 01 and 02, and
tests/upstream/test_validity_mutations.py reads the control points of 01 and 05.
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LABS = sorted((REPO / "labs").glob("[0-9][0-9]-*.md"))
UPSTREAM_SNAPSHOT = REPO.parent / "shared" / "upstream"


def commands(lab: Path) -> list[list[str]]:
    """The shell lines of the fenced block under the lab's "## Run it" heading."""
    text = lab.read_text(encoding="utf-8")
    block = re.search(r"^## Run it\n+```sh\n(.*?)```", text, re.S | re.M)
    assert block, f"{lab.name}: no ```sh block under '## Run it'"
    return [shlex.split(line) for line in block.group(1).splitlines() if line.strip()]


def test_there_are_at_least_four_labs_each_with_its_question_and_observations():
    assert len(LABS) >= 4
    for lab in LABS:
        text = lab.read_text(encoding="utf-8")
        for part in ("**Question.**", "## Run it", "## What to look at", "## Exercises",
                     "## Correct and wrong observations"):
            assert part in text, f"{lab.name} lacks {part}"
        assert all(c[0] == "invoke" for c in commands(lab)), lab.name


def _run(cmd: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "FABRICREPRO_RESULTS": str(tmp_path / "results"),
           "FABRICREPRO_REPORTS": str(tmp_path / "reports"), "FABRICREPRO_NETWORK_LOCK": ""}
    out = subprocess.run([sys.executable, "-m", *cmd], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=900)
    assert out.returncode == 0, f"{' '.join(cmd)} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


def _summaries(tmp_path: Path, experiment: str) -> list[dict]:
    """The measured points' summaries (each run's control point proves the checks and is left out here)."""
    return [json.loads(p.read_text()) for p in (tmp_path / "results").glob(f"*/{experiment}/*/points/*/summary.json")
            if p.parts[-4] != "latest" and not p.parent.name.startswith("control__")]


def _lab(prefix: str) -> Path:
    return next(lab for lab in LABS if lab.name.startswith(prefix))


needs_ansible = pytest.mark.skipif(shutil.which("ansible-playbook") is None, reason="needs ansible-playbook")
pytestmark = pytest.mark.network


@needs_ansible
def test_lab01_peer_commit_pipeline(lab_run):
    where, _ = lab_run("01")
    (summary,) = _summaries(where, "fig5-peer-block-latency")
    assert summary["status"] == "complete" and summary["metrics"]["vscc_ms"] > 0
    assert (where / "reports" / "fastfabric" / "report.md").exists()


@needs_ansible
def test_lab02_block_size_end_to_end(lab_run):
    where, _ = lab_run("02")
    (summary,) = _summaries(where, "table1-end-to-end")
    assert summary["status"] == "complete" and summary["metrics"]["tx_latency_p99_ms"] > 0
    (point,) = [p for p in (where / "results").glob("fastfabric/table1-end-to-end/2*/points/*")
                if p.is_dir() and not p.name.startswith("control__")]
    assert (point / "block_txs.parquet").exists(), "latency is matched by transaction ID"


def test_lab03_claims_and_verdicts(tmp_path):
    out = [_run(cmd, tmp_path) for cmd in commands(_lab("03"))]
    assert "ok   papers/fastfabric.yaml" in out[0].stdout
    assert (tmp_path / "reports" / "fastfabric" / "report.md").exists()


@needs_ansible
def test_lab04_regression_or_noise(tmp_path):
    (cmd,) = commands(_lab("04"))
    out = _run(cmd, tmp_path)
    assert "false-positive rate over 1 pairs" in out.stdout
    doc = json.loads((tmp_path / "reports" / "regress" / "reference" / "fig6-peer-throughput" /
                      "regress.json").read_text())
    assert [len(c["values"]) for c in doc["commits"]] == [4, 4]


@needs_ansible
@pytest.mark.skipif(not any(UPSTREAM_SNAPSHOT.glob("fabric-1.2.0*")),
                    reason=f"no Fabric v1.2.0 snapshot in {UPSTREAM_SNAPSHOT} (../shared/upstream)")
def test_lab05_reference_vs_upstream(lab_run):
    where, _ = lab_run("05")
    runs = (where / "results").glob("fastfabric/fig6-peer-throughput/2*/metadata.json")
    assert {json.loads(m.read_text())["build"]["kind"] for m in runs} == {"upstream", "reference"}
    assert "Fidelity" in (where / "reports" / "fastfabric" / "report.md").read_text()


@needs_ansible
@pytest.mark.skipif(os.environ.get("FABRICREPRO_BUILD_TODAYS_FABRIC") != "all",
                    reason="lab 06 builds Fabric v1.4.12 from git and v2.5.16 from source (about 6 min on 2 cores) "
                           "and runs three networks (about 4 min), outside CI's time budget: set "
                           "FABRICREPRO_BUILD_TODAYS_FABRIC=all (and give git a way to hyperledger/fabric: the "
                           "network, or url.<mirror>.insteadOf)")
def test_lab06_todays_fabric(lab_run):
    where, _ = lab_run("06")
    summaries = _summaries(where, "table1-three-releases")
    assert sorted(s["variant"] for s in summaries) == ["fabric-1.4-kafka", "fabric-2.5-raft", "fabric-3.1-bft"]
    assert all(s["status"] == "complete" and s["valid"] for s in summaries)
    (meta,) = [json.loads(m.read_text()) for m in
               (where / "results").glob("fastfabric/table1-three-releases/2*/metadata.json")]
    v14 = meta["build"]["systems"]["fabric-1.2"]
    assert (v14["ref"], v14["release"]) == ("v1.4.12", "1.4.12")
    report = (where / "reports" / "fastfabric" / "report.md").read_text()
    assert "v25-over-v14" in report and "bft-over-raft-across" in report
