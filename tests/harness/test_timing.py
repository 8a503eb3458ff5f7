"""A point's timing (harness/timing.py): the callback's task starts split into plays and roles, and the
measured window they are compared with."""

import json
import sys
import time

import pandas as pd
import pytest

from harness import deploy, timing


def _lines(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_plays_and_roles_add_up_to_the_wall_time(tmp_path):
    path = tmp_path / "ansible-run.timings.jsonl"
    _lines(path, [
        {"t": 100.0, "playbook": "launched"},
        {"t": 102.0, "play": "Start Kafka", "role": None, "task": None},
        {"t": 102.5, "play": "Start Kafka", "role": "kafka", "task": "Write the config"},
        {"t": 103.0, "play": "Start Kafka", "role": "process", "task": "Start kafka in the background"},
        {"t": 110.0, "play": "Start Kafka", "role": "kafka", "task": "Wait until each broker listens"},
        {"t": 115.0, "play": "Wait", "role": None, "task": None},
        {"t": 115.0, "play": "Wait", "role": None, "task": "Wait for the block watcher"},
        {"t": 120.0, "playbook": "exited"},
    ])
    out = timing.playbook_times(path)
    assert out["wall_s"] == 20.0 and out["startup_s"] == 2.0
    assert out["plays"] == [{"play": "Start Kafka", "s": 13.0}, {"play": "Wait", "s": 5.0}]
    # The process role's task (start the broker) is Kafka's time, as the progress line shows it.
    assert out["roles"] == {"kafka": 12.5}
    assert out["startup_s"] + sum(p["s"] for p in out["plays"]) == out["wall_s"]


def test_a_killed_playbook_keeps_what_it_wrote(tmp_path):
    path = tmp_path / "t.jsonl"
    _lines(path, [{"t": 0.5, "playbook": "launched"}, {"t": 1.0, "play": "P", "role": None, "task": None}])
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"t": 2.')  # the callback killed mid-line
    timing.mark_playbook(path, "exited")
    out = timing.playbook_times(path)
    assert out["startup_s"] == 0.5 and out["plays"][0]["play"] == "P"
    assert out["startup_s"] + out["plays"][0]["s"] == out["wall_s"] > 0.5
    # A harness killed before it could write "exited": the wall time ends at the last line it has.
    cut = tmp_path / "cut.jsonl"
    _lines(cut, [{"t": 0.5, "playbook": "launched"}, {"t": 1.0, "play": "P", "role": None, "task": None},
                 {"t": 4.0, "play": "P", "role": "r", "task": "T"}])
    assert timing.playbook_times(cut)["wall_s"] == 3.5
    assert timing.playbook_times(tmp_path / "none.jsonl") == {"wall_s": 0.0, "startup_s": 0.0, "plays": [], "roles": {}}


def test_measured_window_and_wall_over_it():
    blocks = pd.DataFrame({"block_number": [5, 6, 7], "tx_count": [100, 100, 0], "valid_count": [100, 100, 0],
                           "received_ns": [1_000_000_000, 1_400_000_000, 9_000_000_000],
                           "committed_ns": [1_500_000_000, 3_000_000_000, 9_500_000_000]})
    assert timing.measured_window_s({"blocks": blocks}) == 2.0  # the empty block 7 is not measured
    assert timing.measured_window_s({}) is None
    t = timing.with_window(timing.point_timing(30.0, {}, 1.25), 2.0)
    assert t["measured_window_s"] == 2.0 and t["wall_over_window"] == 15.0 and t["collect_s"] == 1.25
    assert timing.with_window(timing.point_timing(30.0, {}, 0), None)["wall_over_window"] is None


def test_the_callback_writes_each_start_of_a_real_playbook(tmp_path):
    role = tmp_path / "roles" / "slow"
    (role / "tasks").mkdir(parents=True)
    (role / "tasks" / "main.yml").write_text(
        "- name: Take a while\n  ansible.builtin.command: sleep 0.6\n  changed_when: false\n", encoding="utf-8")
    playbook = tmp_path / "p.yml"
    playbook.write_text(
        "- name: First\n  hosts: localhost\n  gather_facts: false\n  roles: [slow]\n"
        "- name: Second\n  hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - name: Quick\n      ansible.builtin.debug: {msg: hi}\n", encoding="utf-8")
    inventory = tmp_path / "inventory.ini"
    inventory.write_text(f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}\n",
                         encoding="utf-8")
    started = time.time()
    deploy.run_playbook(str(playbook), inventory, {}, tmp_path / "run.log", timeout=120)
    ended = time.time()
    path = timing.timings_path(tmp_path / "run.log")
    out = timing.playbook_times(path)
    # The harness's own launch and exit lines bound the playbook's wall time.
    assert out["wall_s"] == pytest.approx(ended - started, abs=0.3)
    assert out["startup_s"] + sum(p["s"] for p in out["plays"]) == pytest.approx(out["wall_s"], abs=0.05)
    assert [p["play"] for p in out["plays"]] == ["First", "Second"]
    assert out["roles"]["slow"] >= 0.6
    assert {"play": "First", "role": "slow", "task": "Take a while"}.items() <= timing.read_starts(path)[1].items()


def test_the_report_shows_each_points_time_split(tmp_path):
    from types import SimpleNamespace

    from harness.report import points

    run_dir = tmp_path / "20261127T000000Z-abc"
    timed = run_dir / "points" / "fabric-1.2__r0"
    timed.mkdir(parents=True)
    (timed / "summary.json").write_text(json.dumps({"schema_version": 1, "point": "fabric-1.2__r0", "timing": {
        "wall_s": 82.2, "measured_window_s": 1.06, "wall_over_window": 77.7, "collect_s": 0.05,
        "run": {"wall_s": 62.8, "startup_s": 0.5, "plays": [], "roles": {"kafka": 10.1, "fabric_channel": 13.1}},
        "teardown": {"wall_s": 19.3, "startup_s": 0.4, "plays": [], "roles": {}}}}), encoding="utf-8")
    untimed = run_dir / "points" / "old__r0"  # recorded before timing: left out, not shown as zeros
    untimed.mkdir(parents=True)
    (untimed / "summary.json").write_text(json.dumps({"schema_version": 1, "point": "old__r0"}), encoding="utf-8")
    blocks = points.timing_blocks([SimpleNamespace(path=run_dir)])
    (_, headers, rows), = [b for b in blocks if b[0] == "table"]
    assert rows == [["fabric-1.2__r0", "82.2", "1.06", "77.7", "0.5", "62.8", "19.3", "0.05",
                     "fabric_channel 13.1, kafka 10.1"]]
    assert headers[:4] == ["point", "wall", "measured window", "wall ÷ window"]
    assert points.timing_blocks([SimpleNamespace(path=tmp_path / "none")]) == []
