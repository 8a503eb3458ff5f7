"""The local provider: every role as processes on this machine, on loopback ports."""

from __future__ import annotations

import sys
from pathlib import Path

from .. import REPO_ROOT, machine_lock
from ..topology import Layout, as_layout
from .base import Provider, groups_of


class LocalProvider(Provider):
    """All hosts of the layout on ``localhost`` with ``ansible_connection=local`` (the run says so)."""

    name = "local"

    def __init__(self, work_root: Path | None = None, bin_dir: Path | None = None):
        self.work_root = Path(work_root or REPO_ROOT / "build" / "work")
        self.bin_dir = Path(bin_dir or REPO_ROOT / "bin")
        self.layout: dict[str, list[str]] = {}
        self._holds = False   # whether this provider holds the machine (up ... down)

    def hold(self, label: str, plan=None) -> None:
        # one network at a time on this machine (harness/machine_lock.py), from the run's port checks on
        if not self._holds:
            machine_lock.acquire(label)
            self._holds = True

    def place(self, layout: Layout) -> dict[str, str]:
        return {h.name: "localhost" for h in layout.hosts}

    def up(self, layout: Layout | dict[str, list[str]], run_dir: Path) -> dict[str, list[str]]:
        self.hold(str(run_dir))
        layout = as_layout(layout)
        self.layout = layout.roles()
        return groups_of(layout, self.place(layout))

    def down(self) -> None:
        if self._holds:
            machine_lock.release()
            self._holds = False

    def host_vars(self, host: str) -> dict:
        return {"ansible_connection": "local", "ansible_host": "127.0.0.1",
                "ansible_python_interpreter": sys.executable, "fabricrepro_address": "127.0.0.1",
                "fabricrepro_work_root": str(self.work_root), "fabricrepro_bin_dir": str(self.bin_dir)}

    def describe(self) -> dict:
        return {"provider": self.name, "hosts": {"localhost": {"ip": "127.0.0.1", "roles": sorted(self.layout)}}}

    def monitor_targets(self, groups: dict[str, list[str]]) -> list:
        from ..resources import local_targets
        return local_targets(sorted(self.layout) or sorted(groups))
