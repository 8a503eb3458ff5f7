"""The upstream build's Go-modules mode (toolchain kind ``go-modules``, harness/upstream.py) on a toy module,
and the cache keys of the GOPATH-mode recipes left as they were.

The toy "upstream" is a module with a vendored dependency (the dependency's
source only in vendor/, so the build proves it reads nothing else) and a
Makefile stating its release; no ../shared and no network.
"""

import hashlib
import json
import subprocess
from pathlib import Path
import shutil

import pytest
import yaml

from harness import upstream
from harness.errors import HarnessError
from tests.harness.git_repos import tagged_repo

pytestmark = pytest.mark.skipif(not shutil.which("go") or not shutil.which("git"), reason="needs go and git")

GO_MOD = "module example.org/toy\n\ngo 1.21\n\nrequire example.org/dep v0.1.0\n"
MAIN_GO = ('package main\n\nimport (\n\t"fmt"\n\n\t"example.org/dep"\n\t"example.org/toy/meta"\n)\n\n'
           'func main() { fmt.Println(meta.Version, meta.Commit, dep.Name()) }\n')
META_GO = 'package meta\n\nvar (\n\tVersion = "latest"\n\tCommit  = "development build"\n)\n'
DEP_GO = 'package dep\n\nfunc Name() string { return "vendored" }\n'
MODULES_TXT = "# example.org/dep v0.1.0\n## explicit\nexample.org/dep\n"


@pytest.fixture
def project(tmp_path):
    repo = tmp_path / "remote"
    for rel, text in {"go.mod": GO_MOD, "main.go": MAIN_GO, "meta/meta.go": META_GO, "Makefile": "TOY_VER ?= 1.2.3\n",
                      "vendor/modules.txt": MODULES_TXT, "vendor/example.org/dep/dep.go": DEP_GO}.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    commit = tagged_repo(repo, "v1.2.3")
    systems = tmp_path / "systems"
    (systems / "toy").mkdir(parents=True)
    recipe = {"schema_version": 2, "system": "toy", "repository": "example/toy", "clone_url": repo.as_uri(),
              "ref": "v1.2.3", "commit": commit, "pin_source": "test double",
              "toolchain": {"kind": "go-modules", "import_path": "example.org/toy",
                            "release": {"version": "1.2.3", "file": "Makefile", "variable": "TOY_VER"},
                            "ldflags_x": {"example.org/toy/meta.Version": "{release}",
                                          "example.org/toy/meta.Commit": "{commit:.7}"}},
              "targets": {"toy": "."}}
    (systems / "toy" / "upstream.yaml").write_text(yaml.safe_dump(recipe))
    return {"commit": commit, "systems": systems, "builds": tmp_path / "builds", "recipe": recipe}


def _build(p):
    return upstream.build("toy", "git", systems_dir=p["systems"], builds=p["builds"], log=lambda line: None)


def test_module_mode_builds_from_vendor_with_the_release_linked_in_and_recorded(project):
    b = _build(project)
    out = subprocess.run([str(b.bin_dir / "toy")], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["1.2.3", project["commit"][:7], "vendored"]
    info = json.loads((b.path / "build.json").read_text())
    assert info["release"] == "1.2.3" and b.provenance()["release"] == "1.2.3"
    env = info["toolchain"]["env"]
    assert env["GO111MODULE"] == "on" and env["GOFLAGS"] == "-mod=vendor"
    assert env["GOPROXY"] == "off" and env["GOTOOLCHAIN"] == "local"


def test_a_release_the_tree_does_not_state_is_refused_and_leaves_no_build(project):
    recipe = {**project["recipe"]}
    recipe["toolchain"] = {**recipe["toolchain"], "release": {"version": "9.9.9", "file": "Makefile",
                                                             "variable": "TOY_VER"}}
    (project["systems"] / "toy" / "upstream.yaml").write_text(yaml.safe_dump(recipe))
    with pytest.raises(HarnessError, match=r"release 9\.9\.9.*TOY_VER to 1\.2\.3"):
        _build(project)
    assert not any((project["builds"] / "toy").glob("*/build.json"))


def _key_without_go_flags(recipe, patches, toolchain_version, flavours=(), systems_dir=upstream.SYSTEMS):
    """build_key as it was before the Go flags (``-trimpath`` for GOPATH builds) joined it, verbatim."""
    doc = {"commit": recipe["commit"], "patches": [p.sha256 for p in patches],
           "toolchain": recipe["toolchain"], "toolchain_version": toolchain_version,
           "targets": recipe.get("targets"),
           "chaincodes": {name: {**cc, "digest": upstream._tree_digest(upstream.REPO_ROOT / cc["source"])}
                          for name, cc in sorted((recipe.get("chaincodes") or {}).items())}}
    if recipe.get("components"):
        doc["components"] = recipe["components"]
        patched = {name: [p.sha256 for p in ps]
                   for name, ps in upstream.component_patches(recipe, systems_dir).items() if ps}
        if patched:
            doc["component_patches"] = patched
    if flavours:
        doc["flavours"] = [{k: f[k] for k in ("name", "base", "graft", "targets") if k in f} for f in flavours]
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


def test_the_go_flags_are_part_of_a_builds_cache_key():
    # GOPATH builds gained -trimpath: their binaries differ from those built before, so no earlier build of the
    # same tree may be reused for them; everything else in the key is as it was
    version = "go version go1.26.8 linux/amd64"
    for system in upstream.systems_with_recipe():
        plan = upstream._plan(system, upstream.SYSTEMS, None, None)
        assert upstream.build_key(plan.recipe, plan.patches, version, plan.flavours) != \
            _key_without_go_flags(plan.recipe, plan.patches, version, plan.flavours), system
    # a fixed recipe, independent of this repository's files: its key, so that a change of the key is seen
    fixed = {"commit": "a" * 40, "toolchain": {"kind": "go-gopath", "import_path": "x"}, "targets": {"t": "."}}
    assert upstream.build_key(fixed, [], version) == "17cce642f68a1d70"
    assert _key_without_go_flags(fixed, [], version) == "136835cb89e55c26"  # the key before -trimpath
