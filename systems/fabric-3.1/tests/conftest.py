"""One upstream build each of Fabric v3.1.5 and v2.5.16 (which extends this system and runs its smoke) for
every test of this folder that runs their binaries.

``harness.upstream.build`` makes it once (about 3 min on 2 cores with a cold Go build cache) and then
reuses it from build/upstream/fabric-3.1/<key>/; FABRICREPRO_FABRIC31_BUILD names a build directory to use
instead. Skipped with the reason where no snapshot is at hand or Go is missing, and unless
FABRICREPRO_BUILD_TODAYS_FABRIC=1 asks for the build: on a fresh machine it adds about 5 min (v3.1) and
3.5 min (v2.5) on 2 cores, which CI's time budget (under 45 min in all) does not have yet."""

import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness import upstream


#: Why the tests that build today's Fabric are skipped unless asked for.
OPT_IN = ("builds Fabric v3.1.5/v2.5.16 from source (about 5 and 3.5 min on 2 cores), outside CI's time budget: "
          "set FABRICREPRO_BUILD_TODAYS_FABRIC=1, or FABRICREPRO_FABRIC31_BUILD/FABRICREPRO_FABRIC25_BUILD to a build")


def todays_build(system: str, release: str, given_env: str):
    """The one build of ``system`` these tests share: the directory ``given_env`` names, else built from
    the snapshot when FABRICREPRO_BUILD_TODAYS_FABRIC=1 asks for it; skipped with the reason otherwise."""
    given = os.environ.get(given_env)
    if given:
        path = Path(given)
        return SimpleNamespace(path=path, bin_dir=path / "bin",
                               info=json.loads((path / "build.json").read_text(encoding="utf-8")))
    if os.environ.get("FABRICREPRO_BUILD_TODAYS_FABRIC") != "1":
        pytest.skip(OPT_IN)
    if not shutil.which("go"):
        pytest.skip("go is not installed")
    why = upstream.source_available(upstream.load_recipe(system), "snapshot")
    if why:
        pytest.skip(f"no upstream Fabric v{release} to build: {why}")
    return upstream.build(system, "snapshot")


@pytest.fixture(scope="session")
def fabric31_build():
    return todays_build("fabric-3.1", "3.1.5", "FABRICREPRO_FABRIC31_BUILD")


@pytest.fixture(scope="session")
def fabric25_build():
    return todays_build("fabric-2.5", "2.5.16", "FABRICREPRO_FABRIC25_BUILD")
