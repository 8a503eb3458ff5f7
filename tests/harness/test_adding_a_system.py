"""docs/adding-a-system.md works as written: a system is one folder the harness discovers.

The repository's harness, playbooks, systems and workloads are copied into a
temporary repository root (the harness finds its root from its own location,
``harness.REPO_ROOT``); the page's files are added to the copy: the toy
system's folder ``systems/toy-echo/``, its paper in a test-only papers folder
(the page says why) and the TEST DOUBLE of its program in ``bin/``. A smoke
reproduction on the local provider then runs in a subprocess from the copy,
through discovery at each step: the plugin found, its role variable set, its
playbook and role found by Ansible, its table converted and its metric
computed, in the summaries and the report.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "adding-a-system.md"
#: What a reproduction needs of the repository (the Go sources and built bin/ it does not: the program is a double).
COPIED = ("harness", "playbooks", "systems", "workloads", "tasks.py", "pyproject.toml")
SYSTEM = "systems/toy-echo"

pytestmark = pytest.mark.skipif(
    [t for t in ("ansible-playbook", "prometheus", "prometheus-node-exporter") if not shutil.which(t)],
    reason="needs ansible-playbook, prometheus and prometheus-node-exporter (invoke setup)")


def doc_files() -> dict[str, str]:
    """``{path: content}`` of every file the page shows whole: a line naming it, then its code block."""
    text = DOC.read_text(encoding="utf-8")
    return dict(re.findall(r"^`([\w./-]+)`:\n\n```[a-z]*\n(.*?)^```$", text, re.M | re.S))


def copy_repository(dest: Path) -> float:
    """Copy what a reproduction needs into ``dest``; return the seconds it took."""
    started = time.monotonic()
    for name in COPIED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dest / name)
    return time.monotonic() - started


def test_the_page_shows_the_whole_toy_system():
    files = doc_files()
    # the toy system's code uses the plugin API only, as every system must
    imported = {n.module if isinstance(n, ast.ImportFrom) else a.name
                for n in ast.walk(ast.parse(files[f"{SYSTEM}/plugin.py"])) if isinstance(n, (ast.Import, ast.ImportFrom))
                for a in n.names}
    assert {m for m in imported if m and m.split(".")[0] == "harness"} == {"harness.plugin_api"}
    assert {f"{SYSTEM}/system.yaml", f"{SYSTEM}/plugin.py", f"{SYSTEM}/validity.yaml", f"{SYSTEM}/playbooks/toy-echo.yml",
            f"{SYSTEM}/roles/toy_echo/tasks/main.yml", "papers-toy/toy-echo.yaml", "bin/toy-echo"} <= set(files)
    assert all(p.startswith((f"{SYSTEM}/", "papers-toy/", "bin/")) for p in files), sorted(files)


# the reproduce in its subprocess runs a local point: the test holds the machine's lock (conftest.py), so that
# its time limit never counts a wait for another run to end
@pytest.mark.network
def test_a_toy_system_added_as_one_folder_is_reproduced(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    copy_s = copy_repository(root)
    print(f"copied {', '.join(COPIED)} in {copy_s:.2f} s")
    for path, content in doc_files().items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(content, encoding="utf-8")
    (root / "bin" / "toy-echo").chmod(0o755)
    (root / SYSTEM / "playbooks" / "group_vars").symlink_to("../../../playbooks/group_vars")

    script = """
import io, json, sys
from pathlib import Path
from harness import REPO_ROOT, systems
from harness.validate import validate_all
from harness.reproduce import reproduce
assert REPO_ROOT == Path.cwd(), REPO_ROOT
out = io.StringIO()
(run,) = reproduce("toy-echo", scale="smoke", provider="local", build="reference", papers_dir=Path("papers-toy"),
                   stream=out)
print(json.dumps({"systems": systems.names(), "plugin": type(systems.plugin("toy-echo")).__module__,
                  "invalid": {f: e for f, e in validate_all().items() if e}, "run": str(run.path),
                  "status": run.metadata["status"], "progress": out.getvalue()}))
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FABRICREPRO_")}
    env["PYTHONPATH"] = str(root)
    proc = subprocess.run([sys.executable, "-c", script], cwd=root, env=env, capture_output=True, text=True,
                          timeout=180)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(proc.stdout.splitlines()[-1])
    assert "toy-echo" in result["systems"] and result["plugin"] == "fabricrepro_systems.toy_echo"
    assert result["invalid"] == {}, result["invalid"]
    assert result["status"] == "complete", result["progress"]

    run = Path(result["run"])
    assert run.parent.parent.parent == root / "results"
    point = run / "points" / "echo__r0"
    # the plugin's role variable: the point's 20 transactions are the messages the role's program echoes
    assert json.loads((point / "logs" / "ansible-run.vars.json").read_text())["toy_echo_messages"] == 20
    assert (point / "raw" / "localhost" / "echoes.csv").is_file()  # teardown fetched what the role's program wrote
    echoes = pd.read_parquet(point / "echoes.parquet")  # the plugin's table
    assert len(echoes) == 20 and list(echoes.columns) == ["host", "seq", "sent_ns", "echoed_ns"]
    # the plugin's metric, in the point's and the run's summaries and in the report
    point_summary = json.loads((point / "summary.json").read_text())
    assert point_summary["status"] == "complete" and point_summary["metrics"]["echo_latency_ms"] == 2.0
    run_summary = json.loads((run / "summary.json").read_text())
    assert run_summary["groups"][0]["metrics"]["echo_latency_ms"]["mean"] == 2.0
    report = (root / "reports" / "toy-echo" / "report.md").read_text()
    assert "| configuration | build | parameters | echo_latency_ms measured | published |" in report
    assert "| Echo | reference | – | 2 (n=1, no spread) | ≈ 2 ms" in report
    assert not list((root / "build" / "work").rglob("*.pid")), "teardown leaves no working files"
