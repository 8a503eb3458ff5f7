"""Fixtures of the harness tests: a small catalogue, a system and golden raw files."""

import io
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.network_lock import network_lock

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FAKEBIN = Path(__file__).resolve().parent / "fakebin"


@pytest.fixture
def root(tmp_path) -> Path:
    """A copy of the fixture tree (papers/, systems/) that a test may change."""
    dest = tmp_path / "root"
    shutil.copytree(FIXTURES, dest)
    return dest


@pytest.fixture
def mini(root):
    """The validated fixture paper ``mini``."""
    from harness.catalogue import load_paper
    return load_paper("mini", root / "papers")


@pytest.fixture(scope="session")
def failed_then_resumed(tmp_path_factory, request):
    """The fixture paper's ``bench`` at smoke scale on the TEST DOUBLE of bin/ (real ansible-playbook, local
    provider): a run whose 2 points both fail (FAKE_FAIL=1), then ``resume`` of that run without FAKE_FAIL.
    Made once per session; test_spine.py and test_attempts.py each assert their part of it.

    Returns ``root`` (the copy of the fixture tree it ran), ``run`` (the run directory after the resume),
    ``failed`` (a copy of that directory as the failed run left it, before the resume), ``results``,
    ``reports`` and ``work`` (the local provider's work root)."""
    from harness.reproduce import reproduce
    base = tmp_path_factory.mktemp("failed-then-resumed")
    root = base / "root"
    shutil.copytree(FIXTURES, root)

    def go(**kw):
        return reproduce("mini", "bench", scale="smoke", repeat=1, overrides={"batch_timeout_ms": 100},
                         results=base / "results", reports=base / "reports", stream=io.StringIO(),
                         provider_options={"bin_dir": FAKEBIN, "work_root": base / "work"},
                         papers_dir=root / "papers", **kw)
    # network: the double's commands listen on the catalogue's fixed ports, like a real network
    with pytest.MonkeyPatch.context() as mp, network_lock(request.config):
        mp.setattr("harness.plan.REPO_ROOT", root)
        mp.setenv("FAKE_FAIL", "1")
        (run,) = go()
        failed = shutil.copytree(run.path, base / "failed", symlinks=True)
        mp.delenv("FAKE_FAIL")
        go(resume=str(run.path))
    return SimpleNamespace(root=root, run=run.path, failed=failed, results=base / "results",
                           reports=base / "reports", work=base / "work")
