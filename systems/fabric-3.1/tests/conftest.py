"""One upstream build each of Fabric v3.1.5 and v2.5.16 (which extends this system and runs its smoke) for
every test of this folder that runs their binaries.

``harness.upstream.build`` makes it once and then reuses it from build/upstream/<system>/<key>/;
FABRICREPRO_FABRIC31_BUILD / FABRICREPRO_FABRIC25_BUILD name a build directory to use instead. Skipped
with the reason where no snapshot is at hand or Go is missing. FABRICREPRO_BUILD_TODAYS_FABRIC chooses
what is built: unset, both releases (v3.1 about 5 min on 2 cores with a cold Go cache, v2.5 3.5 min more),
for one end-to-end smoke point per release in CI; ``3.1`` v3.1 only; ``0`` neither. ``all`` (or ``1``)
builds both and also runs the long opt-in tests (labs, CouchDB, catch-up, revisits)."""

import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness import upstream


#: Why a build of today's Fabric is skipped unless asked for.
OPT_IN = ("builds Fabric v{release} from source (about 3.5-5 min on 2 cores), and FABRICREPRO_BUILD_TODAYS_FABRIC="
          "{choice!r} leaves it out: unset it, or set FABRICREPRO_FABRIC31_BUILD/FABRICREPRO_FABRIC25_BUILD to a build")


def wanted(system: str) -> bool:
    """Whether FABRICREPRO_BUILD_TODAYS_FABRIC asks for this system's build (see the module's doc)."""
    choice = os.environ.get("FABRICREPRO_BUILD_TODAYS_FABRIC", "")
    return choice in ("", "1", "all") or (choice == "3.1" and system == "fabric-3.1")


def todays_build(system: str, release: str, given_env: str):
    """The one build of ``system`` these tests share: the directory ``given_env`` names, else built from
    the snapshot when FABRICREPRO_BUILD_TODAYS_FABRIC asks for it; skipped with the reason otherwise."""
    given = os.environ.get(given_env)
    if given:
        path = Path(given)
        return SimpleNamespace(path=path, bin_dir=path / "bin",
                               info=json.loads((path / "build.json").read_text(encoding="utf-8")))
    if not wanted(system):
        pytest.skip(OPT_IN.format(release=release, choice=os.environ.get("FABRICREPRO_BUILD_TODAYS_FABRIC")))
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
