"""The run directory's lifecycle: created running, finished with a status, never overwritten."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timezone

import pytest
import yaml

from harness import SCHEMA_VERSION
from harness.errors import HarnessError
from harness.rundir import Run, list_runs, run_id

PAPER = {"id": "mini", "title": "A Mini Paper"}
EXPERIMENT = {"id": "bench", "title": "Bench"}
RESOLVED = {"schema_version": SCHEMA_VERSION, "scale": "smoke", "points": ["p1", "p2"]}


def _create(results, **kw):
    return Run.create(results, PAPER, EXPERIMENT, RESOLVED, provider="local", build={"kind": "reference"}, **kw)


def test_run_id_is_utc_time_and_short_sha():
    t = datetime(2025, 1, 31, 12, 0, 5, tzinfo=timezone.utc)
    assert run_id(t, {"short": "abc1234", "dirty": False}) == "20250131T120005Z-abc1234"
    assert run_id(t, {"short": "abc1234", "dirty": True}) == "20250131T120005Z-abc1234-dirty"


def test_create_writes_inputs_metadata_and_latest(tmp_path):
    run = _create(tmp_path)
    assert run.path.parent == tmp_path / "mini" / "bench"
    meta = json.loads((run.path / "metadata.json").read_text())
    assert meta["status"] == "running" and meta["schema_version"] == SCHEMA_VERSION
    assert {"cpu_model", "cpus_online", "cpus_usable", "memory_bytes", "kernel"} <= set(meta["host"])
    assert "python" in meta["tool_versions"]
    assert yaml.safe_load((run.path / "experiment.yaml").read_text())["schema_version"] == SCHEMA_VERSION
    assert (tmp_path / "mini" / "bench" / "latest").resolve() == run.path


def test_runs_are_never_overwritten(tmp_path):
    started = datetime(2025, 1, 1, tzinfo=timezone.utc)
    first, second = _create(tmp_path, started=started), _create(tmp_path, started=started)
    assert first.path != second.path and first.path.exists()


def test_lifecycle_marks_complete_and_failed(tmp_path):
    run = _create(tmp_path)
    with run.lifecycle():
        pass
    assert Run.open(run.path).metadata["status"] == "complete"
    run = _create(tmp_path)
    with pytest.raises(HarnessError), run.lifecycle():
        raise HarnessError("a role crashed")
    meta = Run.open(run.path).metadata
    assert (meta["status"], meta["reason"]) == ("failed", "a role crashed")
    assert meta["ended_utc"]


def test_unknown_schema_version_is_rejected(tmp_path):
    run = _create(tmp_path)
    run.metadata["schema_version"] = 99
    run.save()
    with pytest.raises(HarnessError, match="schema_version 99 is not supported"):
        Run.open(run.path)


def test_sigint_marks_the_run_interrupted(tmp_path):
    """A separate process holds a run open; SIGINT must end it as interrupted."""
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(os.getcwd())!r})
        from harness.rundir import Run
        run = Run.create({str(tmp_path)!r}, {PAPER!r}, {EXPERIMENT!r}, {RESOLVED!r},
                         provider="local", build={{}})
        print(run.path, flush=True)
        with run.lifecycle():
            time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    try:
        path = proc.stdout.readline().strip()
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    meta = Run.open(path).metadata
    assert meta["status"] == "interrupted" and "SIGINT" in meta["reason"]
    assert [r["status"] for r in list_runs(tmp_path)] == ["interrupted"]


def test_resume_reopens_a_finished_run(tmp_path):
    run = _create(tmp_path)
    run.finish("interrupted", "interrupted by SIGINT")
    again = Run.open(run.path)
    again.resume()
    assert again.metadata["status"] == "running" and len(again.metadata["resumed_utc"]) == 1
