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
    assert "unknown paper 'nosuch'; valid papers: bftsmart-orderer, fabric-x, fastfabric, fujitsu-api, validation-opt" \
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
    assert "give the paper (--paper bftsmart-orderer|fabric-x|fastfabric|fujitsu-api|validation-opt), " \
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


# ---------------------------------------------------------------- issue 46, items 3, 4 and 9

def _collection():
    from invoke import Collection
    return Collection.from_module(tasks)


def test_words_after_a_double_dash_are_refused():
    """invoke hands what follows `--` to no task: `reproduce --paper fastfabric -- --ami-id x` once started a
    whole reproduction without it. Now every task refuses it before it starts."""
    out = invoke("reproduce", "--paper", "nosuch", "--", "--ami-id", "x")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "error: these tasks take no arguments after `--` (--ami-id x would be ignored)" in out.stderr
    assert "unknown paper" not in out.stderr   # refused before the task ran
    with pytest.raises(Exit, match="after `--`"):
        tasks._refuse_remainder(["/usr/local/bin/invoke", "runs", "--", "x"])
    tasks._refuse_remainder(["/usr/local/bin/pytest", "-q", "--", "x"])  # only the invoke command refuses


@pytest.mark.parametrize("args,expected", [
    (("regress", "--repeat", "x"), "error: --repeat takes a whole number of at least 1, got 'x'"),
    (("regress", "--batches", "0.5"), "error: --batches takes a whole number of at least 1, got '0.5'"),
    (("kit", "--max-mib", "big"), "error: --max-mib takes a number of at least 1, got 'big'"),
])
def test_a_bad_number_is_a_clear_error_not_a_traceback(args, expected):
    out = invoke(*args)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert expected in out.stderr


@pytest.mark.parametrize("call,expected", [
    (lambda: tasks.reproduce(Context(), paper="fastfabric", repeat="0"), "--repeat takes a whole number"),
    (lambda: tasks.reproduce(Context(), paper="fastfabric", repeat="2.5"), "--repeat takes a whole number"),
    (lambda: tasks.kit(Context(), repeat="two"), "--repeat takes a whole number"),
    (lambda: tasks.kit(Context(), max_mib="nan"), "--max-mib takes a number"),
    (lambda: tasks.kit(Context(), max_mib="0"), "--max-mib takes a number of at least 1"),
    (lambda: tasks.regress(Context(), batches="0"), "--batches takes a whole number"),
])
def test_every_numeric_option_is_checked(call, expected):
    with pytest.raises(Exit) as e:
        call()
    assert e.value.code == 1 and expected in str(e.value.message)


def test_one_short_flag_per_meaning_in_every_task():
    """invoke's automatic short flags meant different things per task (-r: --provider, --repeat, --run, --ref,
    --run-dir) and --ami-id's came out as `--`; the short flags are chosen by hand, one meaning each."""
    meanings: dict[str, set] = {}
    collection = _collection()
    for name in collection.task_names:
        for argument in collection[name].get_arguments():
            long, *short = argument.names
            assert all(len(s) == 1 and s.isalpha() for s in short), (name, argument.names)
            for s in short:
                meanings.setdefault(s, set()).add(long)
    assert meanings == {"p": {"paper"}, "e": {"experiment"}}
    reproduce_help = invoke("reproduce", "--help").stdout
    assert "-p STRING, --paper=STRING" in reproduce_help and "--=" not in reproduce_help
    assert "-r " not in reproduce_help and "--ami-id=STRING" in reproduce_help


def test_runs_takes_the_paper_positionally():
    out = invoke("runs", "nosuch")
    assert out.returncode == 1 and "No idea" not in out.stderr
    assert "unknown paper 'nosuch'; valid papers:" in out.stderr
    assert invoke("runs", "fastfabric").returncode == 0


def test_every_task_is_in_the_readme_and_in_tasks():
    """Every task is in README.md (as `invoke <name>`), and in TASKS (the words that start the next task)."""
    names = set(_collection().task_names)
    readme = (ROOT / "README.md").read_text()
    assert [n for n in sorted(names) if f"invoke {n}" not in readme] == []
    assert set(tasks.TASKS) == names


class _Planned(Exception):
    pass


def _experiments_reproduce_runs(monkeypatch, capsys, **kw) -> tuple[list[str], str]:
    """The experiments ``reproduce`` goes on to plan (stopped there), and what it printed."""
    import harness.reproduce as rp
    seen = []
    monkeypatch.setattr(rp, "skip_reason", lambda e, *a, **k: seen.append(e["id"]))

    def stop(*a, **k):
        raise _Planned
    monkeypatch.setattr(rp, "plan_experiments", stop)
    with pytest.raises(_Planned):
        rp.reproduce("fastfabric", provider="local", stream=sys.stdout, **kw)
    return seen, capsys.readouterr().out


def test_the_default_is_the_paper_s_own_experiments(monkeypatch, capsys):
    """Issue 46 item 4: `invoke reproduce --paper P` runs the paper's experiments; ours (those stating questions:
    today's Fabric, revisits) only when named or with --ours, and the command says so."""
    from harness.catalogue import load_paper
    experiments = load_paper("fastfabric").experiments
    own = [e["id"] for e in experiments if not e.get("questions")]
    ours = [e["id"] for e in experiments if e.get("questions")]
    assert "fig6-peer-throughput" in own and {"table1-today-raft", "fig6-revisit-v31"} <= set(ours)
    seen, said = _experiments_reproduce_runs(monkeypatch, capsys)
    assert seen == own
    assert f"not run: {len(ours)} experiment(s) of ours, not the paper's ({', '.join(ours)}); --ours" in said
    seen, said = _experiments_reproduce_runs(monkeypatch, capsys, ours=True)
    assert seen == [e["id"] for e in experiments] and "not run:" not in said
    seen, said = _experiments_reproduce_runs(monkeypatch, capsys, experiment_id="table1-today-raft")
    assert seen == ["table1-today-raft"] and "not run:" not in said


def test_the_first_screen_says_how_ours_run():
    from harness.report.glance import glance_blocks
    blocks, _ = glance_blocks("fastfabric", [])
    text = " ".join(b[1] for b in blocks)
    assert "`invoke reproduce --paper fastfabric` runs the paper's own experiments; the 8 of ours" in text
    assert "run with `--ours` (all of them) or by name (`--experiment <id>`)" in text
    assert "--ours" not in " ".join(b[1] for b in glance_blocks("fujitsu-nosuch", [])[0])


def test_ingest_extracts_with_the_data_filter(tmp_path, monkeypatch):
    """Issue 46 item 9: a kit's run archive is extracted with tarfile's "data" filter (where Python has it)."""
    import io
    import tarfile

    from harness import SCHEMA_VERSION
    from harness.errors import HarnessError
    from harness.kit import RUN_FORMAT, ingest
    if not hasattr(tarfile, "data_filter"):
        pytest.skip("this Python's tarfile has no extraction filters")
    manifest = json.dumps({"format": RUN_FORMAT, "schema_version": SCHEMA_VERSION, "paper": "fastfabric",
                           "experiment": "fig6-peer-throughput", "run_id": "x", "files": {"run/a.txt": "0" * 64}})
    archive = tmp_path / "run.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, data in (("kit-run.json", manifest.encode()), ("run/a.txt", b"a")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    filters = []
    extract = tarfile.TarFile.extract
    monkeypatch.setattr(tarfile.TarFile, "extract",
                        lambda self, m, path="", **kw: (filters.append(kw.get("filter")), extract(self, m, path, **kw)))
    with pytest.raises(HarnessError):
        ingest(archive, results=tmp_path / "results", log=lambda _: None, plans=tmp_path / "plans")
    assert filters and set(filters) == {"data"}


def test_every_measured_number_in_the_readme_names_its_run_or_date():
    """Issue 46 item 9: a time or rate the README quotes says when, or from which run, it was measured
    (a run id or a date within the sentence that follows it)."""
    import re
    readme = (ROOT / "README.md").read_text()
    undated = [readme[m.start():m.start() + 60].replace("\n", " ")
               for m in re.finditer(r"(?<![\w.])\d+(?:\.\d+)? ?(?:s|ms|min|tx/s)\b", readme)
               if not re.search(r"\d{8}T\d{6}Z|\d{4}-\d{2}-\d{2}", readme[m.start():m.start() + 200])]
    assert undated == []
