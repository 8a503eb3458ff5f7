"""This machine's side of the netns provider: commands, processes, namespaces, subnets, leftovers.

Everything here is about what a netns cluster leaves on this machine whatever
becomes of the harness process: the namespaces ``fr-<6 hex>-<host>``, the
processes in them, the /24 each cluster claims, and the registry in
/run/fabricrepro/netns from which ``cleanup`` removes the clusters of a
harness that was killed (``python3 -m harness.providers.netns --cleanup``).
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from ..errors import HarnessError

#: Every namespace, veth and registry entry of this provider starts with this.
PREFIX_ROOT = "fr-"
#: The clusters' /24s are 10.77.<k>.0/24.
SUBNET_BASE = "10.77"
#: Host addresses are .1 .. .MAX_HOSTS; link (toxiproxy) addresses follow; .254 is the controller.
MAX_HOSTS = 150
LINK_ADDR_FIRST, LINK_ADDR_LAST = 151, 250
CONTROLLER_OCTET = 254
#: Where the state of live clusters is kept for ``--cleanup`` (tmpfs: gone on reboot, like namespaces).
REGISTRY_DIR = Path("/run/fabricrepro/netns")
#: Serialises subnet choice between clusters started at the same time.
LOCK_FILE = Path("/run/fabricrepro/netns.lock")
#: ``ip netns exec NS`` bind-mounts /etc/netns/NS/hosts over /etc/hosts for processes in NS.
ETC_NETNS = Path("/etc/netns")
SSHD = "/usr/sbin/sshd"


# ---------------------------------------------------------------- commands and processes

def run(argv: list[str], check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
    """Run a command, capturing output; a failure raises with the command and its stderr."""
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise HarnessError(f"command failed ({proc.returncode}): {' '.join(argv)}\n{proc.stderr.strip()}")
    return proc


def process_start_time(pid: int) -> int | None:
    """The kernel start time of ``pid`` (field 22 of /proc/PID/stat), to tell a PID from a reused one."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may contain spaces: split after its closing parenthesis
    return int(stat[stat.rindex(")") + 2:].split()[19])


def process_alive(pid: int, start_time: int | None) -> bool:
    """Whether ``pid`` still runs and is the process that started at ``start_time`` (None: any)."""
    st = process_start_time(pid)
    return st is not None and (start_time is None or st == start_time)


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] == "Z"


def kill_pids(pids: list[tuple[int, int | None]], grace_s: float = 2.0) -> list[int]:
    """SIGTERM each (pid, start_time) that is still the same process, SIGKILL it after ``grace_s``.

    Returns the PIDs that were signalled. Start times guard against killing a
    process that reused a PID of ours.
    """
    targets = [(p, st) for p, st in pids if p > 1 and p != os.getpid() and process_alive(p, st)]
    for pid, _ in targets:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(process_alive(p, st) and not _zombie(p) for p, st in targets):
        time.sleep(0.05)
    for pid, st in targets:
        if process_alive(pid, st) and not _zombie(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return [p for p, _ in targets]


# ---------------------------------------------------------------- namespaces and subnets

def netns_list() -> list[str]:
    """Names of the network namespaces known to ``ip netns``."""
    out = run(["ip", "netns", "list"], check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def netns_pids(ns: str) -> list[int]:
    """PIDs of the processes whose network namespace is ``ns``."""
    out = run(["ip", "netns", "pids", ns], check=False).stdout
    return [int(x) for x in out.split() if x.isdigit()]


def preflight() -> None:
    """Fail with a clear message unless this process is root and ``ip``, ``sshd``, ``unshare``, ``ssh`` exist."""
    if os.geteuid() != 0:
        raise HarnessError("the netns provider needs root (it creates network namespaces)",
                           hint="run as root, or use --provider local")
    missing = [tool for tool in ("ip", "unshare", "ssh", "ssh-keygen") if not shutil.which(tool)]
    if not os.access(SSHD, os.X_OK):
        missing.append("sshd")
    if missing:
        raise HarnessError(f"the netns provider needs {', '.join(missing)}, not found",
                           hint="`invoke setup` installs them (Debian: iproute2 util-linux openssh-server openssh-client)")
    if run(["ip", "netns", "list"], check=False).returncode != 0:
        raise HarnessError("`ip netns` does not work here (no network-namespace support?)")


@contextlib.contextmanager
def subnet_lock():
    """Held while a cluster chooses its /24 and claims it, so that two starting clusters never pick the same."""
    LOCK_FILE.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(LOCK_FILE, os.O_CREAT | os.O_RDWR, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def free_subnet() -> int:
    """A ``k`` such that 10.77.<k>.0/24 overlaps no address or route of the root namespace."""
    used = run(["ip", "-4", "-o", "addr", "show"]).stdout + run(["ip", "-4", "route", "show", "table", "all"]).stdout
    taken = set()
    for token in used.split():
        try:
            net = ipaddress.ip_network(token, strict=False)
        except ValueError:
            continue
        if net.version == 4 and net.overlaps(ipaddress.ip_network(f"{SUBNET_BASE}.0.0/16")):
            for k in range(256):
                if net.overlaps(ipaddress.ip_network(f"{SUBNET_BASE}.{k}.0/24")):
                    taken.add(k)
    for k in range(256):
        if k not in taken:
            return k
    raise HarnessError(f"no free /24 left in {SUBNET_BASE}.0.0/16 for a netns cluster",
                       hint="remove leftovers: python3 -m harness.providers.netns --cleanup fr-")


# ---------------------------------------------------------------- leftovers

def cleanup_state(state: dict) -> dict:
    """Remove what one cluster state lists: PIDs, processes in its namespaces, namespaces, veth, keys.

    Returns what was removed. Safe to call on a state whose parts are gone.
    """
    removed = {"pids": [], "namespaces": [], "keys": []}
    removed["pids"] += kill_pids([(p["pid"], p.get("start_time")) for p in state.get("pids", [])])
    existing = set(netns_list())
    namespaces = [n for n in state.get("namespaces", []) if n in existing]
    # processes nobody tracked (e.g. started over SSH by Ansible) still live in the namespaces
    inside = [(pid, process_start_time(pid)) for ns in namespaces for pid in netns_pids(ns)]
    removed["pids"] += kill_pids(inside)
    for ns in namespaces:
        run(["ip", "netns", "del", ns], check=False)
        removed["namespaces"].append(ns)
    veth = state.get("root_veth")
    if veth and Path(f"/sys/class/net/{veth}").exists():  # normally gone with the bridge namespace
        run(["ip", "link", "del", veth], check=False)
    for d in state.get("etc_dirs", []):
        shutil.rmtree(d, ignore_errors=True)
    key_dir = state.get("key_dir")
    if key_dir and Path(key_dir).is_dir():
        shutil.rmtree(key_dir, ignore_errors=True)
        removed["keys"].append(key_dir)
    for hk in state.get("host_key_files", []):
        for f in (Path(hk), Path(hk + ".pub")):
            if f.exists():
                f.unlink()
                removed["keys"].append(str(f))
    if state.get("prefix"):
        (REGISTRY_DIR / f"{state['prefix']}.json").unlink(missing_ok=True)
    return removed


def cleanup(prefix: str) -> list[dict]:
    """Remove every cluster whose prefix starts with ``prefix`` (which must start with ``fr-``).

    Uses the registry in /run/fabricrepro/netns when present and, for
    namespaces without a registry entry, the namespace names themselves.
    """
    if not prefix.startswith(PREFIX_ROOT):
        raise HarnessError(f"cleanup prefix must start with {PREFIX_ROOT!r} (only this provider's namespaces)")
    done = []
    states = {}
    if REGISTRY_DIR.is_dir():
        for f in sorted(REGISTRY_DIR.glob(f"{prefix}*.json")):
            try:
                states[f.stem] = json.loads(f.read_text())
            except (OSError, ValueError):
                continue
    for ns in netns_list():
        if ns.startswith(prefix):
            p = _cluster_prefix(ns)
            st = states.setdefault(p, {"prefix": p, "namespaces": [], "root_veth": f"{p}-c"})
            if ns not in st["namespaces"]:
                st["namespaces"].append(ns)
    for p, st in sorted(states.items()):
        done.append({"prefix": p, **cleanup_state(st)})
    return done


def _cluster_prefix(ns: str) -> str:
    return "-".join(ns.split("-")[:2])


def list_clusters() -> dict[str, list[str]]:
    """``{prefix: [namespace, ...]}`` of this provider's namespaces on this machine."""
    out: dict[str, list[str]] = {}
    for ns in netns_list():
        if ns.startswith(PREFIX_ROOT):
            out.setdefault(_cluster_prefix(ns), []).append(ns)
    return out


def cleanup_orphans() -> list[dict]:
    """Remove clusters whose owner process is gone (a harness killed with SIGKILL); return them."""
    done = []
    if not REGISTRY_DIR.is_dir():
        return done
    for f in sorted(REGISTRY_DIR.glob(f"{PREFIX_ROOT}*.json")):
        try:
            state = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        owner = state.get("owner_pid")
        if owner and process_start_time(int(owner)) is None:
            done.append({"prefix": state.get("prefix"), **cleanup_state(state)})
    return done
