"""The strategy playbooks run with (harness/deploy.py): Mitogen's, unpinned, by default; Ansible's own on
request; anything else refused before a playbook starts. Under either, what the process role starts may
run on every CPU the harness may: Mitogen's own pinning once put every component on one CPU of two."""

import os
import shutil
import sys

import pytest

from harness import deploy, tools
from harness.errors import HarnessError
from harness.rundir import tool_versions

needs_ansible = pytest.mark.skipif(shutil.which("ansible-playbook") is None, reason="ansible-core is not installed")


def test_mitogen_unpinned_by_default(monkeypatch):
    monkeypatch.delenv("FABRICREPRO_ANSIBLE_STRATEGY", raising=False)
    env = deploy.ansible_env()
    assert env["ANSIBLE_STRATEGY"] == "mitogen_unpinned"
    assert (deploy.STRATEGIES / "mitogen_unpinned.py").is_file()
    assert env["ANSIBLE_STRATEGY_PLUGINS"] == str(deploy.STRATEGIES)
    assert tool_versions()["ansible_strategy"] == "mitogen_unpinned"


def test_ansibles_own_on_request_and_a_typo_is_refused(monkeypatch):
    monkeypatch.setenv("FABRICREPRO_ANSIBLE_STRATEGY", "linear")
    env = deploy.ansible_env()
    assert env["ANSIBLE_STRATEGY"] == "linear" and "ANSIBLE_STRATEGY_PLUGINS" not in env
    monkeypatch.setenv("FABRICREPRO_ANSIBLE_STRATEGY", "mitogen_linear")
    with pytest.raises(HarnessError, match="use one of mitogen_unpinned, linear"):
        deploy.ansible_env()


@needs_ansible
@pytest.mark.parametrize("strategy", tools.ANSIBLE_STRATEGIES)
def test_a_started_component_may_use_every_cpu_the_harness_may(tmp_path, monkeypatch, strategy):
    """A real playbook: the process role starts a command in the background and one to completion; each
    records the CPUs it may run on (affinity_*.csv), which must be the harness's own."""
    monkeypatch.setenv("FABRICREPRO_ANSIBLE_STRATEGY", strategy)
    work = tmp_path / "work"
    playbook = tmp_path / "p.yml"
    playbook.write_text(f"""
- name: Start two commands with the process role
  hosts: localhost
  gather_facts: false
  tasks:
    - name: One in the background, one to completion
      ansible.builtin.include_role:
        name: process
        tasks_from: start
      vars:
        process_name: "{{{{ item }}}}"
        process_dir: "{work}/{{{{ item }}}}"
        process_command: [sleep, "0.3"]
        process_wait: "{{{{ item == 'once' }}}}"
      loop: [server, once]
""", encoding="utf-8")
    for name in ("server", "once"):
        (work / name).mkdir(parents=True)
    inventory = tmp_path / "inventory.ini"
    inventory.write_text(f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}\n",
                         encoding="utf-8")
    deploy.run_playbook(str(playbook), inventory, {}, tmp_path / "run.log", timeout=120)
    ours = ",".join(map(str, sorted(os.sched_getaffinity(0))))
    for name in ("server", "once"):
        row = (work / name / f"affinity_{name}.csv").read_text().splitlines()[1]
        allowed = row.rsplit(",", 1)[1].strip('"') if row.count('"') == 2 else row.split('"')[1]
        cpus = set()
        for part in allowed.split(","):
            lo, _, hi = part.partition("-")
            cpus |= set(range(int(lo), int(hi or lo) + 1))
        assert ",".join(map(str, sorted(cpus))) == ours, f"{strategy}: {name} may run on {allowed}, the harness on {ours}"
