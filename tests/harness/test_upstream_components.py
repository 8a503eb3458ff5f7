"""harness/upstream.py's components (what builds the BFT-SMaRt ordering service's Java
nodes beside its Fabric fork, and WHEAT's library and nodes for Fig. 7) on test
doubles: a tiny Go program and tiny Ant projects, each in a local git repository
made in a tmp dir. No ../shared, no network."""

import json
import shutil
import subprocess

import pytest
import yaml

from harness import upstream, upstream_source
from harness.errors import HarnessError

needs_go_and_java = pytest.mark.skipif(not all(shutil.which(t) for t in ("go", "git", "java", "ant")),
                                       reason="needs go, git, java and ant")

BUILD_XML = """<project default="jar">
  <target name="jar">
    <mkdir dir="classes"/><javac srcdir="src" destdir="classes" includeantruntime="false"/>
    <jar destfile="dist/hello.jar" basedir="classes"/>
  </target>
</project>
"""


def _git_repo(path, files):
    path.mkdir()
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    run = lambda *a: subprocess.run(["git", "-C", str(path), *a], check=True, capture_output=True, text=True).stdout
    run("init", "-q")
    run("-c", "user.name=t", "-c", "user.email=t@t", "add", ".")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "v1")
    return run("rev-parse", "HEAD").strip()


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("FABRICREPRO_UPSTREAM_SNAPSHOTS", str(tmp_path / "no-snapshots"))
    go_commit = _git_repo(tmp_path / "go", {"main.go": "package main\n\nfunc main() {}\n"})
    java_commit = _git_repo(tmp_path / "java", {"build.xml": BUILD_XML, "lib/shipped.jar": "not a jar",
                                                "src/Hello.java": "public class Hello {}\n"})
    recipe = {"schema_version": 2, "system": "toy", "repository": "example/toy", "clone_url": (tmp_path / "go").as_uri(),
              "commit": go_commit, "pin_source": "test double",
              "toolchain": {"kind": "go-gopath", "import_path": "example.org/toy"}, "targets": {"toy": "."},
              "components": {"nodes": {"repository": "example/nodes", "commit": java_commit, "pin_source": "test double",
                                       "build": {"kind": "ant", "target": "jar", "outputs": ["dist/hello.jar"],
                                                 "remove": ["lib/shipped.jar"]}}}}
    systems = tmp_path / "systems"
    (systems / "toy").mkdir(parents=True)
    # test double: components have no clone_url in the schema, so example/nodes is cloned from the local repository
    real = upstream_source._from_git

    def from_git(recipe, dest):
        if recipe["repository"] == "example/nodes":
            recipe = {**recipe, "clone_url": (tmp_path / "java").as_uri()}
        return real(recipe, dest)
    monkeypatch.setattr(upstream_source, "_from_git", from_git)
    return {"tmp": tmp_path, "systems": systems, "recipe": recipe}


def _build(p, **component_changes):
    recipe = json.loads(json.dumps(p["recipe"]))
    recipe["components"]["nodes"].update(component_changes)
    (p["systems"] / "toy" / "upstream.yaml").write_text(yaml.safe_dump(recipe))
    return upstream.build("toy", "git", systems_dir=p["systems"], builds=p["tmp"] / "builds", log=lambda m: None)


@needs_go_and_java
def test_component_is_built_with_ant_and_recorded(project):
    built = _build(project)
    tree = built.path / "components" / "nodes"
    assert (tree / "dist" / "hello.jar").is_file()
    assert not (tree / "lib" / "shipped.jar").exists(), "a shipped binary listed in remove must be gone"
    info = json.loads((built.path / "build.json").read_text())
    assert info["components"]["nodes"]["built_commit"] == project["recipe"]["components"]["nodes"]["commit"]
    assert "jdk" in info["toolchain"]["version"] and "Ant" in info["toolchain"]["version"]
    assert built.provenance()["components"]["nodes"]["path"] == "components/nodes"
    assert _build(project).path == built.path, "same inputs: the build is reused"


@needs_go_and_java
def test_component_changes_the_build_key(project):
    first = _build(project)
    second = _build(project, build={"kind": "ant", "target": "jar", "outputs": ["dist/hello.jar"]})
    assert first.path != second.path


@needs_go_and_java
def test_missing_output_fails_and_leaves_nothing(project):
    with pytest.raises(HarnessError, match="did not make dist/other.jar"):
        _build(project, build={"kind": "ant", "target": "jar", "outputs": ["dist/other.jar"]})
    assert not list((project["tmp"] / "builds" / "toy").glob("*/build.json"))


# ---------------------------------------------------------------- merge, patches, inputs (WHEAT's flavour)

CONCAT_XML = """<project name="toy" default="jar">
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
    (lib / "build.xml").write_text(CONCAT_XML)
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
    (nodes / "build.xml").write_text(CONCAT_XML)
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
