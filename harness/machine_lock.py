"""One network at a time on this machine: the project's flock.

Every local run's components listen on the same loopback ports, and two networks at once would also
measure each other. The lock is held by a local run from its port checks to its end
(``harness/providers/local.py``), by ``invoke regress`` across each commit's measurements (one wait for a
re-measurement's alternating points), and by the tests that start networks (the ``network`` marker,
conftest.py). ``FABRICREPRO_NETWORK_LOCK`` names the file (default ``/tmp/fabricrepro-network.lock``; empty:
no lock).

It is re-entrant within a process, and a lock that this process or one of its ancestors already holds (a
test holding it while the run it starts takes it too; pytest wrapped in ``flock``) is not taken again: a
second flock on the file would wait for ever. A process that waits says whose run holds the machine.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from pathlib import Path

DEFAULT = "/tmp/fabricrepro-network.lock"

_held = {"count": 0, "fd": None}   # this process's hold
_waited = {"s": 0.0}   # seconds this process has spent waiting for another holder (waited_s)
_guard = threading.Lock()


def lock_path() -> Path | None:
    """The lock file (read when asked, so that a test may point it elsewhere); None when disabled."""
    value = os.environ.get("FABRICREPRO_NETWORK_LOCK", DEFAULT)
    return Path(value) if value else None


def held_here_or_above(path: Path) -> bool:
    """Whether this process or one of its ancestors holds the flock on ``path`` (/proc/locks)."""
    try:
        inode = path.stat().st_ino
        holders = {int(f[4]) for f in (line.split() for line in Path("/proc/locks").read_text().splitlines())
                   if len(f) > 5 and f[1] == "FLOCK" and f[5].rsplit(":", 1)[-1] == str(inode)}
        pid = os.getpid()
        while pid > 1:
            if pid in holders:
                return True
            stat = Path(f"/proc/{pid}/stat").read_text()
            pid = int(stat.rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return False
    return False


def acquire(label: str, say=print, poll_s: float = 1.0) -> None:
    """Hold the machine for ``label`` (what the holder is, shown to whoever waits), waiting while another
    process holds it."""
    with _guard:
        if _held["count"]:
            _held["count"] += 1
            return
        path = lock_path()
        if path is None or held_here_or_above(path):
            _held.update(count=1, fd=None)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o666)
        waited, began = False, time.monotonic()
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not waited:
                    holder = os.pread(fd, 4096, 0).decode(errors="replace").strip() or "a process that did not say"
                    say(f"waiting for this machine: another run holds it ({holder}; lock {path})")
                    waited = True
                time.sleep(poll_s)
        _waited["s"] += time.monotonic() - began
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}, {label}".encode(), 0)
        _held.update(count=1, fd=fd)


def release() -> None:
    """Give one hold back; the machine is free when the last is given back (idempotent)."""
    with _guard:
        if not _held["count"]:
            return
        _held["count"] -= 1
        if _held["count"] == 0 and _held["fd"] is not None:
            fd = _held["fd"]
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            _held["fd"] = None


def waited_s() -> float:
    """Seconds this process has waited so far for the machine while another process held it (a command's
    time estimates leave them out: they depend on who else runs, not on the plan)."""
    return _waited["s"]


def holds() -> int:
    """How many holds this process has (0: none)."""
    return _held["count"]


@contextlib.contextmanager
def machine(label: str, say=print):
    """Hold the machine for the block."""
    acquire(label, say)
    try:
        yield
    finally:
        release()
