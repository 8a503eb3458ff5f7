"""harness/upstream.py's Java components (what builds the BFT-SMaRt ordering service's
nodes beside its Fabric fork), on test doubles: a tiny Go program and a tiny Ant
project, each in a local git repository made in a tmp dir. No ../shared, no network."""

import json
import shutil
import subprocess

import pytest
import yaml

from harness import upstream
from harness.errors import HarnessError

pytestmark = pytest.mark.skipif(not all(shutil.which(t) for t in ("go", "git", "java", "ant")),
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
    return {"tmp": tmp_path, "systems": systems, "recipe": recipe, "java": tmp_path / "java"}


def _build(p, **component_changes):
    recipe = json.loads(json.dumps(p["recipe"]))
    recipe["components"]["nodes"].update(component_changes)
    (p["systems"] / "toy" / "upstream.yaml").write_text(yaml.safe_dump(recipe))
    return upstream.build("toy", "git", systems_dir=p["systems"], builds=p["tmp"] / "builds", log=lambda m: None)


@pytest.fixture(autouse=True)
def _clone_components_locally(monkeypatch, project):
    """Test double: components have no clone_url in the schema, so example/nodes is cloned from the local repository."""
    real = upstream._from_git

    def from_git(recipe, dest):
        if recipe["repository"] == "example/nodes":
            recipe = {**recipe, "clone_url": project["java"].as_uri()}
        return real(recipe, dest)
    monkeypatch.setattr(upstream, "_from_git", from_git)


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


def test_component_changes_the_build_key(project):
    first = _build(project)
    second = _build(project, build={"kind": "ant", "target": "jar", "outputs": ["dist/hello.jar"]})
    assert first.path != second.path


def test_missing_output_fails_and_leaves_nothing(project):
    with pytest.raises(HarnessError, match="did not make dist/other.jar"):
        _build(project, build={"kind": "ant", "target": "jar", "outputs": ["dist/other.jar"]})
    assert not list((project["tmp"] / "builds" / "toy").glob("*/build.json"))
