"""The rough edges of the commands (issue 24, item 4): each form the README and the harness's hints give works.

Commands run through `invoke` in a subprocess where the parsing is the point;
none of them gets as far as deploying anything.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from invoke import Context, Exit

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
import tasks  # noqa: E402

pytestmark = pytest.mark.skipif(subprocess.run(["which", "invoke"], capture_output=True).returncode != 0,
                                reason="needs the invoke command")


def invoke(*args, env=None):
    return subprocess.run(["invoke", *args], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def test_reproduce_help_works():
    out = invoke("reproduce", "--help")
    assert out.returncode == 0, out.stderr
    assert "--paper" in out.stdout and "--resume" in out.stdout


def test_every_task_s_help_works():
    tasks = [t["name"] for t in json.loads(invoke("--list", "--list-format=json").stdout)["tasks"]]
    assert {"report", "validate", "regress", "reproduce"} <= set(tasks)
    for name in tasks:
        out = invoke(name, "--help")
        assert out.returncode == 0 and "Usage:" in out.stdout, (name, out.stderr)


def test_regress_without_its_system_names_what_is_missing():
    out = invoke("regress", "--experiment", "fastfabric:table1-end-to-end")
    assert out.returncode == 1 and "regress needs --system" in out.stderr


def test_validate_takes_the_file_as_the_readme_writes_it():
    out = invoke("validate", "papers/fastfabric.yaml")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["ok   papers/fastfabric.yaml"]
    assert invoke("validate", "--file", "papers/fastfabric.yaml").stdout == out.stdout


def test_runs_of_an_unknown_paper_fail_naming_the_known_ones():
    out = invoke("runs", "--paper", "nosuch")
    assert out.returncode == 1
    assert "unknown paper 'nosuch'; valid papers: bftsmart-orderer, fastfabric, fujitsu-api, validation-opt" \
        in out.stderr


def test_aws_names_all_it_lacks_before_anything_runs(tmp_path):
    """No --ami-id is needed (each region's Ubuntu 24.04 LTS is looked up); what is missing is named at once,
    before any experiment is planned or any Terraform call."""
    env = {k: "" for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE")}
    env.update(AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"), AWS_CONFIG_FILE=str(tmp_path / "none"),
               HOME=str(tmp_path))
    out = invoke("reproduce", "--paper", "fastfabric", "--provider", "aws", "--operator-cidr", "203.0.113.7/32",
                 env=env)
    assert out.returncode == 1
    assert "error: --provider aws needs SSH private key" in out.stderr and "AWS credentials" in out.stderr
    assert "nothing was created" in out.stderr and "--operator-cidr (" not in out.stderr
    assert "AMI" not in out.stderr and "Traceback" not in out.stderr


def test_resume_needs_no_paper_on_the_command_line():
    """`invoke reproduce --resume DIR` (the hint a failed run stores) parses and opens the run."""
    out = invoke("reproduce", "--resume", "/nonexistent/run")
    assert out.returncode == 1
    assert "/nonexistent/run is not a run directory (no metadata.json)" in out.stderr


def test_resume_takes_the_paper_from_the_run(tmp_path, monkeypatch):
    from harness.rundir import Run
    run = Run.create(tmp_path, {"id": "fastfabric"}, {"id": "table1-end-to-end"}, {"scale": "smoke"},
                     provider="local", build={"kind": "reference"})
    called = {}

    def fake(paper, experiment, **kw):
        called.update(paper=paper, resume=kw["resume"])
        return []
    monkeypatch.setattr("harness.reproduce.reproduce", fake)
    tasks.reproduce(Context(), resume=str(run.path))
    assert called == {"paper": "fastfabric", "resume": str(run.path)}


def test_reproduce_without_paper_or_resume_names_the_papers():
    with pytest.raises(Exit) as e:
        tasks.reproduce(Context())
    assert e.value.code == 1
    assert "give the paper (--paper bftsmart-orderer|fastfabric|fujitsu-api|validation-opt), " \
           "or --resume RUN_DIR" in str(e.value.message)


@pytest.mark.parametrize("argv,expected", [
    (["validate", "papers/x.yaml"], True), (["validate"], False), (["validate", "--file", "x"], False),
    (["validate", "--help"], False), (["validate", "runs"], False), (["reproduce", "fastfabric", "--scale", "smoke"], True),
    (["--echo", "reproduce", "--paper", "fastfabric"], False),
])
def test_a_value_given_both_ways_is_positional_only_when_the_command_line_has_one(argv, expected):
    assert tasks._given_positionally(argv[0] if argv[0] != "--echo" else argv[1], argv) is expected


def test_the_positional_paper_still_works():
    out = invoke("reproduce", "nosuch")
    assert out.returncode == 1 and "unknown paper 'nosuch'; valid papers:" in out.stderr
