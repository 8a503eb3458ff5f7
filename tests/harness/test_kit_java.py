"""A kit carries its own Java runtime (issue 48, item 1: harness/kit_java.py) and says what took its space.

The unit tests need no JDK. The kit test builds one kit of two experiments of Sousa et al.: the signature
benchmark and Fig. 6 (bftsmart-orderer text-signature-bench and fig6-lan-throughput, upstream build, one
point each: 4 nodes, 100 envelopes a block of 1 KiB, one receiver, 10 s) and runs it where PATH holds no
``java`` (a folder of links to this machine's programs but those of a JDK) with a Python without the
harness's packages, then ingests its two runs: complete, each point passing validity (or, for Fig. 6 on a
machine too small for it, kept as a capacity limit: harness/capacity.py). About 4 min
on 2 cores once the upstream build (build/kit/upstream/), the runtime (build/kit/java/) and the
wheelhouse are there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from harness import REPO_ROOT
from harness.errors import HarnessError
from tests.network_lock import network_lock


def test_java_is_carried_where_this_machine_can_make_a_runtime():
    from harness.kit import tool_refusals
    layout = {"orderer": ["bftsmart_node"], "client_machine": ["bftsmart_workload"]}
    assert tool_refusals(layout) == ["component bftsmart_node needs java (a JVM), which a kit cannot carry",
                                     "component bftsmart_workload needs java (a JVM), which a kit cannot carry"]
    assert tool_refusals(layout, {"java"}) == []


def test_roles_that_run_their_build_in_place_declare_what_a_kit_carries():
    from harness.kit_parts import upstream_files
    assert upstream_files("bftsmart_node") == ["components/ordering-service/dist/", "components/ordering-service/lib/"]
    assert "bin/configtxgen" in upstream_files("bftsmart_config")


def test_kafka_and_zookeeper_carry_the_jars_maven_fetched_here():
    from harness.kit_parts import repo_files
    # not libs.tar.gz: only hosts apart from the controller unpack it, and a kit's host is its controller
    assert repo_files("kafka") == repo_files("zookeeper") == ["build/kafka-1.0.2/libs/"]
    assert repo_files("bftsmart_node") == []
    from harness.kit_parts import upstream_files
    assert upstream_files("kafka") is None  # its kit.yml names repo files only: install.yml's copy list is read


def test_the_space_is_told_by_part():
    from harness.kit import _space_part
    assert _space_part("kit/build/upstream/bftsmart-orderer/abc/bin/cryptogen") == "build/upstream/bftsmart-orderer"
    assert _space_part("kit/java/lib/modules") == _space_part("kit/java") == "java"
    assert _space_part("kit/playbooks") == "playbooks"
    assert _space_part("kit/wheels/x.whl") == "wheels"
    assert _space_part("kit/plan.json") == _space_part("kit/plans/fig6.json") == "kit files (kit.json, plans, run)"


def test_jdeps_modules_always_hold_the_base_set(tmp_path):
    from harness import kit_java
    if kit_java.jdk_tools() is None:
        pytest.skip("no JDK (jlink, jdeps) here")
    assert set(kit_java.BASE_MODULES) <= set(kit_java.modules_of([], kit_java.jdk_tools()[1]))


def _path_without_java(where: Path) -> str:
    """A folder of links to /usr/bin's and /bin's programs, but any of a JDK (resolving into /usr/lib/jvm)."""
    where.mkdir()
    for folder in ("/usr/bin", "/bin"):
        for entry in sorted(Path(folder).iterdir()):
            target = entry.resolve()
            if (where / entry.name).exists() or str(target).startswith("/usr/lib/jvm") or entry.name in ("ant",):
                continue
            if target.is_file() and os.access(target, os.X_OK):
                (where / entry.name).symlink_to(target)
    return str(where)


def _run_kit_on_clean_target(tmp_path: Path, request, clean_path: str) -> tuple[Path, float, subprocess.CompletedProcess]:
    """Unpack ``tmp_path/kit.tar.xz`` into ``tmp_path/target`` and run ``./kit/run`` there with only
    ``clean_path`` on PATH and a Python venv without pip, holding the machine's network lock; asserts it exits 0
    and returns (the target folder, the run's seconds, the finished process)."""
    target = tmp_path / "target"
    target.mkdir()
    with tarfile.open(tmp_path / "kit.tar.xz") as tar:
        tar.extractall(target, **({"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}))
    python = tmp_path / "clean-python"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(python)], check=True)
    with network_lock(request.config):
        ran = time.monotonic()
        proc = subprocess.run([str(target / "kit" / "run"), "--python", str(python / "bin" / "python3")],
                              env={"PATH": clean_path}, cwd=target, capture_output=True, text=True, timeout=900)
        ran_s = time.monotonic() - ran
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return target, ran_s, proc


PAPER = "bftsmart-orderer"
EXPERIMENTS = ["text-signature-bench", "fig6-lan-throughput"]
ONE_POINT = {"nodes": 4, "block_size": 100, "envelope_bytes": 1024, "receivers": 1}


@pytest.mark.network
@pytest.mark.skipif(shutil.which("ansible-playbook") is None or shutil.which("go") is None
                    or shutil.which("jlink") is None or shutil.which("ant") is None,
                    reason="needs ansible-playbook, go, a JDK (jlink) and ant (invoke setup)")
def test_a_bftsmart_kit_runs_where_no_java_is_installed(tmp_path, request):
    from harness.kit import build_kits, ingest
    started = time.monotonic()
    try:
        made = build_kits(PAPER, EXPERIMENTS, tmp_path / "kit.tar.xz", preset=0, log=lambda _: None,
                          plans=tmp_path / "plans", build="upstream", overrides=dict(ONE_POINT), repeat=1,
                          controls=False)
    except HarnessError as e:
        if "pip download" in str(e) or "upstream" in str(e).lower() and "fetch" in str(e).lower() \
                or "the upstream build cannot be had" in str(e) or "cannot clone" in str(e):  # no ../shared, no network
            pytest.skip(f"the kit's inputs cannot be had here: {e}")
        raise
    manifest = made["kit"]
    # one archive, both experiments: each its own manifest and plan, the runtime and wheelhouse once
    assert manifest["experiments"] == EXPERIMENTS and set(manifest["kits"]) == set(EXPERIMENTS)
    java = manifest["kits"]["fig6-lan-throughput"]["java"]
    assert java["path"] == "java" and "java.base" in java["modules"]
    assert java["components"] == ["bftsmart_node", "bftsmart_sigbench", "bftsmart_workload"]
    assert {"java", "wheels", "build/upstream/bftsmart-orderer"} <= set(manifest["space"])
    clean = _path_without_java(tmp_path / "path")
    assert shutil.which("java", path=clean) is None
    target, ran_s, proc = _run_kit_on_clean_target(tmp_path, request, clean)
    summaries = []
    for experiment in EXPERIMENTS:
        run = ingest(target / "kit" / f"run-{experiment}.tar.gz", results=tmp_path / "results", log=lambda _: None,
                     plans=tmp_path / "plans")
        assert run.metadata["status"] == "complete" and run.metadata["experiment"] == experiment
        summaries += [json.loads(p.read_text()) for p in sorted((run.path / "points").glob("*/summary.json"))]
    assert len(summaries) == 2
    for s in summaries:
        assert s["status"] == "complete", s.get("reason")
        # valid, its counts confirmed; or (Fig. 6 on a machine too small for it) kept as a capacity limit
        assert s["valid"] or s.get("invalid_kind") == "capacity", s.get("invalid_reason")
    bench, fig6 = summaries
    assert bench["valid"] and bench["metrics"]["signatures_per_s"] > 0
    assert fig6["validity"]["independent_check"]["status"] == ("passed" if fig6["valid"] else "failed")
    # the JVMs were the kit's, not a java of this machine
    logs = "".join(p.read_text(errors="replace") for p in (tmp_path / "results").rglob("*.log"))
    assert "/usr/lib/jvm" not in logs
    print(f"kit {manifest['bytes'] / 2**20:.1f} MiB (xz -0), built in {manifest['wall_s']} s, run on the target in "
          f"{ran_s:.0f} s, test {time.monotonic() - started:.0f} s; space before compression: {manifest['space']}; "
          + "; ".join(f"{s['point']}: valid {s['valid']} ({s.get('invalid_reason') or s['validity']['evidence']})"
                      for s in summaries))


# ------------------------------------------------------------------ issue 48, item 2: every experiment that can go

def test_a_kit_of_a_paper_carries_every_experiment_that_can_go(tmp_path, monkeypatch):
    from harness import kit
    ours = kit.kit_experiments("bftsmart-orderer")
    assert "fig6-lan-throughput" in ours and "fig6-revisit-smartbft" not in ours  # experiments of ours when named
    assert kit.kit_experiments("bftsmart-orderer", ["fig6-revisit-smartbft", "fig6-revisit-smartbft"]) == \
        ["fig6-revisit-smartbft"]
    with pytest.raises(HarnessError):
        kit.kit_experiments("bftsmart-orderer", ["no-such-experiment"])
    built = []

    def fake(paper, experiments, out, log=print, **options):
        built.append((experiments, out))
        return {"bytes": 2**20, "points": 2, "wall_s": 1.0, "space": {"java": 2**20}}
    monkeypatch.setattr(kit, "build_kit", fake)
    lines = []
    try:
        made = kit.build_kits("bftsmart-orderer", None, tmp_path / "kit.tar.xz", log=lines.append)
    except HarnessError as e:
        if "the upstream build cannot be had" not in str(e):
            raise
        pytest.skip(f"BFT-SMaRt's upstream build cannot be had here (no ../shared snapshot, no network): {e}")
    # one archive of every experiment a kit's single host can run; Fig. 7's delayed links left out, naming why
    assert built == [([e for e in ours if e != "fig7-geo-latency"], tmp_path / "kit.tar.xz")]
    assert list(made["left_out"]) == ["fig7-geo-latency"] and "fixed delays" in made["left_out"]["fig7-geo-latency"]
    assert any(line.startswith("kit: left out fig7-geo-latency") for line in lines)
    # one named that cannot go fails, naming why (here: the real build_kit's refusal)
    monkeypatch.undo()
    with pytest.raises(HarnessError, match="fixed delays"):
        kit.build_kits("bftsmart-orderer", ["fig7-geo-latency"], tmp_path / "kit.tar.xz", log=lines.append)


def test_the_default_size_limit_fits_a_64_mib_carry():
    from harness.kit import MAX_BYTES
    assert MAX_BYTES == 60 * 2**20
