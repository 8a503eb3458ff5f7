"""The local provider: every role as processes on this machine, on loopback ports."""

from __future__ import annotations

import fcntl
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from .. import REPO_ROOT
from .base import Provider, groups_of

#: One local run at a time on this machine: every local run's components listen on the same loopback ports,
#: and two runs at once would also measure each other. Override with FABRICREPRO_LOCAL_LOCK (a file path).
LOCK_FILE = Path(os.environ.get("FABRICREPRO_LOCAL_LOCK") or Path(tempfile.gettempdir()) / "fabricrepro-local.lock")

_held = {"count": 0, "fd": None}   # this process's hold (re-entrant: a test may nest providers)
_held_guard = threading.Lock()


def acquire_machine(run_dir: Path, say=print, poll_s: float = 1.0) -> None:
    """Hold this machine for a local run, waiting (and saying whose run it waits for) while another holds it."""
    with _held_guard:
        if _held["count"]:
            _held["count"] += 1
            return
        LOCK_FILE.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(LOCK_FILE, os.O_CREAT | os.O_RDWR, 0o666)
        waited = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not waited:
                    holder = os.pread(fd, 4096, 0).decode(errors="replace").strip() or "unknown"
                    say(f"waiting for this machine: another local run holds it ({holder}; lock {LOCK_FILE})")
                    waited = True
                time.sleep(poll_s)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}, run {run_dir}".encode(), 0)
        _held.update(count=1, fd=fd)


def release_machine() -> None:
    """Give this machine back (idempotent)."""
    with _held_guard:
        if not _held["count"]:
            return
        _held["count"] -= 1
        if _held["count"] == 0:
            fd = _held["fd"]
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            _held["fd"] = None


class LocalProvider(Provider):
    """All roles on ``localhost`` with ``ansible_connection=local``."""

    name = "local"

    def __init__(self, work_root: Path | None = None, bin_dir: Path | None = None):
        self.work_root = Path(work_root or REPO_ROOT / "build" / "work")
        self.bin_dir = Path(bin_dir or REPO_ROOT / "bin")
        self.layout: dict[str, list[str]] = {}
        self._holds = False   # whether this provider holds the machine (up ... down)

    def hold(self, label: str) -> None:
        if not self._holds:
            acquire_machine(label)
            self._holds = True

    def up(self, layout: dict[str, list[str]], run_dir: Path) -> dict[str, list[str]]:
        self.hold(str(run_dir))
        self.layout = dict(layout)
        return groups_of(layout, {role: "localhost" for role in layout})

    def down(self) -> None:
        if self._holds:
            release_machine()
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
