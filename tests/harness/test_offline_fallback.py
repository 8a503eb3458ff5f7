"""Offline, the default run falls back to the reference build (issue 46 item 2): FastFabric's Fig. 6 reproduced
as ``invoke reproduce --paper fastfabric --experiment fig6-peer-throughput`` does (every option at its default:
build auto, source auto, smoke, control point), in a network namespace of its own with only loopback and with
the snapshot directory pointed at an empty one (no ``../shared``), completes on the reference build and says
why: the upstream repository was tried and did not answer. FastFabric's variants, which only the upstream build
has, are left out with their reason; Fabric 1.2's runs.

Needs root (``unshare -n``), ``ip``, Ansible and the built ``bin/`` (``invoke build``); about 40 s. Its servers
listen in its own namespace; the run still takes the machine's lock as any local run does (its CPU is measured).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness import REPO_ROOT


def _namespace_skip_reason() -> str | None:
    if not shutil.which("unshare") or not shutil.which("ip"):
        return "needs unshare and ip (util-linux, iproute2)"
    if subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode != 0:
        return "cannot make a network namespace here (unshare -n needs root)"
    if not shutil.which("ansible-playbook"):
        return "needs ansible-playbook (invoke setup)"
    if not os.access(REPO_ROOT / "bin" / "committerbench", os.X_OK):
        return "needs the built bin/ (invoke build)"
    return None


pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(_namespace_skip_reason() is not None, reason=_namespace_skip_reason() or "")]

CHILD = """
import json, os, sys
from pathlib import Path
out = Path(sys.argv[1])
interfaces = [line.split(":")[0].strip() for line in Path("/proc/self/net/dev").read_text().splitlines()[2:]]
print(json.dumps({"interfaces": sorted(interfaces)}), flush=True)
from harness import upstream_source
upstream_source.BUILDS = out / "no-builds"   # an upstream build cached in this checkout would be at hand offline
from harness.reproduce import reproduce
runs = reproduce("fastfabric", "fig6-peer-throughput", results=out / "results", reports=out / "reports",
                 provider_options={"work_root": out / "work"})
print(json.dumps({"runs": [str(r.path) for r in runs]}), flush=True)
"""


def test_offline_default_run_of_fig6_completes_on_the_reference_build_saying_why(tmp_path):
    empty = tmp_path / "no-shared"
    empty.mkdir()
    env = {**os.environ, "FABRICREPRO_UPSTREAM_SNAPSHOTS": str(empty),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("FABRICREPRO_GIT_PROBE_TIMEOUT_S", None)
    # a namespace with loopback only: no route anywhere, as on a machine without a network
    done = subprocess.run(["unshare", "-n", "--", "sh", "-c", 'ip link set lo up && exec "$0" -c "$1" "$2"',
                           sys.executable, CHILD, str(tmp_path)],
                          capture_output=True, text=True, env=env, cwd=REPO_ROOT, timeout=900)
    said = done.stderr
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{said[-4000:]}"
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines[0] == {"interfaces": ["lo"]}
    assert (f"fig6-peer-throughput: reference build (upstream not available: system fabric-1.2: no snapshot "
            f"'fabric-1.2.0' in {empty}, and cannot clone https://github.com/hyperledger/fabric.git: "
            "git ls-remote https://github.com/hyperledger/fabric.git failed") in said, said[-4000:]
    for variant in ("opt-p1", "opt-p2", "opt-p3"):
        assert (f"fig6-peer-throughput: variant {variant} not run: the reference build has no driver "
                "'committer-bench' for system fastfabric") in said
    assert "fig6-peer-throughput: run complete" in said
    (run,) = lines[1]["runs"]
    meta = json.loads((Path(run) / "metadata.json").read_text())
    assert meta["status"] == "complete"
    assert meta["build"]["kind"] == "reference"
    assert "cannot clone https://github.com/hyperledger/fabric.git" in meta["build"]["fallback_reason"]
    points = sorted(p.name for p in (Path(run) / "points").iterdir())
    assert points == ["control__fabric-1.2__r0", "fabric-1.2__r0"]
    assert (tmp_path / "reports" / "fastfabric" / "report.md").is_file()
