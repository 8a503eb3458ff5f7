"""Helpers of the provider tests (the cluster fixture is in conftest.py)."""

from pathlib import Path

import yaml

from harness.providers.netns_namespaces import netns_pids

ROLES = ["orderer", "peer", "client"]
LAYOUT = {"orderer": ["orderer"], "peer": ["peer"], "client": ["blockwatch", "loadgen"]}


def user_inventory(cluster, path: Path, hosts: dict[str, str] | None = None, **all_vars) -> Path:
    """Write an inventory as a user would for their servers: one group per role, ``<role>-0`` hosts.

    ``hosts`` maps a role to an address (default: the cluster's host of that role).
    """
    hosts = hosts or {r: cluster.ip(r) for r in ROLES}
    doc = {"all": {"vars": {"ansible_user": "root",
                            "ansible_ssh_private_key_file": str(cluster.key_path),
                            # the hosts' keys are new for every cluster, and their addresses reused
                            "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
                                                       "-o LogLevel=ERROR",
                            # as the example inventories do: the first python3 on PATH here is a pyenv shim
                            "ansible_python_interpreter": "/usr/bin/python3",
                            **all_vars},
                   "children": {role: {"hosts": {f"{role}-0": {"ansible_host": ip, "private_ip": ip}}}
                                for role, ip in hosts.items()}}}
    path = Path(path)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def exporter_pids(cluster) -> list[int]:
    """PIDs of node-exporter processes inside the cluster's namespaces (zombies excluded)."""
    out = []
    for h in cluster.hosts:
        for pid in netns_pids(cluster.netns(h)):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if b"node-exporter" in cmd and state != "Z":
                out.append(pid)
    return out
