"""An interrupt during a point's teardown (harness/measure.py): the teardown, which stops what the point
started, runs to its end, the measurement is recorded, and only then does the run stop (Interrupted).
Before this, a Ctrl-C in the teardown left Kafka, ZooKeeper, the orderer and the peer running."""

import os
import signal
import threading

import pytest

from harness import measure
from harness.errors import Interrupted
from harness.rundir import interrupts_deferred, interrupts_raise, read_json


class FakeRun:
    """TEST DOUBLE of a run directory: only what measure_point reads."""
    def __init__(self, root):
        self.root, self.metadata = root, {"provider": "local"}

    def point_dir(self, point_id):
        path = self.root / "points" / point_id
        path.mkdir(parents=True, exist_ok=True)
        return path


class FakeWatch:
    """TEST DOUBLE of the point's watcher: nothing fails."""
    def __init__(self, *args, **kwargs):
        self.log = None

    def start(self):
        pass

    def check(self):
        pass

    def settle(self):
        return None

    def stop(self):
        pass


def test_an_interrupt_in_the_teardown_waits_for_it_then_stops_the_run(tmp_path, monkeypatch):
    played = []

    def fake_playbook(playbook, inventory, variables, log, timeout=None, poll=None, tags=None):
        """TEST DOUBLE of ansible-playbook: the teardown is interrupted half way (a Ctrl-C), then finishes."""
        played.append(playbook)
        if playbook == "teardown.yml":
            os.kill(os.getpid(), signal.SIGINT)
            played.append("teardown finished")

    monkeypatch.setattr(measure, "run_playbook", fake_playbook)
    monkeypatch.setattr(measure, "PointWatch", FakeWatch)
    monkeypatch.setattr(measure, "inventory_hosts", lambda inventory: [])
    monkeypatch.setattr(measure.cpus, "read_back", lambda point_dir: None)
    run = FakeRun(tmp_path)
    point = {"id": "p__r0", "parameters": {"point_timeout_s": 10}}
    with interrupts_raise(), pytest.raises(Interrupted, match="SIGINT"):
        measure.measure_point(run, point, {"playbook": "x.yml"}, tmp_path / "inventory.yml", {}, [])
    assert played == ["x.yml", "teardown.yml", "teardown finished"]
    measured = read_json(tmp_path / "points" / "p__r0" / "measurement.json")
    assert measured["status"] == "complete"  # the point ran to its end; the run stops after it


def test_deferred_signals_are_noted_and_the_handlers_restored():
    said = []
    with interrupts_raise():
        with interrupts_deferred(said.append) as got:
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGTERM)
        assert got == ["SIGINT", "SIGTERM"] and len(said) == 1
        # negative control: outside the block an interrupt raises again
        with pytest.raises(Interrupted):
            os.kill(os.getpid(), signal.SIGINT)


def test_outside_the_main_thread_nothing_is_deferred():
    out = {}

    def body():
        with interrupts_deferred() as got:
            out["got"] = got
    worker = threading.Thread(target=body)
    worker.start()
    worker.join(5)
    assert out["got"] == []
