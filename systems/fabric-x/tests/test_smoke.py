"""One smoke point of Fabric-X's committer, as `invoke reproduce` runs it: the upstream build (from the
snapshot), PostgreSQL, the mock orderer, the committer's five services and Fabric-X's load generator on the
local provider, then collection, analysis and validity. Proves that the point completes valid, that every
transaction the load sent is COMMITTED in the committer's store and agrees with the sidecar's blocks (the
independent check), that the committed rate is measured, and that teardown leaves no PostgreSQL running.

The catalogue is systems/fabric-x/catalogue/fabric-x.yaml (README, "Catalogue"), given as a papers folder of
its own beside a link to systems/. Skipped with a reason without ../shared/upstream, Ansible, Go or
PostgreSQL's server and psql. It holds the network lock (the ``network`` marker).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from harness import REPO_ROOT
from harness.reproduce import reproduce
from tests.upstream import needs

SERVER = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))

pytestmark = [needs.skip_unless_ready(
    ("ansible-playbook", "go", "psql"), "fabric-x", "Fabric-X committer",
    also=[None if SERVER else "no PostgreSQL server (Debian postgresql; `invoke setup` installs it)"]),
    pytest.mark.network]


def test_smoke_point_commits_every_transaction_and_passes_validity(tmp_path):
    papers = tmp_path / "papers"
    papers.mkdir()
    (papers / "fabric-x.yaml").symlink_to(REPO_ROOT / "systems" / "fabric-x" / "catalogue" / "fabric-x.yaml")
    (tmp_path / "systems").symlink_to(REPO_ROOT / "systems")
    try:
        runs = reproduce("fabric-x", "committer-compact", scale="smoke", provider="local", build="upstream",
                         papers_dir=papers, results=tmp_path / "results", reports=tmp_path / "reports",
                         controls=False)
    finally:
        # Teardown stopped the postmaster by its PID; nothing may listen on its port afterwards.
        held = subprocess.run(["ss", "-Hltn", "sport = :27432"], capture_output=True, text=True).stdout.strip()
        assert not held, f"something still listens on PostgreSQL's port: {held}"
    (run,) = runs
    (summary,) = [json.loads(p.read_text()) for p in Path(run.path).glob("points/*/summary.json")]
    assert summary["status"] == "complete", summary.get("reason")
    validity = summary["validity"]
    assert validity["problems"] == [] and validity["evidence"] == "independent check", validity
    check = validity["independent_check"]
    assert check["status"] == "passed"
    asked = check["loadgen_asked"]
    assert check["store_committed"] == check["store_transactions"] == asked + check["setup_transactions"]
    assert check["sidecar_committed"] == check["store_committed"]
    assert summary["metrics"]["committed_tps"] > 0
