"""Fixtures of the harness tests: a small catalogue, a system and golden raw files."""

import shutil
from pathlib import Path

import pytest

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
