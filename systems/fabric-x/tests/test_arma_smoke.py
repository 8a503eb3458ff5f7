"""A smoke point of Fabric-X end to end (driver arma-loadgen, experiment e2e-compact-arma), as `invoke
reproduce` runs it: the upstream build (committer and Arma from their snapshots), PostgreSQL, Arma with one
party (router, batcher, consenter, assembler, configured by armageddon), the committer's five services with
the sidecar pulling from Arma's assembler, and Fabric-X's load generator sending to Arma's router, on the
local provider; then collection, analysis and validity. Proves that the point completes valid; that every
transaction the load sent is COMMITTED in the committer's store; that the store agrees with the sidecar's
blocks block by block (the independent check); that the committed rate is measured; that the blocks the
sidecar got are Arma's (its assembler's log records each one it serves); and that teardown leaves no Arma
node or PostgreSQL running.

Skipped with a reason without ../shared/upstream, Ansible, Go or PostgreSQL's server and psql. It holds the
network lock (the ``network`` marker).
"""

from __future__ import annotations

import glob
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.reproduce import reproduce
from tests.upstream import needs

#: fabric_x_postgres_root_data_dir (roles/fabric_x_postgres/defaults/main.yml)
CLUSTERS = "/tmp/fabricrepro-fabric-x-postgres"
SERVER = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
#: fabric_x_arma_ports (roles/fabric_x_arma/defaults/main.yml) and PostgreSQL's
PORTS = (27060, 27061, 27062, 27063, 27432)

pytestmark = [needs.skip_unless_ready(
    ("ansible-playbook", "go", "psql"), "fabric-x", "Fabric-X committer and Arma",
    also=[None if SERVER else "no PostgreSQL server (Debian postgresql; `invoke setup` installs it)"]),
    pytest.mark.network]


def _listening() -> list[str]:
    out = subprocess.run(["ss", "-Hltn"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if any(f":{port} " in line for port in PORTS)]


def _remove_stopped_clusters() -> None:
    """The point's cluster outlives teardown when run as root (README, fabric_x_postgres): remove it once
    its postmaster is gone, as the role's next start would."""
    for cluster in Path(CLUSTERS).glob("*/"):
        pid_file = cluster / "data" / "postmaster.pid"
        pid = pid_file.read_text().split("\n", 1)[0] if pid_file.is_file() else ""
        if not (pid.isdigit() and Path(f"/proc/{pid}").exists()):
            shutil.rmtree(cluster, ignore_errors=True)


def test_arma_smoke_point_commits_every_transaction_end_to_end(tmp_path):
    try:
        runs = reproduce("fabric-x", "e2e-compact-arma", scale="smoke", provider="local", build="upstream",
                         results=tmp_path / "results", reports=tmp_path / "reports", controls=False)
    finally:
        held = _listening()  # teardown stopped every node and the postmaster by PID
        _remove_stopped_clusters()
        assert not held, f"something still listens on Arma's or PostgreSQL's ports: {held}"
    (run,) = runs
    (point,) = sorted(Path(run.path).glob("points/*/"))
    summary = json.loads((point / "summary.json").read_text())
    assert summary["status"] == "complete", summary.get("reason")
    validity = summary["validity"]
    assert validity["problems"] == [] and validity["evidence"] == "independent check", validity
    check = validity["independent_check"]
    assert check["status"] == "passed"
    assert check["store_transactions"] == check["loadgen_asked"] + check["setup_transactions"]
    assert check["store_committed"] == check["store_transactions"] == check["sidecar_committed"]
    assert summary["metrics"]["committed_tps"] > 0
    # The blocks came through Arma: its assembler logged serving them, and no mock orderer ran.
    logs = {p.name for p in point.glob("logs/*/*.log")}
    assert {f"fabric_x_arma-{node}.log" for node in ("router", "batcher1", "consenter", "assembler")} <= logs, logs
    assert "fabric_x_orderer.log" not in logs
