"""Host keys of the user's servers: accepted when first met, recorded, checked after; off only where an
inventory says so. The parts that need no host (test_reproduce_ssh.py has a changed key fail a run on netns
servers)."""

import configparser
import shlex
from pathlib import Path

import pytest
import yaml

from harness.errors import HarnessError
from harness.providers.ssh import SshProvider

REPO = Path(__file__).resolve().parents[2]


def provider(tmp_path, user_vars: dict, **kwargs) -> SshProvider:
    p = SshProvider(tmp_path / "inv.yml", **kwargs)
    p.host_roles = {"peer-0": ["peer"]}
    p.user_vars = {"peer-0": {"ansible_host": "203.0.113.5", **user_vars}}
    return p


def ssh_options(args: str) -> list[str]:
    words = shlex.split(args)
    return [words[i + 1] for i, w in enumerate(words) if w == "-o"]


def test_a_users_server_accepts_its_key_when_first_met_and_checks_it_after(tmp_path):
    p = provider(tmp_path, {"ansible_ssh_common_args": "-o ProxyJump=bastion"}, known_hosts=tmp_path / "keys")
    v = p.host_vars("peer-0")
    assert v["ansible_host_key_checking"] is True
    # the user's own arguments first (ssh takes an option's first value), then the harness's
    assert ssh_options(v["ansible_ssh_common_args"]) == [
        "ProxyJump=bastion", "StrictHostKeyChecking=accept-new",
        f"UserKnownHostsFile={tmp_path / 'keys'} ~/.ssh/known_hosts"]
    assert p.describe()["host_keys"]["hosts"] == {"peer-0": "accepted when first met (accept-new), then checked"}


def test_where_the_keys_are_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    p = provider(tmp_path, {})
    assert p.known_hosts_path() == tmp_path / "home" / ".ssh" / "fabricrepro_known_hosts"
    assert f"UserKnownHostsFile={tmp_path}/home/.ssh/fabricrepro_known_hosts " in \
        p.host_vars("peer-0")["ansible_ssh_common_args"]
    p.run_dir = tmp_path / "run"
    assert p._known_hosts_file().parent.is_dir()                     # made, or ssh could not record a key

    class MadeForTheRun(SshProvider):   # hosts made for one run (aws): their keys are kept with it
        known_hosts_per_run = True
    q = MadeForTheRun(tmp_path / "inv.yml")
    q.run_dir = tmp_path / "run"
    assert q.known_hosts_path() == tmp_path / "run" / "provider" / "known_hosts"


@pytest.mark.parametrize("user_vars", [
    {"ansible_host_key_checking": False},
    {"ansible_host_key_checking": "no"},
    {"ansible_ssh_host_key_checking": "False"},
    {"ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"},
    {"ansible_ssh_extra_args": "-o UserKnownHostsFile=/dev/null"},
])
def test_checking_is_off_only_where_the_inventory_says_so(tmp_path, user_vars):
    p = provider(tmp_path, user_vars, known_hosts=tmp_path / "keys")
    v = p.host_vars("peer-0")
    # Ansible's and Mitogen's connections both skip the check, and nothing of the harness's is added
    assert v["ansible_host_key_checking"] is False
    assert v.get("ansible_ssh_common_args") == user_vars.get("ansible_ssh_common_args")
    assert p.describe()["host_keys"]["hosts"]["peer-0"].startswith("not checked")


def test_the_harness_settings_do_not_turn_checking_off_for_a_users_servers():
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "playbooks" / "ansible.cfg")
    assert cfg.getboolean("defaults", "host_key_checking", fallback=True) is True
    for example in sorted((REPO / "infra" / "inventories").glob("*.yml")):
        text = example.read_text()
        assert "host_key_checking" not in text and "StrictHostKeyChecking" not in text, example
        assert yaml.safe_load(text)["all"]["children"], example


def test_a_changed_key_is_named_with_how_to_accept_it(tmp_path, monkeypatch):
    p = provider(tmp_path, {}, known_hosts=tmp_path / "keys")
    p.run_dir = tmp_path / "run"
    p.known_hosts = tmp_path / "keys"
    monkeypatch.setattr(p, "_probe", lambda hosts, command, timeout_s: {"peer-0": (
        "Failed to connect to the host via ssh: @@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@ ... "
        "Host key verification failed.")})
    with pytest.raises(HarnessError) as e:
        p._check_reachable()
    assert str(e.value).startswith("1 host(s) of inventory")
    assert f"peer-0 (203.0.113.5, role peer): its host key is not the one recorded in {tmp_path / 'keys'}" \
        in str(e.value)
    assert f"ssh-keygen -f {tmp_path / 'keys'} -R 203.0.113.5" in e.value.hint


def test_a_changed_key_recorded_in_the_users_own_file_names_that_file(tmp_path, monkeypatch):
    p = provider(tmp_path, {}, known_hosts=tmp_path / "keys")
    p.run_dir, p.known_hosts = tmp_path / "run", tmp_path / "keys"
    monkeypatch.setattr(p, "_probe", lambda hosts, command, timeout_s: {"peer-0": (
        "Failed to connect to the host via ssh: @@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@ ... "
        "Offending ED25519 key in /home/you/.ssh/known_hosts:3 Host key verification failed.")})
    with pytest.raises(HarnessError) as e:
        p._check_reachable()
    assert "its host key is not the one recorded in /home/you/.ssh/known_hosts, line 3" in str(e.value)
    assert "ssh-keygen -f /home/you/.ssh/known_hosts -R 203.0.113.5" in e.value.hint
