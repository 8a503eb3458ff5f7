"""Reading an upstream recipe (harness/upstream_recipe.py, catalogue.upstream_errors) and what the core
hands a system's build kind (harness/upstream.py): component build kinds only as systems define them, each
checking its own ``build`` fields; patches reused from another system's folder; the build context.

Test doubles: recipes written into a tmp ``systems/`` and, for the context, a build kind made here and a
component in a local git repository. No Go, no network.
"""

import shutil
import subprocess

import pytest
import yaml

from harness import catalogue, systems, upstream, upstream_recipe
from harness.errors import HarnessError
from harness.plugin_api import BuildKind

REPO_RECIPES = upstream.SYSTEMS
COUCHDB = {"kind": "couchdb-release", "target": "release", "outputs": ["rel/couchdb/bin/couchdb"], "version": "3.3.3",
           "git_sha": "40afbcf", "spidermonkey_version": 78,
           "rebar": {"repository": "apache/couchdb-rebar", "commit": "5" * 40, "snapshot": "couchdb-rebar"},
           "deps": {}}
PATCH = "Description: a fix\nKind: fix\n\ndiff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"


def _system_yaml(name: str) -> str:
    return yaml.safe_dump({"schema_version": 1, "id": name, "paper": "toy", "description": "test double",
                           "reference": {"commands": [], "switches": {}}})


@pytest.fixture
def toy(tmp_path):
    """systems/toy with a recipe (no components yet) and systems/donor, whose patches/ holds one patch."""
    root = tmp_path / "systems"
    for name in ("toy", "donor"):
        (root / name / "patches").mkdir(parents=True)
        (root / name / "system.yaml").write_text(_system_yaml(name))
    (root / "donor" / "patches" / "0001-fix.patch").write_text(PATCH)
    recipe = {"schema_version": 2, "system": "toy", "repository": "example/toy", "commit": "0" * 40,
              "pin_source": "test double", "toolchain": {"kind": "go-gopath", "import_path": "example.org/toy"},
              "targets": {"toy": "."}}
    return {"systems": root, "recipe": recipe}


def _errors(toy, **changes) -> list[str]:
    path = toy["systems"] / "toy" / "upstream.yaml"
    path.write_text(yaml.safe_dump({**toy["recipe"], **changes}))
    return catalogue.upstream_errors(yaml.safe_load(path.read_text()), path)


def _component(build: dict) -> dict:
    return {"nodes": {"repository": "example/nodes", "commit": "0" * 40, "pin_source": "test double", "build": build}}


# ---------------------------------------------------------------- build kinds and their fields

def test_build_kinds_come_from_the_systems_plugins():
    kinds = systems.build_kinds()
    assert {"ant", "couchdb-release"} <= set(kinds)
    assert kinds["ant"].tools == ("java", "ant") and kinds["ant"].schema["required"] == ["target"]
    assert kinds["couchdb-release"].tools == ("erl", "make")


def test_a_kind_no_system_defines_is_refused_naming_the_known_ones(toy):
    (error,) = _errors(toy, components=_component({"kind": "gradle", "target": "jar", "outputs": ["a.jar"]}))
    assert error.endswith("upstream.yaml: components.nodes.build.kind: unknown build kind 'gradle' "
                          f"(known: {', '.join(sorted(systems.build_kinds()))})")


def test_a_flavours_component_is_checked_too(toy):
    flavour = {"name": "f", "when": {"x": 1}, "components": _component({"kind": "gradle", "outputs": ["a.jar"]})}
    (error,) = _errors(toy, flavours=[flavour])
    assert "flavours[0].components.nodes.build.kind: unknown build kind 'gradle'" in error


def test_each_kind_accepts_its_own_fields(toy):
    assert _errors(toy, components=_component({"kind": "ant", "target": "jar", "outputs": ["a.jar"],
                                               "remove": ["lib/a.jar"]})) == []
    assert _errors(toy, components=_component(COUCHDB)) == []


def test_a_field_the_kind_does_not_name_is_refused(toy):
    """CouchDB's fields are couchdb-release's, not every kind's: on an ant component they are refused."""
    (error,) = _errors(toy, components=_component({"kind": "ant", "target": "jar", "outputs": ["a.jar"],
                                                   "version": "3.3.3", "git_sha": "40afbcf"}))
    assert error.endswith("upstream.yaml: components.nodes.build.git_sha, version: not a field of build kind 'ant' "
                          "(its fields: target)")


def test_a_field_the_kind_requires_is_named_when_missing(toy):
    (error,) = _errors(toy, components=_component({"kind": "ant", "outputs": ["a.jar"]}))
    assert error.endswith("components.nodes.build.target: required by build kind 'ant'")
    (error,) = _errors(toy, components=_component({k: v for k, v in COUCHDB.items() if k not in ("rebar", "deps")}))
    assert error.endswith("components.nodes.build.deps, rebar: required by build kind 'couchdb-release'")


def test_a_field_of_the_wrong_shape_is_named_with_its_path(toy):
    bad = {**COUCHDB, "rebar": {**COUCHDB["rebar"], "commit": "main"}, "spidermonkey_version": [78]}
    errors = _errors(toy, components=_component(bad))
    assert any(e.endswith("components.nodes.build.rebar.commit: 'main' does not match '^[0-9a-f]{40}$' "
                          "(build kind 'couchdb-release')") for e in errors), errors
    assert any(e.endswith("components.nodes.build.spidermonkey_version: expected string or number, got [78] "
                          "(build kind 'couchdb-release')") for e in errors), errors


def test_the_core_schema_no_longer_names_a_kinds_fields():
    build = catalogue.load_schema(catalogue.SCHEMAS / "upstream.json")["properties"]["components"][
        "additionalProperties"]["properties"]["build"]
    assert set(build["properties"]) == set(catalogue.CORE_BUILD_FIELDS)
    assert "pinned_source" not in catalogue.load_schema(catalogue.SCHEMAS / "upstream.json")["$defs"]


def test_the_repositorys_recipes_use_known_kinds_with_their_fields():
    for system in upstream.systems_with_recipe():
        path = REPO_RECIPES / system / "upstream.yaml"
        assert catalogue.upstream_errors(yaml.safe_load(path.read_text()), path) == [], system


# ---------------------------------------------------------------- patches reused from another system

def test_a_reused_patch_is_read_from_its_systems_folder(toy):
    entry = {"patch": "0001-fix.patch", "system": "donor", "why": "the same fix"}
    assert _errors(toy, patches=[entry]) == []
    (patch,) = upstream_recipe.patch_series("toy", {**toy["recipe"], "patches": [entry]}, toy["systems"])
    assert patch.path == toy["systems"] / "donor" / "patches" / "0001-fix.patch" and patch.system == "donor"
    assert patch.to_dict()["system"] == "donor"


def test_a_reused_patch_that_does_not_exist_is_refused(toy):
    entry = {"patch": "0002-gone.patch", "system": "donor", "why": "the same fix"}
    (error,) = _errors(toy, patches=[entry])
    assert error.endswith("upstream.yaml: patches[0].patch: system donor has no patch 0002-gone.patch "
                          "(systems/donor/patches/)")
    with pytest.raises(HarnessError, match=r"lists donor's patch 0002-gone.patch, but .*donor/patches/0002-gone.patch "
                                           "does not exist"):
        upstream_recipe.patch_series("toy", {**toy["recipe"], "patches": [entry]}, toy["systems"])


def test_a_patch_reused_from_an_unknown_system_is_refused(toy):
    (error,) = _errors(toy, patches=[{"patch": "0001-fix.patch", "system": "nobody", "why": "x"}])
    assert error.endswith("patches[0].system: no system 'nobody' (systems: donor, toy)")


def test_a_reused_patch_keeps_the_key_its_copy_had(toy):
    """The key hashes each patch's content: moving a patch to the system it is reused from keeps every build."""
    (toy["systems"] / "toy" / "patches" / "0001-fix.patch").write_text(PATCH)
    copy = upstream_recipe.patch_series("toy", {**toy["recipe"], "patches": ["0001-fix.patch"]}, toy["systems"])
    reused = upstream_recipe.patch_series("toy", {**toy["recipe"], "patches": [
        {"patch": "0001-fix.patch", "system": "donor", "why": "x"}]}, toy["systems"])
    assert upstream.build_key(toy["recipe"], copy, "go") == upstream.build_key(toy["recipe"], reused, "go")


def test_validation_opt_reuses_fabric_12s_lock_order_fix():
    recipe = upstream.load_recipe("validation-opt")
    first = upstream.patch_series("validation-opt", recipe)[0]
    fabric = next(p for p in upstream.patch_series("fabric-1.2", upstream.load_recipe("fabric-1.2"))
                  if p.name == first.name)
    assert first.system == "fabric-1.2" and first.path == fabric.path and first.sha256 == fabric.sha256
    assert not (REPO_RECIPES / "validation-opt" / "patches" / first.name).exists(), "no second copy"


# ---------------------------------------------------------------- what a build kind gets

def test_the_toolchain_joins_go_and_each_kinds_in_kind_order(monkeypatch):
    kinds = {"b-kind": BuildKind(lambda *a: None, lambda: "B 2"), "a-kind": BuildKind(lambda *a: None, lambda: "A 1")}
    monkeypatch.setattr(systems, "build_kinds", lambda systems_dir=None: kinds)
    monkeypatch.setattr(upstream, "go_version", lambda: "go version go1.x")
    recipe = {"components": {"x": {"build": {"kind": "b-kind"}}, "y": {"build": {"kind": "a-kind"}}}}
    assert upstream.toolchain_version(recipe) == "go version go1.x; A 1; B 2"
    assert upstream.toolchain_version({}) == "go version go1.x"


@pytest.mark.skipif(not all(shutil.which(t) for t in ("java", "ant")), reason="needs java and ant")
def test_ants_toolchain_is_the_string_the_core_wrote_before():
    """Ant moved from the core into bftsmart-orderer: its part of the build key must not change."""
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()[0]
    ant = subprocess.run(["ant", "-version"], capture_output=True, text=True, check=True).stdout.strip()
    assert systems.build_kinds()["ant"].toolchain() == f"{java}; {ant}"


@pytest.mark.skipif(not shutil.which("git"), reason="needs git")
def test_a_kind_builds_with_the_context_the_core_gives(tmp_path, monkeypatch):
    """The kind gets the component's tree and ``build`` and a BuildContext: fetch_source (of a further pinned
    tree), run_command (a failure names the step) and log; what it returns is recorded as dependencies."""
    remote = tmp_path / "remote"
    remote.mkdir()
    (remote / "src.txt").write_text("source\n")
    git = ["git", "-C", str(remote), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "v1"], check=True)
    commit = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    monkeypatch.setenv("FABRICREPRO_UPSTREAM_SNAPSHOTS", str(tmp_path / "no-snapshots"))
    seen = {}

    def build(system, name, tree, spec, source, context):
        seen.update(spec=spec, source=source)
        extra = context.fetch_source({"repository": "example/extra", "commit": commit, "clone_url": remote.as_uri()},
                                     tree / "extra", source, context.log)
        out = context.run_command(["cat", "src.txt", "extra/src.txt"], f"concatenate ({name})", cwd=tree)
        (tree / "out.txt").write_text(out)
        if spec.get("fail"):
            context.run_command(["false"], f"fail on purpose ({name})")
        return {"extra": extra}

    monkeypatch.setattr(systems, "build_kinds", lambda systems_dir=None: {"toy": BuildKind(build, lambda: "toy 1")})
    recipe = {"system": "toy", "components": {"c": {"repository": "example/c", "commit": commit,
                                                    "clone_url": remote.as_uri(), "pin_source": "test",
                                                    "build": {"kind": "toy", "outputs": ["out.txt"]}}}}
    lines = []
    out = upstream._build_components(recipe, tmp_path / "components", "auto", lines.append, tmp_path)
    assert (tmp_path / "components" / "c" / "out.txt").read_text() == "source\nsource\n"
    assert seen == {"spec": {"kind": "toy", "outputs": ["out.txt"]}, "source": "auto"}
    assert out["c"]["dependencies"]["extra"]["commit"] == commit
    assert any(line.startswith("upstream: fetching example/extra @ ") for line in lines), lines
    recipe["components"]["c"]["build"]["fail"] = True
    with pytest.raises(HarnessError, match=r"upstream build: fail on purpose \(c\) failed \(exit 1\)"):
        upstream._build_components(recipe, tmp_path / "again", "auto", lines.append, tmp_path)
    recipe["components"]["c"]["build"] = {"kind": "toy", "outputs": ["never.txt"]}
    with pytest.raises(HarnessError, match="component c: build kind toy did not make never.txt"):
        upstream._build_components(recipe, tmp_path / "third", "auto", lines.append, tmp_path)
