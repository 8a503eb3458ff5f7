"""A netns cluster: N hosts as network namespaces on this machine, reached by SSH.

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
SIGINT/SIGTERM.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import secrets
import signal
import subprocess
import threading
from pathlib import Path

import yaml

from ..errors import HarnessError
from . import netns_links, netns_sshd
from .netns_namespaces import (CONTROLLER_OCTET, ETC_NETNS, LINK_ADDR_FIRST, LINK_ADDR_LAST, MAX_HOSTS, PREFIX_ROOT,
                               REGISTRY_DIR, SUBNET_BASE, cleanup_state, free_subnet, kill_pids, netns_list,
                               preflight, process_start_time, run, subnet_lock)


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
            netns_sshd.start_sshds(self)
            self.write_inventory()
            if wait:
                self.wait_ready()
        except BaseException:
            self.teardown()
            raise
        return self

    def _made(self) -> dict:
        """What exists so far, as ``cleanup_state`` reads it."""
        return {"namespaces": self._namespaces, "root_veth": self.root_veth,
                "key_dir": str(self.key_path.parent), "etc_dirs": [str(d) for d in self._etc_dirs],
                "host_key_files": [str(self.host_dir(h) / "ssh_host_ed25519_key") for h in self.hosts]}

    def _save_registry(self) -> None:
        """Persist what exists so far, so that ``--cleanup`` can remove it if this process dies."""
        REGISTRY_DIR.mkdir(parents=True, exist_ok=True)
        state = {"prefix": self.prefix, "work_dir": str(self.work_dir), "owner_pid": os.getpid(), **self._made(),
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
        run(["ip", "netns", "add", ns])
        run(["ip", "-n", ns, "link", "set", "lo", "up"])

    def _create_network(self) -> None:
        if self.prefix in netns_list() or any(n.startswith(self.prefix + "-") for n in netns_list()):
            raise HarnessError(f"netns prefix {self.prefix} is already in use")
        # choosing k and claiming it (the controller address) is atomic between clusters
        with subnet_lock():
            self.subnet_k = free_subnet()
            self._add_ns(self.bridge_ns)
            br = ["ip", "-n", self.bridge_ns]
            run(br + ["link", "add", "br0", "type", "bridge"])
            run(br + ["link", "set", "br0", "up"])
            run(["ip", "link", "add", self.root_veth, "type", "veth", "peer", "name", "ctl", "netns", self.bridge_ns])
            run(br + ["link", "set", "ctl", "master", "br0", "up"])
            # no IPv6 on the root end: it would only send router solicitations into the cluster
            run(["sysctl", "-q", "-w", f"net.ipv6.conf.{self.root_veth}.disable_ipv6=1"], check=False)
            run(["ip", "addr", "add", f"{self.controller_ip}/24", "dev", self.root_veth])
            run(["ip", "link", "set", self.root_veth, "up"])

    def _create_hosts(self) -> None:
        self.key_path.parent.mkdir(parents=True, exist_ok=True)
        if self.key_path.exists():
            self.key_path.unlink()
            self.key_path.with_suffix(".pub").unlink(missing_ok=True)
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"fabricrepro-{self.prefix}", "-f", str(self.key_path)])
        pub = self.key_path.with_suffix(".pub").read_text()
        (self.key_path.parent / "authorized_keys").write_text(pub)
        hosts_file = "127.0.0.1 localhost\n" + "".join(f"{self.ip(h)} {h}\n" for h in self.hosts)
        for i, h in enumerate(self.hosts, start=1):
            ns = self.netns(h)
            self._add_ns(ns)
            run(["ip", "-n", self.bridge_ns, "link", "add", f"v{i}", "type", "veth", "peer", "name", "eth0", "netns", ns])
            run(["ip", "-n", self.bridge_ns, "link", "set", f"v{i}", "master", "br0", "up"])
            run(["ip", "-n", ns, "addr", "add", f"{self.ip(h)}/24", "dev", "eth0"])
            run(["ip", "-n", ns, "link", "set", "eth0", "up"])
            d = self.host_dir(h)
            (d / "work").mkdir(parents=True, exist_ok=True)
            hk = d / "ssh_host_ed25519_key"
            for f in (hk, hk.with_suffix(".pub")):
                f.unlink(missing_ok=True)
            run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", h, "-f", str(hk)])
            etc = ETC_NETNS / ns
            etc.mkdir(parents=True, exist_ok=True)
            self._etc_dirs.append(etc)
            # host names resolve inside every host (ip netns exec mounts this over /etc/hosts); a host's
            # own name is its address, not Debian's 127.0.1.1: its servers bind that address only, and
            # dial each other by name (Kafka's controller reaches its own broker at kafka-0:9092)
            (etc / "hosts").write_text(hosts_file)
            (d / "sshd_config").write_text(netns_sshd.sshd_config(self, h))
        self._save_registry()

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
        self._procs.append({"pid": popen.pid, "start_time": process_start_time(popen.pid), "name": name, "popen": popen})
        self._save_registry()

    def exec(self, host: str, argv: list[str], timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess:
        """Run ``argv`` inside ``host``'s network namespace and return its result."""
        return run(["ip", "netns", "exec", self.netns(host)] + argv, check=check, timeout=timeout)

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
        netns_sshd.wait_ready(self, self.ssh_timeout_s if timeout_s is None else timeout_s)

    def tracked(self, name: str) -> dict | None:
        """The tracked process ``name`` (``sshd@<host>``...): ``{"pid", "start_time", "name", "popen"}``."""
        return next((p for p in self._procs if p["name"] == name), None)

    def host_vars(self, host: str) -> dict:
        """Ansible variables of ``host``: SSH as root with the cluster's key, work root, binaries."""
        v = {"ansible_host": self.ip(host), "ansible_user": "root",
             "ansible_ssh_private_key_file": str(self.key_path),
             "ansible_python_interpreter": "/usr/bin/python3",
             # the harness made these hosts: their keys are new every run and their addresses reused
             "ansible_host_key_checking": False,
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
        cleanup_state({"prefix": self.prefix if self._registered else None, **self._made(), "pids": []})
        try:
            atexit.unregister(self.teardown)
        except Exception:
            pass

    # ---- links: delay and bandwidth
    def apply_links(self, links: list[dict]) -> list[dict]:
        """Give links delay (toxiproxy) and bandwidth (tc htb, netns_links.py); return and keep what was applied.

        Each link is ``{from, to, ports, delay_ms, rate_mbit}`` (``ports``, or a
        single ``port``, needed for delay; ``rate_mbit`` alone may omit them).
        A client that dials ``to`` by name from ``from`` goes through the
        delay, added to each direction (RTT grows by 2 x delay_ms). What is
        kept goes in the run's metadata.
        """
        applied = netns_links.apply_links(self, links)
        self.links_applied.extend(applied)
        return applied

    def set_link_delay(self, delay_ms: float) -> list[dict]:
        """Set ``delay_ms`` on every delayed link (both directions of each of its proxies); return the links.

        The links as first applied (the run's metadata) are kept; the result is
        what this point runs with (stored with the point).
        """
        return netns_links.set_link_delay(self.links_applied, delay_ms)

    def new_link_address(self) -> str:
        """A new address in the cluster's subnet for a delayed link's proxy."""
        if self._link_addr_next > LINK_ADDR_LAST:
            raise HarnessError(f"too many delayed links (at most {LINK_ADDR_LAST - LINK_ADDR_FIRST + 1})")
        addr = f"{SUBNET_BASE}.{self.subnet_k}.{self._link_addr_next}"
        self._link_addr_next += 1
        return addr
