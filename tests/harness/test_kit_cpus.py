"""Issue 48, items 3 and 5: a kit refuses a host that cannot hold its plan and says how long the plan takes
there (harness/kit_target.py); a point with ``cpus=N`` pins its JVMs to N cores and tells them so
(playbooks/roles/process: taskset and ``JDK_JAVA_OPTIONS=-XX:ActiveProcessorCount=N``).

The facts of a target below (``HOST``, ``NEEDS``) are test doubles, made up to reach each refusal; one
refusal is real: this machine's own facts against a plan pinned to more CPUs than it lets this process use.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness import REPO_ROOT, kit_target

#: Test double: what a kit's plan of two measured points and one not measured asks of a target.
NEEDS = {"system": "Linux", "machine": "x86_64", "kernel_at_least": "3.2", "python": "3.11", "glibc_at_least": "2.34",
         "cpus_at_least": 4, "disk_bytes": 3 * 2**30, "measured_on": {"cpus_usable": 2, "host": "builder"},
         "points": [{"point": "a", "cpus": None, "measured": True, "wall_s": 100.0, "window_s": 60.0, "ran_on_cpus": 2},
                    {"point": "b", "cpus": 1, "measured": True, "wall_s": 50.0, "window_s": 20.0, "ran_on_cpus": 1},
                    {"point": "c", "cpus": 8, "measured": False}]}
#: Test double: a target that can hold it.
HOST = {"system": "Linux", "kernel": "6.1.0-18-amd64", "machine": "x86_64", "cpus": 8, "free_bytes": 50 * 2**30,
        "glibc": "2.36", "python": "3.11"}


def test_a_host_that_can_hold_the_plan_passes_and_gets_an_estimate_scaled_to_its_cores():
    assert kit_target.problems(NEEDS, HOST) == []
    seconds, unmeasured, text = kit_target.estimate(NEEDS, HOST)
    # a: 40 s outside its window as measured, its 60 s window on 2 CPUs there over 8 here; b: pinned to 1 both sides
    assert seconds == pytest.approx(40 + 60 * 2 / 8 + 30 + 20)
    assert unmeasured == 1 and "1 more points were not measured" in text and "this host's 8" in text


@pytest.mark.parametrize("change, reason", [
    ({"kernel": "2.6.32-754.el6.x86_64"}, "kernel 2.6.32-754.el6.x86_64: the kit's Go binaries need Linux 3.2"),
    ({"machine": "aarch64"}, "this host is Linux on aarch64"),
    ({"glibc": "2.31"}, "C library 2.31: the kit's Java runtime needs glibc 2.34"),
    ({"python": "3.9"}, "Python 3.9: the kit's wheels are for Python 3.11"),
    ({"cpus": 2}, "2 CPUs usable here; a point of the plan is pinned to cpus=4"),
    ({"free_bytes": 2**30}, "1.0 GiB free where the kit is; its plan needs 3.0 GiB"),
])
def test_each_reason_a_host_cannot_hold_the_plan_is_named(change, reason):
    (problem,) = kit_target.problems(NEEDS, {**HOST, **change})
    assert problem.startswith(reason)


def test_no_estimate_where_nothing_was_measured():
    seconds, unmeasured, text = kit_target.estimate({**NEEDS, "points": [NEEDS["points"][2]]}, HOST)
    assert seconds is None and unmeasured == 1 and "none of its 1 points was measured" in text


def test_the_costs_come_from_this_machines_complete_points_of_the_same_configuration(tmp_path):
    """A run store of two runs (made here for the test): the same configuration's points averaged, a failed
    point and another configuration's left out, the seed not part of the configuration."""
    def point(run, pid, params, status="complete", wall=10.0):
        d = tmp_path / "p" / "e" / run / "points" / pid
        d.mkdir(parents=True)
        (d / "point.json").write_text(json.dumps({"id": pid, "variant": "v", "control": False, "parameters": params}))
        (d / "summary.json").write_text(json.dumps({"status": status, "duration_s": wall, "cpus": {"effective": 2},
                                                    "timing": {"measured_window_s": wall / 2}}))
    point("r1", "v__r0", {"transactions": 100, "seed": 1}, wall=10.0)
    point("r2", "v__r0", {"transactions": 100, "seed": 2}, wall=20.0)
    point("r2", "v__r1", {"transactions": 100, "seed": 3}, status="failed", wall=99.0)
    point("r2", "w__r0", {"transactions": 500}, wall=50.0)
    needs = kit_target.plan_needs([("p", "e", [{"id": "v__r0", "variant": "v", "parameters": {"transactions": 100}},
                                               {"id": "x__r0", "variant": "x", "parameters": {"cpus": 3}}], 3)],
                                  tmp_path, (3, 11), "2.34", 2)
    a, b = needs["points"]
    assert a["measured"] and a["runs"] == 2 and a["wall_s"] == 15.0 and a["window_s"] == 7.5 and a["ran_on_cpus"] == 2
    assert b == {"experiment": "e", "point": "x__r0", "cpus": 3, "measured": False}
    assert needs["cpus_at_least"] == 3 and needs["disk_bytes"] > 2 * 2**30 + a["bytes"]


def test_a_real_refusal_a_plan_pinned_to_more_cpus_than_this_machine_has(tmp_path):
    """This machine's own facts (not a double) against a kit's needs asking one CPU more than it allows: the
    kit's first step (``python3 -m harness.kit_target`` in the kit's folder) exits 2 naming it."""
    here = kit_target.facts(tmp_path)
    assert here["cpus"] == len(os.sched_getaffinity(0)) and here["system"] == "Linux"
    kit = tmp_path / "kit"
    shutil.copytree(REPO_ROOT / "harness", kit / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    needs = {**NEEDS, "python": here["python"], "glibc_at_least": None, "disk_bytes": 1,
             "cpus_at_least": here["cpus"] + 1}
    (kit / "kit.json").write_text(json.dumps({"needs": needs}))
    proc = subprocess.run([sys.executable, "-s", "-m", "harness.kit_target"], cwd=kit, capture_output=True, text=True,
                          timeout=60, env={"PATH": os.environ["PATH"]})
    assert proc.returncode == 2, proc.stderr
    assert f"{here['cpus']} CPUs usable here; a point of the plan is pinned to cpus={here['cpus'] + 1}" in proc.stderr
    (kit / "kit.json").write_text(json.dumps({"needs": {**needs, "cpus_at_least": 1}}))
    proc = subprocess.run([sys.executable, "-s", "-m", "harness.kit_target"], cwd=kit, capture_output=True, text=True,
                          timeout=60, env={"PATH": os.environ["PATH"]})
    assert proc.returncode == 0 and "measured points take about" in proc.stderr


@pytest.mark.skipif(shutil.which("ansible-playbook") is None or shutil.which("taskset") is None
                    or shutil.which("java") is None, reason="needs ansible-playbook, taskset and java")
def test_a_jvm_started_with_cpus_1_runs_on_one_core_and_is_told_so(tmp_path):
    """The real process role, local connection, as a JVM role starts its component (Kafka's and ZooKeeper's
    supervisors, BFT-SMaRt's replicas): with process_cpus=1 (a point's cpus=1) the JVM is allowed one CPU, its
    ActiveProcessorCount is 1, its log records why, and the start's affinity record says one CPU."""
    work = tmp_path / "jvm"
    work.mkdir()
    play = tmp_path / "play.yml"
    play.write_text(json.dumps([{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"include_role": {"name": "process", "tasks_from": "start"},
         "vars": {"process_name": "jvm", "process_dir": str(work), "process_wait": True,
                  "process_command": ["java", "-XX:+PrintFlagsFinal", "-version"]}}]}]))
    env = {**os.environ, "ANSIBLE_ROLES_PATH": str(REPO_ROOT / "playbooks" / "roles")}
    env.pop("JDK_JAVA_OPTIONS", None)
    done = subprocess.run(["ansible-playbook", "-i", "localhost,", "-c", "local", str(play), "-e",
                           f"ansible_python_interpreter={sys.executable}", "-e", "process_cpus=1"],
                          capture_output=True, text=True, env=env, timeout=180)
    assert done.returncode == 0, done.stdout[-2000:]
    first = min(os.sched_getaffinity(0))
    flags = (work / "jvm.out").read_text()
    count = next(line for line in flags.splitlines() if " ActiveProcessorCount " in line)
    assert count.split("=")[1].split()[0] == "1" and "command line" in count
    assert "Picked up JDK_JAVA_OPTIONS: -XX:ActiveProcessorCount=1" in (work / "jvm.log").read_text()
    assert (work / "affinity_jvm.csv").read_text().splitlines()[1].endswith(f',"{first}"')


def test_a_kits_plan_for_a_cpus_sweep_pins_every_point_kafka_and_zookeeper_included():
    """FastFabric's Table I with cpus=1,2, as a kit plans it (harness/kit.py ``_plan_doc``, the builds' paths
    made up): each point hands its cpus to the process role, which starts Kafka's and ZooKeeper's supervisors
    (their JVMs inherit the mask and JDK_JAVA_OPTIONS), FastFabric's deliver client its own copy; the plan's
    largest cpus is what the target check asks for."""
    import yaml
    from harness import kit
    from harness.catalogue import load_paper
    from harness.config import parse_assignments
    from harness.errors import HarnessError
    paper = load_paper("fastfabric")
    try:
        plan, choice, layout = kit._kit_choice(paper, "table1-end-to-end", "smoke", "upstream", "auto",
                                               parse_assignments(["cpus=1,2"]), 1, None, False, lambda _: None)
    except HarnessError as e:
        pytest.skip(f"FastFabric's upstream builds cannot be had here: {e}")
    builds = [*choice.builds.values(), *[c for cs in choice.companions.values() for c in cs.values()]]
    doc = kit._plan_doc(paper, plan, choice, layout, {str(b.path): f"build/upstream/b{i}" for i, b in enumerate(builds)})
    pinned = {p["point"]["id"]: (p["point"]["parameters"]["cpus"], p["role_variables"]["process_cpus"]) for p in doc["points"]}
    assert sorted(pinned) == ["fabric-1.2__cpus=1__r0", "fabric-1.2__cpus=2__r0", "fastfabric__cpus=1__r0",
                              "fastfabric__cpus=2__r0"]
    assert all(asked == given for asked, given in pinned.values()) and doc["largest_cpus"] == 2
    for role in ("kafka", "zookeeper"):
        tasks = yaml.safe_load((REPO_ROOT / "playbooks" / "roles" / role / "tasks" / "run.yml").read_text())
        assert any((t.get("ansible.builtin.include_role") or {}).get("name") == "process" for t in tasks), role
