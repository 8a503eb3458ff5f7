"""The strategy playbooks run with (harness/deploy.py): Mitogen's by default, Ansible's own on request,
anything else refused before a playbook starts."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness import deploy
from harness.errors import HarnessError
from harness.rundir import tool_versions


def test_mitogen_by_default_and_its_plugins_are_there(monkeypatch):
    monkeypatch.delenv("FABRICREPRO_ANSIBLE_STRATEGY", raising=False)
    env = deploy.ansible_env()
    assert env["ANSIBLE_STRATEGY"] == "mitogen_linear"
    assert (Path(env["ANSIBLE_STRATEGY_PLUGINS"]) / "mitogen_linear.py").is_file()
    assert tool_versions()["ansible_strategy"] == "mitogen_linear"


def test_ansibles_own_on_request_and_a_typo_is_refused(monkeypatch):
    monkeypatch.setenv("FABRICREPRO_ANSIBLE_STRATEGY", "linear")
    env = deploy.ansible_env()
    assert env["ANSIBLE_STRATEGY"] == "linear" and "ANSIBLE_STRATEGY_PLUGINS" not in env
    monkeypatch.setenv("FABRICREPRO_ANSIBLE_STRATEGY", "mitogen")
    with pytest.raises(HarnessError, match="use one of mitogen_linear, linear"):
        deploy.ansible_env()


@pytest.mark.skipif(shutil.which("ansible-playbook") is None, reason="ansible-core is not installed")
def test_a_playbook_runs_under_mitogen(tmp_path, monkeypatch):
    """A real run: Mitogen's strategy loads with this ansible-core and runs a command module."""
    monkeypatch.delenv("FABRICREPRO_ANSIBLE_STRATEGY", raising=False)
    playbook = tmp_path / "p.yml"
    playbook.write_text("- name: P\n  hosts: localhost\n  gather_facts: false\n  tasks:\n"
                        "    - name: Echo\n      ansible.builtin.command: echo fabricrepro-under-mitogen\n"
                        "      changed_when: false\n", encoding="utf-8")
    # Every provider names the hosts' interpreter (Mitogen does not survive Ansible's discovery of it).
    out = subprocess.run(["ansible-playbook", "-i", "localhost,", "-c", "local", "-v", str(playbook),
                          "-e", f"ansible_python_interpreter={sys.executable}"],
                         env=deploy.ansible_env(), capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "fabricrepro-under-mitogen" in out.stdout
