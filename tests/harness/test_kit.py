"""The measurement kit (harness/kit.py, harness/kit_run.py): built here, run in a clean environment, ingested.

One kit of the reference build's peer benchmark (FastFabric Fig. 6, one variant, 500 transfers, its
control point first) is built once per module, unpacked in a fresh directory and run with ``env -i
PATH=/usr/bin:/bin`` and a Python without the harness's packages (a venv made ``--without-pip`` without
site packages: pandas cannot be imported there); its ``run.tar.gz`` is ingested, and a local run of the
same plan (``invoke reproduce``) is made beside it: both go through the one measuring loop
(harness/point_loop.py). The tests compare the two (the same points, files and validity) and prove that
ingest refuses bad archives without storing anything; a second copy of the kit is interrupted, then
resumed. About 2 min on 2 cores once the static commands (Go's cache) and the wheelhouse (build/kit/wheels/)
are there; the first time adds their build and download.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness import REPO_ROOT
from harness.errors import HarnessError
from harness.rundir import Run
from tests.network_lock import network_lock

EXPERIMENT = ("fastfabric", "fig6-peer-throughput")
OPTIONS = {"build": "reference", "variants": ["fabric-1.2"], "controls": True, "overrides": {"transactions": 500},
           "repeat": 1}
CLEAN_PATH = "/usr/bin:/bin"

needs_tools = pytest.mark.skipif(shutil.which("ansible-playbook") is None or shutil.which("go") is None,
                                 reason="needs ansible-playbook and go (invoke setup)")


def _clean_python(where: Path) -> Path:
    """A Python without the harness's packages: a venv of this interpreter, without pip or site packages."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    return where / "bin" / "python3"


@pytest.fixture(scope="module")
def kit_run(tmp_path_factory, request):
    """The kit built, run in a clean environment and ingested; and a local run of the same plan."""
    from harness.kit import build_kit, ingest
    from harness.reproduce import reproduce
    base = tmp_path_factory.mktemp("kit")
    try:
        manifest = build_kit(*EXPERIMENT, base / "kit.tar.xz", preset=0, log=lambda _: None, plans=base / "plans",
                             **{k: v for k, v in OPTIONS.items()})
    except HarnessError as e:
        if "pip download" in str(e):
            pytest.skip(f"the wheelhouse cannot be fetched here: {e}")
        raise
    target = base / "target"
    target.mkdir()
    with tarfile.open(base / "kit.tar.xz") as tar:
        tar.extractall(target, **({"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}))
    python = _clean_python(base / "clean-python")
    env = {"PATH": CLEAN_PATH}
    pandas = subprocess.run([str(python), "-c", "import pandas"], env=env, capture_output=True, text=True)
    with network_lock(request.config):
        proc = subprocess.run([str(target / "kit" / "run"), "--python", str(python)], env=env, cwd=target,
                              capture_output=True, text=True, timeout=600)
        (local,) = reproduce(*EXPERIMENT, scale="smoke", results=base / "results-local",
                             reports=base / "reports", stream=io.StringIO(),
                             provider_options={"work_root": base / "work"},
                             **{"build": OPTIONS["build"], "variants": OPTIONS["variants"],
                                "controls": OPTIONS["controls"], "overrides": OPTIONS["overrides"],
                                "repeat": OPTIONS["repeat"]})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    archive = target / "kit" / "run.tar.gz"
    kept = base / "run.tar.gz"
    shutil.copy2(archive, kept)
    ingested = ingest(archive, results=base / "results-kit", log=lambda _: None, plans=base / "plans")
    return SimpleNamespace(base=base, manifest=manifest, target=target, proc=proc, pandas=pandas,
                           archive=kept, ingested=ingested, local=local, python=python)


def _summaries(run: Run) -> dict[str, dict]:
    """Each point's ``summary.json`` by point id."""
    return {p.parent.name: json.loads(p.read_text()) for p in sorted((run.path / "points").glob("*/summary.json"))}


def _point(run: Run) -> dict:
    """The measured point's summary (the control point's where it is the only one)."""
    summaries = _summaries(run)
    measured = [s for p, s in summaries.items() if not p.startswith("control__")]
    (summary,) = measured or list(summaries.values())
    return summary


def _files(run: Run) -> dict[str, list[str]]:
    """Each point's files (relative to its directory), but per-host metrics (``metrics/resources.*``): a kit's
    run has none (Prometheus is not carried; ``resources_not_monitored``)."""
    out = {}
    for point in sorted((run.path / "points").iterdir()):
        files = sorted(f.relative_to(point).as_posix() for f in point.rglob("*") if f.is_file())
        out[point.name] = [f for f in files if not f.startswith("metrics/resources.")]
    return out


@pytest.mark.network
@needs_tools
def test_a_kit_and_reproduce_measure_the_same_plan_alike(kit_run):
    """The same plan through ``invoke reproduce`` (local) and through a kit (``./kit/run``, ingested): the same
    point list (the control point first), the same files per point, the same validity results; both go
    through the one measuring loop (harness/point_loop.py) and their run metadata say the same of it."""
    kit, local = kit_run.ingested, kit_run.local
    assert kit.stored("resolved")["points"] == local.stored("resolved")["points"]
    points = local.stored("resolved")["points"]
    assert points[0].startswith("control__") and len(points) == 2
    assert sorted(p.name for p in (kit.path / "points").iterdir()) == sorted(points)
    assert _files(kit) == _files(local)
    a, b = _summaries(kit), _summaries(local)
    for point in points:
        assert (a[point]["status"], a[point]["reason"], a[point]["valid"]) == \
            (b[point]["status"], b[point]["reason"], b[point]["valid"]), point
        for key in ("counts_from", "ledger_valid", "ledger_invalid", "problems", "evidence", "control"):
            assert a[point]["validity"].get(key) == b[point]["validity"].get(key), (point, key)
        assert a[point].get("controlled") == b[point].get("controlled"), point
    run_a, run_b = (json.loads((r.path / "summary.json").read_text()) for r in (kit, local))
    assert [(c["point"], c["point_status"]) for c in run_a["controls"]] == \
        [(c["point"], c["point_status"]) for c in run_b["controls"]] == [(points[0], "complete")]
    # the control found exactly the transactions it corrupted, on both paths
    control = a[points[0]]["validity"]["control"]
    assert a[points[0]]["valid"] and control["status"] == "passed" and control["ledger_invalid"] > 0
    assert a[points[1]]["controlled"] == "passed"
    for key in ("layout", "topology", "topology_not_deployed", "host_tuning", "roles"):
        assert kit.metadata[key] == local.metadata[key], key
    assert kit.metadata["cluster"]["links"] == local.metadata["cluster"]["links"] == []
    assert kit.metadata["resources_not_monitored"] and "resources_not_monitored" not in local.metadata


@pytest.mark.network
@needs_tools
def test_a_kit_measures_in_a_clean_environment_what_a_local_run_measures(kit_run):
    """``./kit/run`` with nothing but the archive and a bare Python; ingested, the run has the local run's
    metrics and validity: the same metric names, every transfer valid in the ledger's codes, the same counts,
    no validity problem, the same evidence class; its metadata names the host it was measured on."""
    assert kit_run.pandas.returncode != 0 and "No module named 'pandas'" in kit_run.pandas.stderr
    kit, local = kit_run.ingested, kit_run.local
    assert kit.metadata["status"] == local.metadata["status"] == "complete"
    a, b = _point(kit), _point(local)
    assert a["status"] == b["status"] == "complete" and a["valid"] and b["valid"]
    assert sorted(a["metrics"]) == sorted(b["metrics"])
    assert a["metrics"]["valid_fraction"] == b["metrics"]["valid_fraction"] == 1.0
    for key in ("counts_from", "ledger_valid", "ledger_invalid", "problems", "evidence"):
        assert a["validity"][key] == b["validity"][key], key
    assert a["validity"]["ledger_valid"] > 500 - 1 and a["validity"]["problems"] == []
    assert a["cpus"] == b["cpus"]
    assert kit.metadata["host"]["hostname"] and kit.metadata["ingested"]["kit_id"] == kit_run.manifest["kit_id"]
    # held against the plan kept at home when the kit was built, not the target's manifest
    assert kit.metadata["ingested"]["plan"] == {"kept": kit_run.manifest["plan_kept"], "missing_points": [],
                                                "problems": []}
    assert kit.metadata["build"]["kind"] == "reference" and kit.metadata["git"] == kit_run.manifest["git"]
    assert kit.metadata["tool_versions"]["pandas"] is None  # measured without it
    assert "before_points" in kit.metadata["primitives"] and "after_points" in kit.metadata["primitives"]
    # the same analysis: the run's summary and the report, whose caption names the host
    assert json.loads((kit.path / "summary.json").read_text())["points"]
    from harness.report import render_paper
    render_paper(EXPERIMENT[0], results=kit_run.base / "results-kit", reports=kit_run.base / "reports-kit")
    report = (kit_run.base / "reports-kit" / EXPERIMENT[0] / "report.md").read_text()
    assert f"host {kit.metadata['host']['hostname']}, measured through a kit" in report


@pytest.mark.network
@needs_tools
def test_a_kit_leaves_nothing_running_and_writes_only_in_its_folder(kit_run):
    """No process of the kit is left, the static binaries it carried are static, and what it wrote is under
    ``kit/`` (its venv, Ansible's home and temporary files, the run store, the work root)."""
    from harness.kit import elf_linking
    kit_dir = kit_run.target / "kit"
    left = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(kit_dir) not in left
    assert [p.name for p in kit_run.target.iterdir()] == ["kit"]
    for name in ("venv", "home", "results", "build", "run.tar.gz"):
        assert (kit_dir / name).exists(), name
    assert not (kit_dir / "tmp").exists()
    assert all(elf_linking(kit_dir / arc) == "static" for arc in kit_run.manifest["binaries"])
    (run_dir,) = [p for p in (kit_dir / "results" / EXPERIMENT[0] / EXPERIMENT[1]).iterdir() if not p.is_symlink()]
    assert json.loads((run_dir / "metadata.json").read_text())["status"] == "complete"


def test_components_a_kit_cannot_carry_are_refused_by_name(tmp_path):
    """A role that needs a JVM (its meta/preflight.yml tools) and a dynamically linked binary are named."""
    from harness.kit import elf_linking, tool_refusals
    refused = tool_refusals({"orderer": ["kafka", "zookeeper"], "peer": ["committerbench"]})
    assert refused == ["component kafka needs java (a JVM), which a kit cannot carry",
                       "component zookeeper needs java (a JVM), which a kit cannot carry"]
    assert tool_refusals({"peer": ["committerbench"]}) == []
    script = tmp_path / "tool"
    script.write_text("#!/bin/sh\n")
    assert elf_linking(script) is None
    assert elf_linking(Path(sys.executable).resolve()) == "dynamic"


def _rewrite(archive: Path, out: Path, change) -> Path:
    """A copy of a run archive with ``change(name, data)`` applied to each file (None drops it)."""
    with tarfile.open(archive, "r:gz") as src, tarfile.open(out, "w:gz") as dst:
        for m in src.getmembers():
            data = src.extractfile(m).read() if m.isfile() else None
            if m.isfile():
                data = change(m.name, data)
                if data is None:
                    continue
                m.size = len(data)
            dst.addfile(m, io.BytesIO(data) if data is not None else None)
    return out


@pytest.mark.network
@needs_tools
def test_ingest_refuses_bad_archives_and_stores_nothing(kit_run, tmp_path):
    """Not a kit's run, a corrupt or cut archive, a file changed or missing, a run already stored: each is
    refused with its reason, nothing is added to the run store and the archive is left as it was."""
    from harness.kit import ingest
    results = tmp_path / "results"
    raw = next(n for n in tarfile.open(kit_run.archive).getnames() if "/raw/" in n and n.endswith(".csv"))
    plain = tmp_path / "plain.tar.gz"
    with tarfile.open(plain, "w:gz") as tar:
        tar.add(kit_run.archive, arcname="something.tar.gz")
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(kit_run.archive.read_bytes()[: kit_run.archive.stat().st_size // 2])
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(gzip.compress(b"not a tar file at all" * 100))
    cases = {
        "not a kit's run": plain,
        "corrupt or incomplete archive|not a readable tar.gz": cut,
        "not a readable tar.gz": junk,
        "differs from the target's": _rewrite(kit_run.archive, tmp_path / "tampered.tar.gz",
                                               lambda n, d: d + b"1,2,3\n" if n == raw else d),
        "is missing": _rewrite(kit_run.archive, tmp_path / "incomplete.tar.gz",
                               lambda n, d: None if n == raw else d),
    }
    for why, archive in cases.items():
        before = archive.read_bytes()
        with pytest.raises(HarnessError, match=why):
            ingest(archive, results=results, log=lambda _: None, plans=kit_run.base / "plans")
        assert archive.read_bytes() == before
        assert not any(p.is_file() for p in results.rglob("*")) if results.exists() else True, why
    with pytest.raises(HarnessError, match="already in the run store"):
        ingest(kit_run.archive, results=kit_run.base / "results-kit", log=lambda _: None, plans=kit_run.base / "plans")
    stored = [p for p in (kit_run.base / "results-kit" / EXPERIMENT[0] / EXPERIMENT[1]).iterdir()]
    assert [p.name for p in stored] == [kit_run.ingested.id]


@pytest.mark.network
@needs_tools
def test_an_interrupted_kit_run_stays_marked_interrupted_with_its_logs(kit_run, tmp_path):
    """SIGTERM while the point runs: the teardown still runs, the run stays in kit/results/ marked
    interrupted with its logs, run.tar.gz is written all the same (exit 1), nothing is left running, and
    ingest stores it as the interrupted run it is."""
    from harness.kit import ingest
    target = tmp_path / "target"
    target.mkdir()
    with tarfile.open(kit_run.base / "kit.tar.xz") as tar:
        tar.extractall(target, **({"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}))
    kit_dir = target / "kit"
    # the network mark holds the machine's network lock around this test (the root conftest.py)
    log = tmp_path / "run.log"
    proc = subprocess.Popen([str(kit_dir / "run"), "--python", str(kit_run.python)], env={"PATH": CLEAN_PATH},
                            cwd=target, stdout=log.open("w"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while not list(kit_dir.glob("results/*/*/*/points/*/logs/ansible-run.log")):
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.2)
    time.sleep(1)
    proc.terminate()
    proc.wait(timeout=300)
    assert proc.returncode == 1, log.read_text()[-3000:]
    (run_dir,) = [p for p in (kit_dir / "results" / EXPERIMENT[0] / EXPERIMENT[1]).iterdir() if not p.is_symlink()]
    meta = json.loads((run_dir / "metadata.json").read_text())
    assert meta["status"] == "interrupted", meta["reason"]
    (point,) = (run_dir / "points").iterdir()
    assert (point / "logs" / "ansible-run.log").is_file() and (point / "logs" / "ansible-teardown.log").is_file()
    assert json.loads((point / "measurement.json").read_text())["status"] == "interrupted"
    assert str(kit_dir) not in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    run = ingest(kit_dir / "run.tar.gz", results=tmp_path / "results", log=lambda _: None,
                 plans=kit_run.base / "plans")
    assert run.metadata["status"] == "interrupted" and _point(run)["status"] == "interrupted"
    # --resume measures the point again in the same run, the interrupted attempt kept beside it
    resumed = subprocess.run([str(kit_dir / "run"), "--resume"], env={"PATH": CLEAN_PATH}, cwd=target,
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    assert json.loads((run_dir / "metadata.json").read_text())["status"] == "complete"
    assert (point / "attempts" / "1" / "measurement.json").is_file()
    run = ingest(kit_dir / "run.tar.gz", results=tmp_path / "results-resumed", log=lambda _: None,
                 plans=kit_run.base / "plans")
    assert run.metadata["status"] == "complete" and _point(run)["status"] == "complete" and _point(run)["valid"]


needs_lab_run = pytest.mark.skipif(
    shutil.which("ansible-playbook") is None
    or not all((REPO_ROOT / "bin" / c).is_file() for c in ("committerbench", "blockfile", "txverify")),
    reason="needs ansible-playbook and bin/ (invoke build)")


@pytest.mark.network
@needs_lab_run
def test_ingest_holds_a_kit_run_against_the_plan_kept_at_home(lab_run, tmp_path):
    """A kit's run whose archive lacks a measured point and a control point, its manifest and resolved.yaml
    rewritten to match (the target writes both), is stored incomplete naming them: ingest holds it against the
    kit's plan kept at home. The run of lab 01 (a control point and a measured point, tests/conftest.py) packed
    as ``./kit/run`` packs (harness/kit_run.py ``pack``) stands for the target's run; the untouched archive is
    stored complete (positive control), and without the plan kept at home a run is stored incomplete."""
    from harness.kit import ingest, keep_plan
    from harness.kit_run import pack
    from harness.rundir import write_yaml
    from harness.selection import select_runs
    from harness.verify import verify_run
    where, _ = lab_run("01")
    (source,) = [p for p in (where / "results" / "fastfabric" / "fig5-peer-block-latency").glob("2*")
                 if not p.is_symlink()]
    kit = {"kit_id": "20261207T000000Z-fastfabric-fig5-peer-block-latency-test"}
    planned = Run.open(source).stored("resolved")["points"]
    dropped = [next(p for p in planned if p.startswith("control__")),
               next(p for p in planned if not p.startswith("control__"))]
    plans = tmp_path / "plans"
    keep_plan(kit["kit_id"], "fastfabric", "fig5-peer-block-latency", Run.open(source).stored("resolved"), plans)

    def archive(name: str, drop=()) -> Path:
        run = Run.open(shutil.copytree(source, tmp_path / name / source.name, symlinks=True))
        for point in drop:
            shutil.rmtree(run.path / "points" / point)
        if drop:   # the target's own plan rewritten to match what is left (pack lists the files anew)
            resolved = run.stored("resolved")
            resolved["points"] = [p for p in resolved["points"] if p not in drop]
            write_yaml(run.path / "resolved.yaml", resolved)
        return pack(run, kit, tmp_path / name / "run.tar.gz")

    cut_archive = archive("cut", dropped)
    cut = ingest(cut_archive, results=tmp_path / "results-cut", log=lambda _: None, plans=plans)
    assert cut.metadata["status"] == "incomplete", cut.metadata["reason"]
    assert cut.metadata["reason"].startswith(
        f"2 of the 2 point(s) of the kit's plan are not in the run: {dropped[0]} (control), {dropped[1]}")
    assert cut.metadata["ingested"]["plan"]["missing_points"] == dropped
    assert not select_runs(tmp_path / "results-cut", "fastfabric", "fig5-peer-block-latency").complete
    failed = [r for r in verify_run(cut.path, plans=plans) if not r["passed"]]
    assert [r["point"] for r in failed] == ["(the run's plan)", *dropped], failed

    whole = ingest(archive("whole"), results=tmp_path / "results-whole", log=lambda _: None, plans=plans)
    assert whole.metadata["status"] == "complete" and whole.metadata["ingested"]["plan"]["missing_points"] == []
    # no plan kept here: nothing says what the run must hold, so it is not complete either
    unplanned = ingest(cut_archive, results=tmp_path / "results-unplanned", log=lambda _: None,
                       plans=tmp_path / "no-plans")
    assert unplanned.metadata["status"] == "incomplete" and f"no plan of kit {kit['kit_id']} is kept here" in \
        unplanned.metadata["reason"]


def test_the_measuring_half_imports_without_analysis_libraries_and_parses_as_python_3_9():
    """What a kit carries of the harness (``harness_modules``: harness/kit_run.py and its imports, found where
    pandas, numpy, pyarrow, matplotlib and jsonschema cannot be imported) is Python 3.9 syntax, and a module
    with ``X | Y`` annotations postpones them (a kit's target may have Python 3.9)."""
    import ast
    from harness.kit import harness_modules
    modules = harness_modules()
    names = {m.relative_to(REPO_ROOT).as_posix() for m in modules}
    assert {"harness/kit_run.py", "harness/point_loop.py", "harness/measure.py", "harness/deploy.py",
            "harness/watch.py"} <= names
    assert not names & {"harness/analyze.py", "harness/collect.py", "harness/validity.py", "harness/report/__init__.py"}
    for module in modules:
        tree = ast.parse(module.read_text(), str(module), feature_version=(3, 9))
        postponed = any(isinstance(n, ast.ImportFrom) and n.module == "__future__"
                        and any(a.name == "annotations" for a in n.names) for n in tree.body)
        annotations = [n.annotation for n in ast.walk(tree) if isinstance(n, (ast.arg, ast.AnnAssign)) and n.annotation]
        annotations += [n.returns for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                        and n.returns]
        unions = [a for a in annotations if any(isinstance(x, ast.BinOp) and isinstance(x.op, ast.BitOr)
                                                 for x in ast.walk(a))]
        assert postponed or not unions, f"{module}: X | Y annotations without `from __future__ import annotations`"
