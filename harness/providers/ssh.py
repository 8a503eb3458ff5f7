"""The ssh provider: the user's own servers, listed in their Ansible inventory.

    invoke reproduce --paper fastfabric --experiment table1-end-to-end --provider ssh --inventory my.yml

The inventory is the user's (``infra/inventories/*.example.yml`` show the
format): one group per topology role (``orderer``, ``peer``, ``client``...),
hosts with ``ansible_host`` and optionally ``private_ip`` (the address the
services bind and advertise), connection variables wherever Ansible allows
them. It is read with ``ansible-inventory``, so group and host variables,
``group_vars/`` beside it and INI inventories work as they do for Ansible.

``up`` takes the first host of the group of each role of the layout and, before
anything is deployed:

1. checks that every chosen host answers SSH (``ansible -m raw``); a host that
   does not is named with Ansible's reason;
2. runs the preflight, ``playbooks/upstream/preflight.yml`` (reachable with
   Python, Debian family, cores, memory, synchronised clock) through
   ``playbooks/provider-preflight.yml``, which also records each host's facts
   (CPU model, vCPUs, memory, kernel, distribution) for the run's metadata;
3. starts node-exporter on every host (``playbooks/node-exporter.yml``): a
   process with a PID file under ``<work_root>/<host>/node-exporter/``. An exporter
   that already answers on the port (the Debian package's service) is reused
   and left running.

The component roles copy the built commands from the controller to
``<work_root>/bin`` (``fabricrepro_copy_binaries``); each host keeps its points'
working files under ``<work_root>/<host>/``, so servers that share a filesystem
do not share them. ``apply_links`` shapes
links with ``tc`` on the sending host (netem delay, htb rate) and
``set_link_delay`` changes each netem's delay between points; ``down`` stops
the exporters it started and removes the shaping. Everything the provider
writes on the controller is under ``<run_dir>/provider/``.
"""

from __future__ import annotations

import getpass
import ipaddress
import json
import logging
import re
import shlex
import shutil
import socket
import subprocess
import time
from pathlib import Path

import yaml

from .. import REPO_ROOT
from ..deploy import PLAYBOOKS, ansible_env, ansible_failures, run_playbook, task_reason
from ..errors import HarnessError
from ..tools import require_tool
from .base import Provider, groups_of

log = logging.getLogger(__name__)

#: Where points keep their working files on the user's hosts (and where the commands are copied).
DEFAULT_WORK_ROOT = "/var/tmp/fabricrepro"
#: node-exporter's port on every host (the aws security group admits it from the operator).
EXPORTER_PORT = 9100
#: Playbooks of this provider (under playbooks/).
PREFLIGHT_PLAYBOOK = "provider-preflight.yml"
EXPORTER_PLAYBOOK = "node-exporter.yml"
EXPORTER_STOP_PLAYBOOK = "node-exporter-stop.yml"
LINKS_PLAYBOOK = "links.yml"
SYSCTL_PLAYBOOK = "sysctl.yml"
#: htb needs a rate on every class; a delay-only link gets this one, far above any NIC it will meet.
UNSHAPED_RATE_MBIT = 100_000
#: netem's queue must hold what is in flight during the delay; without a rate, assume a 10 Gbit/s NIC.
NETEM_ASSUMED_MBIT = 10_000
#: ssh arguments of checks and of down(): a new connection each time. A master connection kept
#: by an earlier playbook (ControlPersist) would answer for a host whose sshd is gone, or hang
#: on one whose network is gone, where a new connection fails within Ansible's timeout.
FRESH_SSH_ARGS = "-C -o ControlMaster=no -o ControlPath=none"
NETEM_HINT = ("that host's kernel lacks the netem qdisc (Debian/Ubuntu: apt-get install "
              "linux-modules-extra-$(uname -r); modprobe sch_netem)")


# ---------------------------------------------------------------- the user's inventory

def load_inventory(path: Path) -> tuple[dict[str, list[str]], dict[str, dict]]:
    """``({group: [host, ...]}, {host: {var: value}})`` of an Ansible inventory.

    A group's hosts are its own, in inventory order, then those of its child
    groups; variables are merged as Ansible merges them (``all`` < parent group
    < group < host). Raises HarnessError for a missing or unparseable file.
    """
    path = Path(path)
    if not path.is_file():
        raise HarnessError(f"inventory {path} not found",
                           hint="give the inventory of your servers with --inventory "
                                "(see infra/inventories/*.example.yml)")
    exe = require_tool("ansible-inventory")
    env = ansible_env()
    # without this, an unparseable file is only a warning and the inventory is "localhost"
    env["ANSIBLE_INVENTORY_UNPARSED_FAILED"] = "True"
    # run beside the inventory: from playbooks/ it would add the harness's group_vars to the user's
    proc = subprocess.run([exe, "-i", str(path.resolve()), "--list"], capture_output=True, text=True,
                          env=env, cwd=path.resolve().parent, timeout=120, check=False)
    if proc.returncode != 0:
        raise HarnessError(f"inventory {path} cannot be parsed: {_inventory_error(path, proc.stderr)}")
    try:
        doc = json.loads(proc.stdout)
    except ValueError as e:
        raise HarnessError(f"inventory {path}: ansible-inventory printed no JSON ({e})") from None
    hostvars = doc.get("_meta", {}).get("hostvars", {})

    def members(group: str, seen: set[str]) -> list[str]:
        if group in seen:
            return []
        seen.add(group)
        out = list(doc.get(group, {}).get("hosts", []))
        for child in doc.get(group, {}).get("children", []):
            out += [h for h in members(child, seen) if h not in out]
        return out

    groups = {g: members(g, set()) for g in doc if g not in ("_meta",)}
    hosts = {h for hs in groups.values() for h in hs}
    return groups, {h: dict(hostvars.get(h, {})) for h in hosts}


def _inventory_error(path: Path, stderr: str) -> str:
    """The most useful line of ansible-inventory's complaint (a YAML error with its line if any)."""
    if path.suffix in (".yml", ".yaml"):
        try:
            yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as e:
            return "YAML: " + " ".join(str(e).split())
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    picked = [ln for ln in lines if ln.startswith(("[ERROR]", "[WARNING]: Failed to parse"))]
    return " | ".join((picked or lines)[-3:]) or "ansible-inventory failed"


# ---------------------------------------------------------------- Ansible results

def _tail(path: Path, n: int = 5) -> str:
    try:
        lines = [ln for ln in Path(path).read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-n:])


def adhoc(inventory: Path, pattern: str, command: str, out_dir: Path, timeout_s: float = 5,
          become: bool = False) -> dict[str, dict]:
    """Run a shell ``command`` with Ansible's ``raw`` module on ``pattern``; ``{host: result}``.

    ``raw`` needs no Python on the host, so it tells "cannot connect" apart from
    everything the preflight checks. Results come from the ``tree`` callback
    (one JSON file per host in ``out_dir/tree``); a host without a result gets
    ``{"unreachable": True, "msg": "no result"}``.
    """
    exe = require_tool("ansible")
    out_dir = Path(out_dir)
    tree = out_dir / "tree"
    shutil.rmtree(tree, ignore_errors=True)
    tree.mkdir(parents=True, exist_ok=True)
    env = ansible_env()
    env.update({"ANSIBLE_LOAD_CALLBACK_PLUGINS": "True", "ANSIBLE_CALLBACKS_ENABLED": "ansible.builtin.tree",
                "ANSIBLE_CALLBACK_TREE_DIR": str(tree), "ANSIBLE_DEPRECATION_WARNINGS": "False",
                "ANSIBLE_SSH_ARGS": FRESH_SSH_ARGS})
    argv = [exe, pattern, "-i", str(inventory), "-m", "ansible.builtin.raw", "-a", command,
            "-T", str(max(1, int(timeout_s)))] + (["--become"] if become else [])
    with open(out_dir / "ansible.log", "a", encoding="utf-8") as logf:
        logf.write("$ " + shlex.join(argv) + "\n")
        logf.flush()
        try:
            subprocess.run(argv, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                           cwd=PLAYBOOKS, timeout=timeout_s * 4 + 60, check=False, start_new_session=True)
        except subprocess.TimeoutExpired:
            logf.write("(timed out)\n")
    hosts = _hosts_of(inventory, pattern)
    results = {}
    for h in hosts:
        try:
            results[h] = json.loads((tree / h).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            results[h] = {"unreachable": True, "msg": f"no result from Ansible (see {out_dir / 'ansible.log'})"}
    return results


def _hosts_of(inventory: Path, pattern: str) -> list[str]:
    """Hosts of our own generated inventory matching a comma-separated list of names or ``all``."""
    doc = yaml.safe_load(Path(inventory).read_text(encoding="utf-8")) or {}
    names = list((doc.get("all", {}) or {}).get("hosts", {}) or {})
    return names if pattern == "all" else [h for h in pattern.split(",") if h in names]


def _adhoc_reason(result: dict) -> str | None:
    """Why an ``adhoc`` result is a failure, or None when it succeeded."""
    if result.get("unreachable"):
        return str(result.get("msg", "unreachable")).removeprefix("Task failed: ").strip()
    if result.get("failed") or result.get("rc", 0) != 0:
        return task_reason(result)
    return None


# ---------------------------------------------------------------- links: tc command lines

def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{float(x):g}"


def tc_commands(device: str, dests: list[dict]) -> list[dict]:
    """The ``tc`` commands that shape traffic leaving ``device`` towards each of ``dests``.

    ``dests`` are ``{"address", "delay_ms"?, "rate_mbit"?}`` (IPv4 addresses).
    Returns ``[{"argv": [...], "may_fail": bool, "dest": address | None}]``:

    - the device's root qdisc is deleted (it may be the default, hence may fail), then
      replaced by an ``htb`` without a default class: traffic no filter matches is
      sent unshaped (htb's direct queue), so only the listed destinations change;
    - per destination an htb class limited to ``rate_mbit`` (or UNSHAPED_RATE_MBIT),
      with a burst of at least one 64 KiB GSO packet or 4 ms of the rate (a tick at
      HZ=250), so the rate holds with segmentation offload;
    - below it a ``netem`` of ``delay_ms`` whose queue holds 1.5x what is in flight
      during the delay (netem's default of 1000 packets would drop at high rates);
    - a u32 filter sending packets for the address to that class.
    """
    if not dests:
        return []
    cmds = [{"argv": ["tc", "qdisc", "del", "dev", device, "root"], "may_fail": True, "dest": None},
            {"argv": ["tc", "qdisc", "replace", "dev", device, "root", "handle", "1:", "htb"],
             "may_fail": False, "dest": None}]
    for i, d in enumerate(dests, start=1):
        addr = d["address"]
        delay, rate = d.get("delay_ms"), d.get("rate_mbit")
        cls = f"1:{i:x}"
        rate_mbit = float(rate) if rate else UNSHAPED_RATE_MBIT
        burst = max(65536, int(rate_mbit * 1e6 / 8 * 0.004))
        cmds.append({"argv": ["tc", "class", "replace", "dev", device, "parent", "1:", "classid", cls, "htb",
                              "rate", f"{_num(rate_mbit)}mbit", "ceil", f"{_num(rate_mbit)}mbit",
                              "burst", str(burst), "cburst", str(burst), "quantum", "60000"],
                     "may_fail": False, "dest": addr})
        if delay is not None:  # 0 too: a later point may change it (set_link_delay)
            handle = f"{0x100 + i:x}:"
            cmds.append({"argv": ["tc", "qdisc", "replace", "dev", device, "parent", cls, "handle", handle,
                                  *netem_args(delay, rate)],
                         "may_fail": False, "dest": addr,
                         "netem": {"device": device, "parent": cls, "handle": handle}})
        cmds.append({"argv": ["tc", "filter", "add", "dev", device, "parent", "1:", "protocol", "ip", "prio", "1",
                              "u32", "match", "ip", "dst", f"{addr}/32", "flowid", cls],
                     "may_fail": False, "dest": addr})
    return cmds


def netem_args(delay_ms: float, rate_mbit: float | None) -> list[str]:
    """``netem delay <d>ms limit <n>``: a queue of 1.5x what is in flight during the delay (at least netem's 1000)."""
    in_flight = (float(rate_mbit) if rate_mbit else NETEM_ASSUMED_MBIT) * 1e6 / 8 * float(delay_ms) / 1e3 / 1500
    return ["netem", "delay", f"{_num(delay_ms)}ms", "limit", str(max(1000, int(in_flight * 1.5) + 1))]


def tc_clear_commands(device: str) -> list[dict]:
    """Remove the shaping of ``device`` (the kernel puts its default qdisc back)."""
    return [{"argv": ["tc", "qdisc", "del", "dev", device, "root"], "may_fail": True, "dest": None}]


_ROUTE = re.compile(r"^(?P<local>local\s+)?(?P<addr>\S+)\s.*?\bdev\s+(?P<dev>\S+)")


def route_devices(stdout: str) -> dict[str, str]:
    """``{address: device}`` from the output of ``ip -o route get`` (one line per address); local → "lo"."""
    out = {}
    for line in stdout.replace("\r", "").splitlines():
        m = _ROUTE.match(line.strip())
        if m:
            out[m["addr"]] = "lo" if m["local"] else m["dev"]
    return out


# ---------------------------------------------------------------- the provider

class SshProvider(Provider):
    """``--provider ssh``: the first host of each role's group in the user's inventory."""

    name = "ssh"
    #: Seconds ``up`` keeps retrying hosts that do not answer SSH (0: fail at once; aws waits for boots).
    ssh_wait_s: float = 0
    #: Install prometheus-node-exporter with apt when a host lacks it (the aws hosts are ours to change).
    install_exporter: bool = False

    def __init__(self, inventory: Path | str, work_root: str = DEFAULT_WORK_ROOT, bin_dir: Path | None = None,
                 preflight: bool = True, require_clock_sync: bool = True, min_cores: int | None = None,
                 min_memory_mb: int | None = None, controller_work_root: Path | None = None,
                 exporter_binary: str | None = None):
        self.inventory_path = Path(inventory).expanduser()
        #: On the user's hosts: points' working files, the copied commands, node-exporter's PID file.
        self.remote_work_root = str(work_root or DEFAULT_WORK_ROOT)
        #: On the controller (Provider contract): crypto material and other files made before copying.
        self.work_root = Path(controller_work_root or REPO_ROOT / "build" / "work")
        self.bin_dir = Path(bin_dir or REPO_ROOT / "bin")
        self.preflight = preflight
        self.require_clock_sync = require_clock_sync
        self.min_cores = min_cores
        self.min_memory_mb = min_memory_mb
        #: node-exporter on the hosts (a path, or a name looked up on PATH); None: the usual places
        self.exporter_binary = exporter_binary
        self._reset()

    def _reset(self) -> None:
        self.layout: dict[str, list[str]] = {}
        self.role_host: dict[str, str] = {}        # host role of the layout -> inventory host
        self.host_roles: dict[str, list[str]] = {}  # inventory host -> host roles
        self.user_vars: dict[str, dict] = {}
        self.facts: dict[str, dict] = {}
        self.exporters: dict[str, dict] = {}
        self.links_applied: list[dict] = []
        self._links: dict[tuple[str, str], dict] = {}   # (from role, to role) -> link as asked
        self._shaped: dict[str, set[str]] = {}          # host -> devices with our root qdisc
        self.run_dir: Path | None = None
        self.hosts_inventory: Path | None = None
        self._checks = 0
        self._down_done = True
        self._exporters_started = False   # the exporter playbook ran (down() must stop what it started)
        self._sysctl_before: dict[str, dict] = {}   # host -> kernel parameters as they were before tune()

    # ---- paths
    @property
    def provider_dir(self) -> Path:
        """Where this provider keeps its files in the run directory."""
        if self.run_dir is None:
            raise HarnessError(f"the {self.name} provider is not up")
        return self.run_dir / "provider"

    # ---- lifecycle
    def check(self) -> None:
        load_inventory(self.inventory_path)

    def up(self, layout: dict[str, list[str]], run_dir: Path) -> dict[str, list[str]]:
        self._reset()
        self.run_dir = Path(run_dir)
        self.provider_dir.mkdir(parents=True, exist_ok=True)
        self.layout = {r: list(c) for r, c in layout.items()}
        groups, hostvars = load_inventory(self.inventory_path)
        for role in self.layout:
            hosts = groups.get(role) or []
            if not hosts:
                have = sorted(g for g, hs in groups.items() if hs and g not in ("all", "ungrouped"))
                raise HarnessError(f"inventory {self.inventory_path} has no host in group {role!r}, which this "
                                   f"experiment needs (roles: {', '.join(self.layout)}); its groups: "
                                   f"{', '.join(have) or '(none)'}",
                                   hint="add a group per role, hosts named <role>-<i> "
                                        "(see infra/inventories/*.example.yml)")
            self.role_host[role] = hosts[0]
            self.host_roles.setdefault(hosts[0], []).append(role)
        self.user_vars = {h: self._fix_paths(hostvars[h]) for h in self.host_roles}
        self.hosts_inventory = self._write_hosts_inventory()
        self._down_done = False   # from here on, down() has something to undo

        self._check_reachable()
        if self.preflight:
            self._run_preflight()
        self._start_exporters()
        return groups_of(self.layout, self.role_host)

    def _fix_paths(self, v: dict) -> dict:
        """The user's host variables, with a relative private-key path made absolute.

        Ansible resolves it against its working directory, which for the
        harness is ``playbooks/``: the user meant their own directory (or the
        inventory's).
        """
        v = dict(v)
        for key in ("ansible_ssh_private_key_file", "ansible_private_key_file"):
            p = v.get(key)
            if isinstance(p, str) and p and not p.startswith(("/", "~", "{{")):
                candidates = [Path.cwd() / p, self.inventory_path.resolve().parent / p]
                v[key] = str(next((c for c in candidates if c.exists()), candidates[0]))
        return v

    def _write_hosts_inventory(self) -> Path:
        """The chosen hosts with their variables, for the provider's own playbooks and checks."""
        doc = {"all": {"hosts": {h: self.host_vars(h) for h in self.host_roles}}}
        path = self.provider_dir / "hosts.yml"
        path.write_text(yaml.safe_dump(doc, sort_keys=True), encoding="utf-8")
        return path

    def _describe_host(self, h: str) -> str:
        v = self.user_vars.get(h, {})
        return f"{h} ({v.get('ansible_host', h)}, role {'/'.join(self.host_roles.get(h, []))})"

    def _check_reachable(self) -> None:
        """Fail naming every chosen host that does not answer SSH (retrying up to ``ssh_wait_s``)."""
        deadline = time.monotonic() + self.ssh_wait_s
        pending = list(self.host_roles)
        while True:
            failed = self._probe(pending, "true", timeout_s=5)
            if not failed or time.monotonic() >= deadline:
                break
            pending = list(failed)
            time.sleep(5)
        if failed:
            detail = "; ".join(f"{self._describe_host(h)}: {why}" for h, why in failed.items())
            raise HarnessError(f"{len(failed)} host(s) of inventory {self.inventory_path} not reachable by SSH: "
                               f"{detail}",
                               hint="check the address, ansible_user and ansible_ssh_private_key_file of "
                                    "the host, and that sshd runs",
                               log=str(self.provider_dir / "checks" / f"{self._checks}" / "ansible.log"))

    def _probe(self, hosts: list[str], command: str, timeout_s: float) -> dict[str, str]:
        self._checks += 1
        results = adhoc(self.hosts_inventory, ",".join(hosts), command,
                        self.provider_dir / "checks" / f"{self._checks}", timeout_s=timeout_s)
        return {h: why for h, r in results.items() if (why := _adhoc_reason(r))}

    def _playbook(self, playbook: str, log_name: str, variables: dict, what: str, timeout: float,
                  hint: str | None = None, fresh: bool = False) -> None:
        """Run one of the provider's playbooks on the chosen hosts; a failure names each host and why.

        ``fresh``: new SSH connections (FRESH_SSH_ARGS), for down() when hosts may be gone.
        """
        logf = self.provider_dir / log_name
        variables = {"fabricrepro_provider_dir": str(self.provider_dir), **variables}
        if fresh:
            variables["ansible_ssh_args"] = FRESH_SSH_ARGS
        try:
            run_playbook(playbook, self.hosts_inventory, variables, logf, timeout=timeout)
        except HarnessError as e:
            failures = ansible_failures(logf.read_text(encoding="utf-8", errors="replace")) if logf.exists() else {}
            if failures:
                detail = "; ".join(f"{self._describe_host(h) if h in self.host_roles else h}: {why}"
                                   for h, why in failures.items())
                if hint is None and any("qdisc kind is unknown" in why for why in failures.values()):
                    hint = NETEM_HINT
                raise HarnessError(f"{what} failed on {', '.join(failures)}: {detail}", hint=hint,
                                   log=str(logf)) from None
            raise HarnessError(f"{what} failed: {e.args[0]}: {_tail(logf)}", hint=hint, log=str(logf)) from None

    def _run_preflight(self) -> None:
        variables = {"preflight_require_clock_sync": bool(self.require_clock_sync)}
        # given explicitly they override the inventory's host_min_* (extra vars win in Ansible)
        if self.min_cores is not None:
            variables["host_min_cores"] = int(self.min_cores)
        if self.min_memory_mb is not None:
            variables["host_min_memory_mb"] = int(self.min_memory_mb)
        (self.provider_dir / "facts").mkdir(parents=True, exist_ok=True)
        self._playbook(PREFLIGHT_PLAYBOOK, "preflight.log", variables, "preflight", timeout=600)
        for h in self.host_roles:
            f = self.provider_dir / "facts" / f"{h}.json"
            if f.exists():
                self.facts[h] = json.loads(f.read_text(encoding="utf-8"))

    def cpus_problems(self, cpus: int | None) -> list[str]:
        """Each chosen host whose vCPUs (its preflight's facts, known once ``up`` ran) are fewer than ``cpus``;
        before ``up`` nothing is known, so nothing is refused."""
        return [f"cpus={cpus}: {self._describe_host(h)} has {facts['vcpus']} vCPUs"
                for h, facts in sorted(self.facts.items())
                if cpus and facts.get("vcpus") is not None and int(facts["vcpus"]) < cpus]

    def _exporter_hosts(self) -> list[str]:
        """One host per machine: inventory names that share address and port share one exporter."""
        seen: dict[tuple, str] = {}
        for h in self.host_roles:
            v = self.user_vars[h]
            seen.setdefault((str(v.get("ansible_host", h)), str(v.get("ansible_port", 22))), h)
        return list(seen.values())

    def _start_exporters(self) -> None:
        (self.provider_dir / "exporters").mkdir(parents=True, exist_ok=True)
        variables = {"fabricrepro_exporter_port": EXPORTER_PORT, "fabricrepro_exporter_hosts": self._exporter_hosts(),
                     "fabricrepro_exporter_install": bool(self.install_exporter)}
        if self.exporter_binary:
            variables["fabricrepro_exporter_binaries"] = [self.exporter_binary]
        self._exporters_started = True
        self._playbook(EXPORTER_PLAYBOOK, "node-exporter.log", variables,
                       "starting node-exporter", timeout=300,
                       hint=None if self.install_exporter else
                       "install it on each host: apt-get install prometheus-node-exporter")
        for h in self.host_roles:
            f = self.provider_dir / "exporters" / f"{h}.json"
            if f.exists():
                self.exporters[h] = json.loads(f.read_text(encoding="utf-8"))

    def tune(self, sysctls: dict) -> list[dict]:
        """Set the parameters on every chosen host with ``sysctl -w``; ``down`` restores the values before."""
        if not sysctls:
            return []
        hosts = list(self.host_roles)
        saved = self.provider_dir / "sysctl"
        saved.mkdir(parents=True, exist_ok=True)
        try:
            self._playbook(SYSCTL_PLAYBOOK, "sysctl.log", {"fabricrepro_sysctls": {h: dict(sysctls) for h in hosts},
                                                           "fabricrepro_sysctl_save": True},
                           "setting kernel parameters", timeout=300)
        finally:
            # whatever was read before a failure is restored by down()
            self._sysctl_before = {h: json.loads((saved / f"{h}.json").read_text(encoding="utf-8"))
                                   for h in hosts if (saved / f"{h}.json").exists()}
        before = self._sysctl_before
        return [{"name": k, "value": v, "applied": True, "method": "sysctl -w (restored when the run ends)",
                 "before": {h: before[h].get(k) for h in hosts}} for k, v in sysctls.items()]

    def down(self) -> None:
        """Restore kernel parameters, remove the links' shaping, stop the exporters started by ``up``; log, never raise."""
        if self._down_done or self.hosts_inventory is None:
            return
        self._down_done = True
        if self._sysctl_before:
            try:
                self._playbook(SYSCTL_PLAYBOOK, "sysctl-restore.log", {"fabricrepro_sysctls": self._sysctl_before},
                               "restoring kernel parameters", timeout=300, fresh=True)
                self._sysctl_before = {}
            except HarnessError as e:
                log.warning("%s provider: %s", self.name, e)
        if self._shaped:
            clear = {h: [c for d in sorted(devs) for c in tc_clear_commands(d)] for h, devs in self._shaped.items()}
            try:
                self._playbook(LINKS_PLAYBOOK, "links-clear.log", {"fabricrepro_tc_commands": clear},
                               "removing link shaping", timeout=300, fresh=True)
                self._shaped = {}
            except HarnessError as e:
                log.warning("%s provider: %s", self.name, e)
        if not self._exporters_started:
            return  # up() stopped before starting any (e.g. a host did not answer): nothing to stop
        try:
            self._playbook(EXPORTER_STOP_PLAYBOOK, "node-exporter-stop.log",
                           {"fabricrepro_exporter_hosts": self._exporter_hosts()},
                           "stopping node-exporter", timeout=300, fresh=True)
        except HarnessError as e:
            log.warning("%s provider: %s", self.name, e)

    # ---- inventory
    def _address(self, host: str) -> str:
        v = self.user_vars.get(host, {})
        return str(v.get("private_ip") or v.get("ansible_host") or host)

    def _become(self, host: str) -> bool:
        """Whether tasks that need root (tc, apt) must escalate: the login user is not root."""
        v = self.user_vars.get(host, {})
        user = v.get("ansible_user") or v.get("ansible_ssh_user") or getpass.getuser()
        return str(user) != "root"

    def host_vars(self, host: str) -> dict:
        if host not in self.user_vars:
            raise HarnessError(f"{self.name} provider: unknown host {host!r} (call up() first)")
        # Mitogen's strategy (harness/deploy.py) does not survive interpreter discovery ("EOF on
        # stream"): a host whose inventory names no interpreter gets the one the examples name.
        v = {"ansible_python_interpreter": "/usr/bin/python3", **self.user_vars[host]}
        # Each host works under <work_root>/<host>: servers that share a filesystem (an NFS
        # home, or the netns servers of the tests) would otherwise share one point directory,
        # pack each other's logs and remove it under each other. The commands are the same
        # files for every host, so they are shared.
        v.update({"fabricrepro_work_root": f"{self.remote_work_root}/{host}",
                  "fabricrepro_bin_dir": f"{self.remote_work_root}/bin",
                  "fabricrepro_copy_binaries": True,
                  "fabricrepro_address": self._address(host),
                  "fabricrepro_become": self._become(host),
                  "fabricrepro_roles": list(self.host_roles.get(host, []))})
        return v

    def describe(self) -> dict:
        hosts = {}
        for h, roles in self.host_roles.items():
            v = self.user_vars.get(h, {})
            hosts[h] = {"address": self._address(h), "ansible_host": str(v.get("ansible_host", h)),
                        "roles": list(roles), "facts": self.facts.get(h), "node_exporter": self.exporters.get(h)}
        return {"provider": self.name, "inventory": str(self.inventory_path), "work_root": self.remote_work_root,
                "hosts": hosts, "role_map": dict(self.role_host), "links": list(self.links_applied)}

    def monitor_targets(self, groups: dict[str, list[str]]) -> list:
        from ..resources import HostTarget
        # Prometheus runs on the controller, so it scrapes the address the controller
        # reaches (ansible_host); private_ip may be a cluster network it cannot reach (aws)
        return [HostTarget(h, list(roles), str(self.user_vars[h].get("ansible_host", h)), EXPORTER_PORT,
                           device=None, external=True)
                for h, roles in self.host_roles.items()]

    # ---- links
    def apply_links(self, links: list[dict]) -> list[dict]:
        """Shape each link ``{from, to, delay_ms?, rate_mbit?}`` (host roles) with tc on ``from``'s host.

        The device is the one ``ip route get <to's address>`` names on the
        sending host. Delay is added to packets from ``from`` to ``to`` only
        (the round trip grows by ``delay_ms``; give the reverse link too for a
        symmetric delay). Links accumulate over calls; each call re-renders the
        whole configuration of the devices it touches. Returns the records of
        the links of this call, as applied.
        """
        if not links:
            return []
        if self.hosts_inventory is None:
            raise HarnessError(f"{self.name} provider: apply_links before up")
        asked = []
        for link in links:
            src, dst = link.get("from"), link.get("to")
            for r in (src, dst):
                if r not in self.role_host:
                    raise HarnessError(f"link {src}->{dst}: unknown role {r!r}; roles: {', '.join(self.role_host)}")
            delay, rate = link.get("delay_ms"), link.get("rate_mbit")
            if delay is None and not rate:
                raise HarnessError(f"link {src}->{dst}: give delay_ms and/or rate_mbit")
            if (delay is not None and float(delay) < 0) or (rate is not None and float(rate) <= 0):
                raise HarnessError(f"link {src}->{dst}: delay_ms must be >= 0 and rate_mbit > 0")
            if self.role_host[src] == self.role_host[dst]:
                raise HarnessError(f"link {src}->{dst}: both roles are on host {self.role_host[src]}")
            asked.append({"from": src, "to": dst, "delay_ms": delay, "rate_mbit": rate,
                          "to_address": self._ipv4(self._address(self.role_host[dst]), dst)})
        links_by_key = dict(self._links)
        for a in asked:
            links_by_key[(a["from"], a["to"])] = a
        touched_hosts = sorted({self.role_host[a["from"]] for a in asked})
        devices = self._route_devices(touched_hosts, links_by_key)

        commands: dict[str, list[dict]] = {}
        records: dict[tuple[str, str], dict] = {}
        new_shaped: dict[str, set[str]] = {}
        for h in touched_hosts:
            per_dev: dict[str, list[dict]] = {}
            for key, a in links_by_key.items():
                if self.role_host[a["from"]] != h:
                    continue
                dev = devices[h][a["to_address"]]
                if dev == "lo":
                    raise HarnessError(f"link {a['from']}->{a['to']}: {a['to_address']} is an address of "
                                       f"host {h} itself")
                per_dev.setdefault(dev, []).append(a)
            for dev, items in sorted(per_dev.items()):
                # one class per destination address: two roles on one destination host share it
                by_addr: dict[str, dict] = {}
                for a in items:
                    want = {"address": a["to_address"], "delay_ms": a["delay_ms"], "rate_mbit": a["rate_mbit"]}
                    have = by_addr.setdefault(a["to_address"], want)
                    if have != want:
                        raise HarnessError(f"link {a['from']}->{a['to']}: host {h} already shapes traffic to "
                                           f"{a['to_address']} with delay_ms={have['delay_ms']}, "
                                           f"rate_mbit={have['rate_mbit']} (one shaping per destination address)")
                cmds = tc_commands(dev, list(by_addr.values()))
                commands.setdefault(h, []).extend(cmds)
                new_shaped.setdefault(h, set()).add(dev)
                netem = {c["dest"]: c["netem"] for c in cmds if "netem" in c}
                for a in items:
                    records[(a["from"], a["to"])] = {
                        "from": a["from"], "to": a["to"], "applied": True, "from_host": h,
                        "to_host": self.role_host[a["to"]], "to_address": a["to_address"], "device": dev,
                        "delay_ms": a["delay_ms"], "rate_mbit": a["rate_mbit"],
                        "delay_method": "tc netem" if a["delay_ms"] is not None else None,
                        "rate_method": "tc htb" if a["rate_mbit"] else None,
                        "rtt_added_ms": a["delay_ms"] or 0,
                        **({"netem": netem[a["to_address"]]} if a["to_address"] in netem else {}),
                        "tc": [shlex.join(c["argv"]) for c in cmds
                               if c["dest"] in (None, a["to_address"]) and not c["may_fail"]]}
            # devices shaped before but no longer used by any link of this host: clear them
            for dev in sorted(self._shaped.get(h, set()) - new_shaped.get(h, set())):
                commands.setdefault(h, []).extend(tc_clear_commands(dev))
        # recorded before running: a failure half way must still be undone by down()
        for h, devs in new_shaped.items():
            self._shaped.setdefault(h, set()).update(devs)
        self._playbook(LINKS_PLAYBOOK, "links.log", {"fabricrepro_tc_commands": commands}, "shaping links",
                       timeout=300)
        for h in touched_hosts:
            self._shaped[h] = new_shaped.get(h, set())
        self._links = links_by_key
        applied = [records[(a["from"], a["to"])] for a in asked]
        self.links_applied = [r for r in self.links_applied if (r["from"], r["to"]) not in records] + \
            [records[k] for k in records]
        return applied

    def set_link_delay(self, delay_ms: float) -> list[dict]:
        """Set ``delay_ms`` on every delayed link (``tc qdisc change`` of its netem); return the links.

        One command per netem qdisc (links to one destination address share
        it), on the sending host, through the same playbook as ``apply_links``.
        The links as first applied (the run's metadata) are kept; the result is
        what this point runs with (stored with the point).
        """
        if float(delay_ms) < 0:
            raise HarnessError(f"link delay must be >= 0 ms, not {delay_ms}")
        delayed = [r for r in self.links_applied if r.get("netem")]
        if not delayed:
            raise HarnessError(f"the {self.name} provider has no delayed link to change (apply_links with "
                               "delay_ms, 0 included, before the first point)")
        commands: dict[str, list[dict]] = {}
        changed: dict[tuple[str, str, str], str] = {}
        for r in delayed:
            n = r["netem"]
            key = (r["from_host"], n["device"], n["parent"])
            if key not in changed:
                argv = ["tc", "qdisc", "change", "dev", n["device"], "parent", n["parent"], "handle", n["handle"],
                        *netem_args(delay_ms, r["rate_mbit"])]
                commands.setdefault(r["from_host"], []).append({"argv": argv, "may_fail": False})
                changed[key] = shlex.join(argv)
        self._playbook(LINKS_PLAYBOOK, "links-delay.log", {"fabricrepro_tc_commands": commands},
                       f"setting the links' delay to {_num(delay_ms)} ms", timeout=300)
        for r in delayed:   # a later apply_links re-renders the links with the delay they have now
            self._links[(r["from"], r["to"])]["delay_ms"] = delay_ms
        return [{**r, "delay_ms": delay_ms, "rtt_added_ms": delay_ms,
                 "tc_change": changed[(r["from_host"], r["netem"]["device"], r["netem"]["parent"])]}
                if r.get("netem") else r for r in self.links_applied]

    @staticmethod
    def _ipv4(address: str, role: str) -> str:
        """``address`` as an IPv4 literal (tc's u32 filter matches addresses), resolved here if a name."""
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            try:
                return socket.gethostbyname(address)
            except OSError as e:
                raise HarnessError(f"link to {role}: cannot resolve {address!r} ({e}); "
                                   "set private_ip of the host to its IPv4 address") from None
        if ip.version != 4:
            raise HarnessError(f"link to {role}: {address} is not IPv4 (the tc filters match IPv4 destinations)")
        return str(ip)

    def _route_devices(self, hosts: list[str], links: dict[tuple[str, str], dict]) -> dict[str, dict[str, str]]:
        """``{host: {address: device}}``: the device each sending host routes each destination through."""
        addrs = sorted({a["to_address"] for a in links.values()})
        script = "PATH=$PATH:/sbin:/usr/sbin; " + "; ".join(f"ip -o route get {shlex.quote(a)}" for a in addrs)
        self._checks += 1
        results = adhoc(self.hosts_inventory, ",".join(hosts), script,
                        self.provider_dir / "checks" / f"{self._checks}", timeout_s=10)
        out = {}
        for h in hosts:
            why = _adhoc_reason(results[h])
            if why:
                raise HarnessError(f"link shaping: cannot ask {self._describe_host(h)} for its routes: {why}")
            out[h] = route_devices(str(results[h].get("stdout", "")))
            for key, a in links.items():
                if self.role_host[a["from"]] == h and a["to_address"] not in out[h]:
                    raise HarnessError(f"link {a['from']}->{a['to']}: host {h} has no route to {a['to_address']} "
                                       f"(`ip route get` said: {str(results[h].get('stdout', '')).strip()!r})")
        return out

    # ---- health
    def unreachable(self) -> dict[str, str]:
        """``{host: reason}`` of chosen hosts that do not answer SSH now (3 s connect timeout)."""
        if self.hosts_inventory is None or not self.host_roles:
            return {}
        return self._probe(list(self.host_roles), "true", timeout_s=3)

