"""The v3.1 and v2.5 recipes (systems/fabric-3.1, systems/fabric-2.5): valid, pinned to the snapshot's
commit, and linking the release the tree itself states (fabric-3.1: the Makefile's FABRIC_VER; fabric-2.5:
its FABRIC_VER, or BASE_VERSION before v2.5.0) into the variables the tree declares.

Fast: reads three small files out of each snapshot (skipped with the reason without ../shared/upstream)."""

import re
import tarfile

import pytest

from harness import upstream
from harness.validate import validate_file

SYSTEMS = {"fabric-3.1": "3.1.5", "fabric-2.5": "2.5.16"}
#: fabric-2.5 builds no osnadmin: cmd/osnadmin came with v2.3.0, and its lines start at 2.2.
TARGETS = {"fabric-3.1": ["configtxgen", "cryptogen", "orderer", "osnadmin", "peer"],
           "fabric-2.5": ["configtxgen", "cryptogen", "orderer", "peer"]}


@pytest.mark.parametrize("system", sorted(SYSTEMS))
def test_recipe_is_valid_and_builds_the_commands_in_module_mode(system):
    assert validate_file(upstream.SYSTEMS / system / "upstream.yaml") == []
    assert validate_file(upstream.SYSTEMS / system / "system.yaml") == []
    recipe = upstream.load_recipe(system)
    assert recipe["ref"] == f"v{SYSTEMS[system]}" and recipe["snapshot"] == f"fabric-{SYSTEMS[system]}"
    assert recipe["toolchain"]["kind"] == "go-modules"
    assert recipe["toolchain"]["release"]["version"] == SYSTEMS[system]
    assert sorted(recipe["targets"]) == TARGETS[system]
    assert all(p.startswith("./cmd/") for p in recipe["targets"].values())


def _snapshot_files(recipe, names):
    why = upstream.source_available(recipe, "snapshot")
    if why:
        pytest.skip(f"no snapshot of {recipe['system']}: {why}")
    archive, row = upstream.snapshot_archive(recipe)
    assert row["commit"] == recipe["commit"]
    out = {}
    with tarfile.open(archive) as tar:
        for member in tar:
            rel = member.name.split("/", 1)[-1]
            if rel in names:
                out[rel] = tar.extractfile(member).read().decode()
                if len(out) == len(names):
                    break
    return out


@pytest.mark.parametrize("system", sorted(SYSTEMS))
def test_pin_release_and_version_variables_match_the_snapshot(system):
    recipe = upstream.load_recipe(system)
    spec = recipe["toolchain"]["release"]
    files = _snapshot_files(recipe, {"Makefile", "docker-env.mk", "common/metadata/metadata.go", spec["file"]})
    assert re.search(rf"^FABRIC_VER \?= {re.escape(SYSTEMS[system])}$", files["Makefile"], re.MULTILINE)
    assert upstream.stated_releases(spec, files[spec["file"]]) == [SYSTEMS[system]]
    # the Makefile's METADATA_VAR, each -X of ours names a variable the tree declares
    made = re.findall(r"^METADATA_VAR \+?= (\w+)=", files["Makefile"], re.MULTILINE)
    ours = {var.rsplit(".", 1)[1]: value for var, value in recipe["toolchain"]["ldflags_x"].items()}
    assert sorted(made) == sorted(ours)
    for var in ours:
        assert re.search(rf"^\s+{var}\s+=", files["common/metadata/metadata.go"], re.MULTILINE), var
    assert ours["BaseDockerLabel"] == re.search(r"^BASE_DOCKER_LABEL=(\S+)", files["docker-env.mk"], re.M).group(1)
    assert ours["DockerNamespace"] == re.search(r"^DOCKER_NS \?= (\S+)", files["docker-env.mk"], re.M).group(1)
