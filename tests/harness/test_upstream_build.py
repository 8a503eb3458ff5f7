"""The upstream build mechanism (harness/upstream.py) on a tiny GOPATH-mode project in a local git repository.

The "upstream" here is a test double made in a tmp dir (a two-file Go program
under a local git remote, and a snapshot directory with its own MANIFEST.tsv),
so these tests need no ../shared and no network; the real Fabric build is
tests/upstream/test_fabric12_build.py.
"""

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml

from harness import upstream
from harness.errors import HarnessError
from tests.harness.git_repos import IDENTITY, git, tagged_repo

pytestmark = pytest.mark.skipif(not shutil.which("go") or not shutil.which("git"), reason="needs go and git")

MAIN_GO = 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println(greeting()) }\n'
GREET_GO = 'package main\n\nfunc greeting() string { return "hello" }\n'
PATCH = """Description: say bonjour
Kind: instrumentation
Changes-measured-path: no

diff --git a/greet.go b/greet.go
--- a/greet.go
+++ b/greet.go
@@ -1,3 +1,3 @@
 package main
 
-func greeting() string { return "hello" }
+func greeting() string { return "bonjour" }
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A git 'upstream' with a tag, a systems/ dir with its recipe, a snapshot dir and a build dir."""
    repo = tmp_path / "remote"
    repo.mkdir()
    (repo / "main.go").write_text(MAIN_GO)
    (repo / "greet.go").write_text(GREET_GO)
    commit = tagged_repo(repo, "v1.0.0")
    systems = tmp_path / "systems"
    (systems / "toy" / "patches").mkdir(parents=True)
    recipe = {"schema_version": 2, "system": "toy", "repository": "example/toy", "clone_url": repo.as_uri(),
              "ref": "v1.0.0", "commit": commit, "pin_source": "test double", "snapshot": "toy-1.0",
              "toolchain": {"kind": "go-gopath", "import_path": "example.org/toy"},
              "targets": {"toy": "."}}
    (systems / "toy" / "upstream.yaml").write_text(yaml.safe_dump(recipe))
    snaps = tmp_path / "snapshots"
    snaps.mkdir()
    monkeypatch.setenv("FABRICREPRO_UPSTREAM_SNAPSHOTS", str(snaps))
    return {"repo": repo, "commit": commit, "systems": systems, "snapshots": snaps, "builds": tmp_path / "builds",
            "recipe": recipe}


def _write_recipe(p, **changes):
    recipe = {**p["recipe"], **changes}
    (p["systems"] / "toy" / "upstream.yaml").write_text(yaml.safe_dump(recipe))
    return recipe


def _make_snapshot(p, corrupt=False, commit=None):
    top = p["snapshots"] / "stage" / "toy-1.0"
    top.mkdir(parents=True)
    shutil.copy(p["repo"] / "main.go", top)
    shutil.copy(p["repo"] / "greet.go", top)
    commit = commit or p["commit"]
    archive = p["snapshots"] / f"toy-1.0-{commit[:12]}.tar.xz"
    with tarfile.open(archive, "w:xz") as tar:
        tar.add(top, arcname="toy-1.0")
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if corrupt:
        digest = "0" * 64
    (p["snapshots"] / "MANIFEST.tsv").write_text(f"toy-1.0\texample/toy\t{commit}\t{digest}\t\n")


def _build(p, source="auto", log=None):
    lines = []
    b = upstream.build("toy", source, systems_dir=p["systems"], builds=p["builds"], log=(log or lines.append))
    return b, lines


def _run(binary):
    return subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout.strip()


def test_git_source_builds_records_and_is_reused(project):
    b, lines = _build(project, "git")
    assert _run(b.bin_dir / "toy") == "hello"
    info = json.loads((b.path / "build.json").read_text())
    assert info["built_commit"] == project["commit"] and info["source"]["kind"] == "git"
    assert info["toolchain"]["version"].startswith("go version")
    again, lines2 = _build(project, "git")
    assert again.path == b.path and any("reusing" in line for line in lines2)
    # the build tree is a module of its own, so an enclosing module's ./... skips it
    assert (project["builds"] / "go.mod").read_text().startswith("//")


def test_builds_in_other_directories_reuse_the_go_build_cache(project, tmp_path, monkeypatch):
    # a dozen Fabric builds, each adding its own compiled packages to Go's cache, filled CI's disk: with
    # -trimpath a package compiled in one build directory is the cache's entry for every other
    cache = tmp_path / "gocache"
    monkeypatch.setenv("GOCACHE", str(cache))
    entries = lambda: {f.name for f in cache.rglob("*-d")}  # noqa: E731 (compiled outputs)
    first, _ = _build(project, "git")
    after_first = entries()
    second = upstream.build("toy", "git", systems_dir=project["systems"], builds=tmp_path / "other-builds",
                            log=lambda line: None)
    assert second.path.parent.parent != first.path.parent.parent and _run(second.bin_dir / "toy") == "hello"
    assert entries() == after_first, "the second build compiled what the first had compiled"
    # the control: the same go build without -trimpath in a third directory compiles the package again
    tree = tmp_path / "third" / "src" / "example.org" / "toy"
    shutil.copytree(first.path / "gopath" / "src" / "example.org" / "toy", tree)
    subprocess.run(["go", "build", "-o", str(tmp_path / "toy"), "."], cwd=tree, check=True,
                   env={**os.environ, "GOPATH": str(tmp_path / "third"), "GO111MODULE": "off"})
    assert entries() - after_first


def test_snapshot_source_preferred_and_checked(project):
    _make_snapshot(project)
    b, _ = _build(project, "auto")
    info = json.loads((b.path / "build.json").read_text())
    assert info["source"]["kind"] == "snapshot"
    assert info["source"]["sha256"] == hashlib.sha256(Path(info["source"]["archive"]).read_bytes()).hexdigest()


def test_damaged_snapshot_is_refused(project):
    _make_snapshot(project, corrupt=True)
    with pytest.raises(HarnessError, match="sha256"):
        _build(project, "snapshot")
    assert not list(project["builds"].glob("toy/*/build.json"))


def test_snapshot_of_another_commit_is_refused(project):
    _make_snapshot(project, commit="1" * 40)
    _write_recipe(project)
    with pytest.raises(HarnessError, match="pins"):
        _build(project, "snapshot")


def test_pin_that_is_not_the_tag_is_refused(project):
    # a second commit, pinned, while the recipe says it is v1.0.0
    (project["repo"] / "extra.go").write_text("package main\n")
    git(project["repo"], *IDENTITY, "add", ".")
    git(project["repo"], *IDENTITY, "commit", "-qm", "later")
    _write_recipe(project, commit=git(project["repo"], "rev-parse", "HEAD"))
    with pytest.raises(HarnessError, match="v1.0.0 is"):
        _build(project, "git")


def test_missing_snapshot_with_source_snapshot_says_where(project):
    with pytest.raises(HarnessError, match="no snapshot"):
        _build(project, "snapshot")


def test_patch_is_applied_recorded_and_changes_the_key(project):
    plain, _ = _build(project, "git")
    (project["systems"] / "toy" / "patches" / "0001-bonjour.patch").write_text(PATCH)
    _write_recipe(project, patches=["0001-bonjour.patch"])
    patched, _ = _build(project, "git")
    assert patched.path != plain.path
    assert _run(patched.bin_dir / "toy") == "bonjour"
    (p,) = json.loads((patched.path / "build.json").read_text())["patches"]
    assert p["name"] == "0001-bonjour.patch" and p["kind"] == "instrumentation" and p["description"] == "say bonjour"


def test_patch_that_does_not_apply_fails_and_leaves_no_build(project):
    (project["systems"] / "toy" / "patches" / "0001-bonjour.patch").write_text(PATCH.replace('"hello"', '"howdy"'))
    _write_recipe(project, patches=["0001-bonjour.patch"])
    with pytest.raises(HarnessError, match="apply 0001-bonjour.patch"):
        _build(project, "git")
    assert not list(project["builds"].glob("toy/*/build.json"))
    assert not list(project["builds"].glob("toy/*.partial")), "the half-made tree is removed"


def test_patch_without_header_is_refused(project):
    (project["systems"] / "toy" / "patches" / "0001-bonjour.patch").write_text(PATCH.split("\n\n", 1)[1])
    _write_recipe(project, patches=["0001-bonjour.patch"])
    with pytest.raises(HarnessError, match="header lacks Description, Kind"):
        _build(project, "git")


def test_invalid_recipe_and_unknown_system_are_clear(project):
    with pytest.raises(HarnessError, match="unknown upstream system 'nope'"):
        upstream.load_recipe("nope", project["systems"])
    _write_recipe(project, commit="abc")
    with pytest.raises(HarnessError, match="invalid upstream recipe"):
        upstream.load_recipe("toy", project["systems"])


def test_repository_recipes_are_valid():
    snapshots = upstream.snapshots_dir()
    manifest = upstream.read_manifest(snapshots) if (snapshots / "MANIFEST.tsv").is_file() else {}
    for system in upstream.systems_with_recipe():
        recipe = upstream.load_recipe(system)
        if recipe.get("snapshot") in manifest:
            assert manifest[recipe["snapshot"]]["commit"] == recipe["commit"], system
        for patch in upstream.patch_series(system, recipe):
            assert patch.header["Kind"] in {"fix", "instrumentation", "mechanism", "driver", "harness"}, patch.name


def test_flavour_patches_follow_the_variants_switches(project):
    """A variant's switches pick the flavours whose patches are applied; each flavour is its own build."""
    (project["systems"] / "toy" / "system.yaml").write_text(yaml.safe_dump({
        "schema_version": 1, "id": "toy", "paper": "toy", "description": "test double",
        "reference": {"commands": [], "switches": {"language": {"default": "en", "description": "greeting"}}}}))
    (project["systems"] / "toy" / "patches" / "0101-bonjour.patch").write_text(PATCH)
    _write_recipe(project, flavours=[{"name": "french", "when": {"language": "fr"}, "patches": ["0101-bonjour.patch"]}])
    kwargs = {"systems_dir": project["systems"], "builds": project["builds"], "log": lambda _: None}
    default = upstream.build("toy", "git", **kwargs)
    english = upstream.build("toy", "git", switches={"language": "en"}, **kwargs)
    french = upstream.build("toy", "git", switches={"language": "fr"}, **kwargs)
    assert english.path == default.path and _run(english.bin_dir / "toy") == "hello"
    assert french.path != english.path and _run(french.bin_dir / "toy") == "bonjour"
    assert french.info["flavours"] == ["french"] and [p["name"] for p in french.info["patches"]] == ["0101-bonjour.patch"]
    _write_recipe(project, flavours=[{"name": "bad", "when": {"colour": "red"}, "patches": []}])
    with pytest.raises(HarnessError, match="unknown switch"):
        upstream.build("toy", "git", switches={"language": "fr"}, **kwargs)


def test_flavour_graft_copies_paths_from_another_pinned_tree(project, tmp_path):
    """A flavour can take files of another system's pinned tree (how FastFabric's P-I joins Fabric 1.2)."""
    donor = tmp_path / "donor"
    shutil.copytree(project["repo"], donor)
    (donor / "greet.go").write_text(GREET_GO.replace("hello", "grafted"))
    git(donor, *IDENTITY, "commit", "-qam", "donor")
    (project["systems"] / "donor").mkdir()
    (project["systems"] / "donor" / "upstream.yaml").write_text(yaml.safe_dump({
        **project["recipe"], "system": "donor", "clone_url": donor.as_uri(), "ref": "master",
        "ref_moves": True, "commit": git(donor, "rev-parse", "HEAD")}))
    (project["systems"] / "toy" / "system.yaml").write_text(yaml.safe_dump({
        "schema_version": 1, "id": "toy", "paper": "toy", "description": "test double",
        "reference": {"commands": [], "switches": {"graft": {"default": False, "description": "take greet.go"}}}}))
    _write_recipe(project, flavours=[{"name": "grafted", "when": {"graft": True},
                                      "graft": {"from": "donor", "paths": ["greet.go"]}}])
    built = upstream.build("toy", "git", systems_dir=project["systems"], builds=project["builds"],
                           log=lambda _: None, switches={"graft": True})
    assert _run(built.bin_dir / "toy") == "grafted"
    assert built.info["grafts"][0]["from"] == "donor"


def test_chaincode_is_built_with_the_recipes_tags(project, tmp_path):
    # As Fabric v1.1.0's shim: without the recipe's tag the chaincode's other half (cgo PKCS#11 there) is compiled.
    chaincode = tmp_path / "chaincode"
    chaincode.mkdir()
    (chaincode / "main.go").write_text('package main\n\nimport "fmt"\n\nfunc main() { fmt.Println(half()) }\n')
    (chaincode / "tagged.go").write_text('//go:build nopkcs11\n\npackage main\n\nfunc half() string { return "tagged" }\n')
    (chaincode / "untagged.go").write_text('//go:build !nopkcs11\n\npackage main\n\nfunc half() string { '
                                           'return undefinedWithoutTheTag }\n')
    _write_recipe(project, toolchain={**project["recipe"]["toolchain"], "tags": ["nopkcs11"]},
                  chaincodes={"cc": {"source": str(chaincode), "import_path": "example.org/cc"}})
    b, _ = _build(project, "git")
    assert _run(b.bin_dir / "cc") == "tagged"


def test_a_patch_reused_from_another_system_is_applied_recorded_and_keyed_by_its_content(project, tmp_path):
    """A recipe's patch entry may name the system whose file it is (one fix, one file): the build applies
    it, records whose it is, and keeps the key a copy of the same file in the recipe's own folder had."""
    (project["systems"] / "toy" / "patches" / "0001-bonjour.patch").write_text(PATCH)
    _write_recipe(project, patches=["0001-bonjour.patch"])
    copy, _ = _build(project, "git")
    donor = project["systems"] / "donor"
    (donor / "patches").mkdir(parents=True)
    (donor / "system.yaml").write_text(yaml.safe_dump({"schema_version": 1, "id": "donor", "paper": "toy",
                                                       "description": "test double",
                                                       "reference": {"commands": [], "switches": {}}}))
    (project["systems"] / "toy" / "patches" / "0001-bonjour.patch").rename(donor / "patches" / "0001-bonjour.patch")
    _write_recipe(project, patches=[{"patch": "0001-bonjour.patch", "system": "donor", "why": "the same fix"}])
    reused = upstream.build("toy", "git", systems_dir=project["systems"], builds=tmp_path / "other-builds",
                            log=lambda _: None)
    assert reused.info["key"] == copy.info["key"], "the key hashes the patch's content, not where it lives"
    assert _run(reused.bin_dir / "toy") == "bonjour"
    (p,) = reused.info["patches"]
    assert p["name"] == "0001-bonjour.patch" and p["system"] == "donor" and "system" not in copy.info["patches"][0]
    assert reused.info["patch_series"] == [{"name": "0001-bonjour.patch", "status": "applied"}]
