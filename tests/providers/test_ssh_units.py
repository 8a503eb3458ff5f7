"""The ssh provider's parts that need no host: reading the user's inventory,
Ansible failure lines, the tc command lines of links, route parsing, and the
errors raised before any host is contacted."""

import json
import shutil

import pytest
import yaml

from harness.errors import HarnessError
from harness.providers import ssh as S
from harness.providers import tc
from harness.providers.ssh_ansible import load_inventory
from harness.providers.ssh import SshProvider

needs_ansible = pytest.mark.skipif(shutil.which("ansible-inventory") is None, reason="ansible is not installed")
COMPONENTS = ["orderer", "peer", "loadgen", "blockwatch", "committerbench"]
LAYOUT = {"orderer": ["orderer"], "peer": ["peer"], "client": ["blockwatch", "loadgen"]}


def write(path, doc):
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@needs_ansible
def test_inventory_groups_in_order_with_merged_variables(tmp_path):
    inv = write(tmp_path / "servers.yml", {"all": {
        "vars": {"ansible_user": "repro", "host_min_cores": 24},
        "children": {
            "peer": {"vars": {"peer_note": "g"},
                     "hosts": {"peer-1": {"ansible_host": "203.0.113.12"},
                               "peer-0": {"ansible_host": "203.0.113.11", "private_ip": "10.0.0.11",
                                          "ansible_user": "admin"}}},
            "client": {"children": {"client_a": {"hosts": {"client-0": {"ansible_host": "203.0.113.20"}}}}}}}})
    groups, hostvars = load_inventory(inv)
    assert groups["peer"] == ["peer-1", "peer-0"]          # inventory order: the first is peer-1
    assert groups["client"] == ["client-0"]                # hosts of child groups count
    assert hostvars["peer-0"]["ansible_user"] == "admin"   # host var beats all.vars
    assert hostvars["peer-1"] == {"ansible_host": "203.0.113.12", "ansible_user": "repro", "host_min_cores": 24,
                                  "peer_note": "g"}


@needs_ansible
def test_missing_group_names_inventory_role_and_groups(tmp_path):
    inv = write(tmp_path / "servers.yml", {"all": {"children": {
        "orderer": {"hosts": {"orderer-0": {"ansible_host": "203.0.113.1"}}},
        "kafka": {"hosts": {"kafka-0": {"ansible_host": "203.0.113.2"}}}}}})
    p = SshProvider(inv)
    with pytest.raises(HarnessError) as e:
        p.up(LAYOUT, tmp_path / "run")
    msg = str(e.value)
    assert str(inv) in msg and "group(s) peer, client" in msg and "kafka, orderer" in msg
    p.down()  # nothing was started: a no-op, no error


@needs_ansible
def test_empty_group_is_missing(tmp_path):
    inv = write(tmp_path / "servers.yml", {"all": {"children": {
        "orderer": {"hosts": {"orderer-0": None}}, "peer": {"hosts": {}}, "client": {"hosts": {"c": None}}}}})
    with pytest.raises(HarnessError, match=r"no host in group\(s\) peer,"):
        SshProvider(inv).up(LAYOUT, tmp_path / "run")


@needs_ansible
def test_unparseable_and_missing_inventory(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("all:\n  children: [\n")
    with pytest.raises(HarnessError, match=r"bad.yml cannot be parsed: YAML"):
        SshProvider(bad).up(LAYOUT, tmp_path / "run")
    with pytest.raises(HarnessError, match="nope.yml not found"):
        SshProvider(tmp_path / "nope.yml").up(LAYOUT, tmp_path / "run")


def test_relative_key_path_made_absolute(tmp_path, monkeypatch):
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "id").write_text("k")
    monkeypatch.chdir(tmp_path)
    p = SshProvider(tmp_path / "inv.yml")
    assert p._fix_paths({"ansible_ssh_private_key_file": "keys/id"}) == \
        {"ansible_ssh_private_key_file": str(tmp_path / "keys" / "id")}
    # home-relative and templated paths are Ansible's to resolve
    assert p._fix_paths({"ansible_ssh_private_key_file": "~/.ssh/x"})["ansible_ssh_private_key_file"] == "~/.ssh/x"


def test_ansible_failures_from_a_playbook_log():
    log = "\n".join([
        "TASK [Enough cores] ****",
        'fatal: [orderer-0]: FAILED! => {"assertion": "x", "changed": false, "evaluated_to": false, '
        '"msg": "orderer-0: 2 vCPUs, needs 24"}',
        'fatal: [peer-0]: UNREACHABLE! => {"changed": false, "msg": "Failed to connect to the host via ssh: '
        'ssh: connect to host 10.0.0.2 port 22: Connection refused", "unreachable": true}',
        'failed: [client-0] (item=tc qdisc replace dev eth0) => {"ansible_loop_var": "item", "changed": true, '
        '"cmd": ["tc", "qdisc", "replace"], "msg": "non-zero return code", "rc": 2, '
        '"stderr": "Error: Specified qdisc kind is unknown."}',
        'fatal: [orderer-0]: FAILED! => {"msg": "a second failure of the same host is not the first"}',
    ])
    assert S.ansible_failures(log) == {
        "orderer-0": "orderer-0: 2 vCPUs, needs 24",
        "peer-0": "unreachable: Failed to connect to the host via ssh: ssh: connect to host 10.0.0.2 port 22: "
                  "Connection refused",
        "client-0": "`tc qdisc replace` exited 2: Error: Specified qdisc kind is unknown.",
    }


def test_tc_commands_rate_and_delay():
    cmds = tc.tc_commands("ens5", [{"address": "10.0.0.2", "rate_mbit": 1000},
                                  {"address": "10.0.0.3", "delay_ms": 12.5},
                                  {"address": "10.0.0.4", "delay_ms": 20, "rate_mbit": 100}])
    argv = [" ".join(c["argv"]) for c in cmds]
    assert argv == [
        "tc qdisc del dev ens5 root",
        "tc qdisc replace dev ens5 root handle 1: htb",
        # 1000 Mbit/s: burst = 4 ms of the rate = 500000 bytes
        "tc class replace dev ens5 parent 1: classid 1:1 htb rate 1000mbit ceil 1000mbit burst 500000 cburst 500000 "
        "quantum 60000",
        "tc filter add dev ens5 parent 1: protocol ip prio 1 u32 match ip dst 10.0.0.2/32 flowid 1:1",
        # delay only: a class far above any NIC, netem sized for 10 Gbit/s x 12.5 ms (10417 packets x 1.5)
        "tc class replace dev ens5 parent 1: classid 1:2 htb rate 100000mbit ceil 100000mbit burst 50000000 "
        "cburst 50000000 quantum 60000",
        "tc qdisc replace dev ens5 parent 1:2 handle 102: netem delay 12.5ms limit 15626",
        "tc filter add dev ens5 parent 1: protocol ip prio 1 u32 match ip dst 10.0.0.3/32 flowid 1:2",
        # both: the class limits the rate, netem below it delays; 100 Mbit/s x 20 ms = 167 packets -> netem's 1000
        "tc class replace dev ens5 parent 1: classid 1:3 htb rate 100mbit ceil 100mbit burst 65536 cburst 65536 "
        "quantum 60000",
        "tc qdisc replace dev ens5 parent 1:3 handle 103: netem delay 20ms limit 1000",
        "tc filter add dev ens5 parent 1: protocol ip prio 1 u32 match ip dst 10.0.0.4/32 flowid 1:3",
    ]
    # only deleting the (possibly default) root qdisc may fail
    assert [c["may_fail"] for c in cmds] == [True] + [False] * 9
    assert tc.tc_commands("eth0", []) == []
    assert tc.tc_clear_commands("eth0") == [{"argv": ["tc", "qdisc", "del", "dev", "eth0", "root"],
                                            "may_fail": True, "dest": None}]


def test_tc_class_ids_are_hex():
    cmds = tc.tc_commands("eth0", [{"address": f"10.0.0.{i}", "rate_mbit": 10} for i in range(1, 12)])
    classes = [c["argv"][c["argv"].index("classid") + 1] for c in cmds if "classid" in c["argv"]]
    assert classes[9:] == ["1:a", "1:b"]  # tc reads minor ids as hex


def test_route_devices():
    out = ("10.77.0.2 dev eth0 src 10.77.0.1 uid 0 \\    cache \r\n"
           "local 10.77.0.1 dev lo table local src 10.77.0.1 uid 0 \\    cache <local> \r\n"
           "203.0.113.9 via 10.0.0.1 dev ens5 src 10.0.0.7 uid 1000 \\    cache \r\n")
    assert tc.route_devices(out) == {"10.77.0.2": "eth0", "10.77.0.1": "lo", "203.0.113.9": "ens5"}


def test_apply_links_checks_roles_and_values(tmp_path):
    p = SshProvider(tmp_path / "inv.yml")
    p.hosts_inventory = tmp_path / "hosts.yml"   # as after up(): two roles on two hosts
    p.placed = {"orderer": "o-0", "peer": "p-0"}
    p.user_vars = {"o-0": {"ansible_host": "10.0.0.1"}, "p-0": {"ansible_host": "10.0.0.2"}}
    with pytest.raises(HarnessError, match="unknown host 'kafka' of the layout; its hosts: orderer, peer"):
        p.apply_links([{"from": "orderer", "to": "kafka", "delay_ms": 1}])
    with pytest.raises(HarnessError, match="give delay_ms and/or rate_mbit"):
        p.apply_links([{"from": "orderer", "to": "peer"}])
    with pytest.raises(HarnessError, match="rate_mbit > 0"):
        p.apply_links([{"from": "orderer", "to": "peer", "rate_mbit": 0.0, "delay_ms": 1}])
    p.user_vars["p-0"]["private_ip"] = "fd00::2"
    with pytest.raises(HarnessError, match="not IPv4"):
        p.apply_links([{"from": "orderer", "to": "peer", "rate_mbit": 10}])
    assert p.apply_links([]) == []


def test_host_vars_add_the_provider_variables(tmp_path):
    p = SshProvider(tmp_path / "inv.yml", work_root="/srv/repro")
    p.host_roles = {"peer-0": ["peer"]}
    p.user_vars = {"peer-0": {"ansible_host": "203.0.113.5", "private_ip": "10.0.0.5", "ansible_user": "repro"}}
    v = p.host_vars("peer-0")
    assert v["ansible_host"] == "203.0.113.5" and v["ansible_user"] == "repro"
    # a host's points under its own directory (servers may share a filesystem), the commands shared
    assert v["fabricrepro_work_root"] == "/srv/repro/peer-0" and v["fabricrepro_bin_dir"] == "/srv/repro/bin"
    assert v["fabricrepro_copy_binaries"] is True
    assert v["fabricrepro_address"] == "10.0.0.5"         # private_ip first
    assert v["fabricrepro_become"] is True                # tc and apt need root; repro is not
    assert v["ansible_python_interpreter"] == "/usr/bin/python3"  # Mitogen needs it named
    p.user_vars["peer-0"]["ansible_python_interpreter"] = "/opt/py/bin/python3"
    assert p.host_vars("peer-0")["ansible_python_interpreter"] == "/opt/py/bin/python3"  # the inventory's wins
    targets = p.monitor_targets({"peer": ["peer-0"]})
    assert [(t.host, t.address, t.port, t.device, t.external) for t in targets] == \
        [("peer-0", "203.0.113.5", 9100, None, True)]    # scraped where the controller reaches it
    json.dumps(p.describe())                              # serialisable for metadata.json


def test_every_role_copies_its_own_command():
    """The copy tasks of the five component roles, before their "look for the built X" check."""
    for c in COMPONENTS:
        tasks = yaml.safe_load((S.REPO_ROOT / "playbooks" / "roles" / c / "tasks" / "install.yml").read_text())
        names = [t["name"] for t in tasks]
        assert names[:3] == [f"Make the directory of {c} on the host", f"Copy the built {c} from the controller",
                             f"Look for the built {c}"]
        mkdir, copy = tasks[0], tasks[1]
        assert mkdir["ansible.builtin.file"] == {"path": f"{{{{ {c}_binary | dirname }}}}", "state": "directory",
                                                 "mode": "0755"}
        assert copy["ansible.builtin.copy"] == {"src": f"{{{{ fabricrepro_controller_bin_dir }}}}/{c}",
                                                "dest": f"{{{{ {c}_binary }}}}", "mode": "0755"}
        assert mkdir["when"] == copy["when"] == "fabricrepro_copy_binaries | default(false) | bool"
