"""Issue 24 item 2: the watcher of a running point (harness/watch.py, the process role's process_watch module).

The module's logic on files laid out as the process role lays them out; then, on
the local provider with the reference build (bin/), a peer killed during the
measured window and an orderer whose port is taken each fail the point within
seconds, naming component and host. Each prints the detection delay it measured.
"""

import importlib.util
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest

from harness import logscan, validity

REPO = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location(
    "process_watch", REPO / "playbooks" / "roles" / "process" / "library" / "process_watch.py")
process_watch = importlib.util.module_from_spec(spec)
spec.loader.exec_module(process_watch)

FATAL = validity.fatal_patterns("fabric-1.2")


def component(work: Path, name: str, mode: str = "background", log_name: str | None = None,
              instance: str | None = None) -> Path:
    """A component's folder as the process role leaves it: marker, PID file (this test's own PID: alive)."""
    folder = work / name / instance if instance else work / name
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{name}.watch", "a") as f:
        f.write(f"{mode} {log_name or name}\n")
    (folder / f"{name}.pid").write_text(f"{os.getpid()}\n")
    (folder / f"{log_name or name}.log").write_text("")
    return folder


def test_a_healthy_component_is_quiet_and_its_fatal_line_is_named(tmp_path):
    peer = component(tmp_path, "peer")
    watch = process_watch.HostWatch(str(tmp_path), "peer1", FATAL)
    (peer / "peer.log").write_text("2026-11-27 10:00:00.000 UTC [nodeCmd] serve -> INFO 001 Starting peer\n")
    assert watch.look() is None
    with open(peer / "peer.log", "a") as f:  # a line written in two pieces is matched once whole
        f.write("panic: runtime error: invalid memory ")
    assert watch.look() is None
    with open(peer / "peer.log", "a") as f:
        f.write("address\n")
    found = watch.look()
    assert found["component"] == "peer" and found["log"] == "peer.log"
    assert found["msg"].startswith("component peer on host peer1 logged a fatal line (go_panic")
    assert found["line"] == "panic: runtime error: invalid memory address"


def test_a_taken_port_is_fatal(tmp_path):
    orderer = component(tmp_path, "orderer")
    (orderer / "orderer.log").write_text("Error: listen tcp 127.0.0.1:7050: bind: address already in use\n")
    found = process_watch.HostWatch(str(tmp_path), "h", FATAL).look()
    assert "bind_address_in_use" in found["msg"] and found["component"] == "orderer"


def test_an_exit_is_named_with_its_signal_and_last_line(tmp_path):
    peer = component(tmp_path, "peer")
    watch = process_watch.HostWatch(str(tmp_path), "h", FATAL)
    (peer / "peer.log").write_text("committed block 7\n\n")
    assert watch.look() is None
    (peer / "peer.exit").write_text("137\n")
    found = watch.look()
    assert found["msg"] == ("component peer on host h killed by SIGKILL (status 137); "
                            "last line of peer.log: committed block 7")


def test_status_zero_and_a_stop_on_purpose_are_not_failures(tmp_path):
    blockwatch = component(tmp_path, "blockwatch")
    (blockwatch / "blockwatch.exit").write_text("0\n")  # it stops by itself after its last block
    orderer = component(tmp_path, "orderer")
    (orderer / "orderer.watch").unlink()  # process role stop: the marker goes before the signal
    (orderer / "orderer.exit").write_text("143\n")
    assert process_watch.HostWatch(str(tmp_path), "h", FATAL).look() is None


def test_a_dead_pid_without_status_is_reported_after_a_grace(tmp_path):
    node = component(tmp_path, "bftsmart_node", log_name="bftsmart_node-0", instance="node0")
    dead = subprocess.Popen(["true"])
    dead.wait()
    (node / "bftsmart_node.pid").write_text(f"{dead.pid}\n")
    watch = process_watch.HostWatch(str(tmp_path), "h", FATAL)
    looks = [watch.look() for _ in range(process_watch.NO_STATUS_GRACE_LOOKS + 1)]
    assert looks[:-1] == [None] * process_watch.NO_STATUS_GRACE_LOOKS
    assert looks[-1]["component"] == "bftsmart_node-0" and "no exit status recorded" in looks[-1]["msg"]


def test_a_completed_command_is_only_read(tmp_path):
    loadgen = component(tmp_path, "loadgen", mode="completion", log_name="loadgen-setup")
    (loadgen / "loadgen.pid").unlink()  # the process role forgets it once it has exited
    (loadgen / "loadgen-setup.out").write_text('{"sent": 3}\n')
    watch = process_watch.HostWatch(str(tmp_path), "h", FATAL)
    assert watch.look() is None
    (loadgen / "loadgen-setup.log").write_text("fatal error: concurrent map writes\n")
    assert watch.look()["msg"].startswith("component loadgen-setup on host h logged a fatal line (go_fatal_error")


def test_a_pattern_keeps_to_its_components(tmp_path):
    storage = component(tmp_path, "fastfabric_storage")
    only_peer = [{"name": "x", "regex": "boom", "meaning": "m", "components": ["peer"]}]
    (storage / "fastfabric_storage.log").write_text("boom\n")
    assert process_watch.HostWatch(str(tmp_path), "h", only_peer).look() is None


def test_the_watch_ends_when_the_teardown_removes_the_directory(tmp_path):
    work = tmp_path / "point"
    watch = process_watch.HostWatch(str(work), "h", FATAL)
    assert watch.look() is None and not watch.ended()  # not made yet: keep waiting
    work.mkdir()
    assert watch.look() is None and not watch.ended()
    work.rmdir()
    assert watch.ended()


def test_the_watch_ends_when_its_connection_is_gone(tmp_path):
    """The module as Ansible runs it, under a parent that exits (a playbook stopped over ssh): it ends."""
    work = tmp_path / "point"
    component(work, "peer")
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {
        "work_dir": str(work), "host": "h", "patterns": [], "interval_s": 0.1, "deadline_s": 60}}))
    out = tmp_path / "module.out"
    module = REPO / "playbooks" / "roles" / "process" / "library" / "process_watch.py"
    # The parent starts the module, writes its PID and exits once the module runs: the module is orphaned.
    subprocess.run(["sh", "-c", '"$0" "$1" "$2" > "$3" 2>&1 & echo $! > "$4"; sleep 2', sys.executable, str(module),
                    str(args), str(out), str(tmp_path / "module.pid")], check=True, timeout=10)
    pid = int((tmp_path / "module.pid").read_text())
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and '"ended"' not in (out.read_text() if out.exists() else ""):
        time.sleep(0.1)
    result = json.loads(out.read_text().strip().splitlines()[-1])
    assert result["ended"] == "its connection is gone" and result["watched_s"] < 10
    with pytest.raises(ProcessLookupError):
        for _ in range(50):
            os.kill(pid, 0)
            time.sleep(0.1)


def test_fatal_patterns_are_the_common_ones_and_the_systems():
    names = [p["name"] for p in validity.fatal_patterns("fabric-1.2")]
    assert {"go_panic", "go_fatal_error", "java_uncaught_exception", "bind_address_in_use", "log4j_fatal"} <= set(names)
    systems = [p for p in validity.fatal_patterns("fabric-1.2") if "CRIT" in p["regex"]]
    assert systems, "fabric-1.2's go_panic (flogging's PANI/CRIT lines) is fatal too"
    assert all(set(p) <= {"name", "regex", "meaning", "components", "components_except"} for p in systems)


def _when(utc: str) -> float:
    return datetime.fromisoformat(utc.replace("Z", "+00:00")).timestamp()


def _table1_point(tmp_path: Path, on_work, provider: str = "local") -> dict:
    """fastfabric's Table I end-to-end point at smoke on ``provider`` with the reference build, while
    ``on_work(folder)`` runs in a thread (the hosts' working directories are under ``folder``: the local
    provider's work root, the netns hosts' folders in the run directory); returns the point's summary."""
    from harness.reproduce import reproduce
    from harness.rundir import Run

    work = tmp_path / "work"
    thread = threading.Thread(target=on_work, args=(tmp_path,), daemon=True)
    thread.start()
    started = time.monotonic()
    (run,) = reproduce("fastfabric", "table1-end-to-end", scale="smoke", repeat=1, provider=provider,
                       build="reference", results=tmp_path / "results", reports=tmp_path / "reports",
                       stream=io.StringIO(), provider_options={"work_root": work}, controls=False)
    thread.join(5)
    assert Run.open(run.path).metadata["status"] == "failed"
    (point,) = (run.path / "points").iterdir()
    summary = json.loads((point / "summary.json").read_text())
    summary["_wall_s"] = time.monotonic() - started
    assert not list(tmp_path.rglob("*.pid")), "teardown leaves no working files"
    progress_log = (run.path / "progress.log").read_text()
    assert "role orderer on " in progress_log and "teardown: " in progress_log
    return summary


def _wait_for(predicate, limit_s: float = 600):
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        found = predicate()
        if found:
            return found
        time.sleep(0.1)
    return None


@pytest.mark.skipif(shutil.which("ansible-playbook") is None, reason="needs ansible-playbook")
@pytest.mark.parametrize("provider, peer_host", [
    pytest.param("local", "localhost", marks=pytest.mark.network),
    # one namespace host per role, reached over SSH: the watcher runs there through the same channel
    pytest.param("netns", "peer", marks=pytest.mark.netns)])
def test_a_peer_killed_in_the_measured_window_fails_the_point_within_seconds(tmp_path, provider, peer_host):
    if not all((REPO / "bin" / c).exists() for c in ("orderer", "peer", "loadgen", "blockwatch")):
        pytest.skip("needs the reference build in bin/ (invoke build)")
    killed = {}

    def kill_the_peer_when_transfers_start(work: Path):
        # the measured window: the load generator's transfer phase has started (its log exists)
        found = _wait_for(lambda: list(work.rglob("loadgen/loadgen.log")) and list(work.rglob("peer/peer.pid")))
        if found:
            pid = int(found[0].read_text())
            os.kill(pid, signal.SIGKILL)
            killed["at"], killed["pid"] = time.time(), pid

    summary = _table1_point(tmp_path, kill_the_peer_when_transfers_start, provider)
    assert killed, "the transfer phase never started"
    assert summary["status"] == "failed" and summary["partial"] is True and summary["metrics"] == {}
    assert summary["watch"]["component"] == "peer" and summary["watch"]["host"] == peer_host, summary
    assert summary["reason"].startswith(f"component peer on host {peer_host} killed by SIGKILL"), summary["reason"]
    delay = _when(summary["watch"]["detected_utc"]) - killed["at"]
    print(f"\n{provider}: killed peer {killed['pid']}: detected after {delay:.2f} s; point wall {summary['_wall_s']:.1f} s"
          f"\nreason: {summary['reason']}")
    assert 0 <= delay <= 10


@pytest.mark.network
@pytest.mark.skipif(shutil.which("ansible-playbook") is None, reason="needs ansible-playbook")
def test_a_taken_port_fails_the_point_at_once(tmp_path, monkeypatch):
    """The orderer's port held by another listener. The preflight would refuse the run; it is switched off
    here (a TEST DOUBLE of harness.preflight.check) to see the watcher catch the orderer's bind failure."""
    if not all((REPO / "bin" / c).exists() for c in ("orderer", "peer", "loadgen", "blockwatch")):
        pytest.skip("needs the reference build in bin/ (invoke build)")
    monkeypatch.setattr("harness.preflight.check", lambda *a, **k: None)
    holder = socket.socket()
    holder.bind(("127.0.0.1", 7050))
    holder.listen()
    seen = {}

    def note_the_bind_failure(work: Path):
        def logged():
            for log in work.rglob("orderer/orderer.log"):
                if "address already in use" in log.read_text(errors="replace"):
                    return True
            return False
        if _wait_for(logged):
            seen["at"] = time.time()

    try:
        summary = _table1_point(tmp_path, note_the_bind_failure)
    finally:
        holder.close()
    assert summary["status"] == "failed" and summary["watch"]["component"] == "orderer", summary
    assert "bind_address_in_use" in summary["reason"] and "on host localhost" in summary["reason"]
    assert "address already in use" in summary["watch"]["line"]
    delay = _when(summary["watch"]["detected_utc"]) - seen["at"]
    print(f"\norderer's bind failure: detected after {delay:.2f} s; point wall {summary['_wall_s']:.1f} s"
          f"\nreason: {summary['reason']}")
    assert delay <= 10


def test_no_common_fatal_pattern_matches_a_healthy_line():
    """The healthy lines of every system's validity test (BFT-SMaRt's start-up traces, Fabric's DEBUG lines...)."""
    import re

    from tests.harness.test_validity_patterns import HEALTHY
    common = [p for p in logscan.COMMON_PATTERNS if p.get("fatal")]
    for system, lines in HEALTHY.items():
        for p in common:
            assert not any(re.search(p["regex"], line) for line in lines), (system, p["name"])
