"""Helpers of the provider tests (the cluster fixture is in conftest.py)."""

import subprocess
import time
from pathlib import Path

import yaml

from harness.providers.netns_namespaces import SSHD, netns_pids

ROLES = ["orderer", "peer", "client"]
LAYOUT = {"orderer": ["orderer"], "peer": ["peer"], "client": ["blockwatch", "loadgen"]}


def user_inventory(cluster, path: Path, hosts: dict[str, str] | None = None, **all_vars) -> Path:
    """Write an inventory as a user would for their servers: one group per role, ``<role>-0`` hosts.

    ``hosts`` maps a role to an address (default: the cluster's host of that role).
    """
    hosts = hosts or {r: cluster.ip(r) for r in ROLES}
    doc = {"all": {"vars": {"ansible_user": "root",
                            "ansible_ssh_private_key_file": str(cluster.key_path),
                            # the hosts' keys are new for every cluster, and their addresses reused: these
                            # hosts are made by the test, so it turns host key checking off (a user has no reason to)
                            "ansible_host_key_checking": False,
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


def restart_sshd_with_new_key(cluster, host: str, log: Path) -> None:
    """Give ``host`` a new host key, as a reinstalled server has: its sshd restarted with a key made anew."""
    sshd = cluster.tracked(f"sshd@{host}")
    sshd["popen"].kill()
    sshd["popen"].wait()
    key = cluster.host_dir(host) / "ssh_host_ed25519_key"
    key.unlink()
    Path(f"{key}.pub").unlink(missing_ok=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    # as netns_sshd.start_sshds starts it, tracked by the cluster (its teardown stops it)
    cluster.popen(host, ["ip", "netns", "exec", cluster.netns(host), "unshare", "--uts", "sh", "-c",
                         f'hostname "$0" && exec {SSHD} -D -e -f "$1"', host,
                         str(cluster.host_dir(host) / "sshd_config")],
                  name="sshd-new-key", log=log, in_netns=False)
    deadline = time.monotonic() + 10
    while subprocess.run(cluster.ssh_argv(host) + ["true"], capture_output=True).returncode:
        assert time.monotonic() < deadline, f"{host}'s sshd did not come back with its new key"
        time.sleep(0.1)


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def leftovers(cluster) -> dict[str, list[str]]:
    """What runs or listens in each host's namespace beyond its sshd: ``{host: [what]}`` (empty hosts left out).

    Processes: every PID in the namespace but the sshd the cluster started
    (zombies excluded), with its command line. Sockets: every listening TCP and
    bound UDP socket (``ss -Hltnu`` inside the namespace) but sshd's ``<ip>:22``.
    """
    out: dict[str, list[str]] = {}
    for h in cluster.hosts:
        sshds = {p["pid"] for p in cluster._procs if p["name"].startswith("sshd") and p["name"].endswith(f"@{h}")}
        found = []
        for pid in netns_pids(cluster.netns(h)):
            if pid in sshds or not _alive(pid):
                continue
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            found.append(f"process {pid}: {cmd.strip()}")
        for line in cluster.exec(h, ["ss", "-Hltnu"]).stdout.splitlines():
            cols = line.split()
            if len(cols) >= 5 and cols[4] != f"{cluster.ip(h)}:22":
                found.append(f"{cols[0]} socket on {cols[4]}")
        if found:
            out[h] = found
    return out


def wait_no_leftovers(cluster, timeout_s: float = 10) -> dict[str, list[str]]:
    """``leftovers``, given up to ``timeout_s`` for SSH sessions that are closing to go."""
    deadline = time.monotonic() + timeout_s
    while (left := leftovers(cluster)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left
