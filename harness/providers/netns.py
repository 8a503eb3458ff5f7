"""The netns provider: N hosts as network namespaces on this machine, reached by SSH.

Each host is a network namespace ``<prefix>-<host>`` (prefix ``fr-<6 hex>``,
unique per cluster) with ``lo`` up and one veth (``eth0``) into a bridge that
lives in a namespace of its own (``<prefix>-br``), an address in
``10.77.<k>.0/24`` (``k`` chosen free at start), its own hostname (a UTS
namespace made by ``unshare --uts``), its own directory and its own sshd that
accepts one ed25519 key made for this cluster. The controller (this process,
Ansible, Prometheus) reaches the hosts through one veth from the root namespace
into the bridge namespace, addressed ``10.77.<k>.254``; only the /24 of the
cluster is routed through it. See docs/netns.md.

``NetnsCluster`` is a context manager; ``teardown()`` kills every process it
started by PID and every process still inside its namespaces, deletes the
namespaces, the veth and the keys, and also runs on exceptions and on
SIGINT/SIGTERM. Leftovers of a killed harness are removed with::

    python3 -m harness.providers.netns --cleanup fr-1a2b3c     # one cluster
    python3 -m harness.providers.netns --cleanup fr-           # every cluster
    python3 -m harness.providers.netns --list
"""

from __future__ import annotations

import argparse
import atexit
import concurrent.futures
import fcntl
import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import yaml

from ..errors import HarnessError
from .base import Provider, groups_of

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
SSHD_TEMPLATE = Path(__file__).resolve().parents[2] / "infra" / "netns" / "sshd_config.template"
TOXIPROXY_VERSION = "v2.12.0"
TOXIPROXY_INSTALL = (f"infra/netns/install-toxiproxy.sh "
                     f"(go install github.com/Shopify/toxiproxy/v2/cmd/server@{TOXIPROXY_VERSION})")
#: Port of each toxiproxy's HTTP API, on the destination host's address.
TOXIPROXY_API_PORT = 8474


# ---------------------------------------------------------------- small helpers

def _run(argv: list[str], check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
    """Run a command, capturing output; a failure raises with the command and its stderr."""
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise HarnessError(f"command failed ({proc.returncode}): {' '.join(argv)}\n{proc.stderr.strip()}")
    return proc


def _start_time(pid: int) -> int | None:
    """The kernel start time of ``pid`` (field 22 of /proc/PID/stat), to tell a PID from a reused one."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may contain spaces: split after its closing parenthesis
    return int(stat[stat.rindex(")") + 2:].split()[19])


def _alive(pid: int, start_time: int | None) -> bool:
    st = _start_time(pid)
    return st is not None and (start_time is None or st == start_time)


def kill_pids(pids: list[tuple[int, int | None]], grace_s: float = 2.0) -> list[int]:
    """SIGTERM each (pid, start_time) that is still the same process, SIGKILL it after ``grace_s``.

    Returns the PIDs that were signalled. Start times guard against killing a
    process that reused a PID of ours.
    """
    targets = [(p, st) for p, st in pids if p > 1 and p != os.getpid() and _alive(p, st)]
    for pid, _ in targets:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(_alive(p, st) and not _zombie(p) for p, st in targets):
        time.sleep(0.05)
    for pid, st in targets:
        if _alive(pid, st) and not _zombie(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return [p for p, _ in targets]


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] == "Z"


def netns_list() -> list[str]:
    """Names of the network namespaces known to ``ip netns``."""
    out = _run(["ip", "netns", "list"], check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def netns_pids(ns: str) -> list[int]:
    """PIDs of the processes whose network namespace is ``ns``."""
    out = _run(["ip", "netns", "pids", ns], check=False).stdout
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
    if _run(["ip", "netns", "list"], check=False).returncode != 0:
        raise HarnessError("`ip netns` does not work here (no network-namespace support?)")


def find_toxiproxy() -> str:
    """The path of the toxiproxy server, or an error naming the command that installs it.

    Looked up as ``$FABRICREPRO_TOXIPROXY``, ``toxiproxy-server`` on PATH, then
    ``$(go env GOPATH)/bin/toxiproxy-server`` and ``.../bin/server`` (the name
    ``go install .../cmd/server`` gives it).
    """
    candidates = [os.environ.get("FABRICREPRO_TOXIPROXY"), shutil.which("toxiproxy-server")]
    gopath = os.environ.get("GOPATH")
    if not gopath and shutil.which("go"):
        gopath = _run(["go", "env", "GOPATH"], check=False).stdout.strip()
    for gp in (gopath, str(Path.home() / "go")):
        if gp:
            candidates += [str(Path(gp) / "bin" / "toxiproxy-server"), str(Path(gp) / "bin" / "server")]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    raise HarnessError("toxiproxy-server not found (needed for per-link delay, the kernel has no netem)",
                       hint=f"`invoke setup` installs it: {TOXIPROXY_INSTALL} "
                            "(then $(go env GOPATH)/bin/server is used, or set FABRICREPRO_TOXIPROXY)")


def _lock():
    LOCK_FILE.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(LOCK_FILE, os.O_CREAT | os.O_RDWR, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def _unlock(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)


def _free_subnet() -> int:
    """A ``k`` such that 10.77.<k>.0/24 overlaps no address or route of the root namespace."""
    used = _run(["ip", "-4", "-o", "addr", "show"]).stdout + _run(["ip", "-4", "route", "show", "table", "all"]).stdout
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


# ---------------------------------------------------------------- the cluster

class NetnsCluster:
    """N hosts as network namespaces joined by a bridge, each with its own sshd.

    ``hosts`` is a count (hosts ``h1`` .. ``hN``) or a list of host names;
    ``roles`` maps a host to the roles it plays (for the inventory groups and
    the metrics' labels). Use as ``with NetnsCluster(work_dir, 3) as c: ...``;
    after ``start()`` the cluster offers ``inventory_path``, ``key_path``,
    ``ip(host)``, ``netns(host)``, ``exec(host, argv)`` and ``popen(...)``.
    """

    def __init__(self, work_dir: Path, hosts: int | list[str], roles: dict[str, list[str]] | None = None,
                 prefix: str | None = None, ssh_timeout_s: float = 30.0, bin_dir: Path | None = None,
                 handle_signals: bool = True):
        self.work_dir = Path(work_dir).resolve()
        self.hosts: list[str] = [f"h{i}" for i in range(1, hosts + 1)] if isinstance(hosts, int) else list(hosts)
        if not self.hosts:
            raise HarnessError("a netns cluster needs at least one host")
        if len(self.hosts) > MAX_HOSTS:
            raise HarnessError(f"a netns cluster has at most {MAX_HOSTS} hosts, asked for {len(self.hosts)}")
        for h in self.hosts:
            if not h.replace("-", "").isalnum() or len(h) > 40:
                raise HarnessError(f"netns host name {h!r} must be letters, digits and '-' (at most 40)")
        if len(set(self.hosts)) != len(self.hosts):
            raise HarnessError("netns host names must be unique")
        self.roles = {h: list((roles or {}).get(h, [])) for h in self.hosts}
        unknown = set(roles or {}) - set(self.hosts)
        if unknown:
            raise HarnessError(f"roles given for unknown netns hosts: {', '.join(sorted(unknown))}")
        self.prefix = prefix or f"{PREFIX_ROOT}{secrets.token_hex(3)}"
        if not re.fullmatch(r"fr-[a-z0-9]{1,9}", self.prefix):
            # one dash only: cleanup recovers the prefix from a namespace name as its first two parts
            raise HarnessError(f"netns prefix must look like 'fr-' + 1-9 lowercase letters or digits, got {self.prefix!r}")
        self.ssh_timeout_s = ssh_timeout_s
        self.bin_dir = Path(bin_dir) if bin_dir else None
        # False when the caller turns signals into an exception and tears down in
        # its own ``finally`` (the harness does, so that logs are fetched first)
        self.handle_signals = handle_signals
        self.subnet_k: int | None = None
        self.key_path = self.work_dir / "ssh" / "id_ed25519"
        self.inventory_path = self.work_dir / "inventory.yaml"
        self.links_applied: list[dict] = []
        self._procs: list[dict] = []           # {"pid", "start_time", "name", "popen"}
        self._namespaces: list[str] = []
        self._etc_dirs: list[Path] = []
        self._link_addr_next = LINK_ADDR_FIRST
        self._torn_down = False
        self._started = False
        self._registered = False
        self._teardown_lock = threading.RLock()
        self._old_handlers: dict[int, object] = {}

    # ---- names and addresses
    @property
    def bridge_ns(self) -> str:
        """The namespace that holds the bridge."""
        return f"{self.prefix}-br"

    @property
    def root_veth(self) -> str:
        """The controller's veth in the root namespace (at most 15 characters)."""
        return f"{self.prefix}-c"

    def netns(self, host: str) -> str:
        """The network namespace of ``host``."""
        return f"{self.prefix}-{host}"

    def ip(self, host: str) -> str:
        """The address of ``host``."""
        return f"{SUBNET_BASE}.{self.subnet_k}.{self.hosts.index(host) + 1}"

    @property
    def controller_ip(self) -> str:
        """The controller's address in the cluster's subnet (root-namespace end of the controller veth)."""
        return f"{SUBNET_BASE}.{self.subnet_k}.{CONTROLLER_OCTET}"

    def host_dir(self, host: str) -> Path:
        """The directory of ``host`` (the hosts share one filesystem)."""
        return self.work_dir / "hosts" / host

    def role_map(self) -> dict[str, list[str]]:
        """``{role: [host, ...]}`` for the run's metadata."""
        out: dict[str, list[str]] = {}
        for h in self.hosts:
            for r in self.roles[h]:
                out.setdefault(r, []).append(h)
        return out

    # ---- lifecycle
    def __enter__(self) -> "NetnsCluster":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.teardown()

    def start(self, wait: bool = True) -> "NetnsCluster":
        """Create namespaces, bridge, veths, keys and sshds; write the inventory; wait for SSH.

        On any failure (or a signal) everything made so far is torn down before
        the exception propagates.
        """
        preflight()
        if self.handle_signals:
            self._install_signal_handlers()
        atexit.register(self.teardown)
        try:
            self._started = True
            self._create_network()
            self._create_hosts()
            self._start_sshds()
            self.write_inventory()
            if wait:
                self.wait_ready()
        except BaseException:
            self.teardown()
            raise
        return self

    def _save_registry(self) -> None:
        """Persist what exists so far, so that ``--cleanup`` can remove it if this process dies."""
        REGISTRY_DIR.mkdir(parents=True, exist_ok=True)
        state = {"prefix": self.prefix, "work_dir": str(self.work_dir), "owner_pid": os.getpid(),
                 "namespaces": self._namespaces, "root_veth": self.root_veth,
                 "key_dir": str(self.key_path.parent), "etc_dirs": [str(d) for d in self._etc_dirs],
                 "host_key_files": [str(self.host_dir(h) / "ssh_host_ed25519_key") for h in self.hosts],
                 "pids": [{"pid": p["pid"], "start_time": p["start_time"], "name": p["name"]} for p in self._procs]}
        tmp = REGISTRY_DIR / f".{self.prefix}.json.tmp"
        tmp.write_text(json.dumps(state, indent=1))
        tmp.replace(REGISTRY_DIR / f"{self.prefix}.json")
        self._registered = True

    def _add_ns(self, ns: str) -> None:
        if self._torn_down:  # torn down meanwhile (a signal or another thread): stop building
            raise HarnessError(f"netns cluster {self.prefix} was torn down while starting")
        # registered before creation so a crash in between still gets it cleaned
        self._namespaces.append(ns)
        self._save_registry()
        _run(["ip", "netns", "add", ns])
        _run(["ip", "-n", ns, "link", "set", "lo", "up"])

    def _create_network(self) -> None:
        if self.prefix in netns_list() or any(n.startswith(self.prefix + "-") for n in netns_list()):
            raise HarnessError(f"netns prefix {self.prefix} is already in use")
        fd = _lock()
        try:
            # choosing k and claiming it (the controller address) is atomic between clusters
            self.subnet_k = _free_subnet()
            self._add_ns(self.bridge_ns)
            br = ["ip", "-n", self.bridge_ns]
            _run(br + ["link", "add", "br0", "type", "bridge"])
            _run(br + ["link", "set", "br0", "up"])
            _run(["ip", "link", "add", self.root_veth, "type", "veth", "peer", "name", "ctl", "netns", self.bridge_ns])
            _run(br + ["link", "set", "ctl", "master", "br0", "up"])
            # no IPv6 on the root end: it would only send router solicitations into the cluster
            _run(["sysctl", "-q", "-w", f"net.ipv6.conf.{self.root_veth}.disable_ipv6=1"], check=False)
            _run(["ip", "addr", "add", f"{self.controller_ip}/24", "dev", self.root_veth])
            _run(["ip", "link", "set", self.root_veth, "up"])
        finally:
            _unlock(fd)

    def _create_hosts(self) -> None:
        self.key_path.parent.mkdir(parents=True, exist_ok=True)
        if self.key_path.exists():
            self.key_path.unlink()
            self.key_path.with_suffix(".pub").unlink(missing_ok=True)
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"fabricrepro-{self.prefix}", "-f", str(self.key_path)])
        pub = self.key_path.with_suffix(".pub").read_text()
        (self.key_path.parent / "authorized_keys").write_text(pub)
        hosts_file = "127.0.0.1 localhost\n" + "".join(f"{self.ip(h)} {h}\n" for h in self.hosts)
        for i, h in enumerate(self.hosts, start=1):
            ns = self.netns(h)
            self._add_ns(ns)
            _run(["ip", "-n", self.bridge_ns, "link", "add", f"v{i}", "type", "veth", "peer", "name", "eth0", "netns", ns])
            _run(["ip", "-n", self.bridge_ns, "link", "set", f"v{i}", "master", "br0", "up"])
            _run(["ip", "-n", ns, "addr", "add", f"{self.ip(h)}/24", "dev", "eth0"])
            _run(["ip", "-n", ns, "link", "set", "eth0", "up"])
            d = self.host_dir(h)
            (d / "work").mkdir(parents=True, exist_ok=True)
            hk = d / "ssh_host_ed25519_key"
            for f in (hk, hk.with_suffix(".pub")):
                f.unlink(missing_ok=True)
            _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", h, "-f", str(hk)])
            etc = ETC_NETNS / ns
            etc.mkdir(parents=True, exist_ok=True)
            self._etc_dirs.append(etc)
            # host names resolve inside every host (ip netns exec mounts this over /etc/hosts)
            (etc / "hosts").write_text(f"127.0.1.1 {h}\n" + hosts_file)
            (d / "sshd_config").write_text(self._sshd_config(h))
        self._save_registry()

    def _sshd_config(self, host: str) -> str:
        d = self.host_dir(host)
        return SSHD_TEMPLATE.read_text().format(
            host=host, prefix=self.prefix, ip=self.ip(host), host_key=d / "ssh_host_ed25519_key",
            pid_file=d / "sshd.pid", authorized_keys=self.key_path.parent / "authorized_keys")

    def _start_sshds(self) -> None:
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # sshd's privilege-separation directory
        for h in self.hosts:
            d = self.host_dir(h)
            # ip netns exec, unshare (no --fork) and sh all exec: the PID we get is sshd's
            argv = ["ip", "netns", "exec", self.netns(h), "unshare", "--uts", "sh", "-c",
                    f'hostname "$0" && exec {SSHD} -D -e -f "$1"', h, str(d / "sshd_config")]
            self.popen(h, argv, name="sshd", log=d / "sshd.log", in_netns=False)

    def popen(self, host: str | None, argv: list[str], name: str, log: Path, in_netns: bool = True,
              env: dict | None = None, cwd: Path | None = None) -> subprocess.Popen:
        """Start ``argv`` (inside ``host``'s namespace when ``in_netns``) as a tracked process.

        Tracked processes are killed by PID at teardown and listed for
        ``--cleanup``. Each gets its own session so that a Ctrl-C of the
        terminal reaches the harness, which then tears down in order.
        """
        if in_netns and host is not None:
            argv = ["ip", "netns", "exec", self.netns(host)] + argv
        log = Path(log)
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                 start_new_session=True, env=env, cwd=cwd)
        self.track(p, f"{name}@{host}" if host else name)
        return p

    def track(self, popen: subprocess.Popen, name: str) -> None:
        """Add a process started elsewhere (e.g. Prometheus) to those teardown kills by PID."""
        self._procs.append({"pid": popen.pid, "start_time": _start_time(popen.pid), "name": name, "popen": popen})
        self._save_registry()

    def exec(self, host: str, argv: list[str], timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess:
        """Run ``argv`` inside ``host``'s network namespace and return its result."""
        return _run(["ip", "netns", "exec", self.netns(host)] + argv, check=check, timeout=timeout)

    def ssh_argv(self, host: str) -> list[str]:
        """The ``ssh`` command line that reaches ``host`` as root with the cluster's key."""
        return ["ssh", "-i", str(self.key_path), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
                "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=3",
                f"root@{self.ip(host)}"]

    def wait_ready(self, timeout_s: float | None = None) -> None:
        """Wait until every host answers ``ssh ... hostname`` with its own name.

        Raises naming the first host that did not, with the reason (its sshd
        died, with the tail of its log, or the last SSH error).
        """
        timeout_s = self.ssh_timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout_s

        def probe(h: str) -> str | None:
            reason = "no answer"
            sshd = next(p for p in self._procs if p["name"] == f"sshd@{h}")
            while True:
                if sshd["popen"].poll() is not None:
                    tail = (self.host_dir(h) / "sshd.log").read_text(errors="replace").strip().splitlines()[-3:]
                    return f"its sshd exited with code {sshd['popen'].returncode}: {' | '.join(tail) or 'no log'}"
                try:
                    r = subprocess.run(self.ssh_argv(h) + ["hostname"], capture_output=True, text=True,
                                       timeout=max(1.0, min(5.0, deadline - time.monotonic())))
                    if r.returncode == 0 and r.stdout.strip() == h:
                        return None
                    reason = (r.stderr.strip() or f"hostname returned {r.stdout.strip()!r}")
                except subprocess.TimeoutExpired:
                    reason = "ssh timed out"
                if time.monotonic() >= deadline:
                    return reason
                time.sleep(0.1)

        with concurrent.futures.ThreadPoolExecutor(max_workers=min(16, len(self.hosts))) as pool:
            results = dict(zip(self.hosts, pool.map(probe, self.hosts)))
        failed = {h: r for h, r in results.items() if r}
        if failed:
            h, why = next(iter(failed.items()))
            others = f" (also: {', '.join(list(failed)[1:])})" if len(failed) > 1 else ""
            raise HarnessError(f"netns host {h} ({self.ip(h)}) not reachable by SSH within {timeout_s:.0f}s: {why}{others}",
                               log=str(self.host_dir(h) / "sshd.log"))

    def host_vars(self, host: str) -> dict:
        """Ansible variables of ``host``: SSH as root with the cluster's key, work root, binaries."""
        v = {"ansible_host": self.ip(host), "ansible_user": "root",
             "ansible_ssh_private_key_file": str(self.key_path),
             "ansible_python_interpreter": "/usr/bin/python3",
             "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
             "fabricrepro_work_root": str(self.host_dir(host) / "work"),
             "fabricrepro_netns": self.netns(host),
             "fabricrepro_roles": self.roles[host]}
        if self.bin_dir:
            v["fabricrepro_bin_dir"] = str(self.bin_dir)
        return v

    def write_inventory(self, path: Path | None = None) -> Path:
        """Write the YAML inventory (one group per role) and return its path."""
        path = Path(path or self.inventory_path)
        doc = {"all": {"hosts": {h: self.host_vars(h) for h in self.hosts},
                       "children": {r: {"hosts": {h: None for h in hs}} for r, hs in sorted(self.role_map().items())},
                       "vars": {"fabricrepro_netns_prefix": self.prefix}}}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(doc, sort_keys=True))
        return path

    def describe(self) -> dict:
        """What the run stores in its metadata: prefix, subnet, hosts with address and roles, links applied."""
        return {"provider": "netns", "prefix": self.prefix,
                "subnet": f"{SUBNET_BASE}.{self.subnet_k}.0/24", "controller_ip": self.controller_ip,
                "hosts": {h: {"ip": self.ip(h), "netns": self.netns(h), "roles": self.roles[h]} for h in self.hosts},
                "role_map": self.role_map(), "links": self.links_applied}

    # ---- signals and teardown
    def _install_signal_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be set from the main thread; atexit and __exit__ remain
        for sig in (signal.SIGINT, signal.SIGTERM):
            old = signal.getsignal(sig)
            # a process that ignores the signal (e.g. started with `&` by a script) keeps ignoring it
            if sig not in self._old_handlers and old != signal.SIG_IGN:
                self._old_handlers[sig] = old
                signal.signal(sig, self._on_signal)

    def _restore_signal_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig, old in self._old_handlers.items():
            if signal.getsignal(sig) == self._on_signal:
                signal.signal(sig, old if old is not None else signal.SIG_DFL)
        self._old_handlers.clear()

    def _on_signal(self, signum, frame) -> None:
        old = self._old_handlers.get(signum, signal.SIG_DFL)
        self.teardown()
        # chain to whoever handled the signal before us
        if callable(old):
            old(signum, frame)
        else:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        # the previous handler returned: the cluster is gone, so do not let setup carry on
        raise KeyboardInterrupt(signal.Signals(signum).name)

    def teardown(self) -> None:
        """Kill every process started for the cluster and left in its namespaces; delete namespaces and keys.

        Idempotent; SIGINT/SIGTERM are held back while it runs so that a second
        Ctrl-C cannot interrupt it half way.
        """
        with self._teardown_lock:
            if self._torn_down or not self._started:
                self._torn_down = True
                return
            blocked = threading.current_thread() is threading.main_thread()
            if blocked:
                signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
            try:
                self._teardown()
            finally:
                self._torn_down = True
                self._restore_signal_handlers()
                if blocked:
                    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})

    def _teardown(self) -> None:
        kill_pids([(p["pid"], p["start_time"]) for p in self._procs])
        for p in self._procs:
            try:
                p["popen"].wait(timeout=1)  # reap, so no zombie of ours stays in the process table
            except subprocess.TimeoutExpired:
                pass
        # the registry entry is ours to remove only if we wrote it (a clashing prefix is someone else's)
        cleanup_state({"prefix": self.prefix if self._registered else None, "namespaces": self._namespaces, "root_veth": self.root_veth,
                       "key_dir": str(self.key_path.parent), "etc_dirs": [str(d) for d in self._etc_dirs],
                       "host_key_files": [str(self.host_dir(h) / "ssh_host_ed25519_key") for h in self.hosts],
                       "pids": []})
        try:
            atexit.unregister(self.teardown)
        except Exception:
            pass

    # ---- links: delay and bandwidth
    def apply_links(self, links: list[dict]) -> list[dict]:
        """Give links delay (toxiproxy) and bandwidth (tc htb); return and keep what was applied.

        Each link is ``{from, to, ports, delay_ms, rate_mbit}`` (``ports``, or a
        single ``port``, needed for delay; ``rate_mbit`` alone may omit them).
        Delay: a toxiproxy in the ``to`` host's namespace listens on a new
        address of ``to`` (a "link address") at each port and forwards to
        ``to``'s own address; the ``from`` host's /etc/hosts maps ``to``'s name
        to the link address, so a client that dials the host by name goes
        through the proxy. ``delay_ms`` is added to each direction (RTT grows by
        2 x delay_ms). Bandwidth: an htb class of ``rate_mbit`` on ``from``'s
        eth0 for packets to ``to`` (and to its link address). The result goes
        in the run's metadata.
        """
        applied = []
        shaped: dict[str, list[dict]] = {}
        toxi_ports: dict[str, str] = {}
        for link in links:
            src, dst = link["from"], link["to"]
            for h in (src, dst):
                if h not in self.hosts:
                    raise HarnessError(f"link {src}->{dst}: unknown host {h!r}; hosts: {', '.join(self.hosts)}")
            ports = [int(p) for p in (link.get("ports") or ([link["port"]] if link.get("port") else []))]
            rec = {"from": src, "to": dst, "ports": ports, "delay_ms": link.get("delay_ms"),
                   "rate_mbit": link.get("rate_mbit"), "delay_method": None, "rate_method": None}
            if link.get("delay_ms") is not None:  # 0 too: a later point may set another (set_link_delay)
                if not ports:
                    raise HarnessError(f"link {src}->{dst}: delay_ms needs a port (toxiproxy proxies TCP ports)")
                if dst not in toxi_ports:
                    toxi_ports[dst] = self._start_toxiproxy(dst)
                rec.update(self._add_delay(src, dst, ports, float(link["delay_ms"]), toxi_ports[dst]))
            if link.get("rate_mbit"):
                shaped.setdefault(src, []).append(rec)
            applied.append(rec)
        for src, recs in shaped.items():
            self._shape(src, recs)
        self.links_applied.extend(applied)
        return applied

    def set_link_delay(self, delay_ms: float) -> list[dict]:
        """Set ``delay_ms`` on every delayed link (both directions of each of its proxies); return the links.

        The links as first applied (the run's metadata) are kept; the result is
        what this point runs with (stored with the point).
        """
        out = []
        for rec in self.links_applied:
            for name in rec.get("proxies") or []:
                for stream in ("upstream", "downstream"):
                    _http_json("POST", f"{rec['toxiproxy_api']}/proxies/{name}/toxics/latency_{stream}",
                               {"attributes": {"latency": int(round(delay_ms)), "jitter": 0}})
            out.append({**rec, **({"delay_ms": delay_ms, "rtt_added_ms": 2 * int(round(delay_ms))}
                                  if rec.get("proxies") else {})})
        return out

    def _start_toxiproxy(self, host: str) -> str:
        binary = find_toxiproxy()
        api = f"http://{self.ip(host)}:{TOXIPROXY_API_PORT}"
        self.popen(host, [binary, "-host", self.ip(host), "-port", str(TOXIPROXY_API_PORT)], name="toxiproxy",
                   log=self.host_dir(host) / "toxiproxy.log")
        deadline = time.monotonic() + 10
        while True:
            try:
                with urllib.request.urlopen(f"{api}/version", timeout=1):
                    return api
            except (urllib.error.URLError, OSError):
                if time.monotonic() > deadline:
                    raise HarnessError(f"toxiproxy on netns host {host} did not answer at {api}",
                                       log=str(self.host_dir(host) / "toxiproxy.log"))
                time.sleep(0.1)

    def _add_delay(self, src: str, dst: str, ports: list[int], delay_ms: float, api: str) -> dict:
        if self._link_addr_next > LINK_ADDR_LAST:
            raise HarnessError(f"too many delayed links (at most {LINK_ADDR_LAST - LINK_ADDR_FIRST + 1})")
        addr = f"{SUBNET_BASE}.{self.subnet_k}.{self._link_addr_next}"
        self._link_addr_next += 1
        _run(["ip", "-n", self.netns(dst), "addr", "add", f"{addr}/32", "dev", "eth0"])
        proxies = []
        for port in ports:
            name = f"{src}-{dst}-{port}"
            _http_json("POST", f"{api}/proxies", {"name": name, "listen": f"{addr}:{port}",
                                                  "upstream": f"{self.ip(dst)}:{port}", "enabled": True})
            for stream in ("upstream", "downstream"):
                _http_json("POST", f"{api}/proxies/{name}/toxics",
                           {"name": f"latency_{stream}", "type": "latency", "stream": stream,
                            "toxicity": 1.0, "attributes": {"latency": int(round(delay_ms)), "jitter": 0}})
            proxies.append(name)
        self._map_name(src, dst, addr)
        return {"delay_method": "toxiproxy", "link_addr": addr, "proxies": proxies, "toxiproxy_api": api,
                "toxiproxy_version": TOXIPROXY_VERSION, "rtt_added_ms": 2 * int(round(delay_ms))}

    def _map_name(self, src: str, dst: str, addr: str) -> None:
        # rewrite in place: the file is bind-mounted into running processes, a rename would not be seen
        path = ETC_NETNS / self.netns(src) / "hosts"
        lines = [ln for ln in path.read_text().splitlines() if not (ln.split()[1:2] == [dst])]
        lines.append(f"{addr} {dst}")
        with open(path, "r+") as f:
            f.seek(0)
            f.write("\n".join(lines) + "\n")
            f.truncate()

    def _shape(self, src: str, recs: list[dict]) -> None:
        ns = self.netns(src)
        tc = ["ip", "netns", "exec", ns, "tc"]
        _run(tc + ["qdisc", "replace", "dev", "eth0", "root", "handle", "1:", "htb", "default", "1"])
        # the default class stays fast: only the listed destinations are shaped
        _run(tc + ["class", "replace", "dev", "eth0", "parent", "1:", "classid", "1:1", "htb", "rate", "10gbit"])
        for i, rec in enumerate(recs, start=10):
            rate = f"{rec['rate_mbit']}mbit"
            _run(tc + ["class", "replace", "dev", "eth0", "parent", "1:", "classid", f"1:{i}", "htb",
                       "rate", rate, "ceil", rate])
            dests = [self.ip(rec["to"])] + ([rec["link_addr"]] if rec.get("link_addr") else [])
            for d in dests:
                _run(tc + ["filter", "add", "dev", "eth0", "parent", "1:", "protocol", "ip", "prio", "1",
                           "u32", "match", "ip", "dst", f"{d}/32", "flowid", f"1:{i}"])
            rec.update({"rate_method": "tc htb", "rate_device": f"{src}:eth0"})


def _http_json(method: str, url: str, body: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        raise HarnessError(f"toxiproxy {method} {url} failed: {e.code} {e.read().decode(errors='replace')}") from e


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
    inside = [(pid, _start_time(pid)) for ns in namespaces for pid in netns_pids(ns)]
    removed["pids"] += kill_pids(inside)
    for ns in namespaces:
        _run(["ip", "netns", "del", ns], check=False)
        removed["namespaces"].append(ns)
    veth = state.get("root_veth")
    if veth and Path(f"/sys/class/net/{veth}").exists():  # normally gone with the bridge namespace
        _run(["ip", "link", "del", veth], check=False)
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


# ---------------------------------------------------------------- provider adapter

class NetnsProvider(Provider):
    """``--provider netns``: one namespace host per role of the run's layout, reached over SSH.

    ``up(layout, run_dir)`` makes a host named after each role (``orderer``,
    ``peer``, ``client``...; ``_`` becomes ``-``), its files under
    ``run_dir/provider/netns`` (sshd, node-exporter and toxiproxy logs stay
    with the run; keys are deleted at ``down()``). Hosts share this machine's
    file system, so the built commands are used where they are. Clusters left
    by a harness that was killed (its PID gone) are removed first.
    """

    name = "netns"

    def __init__(self, work_root: Path | None = None, bin_dir: Path | None = None, ssh_timeout_s: float = 30.0):
        from .. import REPO_ROOT
        self.work_root = Path(work_root or REPO_ROOT / "build" / "work")
        self.bin_dir = Path(bin_dir or REPO_ROOT / "bin")
        self.ssh_timeout_s = ssh_timeout_s
        self.cluster: NetnsCluster | None = None
        self.orphans_removed: list[dict] = []

    def check(self) -> None:
        preflight()

    @staticmethod
    def host_name(role: str) -> str:
        return role.replace("_", "-")

    def up(self, layout: dict[str, list[str]], run_dir: Path) -> dict[str, list[str]]:
        """Create one host per role of ``layout`` and wait until each answers SSH."""
        self.orphans_removed = cleanup_orphans()
        hosts = {role: self.host_name(role) for role in layout}
        self.cluster = NetnsCluster(Path(run_dir) / "provider" / "netns", list(hosts.values()),
                                    roles={hosts[r]: list(cs) for r, cs in layout.items()},
                                    ssh_timeout_s=self.ssh_timeout_s, bin_dir=self.bin_dir, handle_signals=False)
        self.cluster.start()
        return groups_of(layout, hosts)

    def down(self) -> None:
        """Tear the cluster down (idempotent)."""
        if self.cluster:
            self.cluster.teardown()

    def _up(self) -> NetnsCluster:
        if not self.cluster:
            raise HarnessError("netns provider: call up(layout, run_dir) first")
        return self.cluster

    def host_vars(self, host: str) -> dict:
        """Ansible variables of ``host``; services are dialled by host name (see ``apply_links``)."""
        return {**self._up().host_vars(host), "fabricrepro_address": host}

    def describe(self) -> dict:
        d = self.cluster.describe() if self.cluster else {"provider": self.name}
        if self.orphans_removed:
            d["orphans_removed"] = [o["prefix"] for o in self.orphans_removed]
        return d

    def monitor_targets(self, groups: dict[str, list[str]]) -> list:
        from ..resources import netns_targets
        return netns_targets(self._up())

    def track(self, popen, name: str) -> None:
        self._up().track(popen, name)

    def apply_links(self, links: list[dict]) -> list[dict]:
        return self._up().apply_links([{**l, "from": self.host_name(l["from"]), "to": self.host_name(l["to"])}
                                       for l in links])

    def set_link_delay(self, delay_ms: float) -> list[dict]:
        return self._up().set_link_delay(delay_ms)

    def tune(self, sysctls: dict) -> list[dict]:
        """Set each parameter inside every host's network namespace (net.* settings are per namespace).

        A parameter the kernel keeps for the whole machine is not changed: it is
        recorded as not applied rather than altering this machine for everyone.
        """
        c = self._up()
        out = []
        for name, value in sysctls.items():
            if not str(name).startswith("net."):
                out.append({"name": name, "value": value, "applied": False,
                            "reason": "not a per-namespace (net.*) parameter; the netns hosts share this kernel"})
                continue
            before = {h: c.exec(h, ["sysctl", "-n", name]).stdout.strip() for h in c.hosts}
            for h in c.hosts:
                c.exec(h, ["sysctl", "-q", "-w", f"{name}={value}"])
            out.append({"name": name, "value": value, "applied": True, "before": before,
                        "method": "sysctl -w in each host's network namespace (gone with it)"})
        return out

    def unreachable(self) -> dict[str, str]:
        """Hosts whose namespace or sshd is gone (a host that died mid-run)."""
        c = self._up()
        present = set(netns_list())
        out = {}
        for h in c.hosts:
            if c.netns(h) not in present:
                out[h] = f"namespace {c.netns(h)} is gone"
                continue
            sshd = next((p for p in c._procs if p["name"] == f"sshd@{h}"), None)
            if sshd and not _alive(sshd["pid"], sshd["start_time"]):
                out[h] = f"its sshd (PID {sshd['pid']}) has exited"
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
        if owner and _start_time(int(owner)) is None:
            done.append({"prefix": state.get("prefix"), **cleanup_state(state)})
    return done


def main(argv: list[str] | None = None) -> int:
    """``python3 -m harness.providers.netns --cleanup PREFIX | --list``."""
    ap = argparse.ArgumentParser(prog="python3 -m harness.providers.netns", description=__doc__.split("\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--cleanup", metavar="PREFIX", help="remove clusters whose prefix starts with PREFIX (e.g. fr-1a2b3c, or fr- for all)")
    g.add_argument("--list", action="store_true", help="list this provider's namespaces")
    args = ap.parse_args(argv)
    try:
        if args.list:
            for p, nss in sorted(list_clusters().items()):
                print(p, " ".join(sorted(nss)))
            return 0
        for d in cleanup(args.cleanup):
            print(f"{d['prefix']}: killed {len(d['pids'])} processes, deleted {len(d['namespaces'])} namespaces, "
                  f"{len(d['keys'])} key files")
        return 0
    except HarnessError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
