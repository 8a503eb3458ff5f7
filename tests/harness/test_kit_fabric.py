"""FastFabric's Table I through a kit (issue 48): both columns, Kafka and ZooKeeper on the kit's own Java runtime,
Fabric 1.2's chaincode packaged when the kit is built, measured where PATH holds no ``java``, no ``go`` and no
``mvn`` (a folder of links to this machine's programs but those) with a Python without the harness's packages,
then ingested as a complete run whose points pass validity.

One point per column, 500 transfers (ten streams' worth of the 50 Table I's clients use; five blocks of 100),
no control points, xz -0: the cheapest run of the kit that still deploys every component. About 4 min on
2 cores once the upstream builds (build/kit/upstream/), the Java runtime (build/kit/java/), the Kafka jars
(build/kafka-1.0.2/) and the wheelhouse are there.
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

from harness.errors import HarnessError
from tests.harness.test_kit_java import _path_without_java, _run_kit_on_clean_target

PAPER, EXPERIMENT = "fastfabric", "table1-end-to-end"
SMALLEST = {"transactions": 500}


def test_fabric_roles_that_run_their_build_in_place_declare_what_a_kit_carries():
    from harness.kit_parts import upstream_files
    for role, binary in (("fabric_crypto", "bin/cryptogen"), ("fabric_orderer", "bin/orderer"),
                         ("fabric_peer", "bin/peer"), ("fabric_chaincode", "bin/money-transfer"),
                         ("fabric_channel", "bin/peer")):
        assert binary in upstream_files(role), role
    # the published perf orderer or v1.2.0's, not the build's every command (its install.yml copies bin/)
    assert "bin/" not in upstream_files("fastfabric_orderer")


def test_a_made_file_is_made_once_from_its_declaration(tmp_path, monkeypatch):
    """made_files runs a role's declared command with the build and the output filled in, once (a role of
    this test's own, in a roles folder made here)."""
    from harness import deploy, kit_parts
    role = tmp_path / "roles" / "maker"
    (role / "meta").mkdir(parents=True)
    (role / "defaults").mkdir()
    (role / "defaults" / "main.yml").write_text("maker_name: pkg\n")
    (role / "meta" / "kit.yml").write_text(
        'made_files:\n  - path: "kit/{{ maker_name }}.out"\n'
        '    argv: [sh, -c, \'cat "$0/in" > "$1"\', "{{ build }}", "{{ out }}"]\n    env: {PATH: "{{ PATH }}"}\n')
    monkeypatch.setattr(deploy, "roles_dirs", lambda: [tmp_path / "roles"])
    build = tmp_path / "build"
    build.mkdir()
    (build / "in").write_text("made from the build\n")
    made = kit_parts.made_files("maker", build, tmp_path / "made")
    assert made == {"kit/pkg.out": tmp_path / "made" / "kit" / "pkg.out"}
    assert made["kit/pkg.out"].read_text() == "made from the build\n"
    (build / "in").write_text("changed\n")
    assert kit_parts.made_files("maker", build, tmp_path / "made")["kit/pkg.out"].read_text() == "made from the build\n"
    (role / "meta" / "kit.yml").write_text('made_files:\n  - path: "kit/x"\n    argv: [sh, -c, "exit 3"]\n')
    with pytest.raises(HarnessError, match="making kit/x for role maker failed"):
        kit_parts.made_files("maker", build, tmp_path / "made2")


def test_jars_are_carried_stored_with_the_same_entries(tmp_path):
    import zipfile
    from harness.kit_parts import stored_jars
    libs = tmp_path / "libs"
    libs.mkdir()
    with zipfile.ZipFile(libs / "a.jar", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n" * 50)
        z.writestr("A.class", b"\xca\xfe\xba\xbe" * 500)
    (libs / "notes.txt").write_text("kept as is")
    out = stored_jars({"build/libs": libs}, tmp_path / "cache")
    assert set(out) == {"build/libs/a.jar", "build/libs/notes.txt"} and out["build/libs/notes.txt"] == libs / "notes.txt"
    with zipfile.ZipFile(libs / "a.jar") as before, zipfile.ZipFile(out["build/libs/a.jar"]) as after:
        assert [i.filename for i in after.infolist()] == [i.filename for i in before.infolist()]
        assert all(i.compress_type == zipfile.ZIP_STORED for i in after.infolist())
        assert all(after.read(n) == before.read(n) for n in before.namelist()) and after.testzip() is None


def _fetch_kafka_jars() -> None:
    """The Kafka and ZooKeeper jars into build/kafka-<version>/ as a local run's kafka role fetches them (its own
    tasks, `tasks_from: libs`): a fresh clone has none until a Kafka point ran, and CI runs this test before
    systems/fabric-1.2/tests/test_kafka.py. A failed fetch (no network, no Maven) leaves the build to say so."""
    from harness import REPO_ROOT
    if (REPO_ROOT / "build" / "kafka-1.0.2" / "libs").is_dir() or shutil.which("mvn") is None:
        return
    subprocess.run(["ansible", "localhost", "-c", "local", "-i", "localhost,", "-m", "include_role",
                    "-a", "name=kafka tasks_from=libs", "-e", f"fabricrepro_repo_dir={REPO_ROOT}",
                    "-e", f"fabricrepro_work_root={REPO_ROOT / 'build'}", "-e", f"ansible_python_interpreter={sys.executable}"],
                   cwd=REPO_ROOT, env={**os.environ, "ANSIBLE_ROLES_PATH": str(REPO_ROOT / "playbooks" / "roles")},
                   capture_output=True, text=True, timeout=600, check=False)


@pytest.mark.network
@pytest.mark.skipif(shutil.which("ansible-playbook") is None or shutil.which("go") is None
                    or shutil.which("jlink") is None, reason="needs ansible-playbook, go and a JDK (invoke setup)")
def test_table1_kit_runs_where_no_java_and_no_go_are_installed(tmp_path, request):
    from harness.kit import build_kits, ingest
    started = time.monotonic()
    _fetch_kafka_jars()
    try:
        made = build_kits(PAPER, [EXPERIMENT], tmp_path / "kit.tar.xz", preset=0, log=lambda _: None,
                          plans=tmp_path / "plans", build="upstream", overrides=dict(SMALLEST), repeat=1,
                          controls=False, max_bytes=2**31)
    except HarnessError as e:
        if "pip download" in str(e) or "the upstream build cannot be had" in str(e) or "cannot clone" in str(e) \
                or "build/kafka-" in str(e):  # no ../shared, no network, no Kafka jars fetched here
            pytest.skip(f"the kit's inputs cannot be had here: {e}")
        raise
    manifest = made["kit"]
    assert manifest["java"]["components"] == ["kafka", "zookeeper"]
    carried = set(manifest["binaries"])
    assert any(a.endswith("/kit/money-transfer-1.0.cds") for a in _members(tmp_path / "kit.tar.xz"))
    assert not any(a.endswith("/bin/peerbench") for a in carried)  # only what the roles use
    assert "bin/blockfile" in carried  # fastfabric_storage's own command (its meta/kit.yml), no driver's
    clean = Path(_path_without_java(tmp_path / "path"))
    for name in ("go", "gofmt", "mvn", "mvnDebug"):
        (clean / name).unlink(missing_ok=True)
    assert not any(shutil.which(t, path=str(clean)) for t in ("java", "go", "mvn"))
    target, ran_s, proc = _run_kit_on_clean_target(tmp_path, request, str(clean))
    assert "kit: " in proc.stderr  # the host check's line before anything was made (harness/kit_target.py)
    run = ingest(target / "kit" / "run.tar.gz", results=tmp_path / "results", log=lambda _: None,
                 plans=tmp_path / "plans")
    assert run.metadata["status"] == "complete", run.metadata.get("reason")
    summaries = [json.loads(p.read_text()) for p in sorted((run.path / "points").glob("*/summary.json"))]
    assert sorted(s["variant"] for s in summaries) == ["fabric-1.2", "fastfabric"]
    for s in summaries:
        assert s["status"] == "complete" and s["valid"], (s["point"], s.get("invalid_reason"))
        assert s["metrics"]["throughput_tps"] > 0
    logs = "".join(p.read_text(errors="replace") for p in (tmp_path / "results").rglob("*.log"))
    assert "/usr/lib/jvm" not in logs
    print(f"kit {manifest['bytes'] / 2**20:.1f} MiB (xz -0), built in {manifest['wall_s']} s, run on the target in "
          f"{ran_s:.0f} s, test {time.monotonic() - started:.0f} s; space before compression: {manifest['space']}; "
          + "; ".join(f"{s['point']}: {s['metrics']['throughput_tps']:.0f} tx/s" for s in summaries))


def _members(archive: Path) -> list[str]:
    with tarfile.open(archive) as tar:
        return tar.getnames()
