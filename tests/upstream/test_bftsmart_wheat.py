"""WHEAT for Fig. 7 (systems/bftsmart-orderer, flavour zeromq-wheat): the build mechanism and the driver's pieces.

Fast tests (a few seconds): the component mechanism the flavour needs
(``merge`` of a second commit, a component's own ``patches``, ``inputs`` from
an earlier component, a flavour replacing a component) on toy Ant projects in
a local git repository; the flavour's choice by the ``generation`` switch; the
geo layout, weights and link delays; the parser of bft.TestNodes' latency
reports on a golden sample. The real WHEAT build (bft-smart/library wheat2
merged with master, the zeromq nodes linked against it) is opt-in: it clones
the library, so it runs only when FABRICREPRO_BFTSMART_LIBRARY_GIT names a
clone source of bft-smart/library (a mirror, or https://github.com/bft-smart/library.git).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from harness import upstream
from harness.errors import HarnessError

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "harness" / "fixtures" / "bftsmart-orderer"

BUILD_XML = """<project name="toy" default="jar">
  <target name="jar">
    <mkdir dir="dist"/>
    <concat destfile="dist/out.txt"><filelist dir="." files="src.txt"/><fileset dir="." includes="lib/dep.txt"/></concat>
  </target>
</project>
"""


def _git(cwd, *args) -> str:
    return subprocess.run(["git", "-C", str(cwd), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """A library repository with a branch and a later master (both touch a shipped binary), and a consumer."""
    if not shutil.which("ant") or not shutil.which("git"):
        pytest.skip("needs ant and git")
    monkeypatch.setenv("FABRICREPRO_UPSTREAM_SNAPSHOTS", str(tmp_path / "no-snapshots"))
    lib = tmp_path / "lib-remote"
    lib.mkdir()
    _git(lib, "init", "-q", "-b", "master")
    (lib / "build.xml").write_text(BUILD_XML)
    (lib / "src.txt").write_text("base\n")
    (lib / "prebuilt.bin").write_bytes(b"\x00base")
    _git(lib, "add", ".")
    _git(lib, "commit", "-qm", "base")
    _git(lib, "checkout", "-qb", "wheat")
    (lib / "src.txt").write_text("base\nweights\n")
    (lib / "prebuilt.bin").write_bytes(b"\x00wheat")
    _git(lib, "commit", "-qam", "wheat")
    branch = _git(lib, "rev-parse", "HEAD")
    _git(lib, "checkout", "-q", "master")
    (lib / "extra.txt").write_text("getClients\n")
    (lib / "prebuilt.bin").write_bytes(b"\x00master")
    _git(lib, "add", ".")
    _git(lib, "commit", "-qm", "master")
    master = _git(lib, "rev-parse", "HEAD")
    nodes = tmp_path / "nodes-remote"
    nodes.mkdir()
    _git(nodes, "init", "-q")
    (nodes / "build.xml").write_text(BUILD_XML)
    (nodes / "src.txt").write_text("nodes\n")
    (nodes / "lib").mkdir()
    (nodes / "lib" / "dep.txt").write_text("shipped jar\n")
    _git(nodes, "add", ".")
    _git(nodes, "commit", "-qm", "nodes")
    systems = tmp_path / "systems"
    (systems / "toy" / "patches").mkdir(parents=True)
    (systems / "toy" / "patches" / "0101-nodes.patch").write_text(
        "Description: a line of ours\nKind: instrumentation\n\n"
        "diff --git a/src.txt b/src.txt\n--- a/src.txt\n+++ b/src.txt\n@@ -1 +1,2 @@\n nodes\n+patched\n")
    recipe = {"system": "toy", "components": {
        "library": {"repository": "example/library", "clone_url": lib.as_uri(), "commit": branch, "pin_source": "test",
                    "merge": {"commit": master, "ref": "master", "why": "test"},
                    "build": {"kind": "ant", "target": "jar", "outputs": ["dist/out.txt"], "remove": ["prebuilt.bin"]}},
        "nodes": {"repository": "example/nodes", "clone_url": nodes.as_uri(), "commit": _git(nodes, "rev-parse", "HEAD"),
                  "pin_source": "test", "patches": ["0101-nodes.patch"],
                  "inputs": {"lib/dep.txt": "library:dist/out.txt"},
                  "build": {"kind": "ant", "target": "jar", "outputs": ["dist/out.txt"], "remove": ["lib/dep.txt"]}}}}
    return {"recipe": recipe, "systems": systems, "root": tmp_path / "build" / "components", "master": master}


def test_component_merges_patches_and_links_an_earlier_components_output(toy):
    out = upstream._build_components(toy["recipe"], toy["root"], "auto", lambda *_: None, toy["systems"])
    lib = toy["root"] / "library"
    assert (lib / "extra.txt").read_text() == "getClients\n"            # master's file merged in
    assert (lib / "dist" / "out.txt").read_text() == "base\nweights\n"   # the branch's change kept
    assert not (lib / "prebuilt.bin").exists()                         # the conflicting binary removed
    merged = out["library"]["source"]["merged"]
    assert merged["commit"] == toy["master"] and merged["conflicts_removed"] == 1
    # the nodes: patched, and built with the library's output in place of the shipped file
    assert (toy["root"] / "nodes" / "dist" / "out.txt").read_text() == "nodes\npatched\nbase\nweights\n"
    assert out["nodes"]["patches"][0]["name"] == "0101-nodes.patch"
    assert out["nodes"]["inputs"]["lib/dep.txt"]["from"] == "library:dist/out.txt"


def test_merge_conflict_outside_removed_paths_stops_the_build(toy):
    toy["recipe"]["components"]["library"]["build"]["remove"] = []
    with pytest.raises(HarnessError, match="conflicts in prebuilt.bin"):
        upstream._build_components(toy["recipe"], toy["root"], "auto", lambda *_: None, toy["systems"])


def test_merge_needs_git_history(toy):
    with pytest.raises(HarnessError, match="needs the repository's history"):
        upstream._build_components(toy["recipe"], toy["root"], "snapshot", lambda *_: None, toy["systems"])


def test_input_from_a_later_component_is_refused(toy):
    comps = toy["recipe"]["components"]
    toy["recipe"]["components"] = {"nodes": comps["nodes"], "library": comps["library"]}
    with pytest.raises(HarnessError, match="not built before it"):
        upstream._build_components(toy["recipe"], toy["root"], "auto", lambda *_: None, toy["systems"])


def test_generation_switch_picks_the_zeromq_wheat_flavour():
    recipe = upstream.load_recipe("bftsmart-orderer")
    assert upstream.matching_flavours("bftsmart-orderer", recipe, {"protocol": "bftsmart"}) == []
    (flavour,) = upstream.matching_flavours("bftsmart-orderer", recipe, {"protocol": "wheat", "generation": "zeromq"})
    comps = flavour["components"]
    assert comps["wheat-library"]["commit"].startswith("41a23e076f3d")
    assert comps["wheat-library"]["merge"]["commit"].startswith("ff5f027ab7f1")
    assert comps["ordering-service"]["commit"].startswith("3bea6670ea19")
    assert comps["ordering-service"]["inputs"] == {"lib/BFT-SMaRt.jar": "wheat-library:bin/BFT-SMaRt.jar"}
    # each patch the flavour names exists and has its header
    upstream.component_patches({"system": "bftsmart-orderer", "components": comps})


@pytest.mark.skipif(not os.environ.get("FABRICREPRO_BFTSMART_LIBRARY_GIT"),
                    reason="opt-in (about a minute): set FABRICREPRO_BFTSMART_LIBRARY_GIT to a clone source of "
                           "bft-smart/library (a mirror or GitHub's URL)")
def test_wheat_library_and_zeromq_nodes_build_from_source(tmp_path, monkeypatch):
    source = os.environ["FABRICREPRO_BFTSMART_LIBRARY_GIT"]
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", f"url.{source}.insteadOf")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "https://github.com/bft-smart/library.git")
    recipe = upstream.load_recipe("bftsmart-orderer")
    (flavour,) = upstream.matching_flavours("bftsmart-orderer", recipe, {"generation": "zeromq"})
    if upstream.source_available({**flavour["components"]["ordering-service"], "system": "x"}, "snapshot"):
        pytest.skip("no snapshot bftsmart-os-zeromq in ../shared/upstream")
    out = upstream._build_components({"system": "bftsmart-orderer", "components": flavour["components"]},
                                     tmp_path / "components", "auto", lambda *_: None)
    jar = tmp_path / "components" / "ordering-service" / "lib" / "BFT-SMaRt.jar"
    classes = subprocess.run(["unzip", "-p", str(jar), "bftsmart/reconfiguration/util/TOMConfiguration.class"],
                             capture_output=True, check=True).stdout
    assert b"system.useweights" in classes and b"system.tentative" in classes
    assert out["ordering-service"]["inputs"]["lib/BFT-SMaRt.jar"]["sha256"] == upstream.sha256_file(jar)
