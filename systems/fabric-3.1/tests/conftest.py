"""One upstream build of Fabric v3.1.5 for every test of this folder that runs its binaries.

``harness.upstream.build`` makes it once (about 3 min on 2 cores with a cold Go build cache) and then
reuses it from build/upstream/fabric-3.1/<key>/; FABRICREPRO_FABRIC31_BUILD names a build directory to use
instead. Skipped with the reason where no snapshot is at hand or Go is missing."""

import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness import upstream


@pytest.fixture(scope="session")
def fabric31_build():
    given = os.environ.get("FABRICREPRO_FABRIC31_BUILD")
    if given:
        path = Path(given)
        return SimpleNamespace(path=path, bin_dir=path / "bin",
                               info=json.loads((path / "build.json").read_text(encoding="utf-8")))
    if not shutil.which("go"):
        pytest.skip("go is not installed")
    why = upstream.source_available(upstream.load_recipe("fabric-3.1"), "snapshot")
    if why:
        pytest.skip(f"no upstream Fabric v3.1.5 to build: {why}")
    return upstream.build("fabric-3.1", "snapshot")
