"""Fixtures for the catalogue tests: the checks live in checks.py / seedtext.py."""

import sys
from pathlib import Path

# The helpers sit beside the tests; tests/ is not a package.
sys.path.insert(0, str(Path(__file__).resolve().parent))
