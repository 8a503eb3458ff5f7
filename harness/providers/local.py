"""The local provider: every role as processes on this machine, on loopback ports."""

from __future__ import annotations

import sys
from pathlib import Path

from .. import REPO_ROOT
from .base import Provider, groups_of


class LocalProvider(Provider):
    """All roles on ``localhost`` with ``ansible_connection=local``."""

    name = "local"

    def __init__(self, work_root: Path | None = None, bin_dir: Path | None = None):
        self.work_root = Path(work_root or REPO_ROOT / "build" / "work")
        self.bin_dir = Path(bin_dir or REPO_ROOT / "bin")
        self.layout: dict[str, list[str]] = {}

    def up(self, layout: dict[str, list[str]], run_dir: Path) -> dict[str, list[str]]:
        self.layout = dict(layout)
        return groups_of(layout, {role: "localhost" for role in layout})

    def host_vars(self, host: str) -> dict:
        return {"ansible_connection": "local", "ansible_host": "127.0.0.1",
                "ansible_python_interpreter": sys.executable, "fabricrepro_address": "127.0.0.1",
                "fabricrepro_work_root": str(self.work_root), "fabricrepro_bin_dir": str(self.bin_dir)}

    def describe(self) -> dict:
        return {"provider": self.name, "hosts": {"localhost": {"ip": "127.0.0.1", "roles": sorted(self.layout)}}}

    def monitor_targets(self, groups: dict[str, list[str]]) -> list:
        from ..resources import local_targets
        return local_targets(sorted(self.layout) or sorted(groups))
