"""One local run at a time on a machine (harness/providers/local.py): a second local provider's ``up`` waits,
saying whose run holds the machine, until the first is ``down``."""

import subprocess
import sys
import threading
import time

from harness.providers import local


def test_a_second_local_run_waits_until_the_first_is_down(tmp_path, monkeypatch):
    monkeypatch.setattr(local, "LOCK_FILE", tmp_path / "local.lock")
    first = local.LocalProvider(work_root=tmp_path / "w")
    first.up({"peer": ["peer"]}, tmp_path / "run-a")
    # another process (a second `invoke reproduce`) cannot take the machine while the first holds it
    probe = ("import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR)\n"
             "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB); print('took')\n"
             "except BlockingIOError:\n    print('held', os.pread(fd, 200, 0).decode())")
    held = subprocess.run([sys.executable, "-c", probe, str(local.LOCK_FILE)], capture_output=True, text=True)
    assert held.stdout.startswith("held") and "run-a" in held.stdout
    first.down()
    free = subprocess.run([sys.executable, "-c", probe, str(local.LOCK_FILE)], capture_output=True, text=True)
    assert free.stdout.strip() == "took"  # negative control: after down, the machine is free
    first.down()  # idempotent


def test_the_waiting_run_says_whose_run_it_waits_for(tmp_path, monkeypatch):
    monkeypatch.setattr(local, "LOCK_FILE", tmp_path / "local.lock")
    holder = subprocess.Popen([sys.executable, "-c",
                               "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR);"
                               "fcntl.flock(fd, fcntl.LOCK_EX); os.pwrite(fd, b'pid 1, run other', 0);"
                               "print('ready', flush=True); time.sleep(30)", str(local.LOCK_FILE)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        said, done = [], threading.Event()
        waiter = threading.Thread(target=lambda: (local.acquire_machine(tmp_path / "mine", said.append, 0.05),
                                                  done.set()))
        waiter.start()
        time.sleep(0.5)
        assert not done.is_set() and said and "run other" in said[0]
    finally:
        holder.kill()
        holder.wait()
    waiter.join(10)
    assert done.is_set()
    local.release_machine()


def test_the_run_holds_the_machine_from_its_checks_on(tmp_path, monkeypatch):
    """``hold`` (before the port checks) and ``up`` (the run) take the machine once; ``down`` frees it."""
    monkeypatch.setattr(local, "LOCK_FILE", tmp_path / "local.lock")
    provider = local.LocalProvider(work_root=tmp_path / "w")
    provider.hold("fastfabric table1-today-raft")
    provider.up({"peer": ["peer"]}, tmp_path / "run-a")
    assert local._held["count"] == 1
    provider.down()
    assert local._held["count"] == 0
