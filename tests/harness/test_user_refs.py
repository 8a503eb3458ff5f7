"""A user's own commit of a system's upstream code (harness/user_refs.py, ``--set fabric_ref=v2.5.12``) on a local
git repository standing in for hyperledger/fabric: the ref reaches the build (its commit built, its release
linked in and recorded, the cache keyed by the commit), and a bad ref or a release of another line is refused
with a clear error naming the system to use, before anything is built. No ../shared, no network."""

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from harness import systems, upstream, user_refs
from harness.config import declarations
from harness.errors import HarnessError
from harness.plan import Point
from tests.harness.git_repos import IDENTITY, git, tagged_repo

pytestmark = pytest.mark.skipif(not shutil.which("git"), reason="needs git")

GO_MOD = "module example.org/fabric\n\ngo 1.21\n"
MAIN_GO = ('package main\n\nimport (\n\t"fmt"\n\n\t"example.org/fabric/meta"\n)\n\n'
           'func main() { fmt.Println(meta.Version, meta.Commit) }\n')
META_GO = 'package meta\n\nvar (\n\tVersion = "latest"\n\tCommit  = "development build"\n)\n'
PLUGIN = '''from harness.plugin_api import SystemPlugin


class Plugin(SystemPlugin):
    def upstream_ref(self, parameters: dict) -> dict | None:
        ref = parameters.get("fabric_ref")
        return {"ref": str(ref), "parameter": "fabric_ref"} if ref else None
'''


def _release(repo: Path, version: str) -> str:
    """Commit the Makefile stating ``version`` as Fabric's does (``FABRIC_VER ?= ...`` from v2.5, ``BASE_VERSION =
    ...`` before; a v2.5+ tree may keep an unrelated BASE_VERSION: FABRIC_VER is read first), tag it v<version>."""
    makefile = f"BASE_VERSION = unused\nFABRIC_VER ?= {version}\n" if version >= "2.5" else f"BASE_VERSION = {version}\n"
    (repo / "Makefile").write_text(makefile)
    git(repo, "add", "Makefile")
    git(repo, *IDENTITY, "commit", "-qam", f"release {version}")
    git(repo, "tag", f"v{version}")
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def fabric(tmp_path):
    """A 'hyperledger/fabric' with releases 2.5.12, 2.5.13, 3.0.0, 3.1.2, 3.1.5 (one commit each, tagged), and
    two systems building it like fabric-2.5 (extending) and fabric-3.1: go-modules, the release from FABRIC_VER."""
    repo = tmp_path / "remote"
    for rel, text in {"go.mod": GO_MOD, "main.go": MAIN_GO, "meta/meta.go": META_GO,
                      "Makefile": "FABRIC_VER ?= 2.5.11\n"}.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    commits = {"2.5.11": tagged_repo(repo, "v2.5.11")}
    for version in ("2.5.12", "2.5.13", "3.0.0", "3.1.2", "3.1.5", "2.1.1", "2.2.15"):
        commits[version] = _release(repo, version)
    git(repo, "branch", "release-2.5", commits["2.5.13"])
    root = tmp_path / "systems"
    for system, version, extends in (("toy-3.1", "3.1.5", None), ("toy-2.5", "2.5.13", "toy-3.1")):
        (root / system).mkdir(parents=True)
        (root / system / "system.yaml").write_text(yaml.safe_dump({"id": system, **({"extends": extends} if extends else {})}))
        recipe = {"schema_version": 2, "system": system, "repository": "example/fabric", "clone_url": repo.as_uri(),
                  "ref": f"v{version}", "commit": commits[version], "pin_source": "test double",
                  "toolchain": {"kind": "go-modules", "import_path": "example.org/fabric",
                                "release": {"version": version, "file": "Makefile", "variable": "FABRIC_VER"},
                                "ldflags_x": {"example.org/fabric/meta.Version": "{release}",
                                              "example.org/fabric/meta.Commit": "{commit:.7}"}},
                  "targets": {"peer": "."}}
        (root / system / "upstream.yaml").write_text(yaml.safe_dump(recipe))
    (root / "toy-3.1" / "plugin.py").write_text(PLUGIN)
    return {"repo": repo, "commits": commits, "systems": root, "builds": tmp_path / "builds",
            "clones": tmp_path / "regress"}


def _pin(f, ref, system="toy-2.5"):
    return user_refs.user_pin(system, ref, "fabric_ref", f["systems"], root=f["clones"], log=lambda line: None)


def _build(f, pin, system="toy-2.5"):
    return upstream.build(system, "auto", systems_dir=f["systems"], builds=f["builds"], log=lambda line: None, pin=pin)


@pytest.mark.skipif(not shutil.which("go"), reason="needs go")
def test_the_users_ref_reaches_the_build_its_release_read_from_the_tree(fabric):
    pin = _pin(fabric, "v2.5.12")
    assert pin["commit"] == fabric["commits"]["2.5.12"] and pin["ref"] == "v2.5.12" and pin["release_lines"] == ["2.5"]
    built = _build(fabric, pin)
    # the tree at the ref, with its own release linked in (not the recipe's 2.5.13)
    out = subprocess.run([str(built.bin_dir / "peer")], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["2.5.12", fabric["commits"]["2.5.12"][:7]]
    info = json.loads((built.path / "build.json").read_text())
    assert (info["ref"], info["commit"], info["built_commit"], info["release"]) == \
        ("v2.5.12", pin["commit"], pin["commit"], "2.5.12")
    assert info["source"]["kind"] == "git" and info["toolchain"]["release"]["version"] == "2.5.12"
    # what a run's metadata records (build.systems.<system>)
    assert {k: built.provenance()[k] for k in ("ref", "commit", "release")} == \
        {"ref": "v2.5.12", "commit": pin["commit"], "release": "2.5.12"}
    # the cache is keyed by the commit: the same commit again reuses it, another commit is another build
    assert _build(fabric, _pin(fabric, pin["commit"])).path == built.path
    other = _build(fabric, _pin(fabric, "release-2.5"))  # a branch: its head, 2.5.13
    assert other.path != built.path and other.info["release"] == "2.5.13"
    assert other.info["commit"] == fabric["commits"]["2.5.13"]


def test_a_ref_that_names_nothing_is_refused_naming_it(fabric):
    with pytest.raises(HarnessError, match=r"toy-2\.5: fabric_ref=v9\.9\.9 names no tag, branch or commit of "
                                           r"example/fabric"):
        _pin(fabric, "v9.9.9")


def test_a_release_of_another_line_is_refused_naming_the_system_to_use(fabric):
    with pytest.raises(HarnessError, match=r"toy-2\.5 builds and configures example/fabric 2\.5\.x only, but "
                                           r"v3\.1\.2 \(\w{12}\) is release 3\.1\.2 \(Makefile's FABRIC_VER\): use "
                                           r"system toy-3\.1, which builds 3\.1\.x"):
        _pin(fabric, "v3.1.2")
    with pytest.raises(HarnessError, match=r"is release 3\.0\.0 .*no system here builds 3\.0\.x "
                                           r"\(toy-2\.5: 2\.5\.x, toy-3\.1: 3\.1\.x\)"):
        _pin(fabric, "v3.0.0")
    with pytest.raises(HarnessError, match=r"use system toy-2\.5"):
        _pin(fabric, "v2.5.12", system="toy-3.1")
    # the build refuses it too (a pin made elsewhere), and leaves nothing behind
    bad = {**_pin(fabric, "v2.5.12"), "commit": fabric["commits"]["3.0.0"], "ref": "v3.0.0"}
    with pytest.raises(HarnessError, match=r"is release 3\.0\.0"):
        _build(fabric, bad)
    assert not any((fabric["builds"] / "toy-2.5").glob("*/build.json"))


def _points(system: str, *refs):
    return [Point(id=f"p{i}", variant="v", system=system, label="v", repetition=i, sweep={},
                  parameters={"transactions": 10, **({"fabric_ref": ref} if ref else {})}, switches={})
            for i, ref in enumerate(refs)]


def test_a_runs_points_ask_through_the_systems_hook(fabric):
    root = fabric["systems"]
    # toy-2.5 inherits toy-3.1's hook (extends), as fabric-2.5 inherits fabric-3.1's
    assert user_refs.requested(_points("toy-2.5", "v2.5.12", "v2.5.12"), root) == \
        {"toy-2.5": {"ref": "v2.5.12", "parameter": "fabric_ref"}}
    assert user_refs.requested(_points("toy-2.5", None), root) == {}
    pins = user_refs.pins(_points("toy-2.5", "v2.5.12"), "upstream", "auto", root, root=fabric["clones"],
                          log=lambda line: None)
    assert pins["toy-2.5"]["commit"] == fabric["commits"]["2.5.12"]
    with pytest.raises(HarnessError, match="asks for 2 refs"):
        user_refs.requested(_points("toy-2.5", "v2.5.12", "v2.5.13"), root)
    with pytest.raises(HarnessError, match="this run has the reference build"):
        user_refs.pins(_points("toy-2.5", "v2.5.12"), "reference", "auto", root, root=fabric["clones"])
    with pytest.raises(HarnessError, match="built from git, not from a snapshot"):
        user_refs.pins(_points("toy-2.5", "v2.5.12"), "upstream", "snapshot", root, root=fabric["clones"])
    assert user_refs.pins(_points("toy-2.5", None), "reference", "snapshot", root) == {}


def test_a_users_ref_builds_only_the_patches_its_one_driver_needs(fabric):
    """As regress's pins do: where every point of the system runs one driver, the pin names it (the build then
    leaves out the patches only other drivers need); a system under two drivers names none (every patch)."""
    root, log = fabric["systems"], (lambda line: None)
    experiment = {"driver": "end-to-end", "variants": [{"id": "v"}, {"id": "w", "driver": "committer-bench"}]}
    points = _points("toy-2.5", "v2.5.12", "v2.5.12")
    one = user_refs.pins(points, "upstream", "auto", root, root=fabric["clones"], log=log, experiment=experiment)
    assert one["toy-2.5"]["driver"] == "end-to-end"
    points[1] = dataclasses.replace(points[1], variant="w")
    two = user_refs.pins(points, "upstream", "auto", root, root=fabric["clones"], log=log, experiment=experiment)
    assert "driver" not in two["toy-2.5"]


def test_fabric_31_and_25_take_fabric_ref():
    """Their lines are those the driver was run on (systems/fabric-3.1/README.md, "Releases"): v3.0.0 and
    v3.1.5; v2.2.15, v2.3.0, v2.4.0 and v2.5.16 (v2.0 and v2.1 have no go.mod for the module build)."""
    assert "fabric_ref" in declarations()
    for system, lines in (("fabric-3.1", ["3.0", "3.1"]), ("fabric-2.5", ["2.2", "2.3", "2.4", "2.5"])):
        assert systems.plugin(system).upstream_ref({"fabric_ref": "v2.5.12"}) == \
            {"ref": "v2.5.12", "parameter": "fabric_ref"}
        assert systems.plugin(system).upstream_ref({}) is None
        assert upstream.release_lines(upstream.load_recipe(system)["toolchain"]["release"]) == lines
    # Fabric 1.x too (a lab's v1.4 on Kafka): its lines 1.1-1.4, its release the Makefile's BASE_VERSION
    assert systems.plugin("fabric-1.2").upstream_ref({"fabric_ref": "v1.4.12"}) == \
        {"ref": "v1.4.12", "parameter": "fabric_ref"}
    assert upstream.release_lines(upstream.load_recipe("fabric-1.2")["toolchain"]["release"]) == \
        ["1.1", "1.2", "1.3", "1.4"]


def test_the_real_systems_refuse_another_line_naming_each_other(fabric, monkeypatch):
    """fabric-2.5's and fabric-3.1's own recipes, their repository redirected to the local one (git's insteadOf,
    as a user's mirror would be): only resolving and the release check, no build."""
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", f"url.{fabric['repo'].as_uri()}.insteadOf")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "https://github.com/hyperledger/fabric.git")

    def pin(system, ref):
        return user_refs.user_pin(system, ref, "fabric_ref", root=fabric["clones"], log=lambda line: None)

    assert pin("fabric-2.5", "v2.5.12")["commit"] == fabric["commits"]["2.5.12"]
    assert pin("fabric-2.5", "v2.2.15")["commit"] == fabric["commits"]["2.2.15"]  # its Makefile: BASE_VERSION
    assert pin("fabric-3.1", "v3.1.2")["commit"] == fabric["commits"]["3.1.2"]
    assert pin("fabric-3.1", "v3.0.0")["commit"] == fabric["commits"]["3.0.0"]
    with pytest.raises(HarnessError, match=r"fabric-2\.5 builds and configures hyperledger/fabric 2\.2\.x, 2\.3\.x, "
                                           r"2\.4\.x, 2\.5\.x only, but v3\.0\.0 .* use system fabric-3\.1, which "
                                           r"builds 3\.0\.x"):
        pin("fabric-2.5", "v3.0.0")
    with pytest.raises(HarnessError, match=r"use system fabric-3\.1, which builds 3\.1\.x"):
        pin("fabric-2.5", "v3.1.2")
    with pytest.raises(HarnessError, match=r"use system fabric-2\.5, which builds 2\.5\.x"):
        pin("fabric-3.1", "v2.5.13")
    with pytest.raises(HarnessError, match=r"v2\.1\.1 .* no system here builds 2\.1\.x \(.*fabric-2\.5: 2\.2\.x, "
                                           r"2\.3\.x, 2\.4\.x, 2\.5\.x, fabric-3\.1: 3\.0\.x, 3\.1\.x\)"):
        pin("fabric-2.5", "v2.1.1")


def test_a_resumed_run_keeps_the_commit_it_recorded_for_a_moving_branch(fabric):
    root, log = fabric["systems"], (lambda line: None)
    points = _points("toy-2.5", "release-2.5")
    first = user_refs.pins(points, "upstream", "auto", root, root=fabric["clones"], log=log)["toy-2.5"]
    assert first["commit"] == fabric["commits"]["2.5.13"]
    git(fabric["repo"], "branch", "-f", "release-2.5", fabric["commits"]["2.5.12"])  # the branch moves on
    recorded = {"toy-2.5": {"ref": "release-2.5", "commit": first["commit"], "release": "2.5.13"}}
    again = user_refs.pins(points, "upstream", "auto", root, root=fabric["clones"], log=log, recorded=recorded)
    assert again["toy-2.5"]["commit"] == first["commit"] and again["toy-2.5"]["ref"] == "release-2.5"
    # a fresh run takes the branch where it is now; a recorded build of another ref does not pin it
    assert user_refs.pins(points, "upstream", "auto", root, root=fabric["clones"], log=log)["toy-2.5"]["commit"] \
        == fabric["commits"]["2.5.12"]
    other = {"toy-2.5": {"ref": "v2.5.13", "commit": first["commit"]}}
    assert user_refs.pins(points, "upstream", "auto", root, root=fabric["clones"], log=log,
                          recorded=other)["toy-2.5"]["commit"] == fabric["commits"]["2.5.12"]
