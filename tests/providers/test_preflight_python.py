"""The preflight's first play: each host's Python against what the pinned ansible-core runs modules on.

Run as the ssh and aws providers run it (harness.deploy.run_playbook, playbooks/provider-preflight.yml),
on this machine through Ansible's local connection: hosts whose interpreter is a script printing an
old version, one that does not run, and this machine's own Python.
"""

import re
from pathlib import Path

import pytest
import yaml

from harness import REPO_ROOT
from harness.deploy import ansible_failures, run_playbook
from harness.errors import HarnessError

PREFLIGHT = REPO_ROOT / "playbooks" / "upstream" / "preflight.yml"


def pinned_core() -> str:
    """``major.minor`` of the ansible-core requirements.txt pins."""
    m = re.search(r"^ansible-core==(\d+\.\d+)\.", (REPO_ROOT / "requirements.txt").read_text(), re.MULTILINE)
    return m.group(1)


def minimums() -> dict:
    play = yaml.safe_load(PREFLIGHT.read_text())[0]
    return play["vars"]["preflight_min_python_by_core"]


def test_the_pinned_ansible_core_has_its_minimum_listed():
    """A bump of ansible-core in requirements.txt must say what Python the hosts then need (2.19: 3.8)."""
    assert pinned_core() in minimums(), f"ansible-core {pinned_core()} missing from {PREFLIGHT}"
    assert minimums()["2.19"] == "3.8"


def interpreter(tmp_path: Path, name: str, body: str) -> str:
    f = tmp_path / name
    f.write_text("#!/bin/sh\n" + body)
    f.chmod(0o755)
    return str(f)


def preflight(tmp_path: Path, hosts: dict[str, str]) -> Path:
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {
        h: {"ansible_connection": "local", "ansible_python_interpreter": py} for h, py in hosts.items()}}}))
    (tmp_path / "provider" / "facts").mkdir(parents=True)
    log = tmp_path / "preflight.log"
    run_playbook("provider-preflight.yml", inventory,
                 {"fabricrepro_provider_dir": str(tmp_path / "provider"), "preflight_require_clock_sync": False,
                  "host_min_cores": 1, "host_min_memory_mb": 1}, log, timeout=120)
    return log


def test_an_old_or_missing_python_fails_naming_the_host_and_what_to_do(tmp_path):
    old = interpreter(tmp_path, "python3.6", 'echo "Welcome to Ubuntu 18.04"\necho 3.6.9\n')
    gone = interpreter(tmp_path, "nopython", "exit 127\n")
    with pytest.raises(HarnessError, match="failed"):
        preflight(tmp_path, {"bionic": old, "bare": gone})
    failures = ansible_failures((tmp_path / "preflight.log").read_text())
    need = minimums()[pinned_core()]
    assert failures["bionic"].startswith(f"bionic: {old} is Python 3.6.9;"), failures
    assert failures["bare"].startswith(f"bare: {gone} does not run (exit 127);"), failures
    for why in failures.values():
        assert f"runs its modules on Python {need} or newer" in why and "Ubuntu 24.04" in why


def test_a_current_python_passes_the_whole_preflight(tmp_path):
    """This machine's Python 3 (Debian family, as CI's): the later checks run and the facts are recorded."""
    preflight(tmp_path, {"here": "/usr/bin/python3"})
    assert (tmp_path / "provider" / "facts" / "here.json").is_file()
