"""One network at a time on a machine (harness/machine_lock.py), which a local run holds from its port checks
to its end (harness/providers/local.py): a second run waits, saying whose run holds the machine; a process
whose ancestor holds it (a test, then the run it starts) does not wait for itself."""

import subprocess
import sys
import threading
import time

import pytest

from harness import REPO_ROOT, machine_lock
from harness.providers import local

#: Another process trying the lock without waiting: "took", or "held" and what the holder wrote.
PROBE = ("import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR)\n"
         "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB); print('took')\n"
         "except BlockingIOError:\n    print('held', os.pread(fd, 200, 0).decode())")


@pytest.fixture
def lock(tmp_path, monkeypatch):
    """The lock in a file of this test's own, and no hold of this process's left from another test."""
    path = tmp_path / "network.lock"
    monkeypatch.setenv("FABRICREPRO_NETWORK_LOCK", str(path))
    assert machine_lock.holds() == 0, "a hold of this process outlived its test"
    yield path
    while machine_lock.holds():
        machine_lock.release()


def _probe(path) -> str:
    return subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True).stdout.strip()


def test_a_second_run_cannot_take_the_machine_until_the_first_is_down(lock, tmp_path):
    first = local.LocalProvider(work_root=tmp_path / "w")
    first.hold("fastfabric table1-today-raft")  # the port checks
    first.up({"peer": ["peer"]}, tmp_path / "run-a")  # the run: the same hold
    assert machine_lock.holds() == 1
    held = _probe(lock)
    assert held.startswith("held") and "fastfabric table1-today-raft" in held
    first.down()
    assert _probe(lock) == "took" and machine_lock.holds() == 0  # negative control: after down, free
    first.down()  # idempotent


def test_the_waiting_run_says_whose_run_it_waits_for(lock, tmp_path):
    holder = subprocess.Popen([sys.executable, "-c",
                               "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR);"
                               "fcntl.flock(fd, fcntl.LOCK_EX); os.pwrite(fd, b'pid 1, run other', 0);"
                               "print('ready', flush=True); time.sleep(30)", str(lock)],
                              stdout=subprocess.PIPE, text=True)
    said, done = [], threading.Event()
    waited_before = machine_lock.waited_s()
    try:
        assert holder.stdout.readline().strip() == "ready"
        waiter = threading.Thread(target=lambda: (machine_lock.acquire("mine", said.append, 0.05), done.set()))
        waiter.start()
        time.sleep(0.5)
        assert not done.is_set() and said and "run other" in said[0]
    finally:
        holder.kill()
        holder.wait()
    waiter.join(10)
    assert done.is_set() and machine_lock.holds() == 1
    # the wait is counted (at least the 0.5 s the holder kept it), so a run's estimates can leave it out
    assert machine_lock.waited_s() - waited_before >= 0.5


def test_a_runs_command_timing_leaves_out_the_wait_for_the_machine_and_the_builds(monkeypatch):
    """reproduce records prepared_s for the report's estimates (glance.py): 30 s of the command's 100 were a
    wait for another run and 50 s builds, so 20 s are what a later run of the plan spends preparing."""
    from harness import reproduce
    monkeypatch.setattr(machine_lock, "_waited", {"s": 40.0})   # 10 s before the command began, 30 s in it
    monkeypatch.setattr(reproduce.time, "monotonic", lambda: 1100.0)
    assert reproduce._command_timing(1000.0, 10.0, 50.0) == {"prepared_s": 20.0, "waited_s": 30.0, "built_s": 50.0}


def test_a_process_whose_ancestor_holds_the_machine_does_not_wait_for_it(lock):
    """A test holds the lock and starts `invoke reproduce`: the run must not wait for its own parent."""
    child = ("from harness import machine_lock; machine_lock.acquire('child', poll_s=0.05); "
             "print('acquired', machine_lock.holds())")
    with machine_lock.machine("the test"):
        out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=20,
                             cwd=REPO_ROOT)
        assert out.stdout.strip() == "acquired 1", out.stderr
        assert machine_lock.holds() == 1
        with machine_lock.machine("a run inside the test"):  # re-entrant within the process
            assert machine_lock.holds() == 2
    assert machine_lock.holds() == 0 and _probe(lock) == "took"


def test_an_empty_setting_takes_no_lock(monkeypatch, tmp_path):
    monkeypatch.setenv("FABRICREPRO_NETWORK_LOCK", "")
    with machine_lock.machine("no lock"):
        assert machine_lock.holds() == 1
    assert machine_lock.holds() == 0
