"""The ssh provider: the user's own servers, listed in their Ansible inventory.

    invoke reproduce --paper fastfabric --experiment table1-end-to-end --provider ssh --inventory my.yml

The inventory is the user's (``infra/inventories/*.example.yml`` show the
format): one group per topology role (``orderer``, ``peer``, ``client``...),
hosts with ``ansible_host`` and optionally ``private_ip`` (the address the
services bind and advertise), connection variables wherever Ansible allows
them. It is read with ``ansible-inventory`` (ssh_ansible.py), so group and host
variables, ``group_vars/`` beside it and INI inventories work as they do for
Ansible.

``place`` gives the i-th instance of a role of the layout (``kafka-1``) the
i-th host of that role's group, so that the paper's topology is laid out host by
host (Table I: three hosts in groups ``zookeeper`` and ``kafka``, five in
``endorser``). A group with fewer hosts than the role's instances deals them
round-robin over the hosts it has; the run prints and records that placement
as a deviation, and ``--strict-topology`` refuses it, naming the hosts
missing. ``up`` then, before anything is deployed:

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

Host keys: the check of step 1 is the first contact, and accepts a host's key
the first time it meets it (``StrictHostKeyChecking=accept-new``), recording it
in the known_hosts file the harness keeps (``known_hosts``, default
``~/.ssh/fabricrepro_known_hosts``; the user's own ``~/.ssh/known_hosts`` is
read too). From then on every connection checks it, and a key that changed fails
the run naming the host. Checking is off only for a host whose inventory turns
it off (``ansible_host_key_checking: false``, or ssh arguments with
``StrictHostKeyChecking=no`` or ``UserKnownHostsFile=/dev/null``): the tests'
network-namespace hosts, whose keys are new every run while their addresses are
reused (the netns provider's own inventory says so too). Hosts made for one run
(``known_hosts_per_run``) keep their keys in the run instead.

The component roles copy the built commands from the controller to
``<work_root>/bin`` (``fabricrepro_copy_binaries``); each host keeps its points'
working files under ``<work_root>/<host>/``, so servers that share a filesystem
do not share them. ``apply_links`` shapes links with ``tc`` on the sending host
(netem delay, htb rate; ssh_links.py, tc.py) and ``set_link_delay`` changes each
netem's delay between points; ``down`` stops the exporters it started and
removes the shaping. Everything the provider writes on the controller is under
``<run_dir>/provider/``.
"""

from __future__ import annotations

import getpass
import json
import logging
import re
import shlex
import time
from pathlib import Path

import yaml

from .. import REPO_ROOT
from ..deploy import ansible_failures, run_playbook
from ..errors import HarnessError
from ..topology import Layout, as_layout
from .base import Provider, groups_of
from .ssh_ansible import FRESH_SSH_ARGS, adhoc, adhoc_reason, load_inventory
from .ssh_links import SshLinks
from .tc import NETEM_HINT

log = logging.getLogger(__name__)

#: Where points keep their working files on the user's hosts (and where the commands are copied).
DEFAULT_WORK_ROOT = "/var/tmp/fabricrepro"
#: node-exporter's port on every host (the aws security group admits it from the operator).
EXPORTER_PORT = 9100
#: Playbooks of this provider (under playbooks/).
PREFLIGHT_PLAYBOOK = "provider-preflight.yml"
EXPORTER_PLAYBOOK = "node-exporter.yml"
EXPORTER_STOP_PLAYBOOK = "node-exporter-stop.yml"
SYSCTL_PLAYBOOK = "sysctl.yml"
#: Where the harness records the host keys of the user's servers, accepted the first time each is met.
DEFAULT_KNOWN_HOSTS = "~/.ssh/fabricrepro_known_hosts"
#: What ssh says when a host's key is not the one recorded.
_HOST_KEY_CHANGED = ("REMOTE HOST IDENTIFICATION HAS CHANGED", "Host key verification failed")


def _false(value) -> bool:
    """Whether an inventory value is false as Ansible reads a boolean (``false``, ``no``, ``0``, ``off``...)."""
    return value is False or str(value).strip().lower() in ("false", "no", "0", "off", "n", "f")


def _tail(path: Path, n: int = 5) -> str:
    try:
        lines = [ln for ln in Path(path).read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-n:])


class SshProvider(SshLinks, Provider):
    """``--provider ssh``: the user's servers, the i-th host of a role's inventory group for its i-th instance."""

    name = "ssh"
    #: Seconds ``up`` keeps retrying hosts that do not answer SSH (0: fail at once; aws waits for boots).
    ssh_wait_s: float = 0
    #: Install prometheus-node-exporter with apt when a host lacks it (the aws hosts are ours to change).
    install_exporter: bool = False
    #: Keep the host keys in the run (``<run>/provider/known_hosts``) instead of DEFAULT_KNOWN_HOSTS: for hosts
    #: made for the run (aws), whose keys are new each time while their addresses may be reused.
    known_hosts_per_run: bool = False

    def __init__(self, inventory: Path | str, work_root: str = DEFAULT_WORK_ROOT, bin_dir: Path | None = None,
                 preflight: bool = True, require_clock_sync: bool = True, min_cores: int | None = None,
                 min_memory_mb: int | None = None, controller_work_root: Path | None = None,
                 exporter_binary: str | None = None, strict_topology: bool = False,
                 known_hosts: Path | str | None = None):
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
        self.strict_topology = strict_topology
        #: The known_hosts file keys are accepted into and checked against (None: DEFAULT_KNOWN_HOSTS, or the
        #: run's own with ``known_hosts_per_run``)
        self.known_hosts_option = known_hosts
        self._reset()

    def _reset(self) -> None:
        self.layout: dict[str, list[str]] = {}
        self.placed: dict[str, str] = {}            # host of the layout -> inventory host
        self.host_roles: dict[str, list[str]] = {}  # inventory host -> hosts of the layout it runs
        self.user_vars: dict[str, dict] = {}
        self.facts: dict[str, dict] = {}
        self.exporters: dict[str, dict] = {}
        self._reset_links()
        self.run_dir: Path | None = None
        self.hosts_inventory: Path | None = None
        self.known_hosts: Path | None = None
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

    def place(self, layout: Layout) -> dict[str, str]:
        """The i-th host of each role's group for the role's i-th instance; round-robin where it has fewer.

        A role without any host in the inventory is refused, naming it;
        ``strict_topology`` also refuses a group with fewer hosts than the
        role's instances, naming how many are missing.
        """
        groups, _ = load_inventory(self.inventory_path)
        counts = layout.counts()
        missing = [role for role in counts if not groups.get(role)]
        if missing:
            have = sorted(g for g, hs in groups.items() if hs and g not in ("all", "ungrouped"))
            raise HarnessError(f"inventory {self.inventory_path} has no host in group(s) {', '.join(missing)}, which "
                               f"this experiment needs (roles: {', '.join(f'{r} x{n}' for r, n in counts.items())}); "
                               f"its groups: {', '.join(have) or '(none)'}",
                               hint="add a group per role, hosts named <role>-<i> "
                                    "(see infra/inventories/*.example.yml)")
        short = {role: (n, groups[role]) for role, n in counts.items() if len(groups[role]) < n}
        if short and self.strict_topology:
            raise HarnessError("--strict-topology: the inventory has fewer hosts than the paper's topology: "
                               + "; ".join(f"group {role} has {len(hosts)} ({', '.join(hosts)}), the topology "
                                           f"lays out {n}: {n - len(hosts)} host(s) missing, for "
                                           + ", ".join(h.name for h in layout.hosts
                                                       if h.role == role and h.index >= len(hosts))
                                           for role, (n, hosts) in short.items()),
                               hint=f"add the hosts to {self.inventory_path}, or run without --strict-topology "
                                    "(the instances then share hosts, recorded as a deviation)")
        return {h.name: groups[h.role][h.index % len(groups[h.role])] for h in layout.hosts}

    def up(self, layout: Layout | dict[str, list[str]], run_dir: Path) -> dict[str, list[str]]:
        self._reset()
        self.run_dir = Path(run_dir)
        self.provider_dir.mkdir(parents=True, exist_ok=True)
        layout = as_layout(layout)
        self.layout = layout.roles()
        self.placed = self.place(layout)
        _, hostvars = load_inventory(self.inventory_path)
        for name, host in self.placed.items():
            self.host_roles.setdefault(host, []).append(name)
        self.user_vars = {h: self._fix_paths(hostvars[h]) for h in self.host_roles}
        self.known_hosts = self._known_hosts_file()
        self.hosts_inventory = self._write_hosts_inventory()
        self._down_done = False   # from here on, down() has something to undo

        self._check_reachable()
        if self.preflight:
            self._run_preflight()
        self._start_exporters()
        return groups_of(layout, self.placed)

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

    def known_hosts_path(self) -> Path:
        """The known_hosts file the hosts' keys are recorded in and checked against."""
        if self.known_hosts_option:
            path = Path(self.known_hosts_option).expanduser()
        elif self.known_hosts_per_run:
            path = self.provider_dir / "known_hosts"
        else:
            path = Path(DEFAULT_KNOWN_HOSTS).expanduser()
        return path.absolute()

    def _known_hosts_file(self) -> Path:
        """``known_hosts_path``, its folder made (ssh records no key where it cannot write)."""
        path = self.known_hosts_path()
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        return path

    def host_key_checked(self, host: str) -> bool:
        """Whether ``host``'s key is checked: unless its inventory turns checking off, with
        ``ansible_host_key_checking: false`` or ssh arguments that accept any key (``StrictHostKeyChecking=no``)
        or record none (``UserKnownHostsFile=/dev/null``)."""
        v = self.user_vars.get(host, {})
        for key in ("ansible_ssh_host_key_checking", "ansible_host_key_checking"):
            if key in v:
                return not _false(v[key])
        args = " ".join(str(v.get(k) or "") for k in ("ansible_ssh_common_args", "ansible_ssh_extra_args"))
        return not re.search(r"StrictHostKeyChecking[= ]+[\"']?(no|off)\b|UserKnownHostsFile[= ]+[\"']?/dev/null",
                             args, re.IGNORECASE)

    def _host_key_vars(self, host: str) -> dict:
        """The ssh arguments that accept ``host``'s key when first met and check it against the recorded one after.

        Appended to the inventory's own ``ansible_ssh_common_args`` (ssh takes an
        option's first value: the user's own choice stands). Ansible's ssh
        connection then passes ``accept-new``; Mitogen's (deploy.py) passes
        ``StrictHostKeyChecking yes`` before them, so its playbooks only check,
        against the keys the first contact (``_check_reachable``) recorded.
        """
        if not self.host_key_checked(host):
            return {"ansible_host_key_checking": False}
        files = shlex.quote(f"UserKnownHostsFile={self.known_hosts or self.known_hosts_path()} ~/.ssh/known_hosts")
        ours = f"-o StrictHostKeyChecking=accept-new -o {files}"
        theirs = str(self.user_vars.get(host, {}).get("ansible_ssh_common_args") or "").strip()
        return {"ansible_host_key_checking": True, "ansible_ssh_common_args": f"{theirs} {ours}".strip()}

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
            changed = {h: self._recorded_in(why) for h, why in failed.items()
                       if any(s in why for s in _HOST_KEY_CHANGED)}
            for h, (path, line) in changed.items():
                failed[h] = (f"its host key is not the one recorded in {path}{line} (ssh: REMOTE HOST "
                             "IDENTIFICATION HAS CHANGED, Host key verification failed)")
            detail = "; ".join(f"{self._describe_host(h)}: {why}" for h, why in failed.items())
            hint = ("check the address, ansible_user and ansible_ssh_private_key_file of the host, and that sshd "
                    "runs")
            if changed:
                hint = ("a server reinstalled or replaced has a new key; if you know why it changed, remove the old "
                        "one and run again (its new key is then recorded): "
                        + "; ".join(f"ssh-keygen -f {path} -R "
                                    f"{self.user_vars.get(h, {}).get('ansible_host', h)}"
                                    for h, (path, _) in changed.items())
                        + ". Otherwise do not: the address may not be your server")
            raise HarnessError(f"{len(failed)} host(s) of inventory {self.inventory_path} not reachable by SSH: "
                               f"{detail}", hint=hint,
                               log=str(self.provider_dir / "checks" / f"{self._checks}" / "ansible.log"))

    def _recorded_in(self, why: str) -> tuple[str, str]:
        """The known_hosts file (and ``:line``) whose key for a host ssh refused: ssh names it ("Offending ED25519
        key in /root/.ssh/known_hosts:3"); the harness's own file where it does not."""
        m = re.search(r"Offending \S+ key in (\S+?):(\d+)", why)
        return (m.group(1), f", line {m.group(2)}") if m else (str(self.known_hosts), "")

    def _probe(self, hosts: list[str], command: str, timeout_s: float) -> dict[str, str]:
        self._checks += 1
        results = adhoc(self.hosts_inventory, ",".join(hosts), command,
                        self.provider_dir / "checks" / f"{self._checks}", timeout_s=timeout_s)
        return {h: why for h, r in results.items() if (why := adhoc_reason(r))}

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
        try:
            self._clear_links()
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
        v.update(self._host_key_vars(host))
        return v

    def describe(self) -> dict:
        hosts = {}
        for h, roles in self.host_roles.items():
            v = self.user_vars.get(h, {})
            hosts[h] = {"address": self._address(h), "ansible_host": str(v.get("ansible_host", h)),
                        "roles": list(roles), "facts": self.facts.get(h), "node_exporter": self.exporters.get(h)}
        host_keys = {"known_hosts": str(self.known_hosts) if self.known_hosts else None,
                     "hosts": {h: "accepted when first met (accept-new), then checked" if self.host_key_checked(h)
                               else "not checked (the inventory turns host key checking off)"
                               for h in self.host_roles}}
        return {"provider": self.name, "inventory": str(self.inventory_path), "work_root": self.remote_work_root,
                "hosts": hosts, "placement": dict(self.placed), "links": list(self.links_applied),
                "host_keys": host_keys}

    def monitor_targets(self, groups: dict[str, list[str]]) -> list:
        from ..resources import HostTarget
        # Prometheus runs on the controller, so it scrapes the address the controller
        # reaches (ansible_host); private_ip may be a cluster network it cannot reach (aws)
        return [HostTarget(h, list(roles), str(self.user_vars[h].get("ansible_host", h)), EXPORTER_PORT,
                           device=None, external=True)
                for h, roles in self.host_roles.items()]

    # ---- health
    def unreachable(self) -> dict[str, str]:
        """``{host: reason}`` of chosen hosts that do not answer SSH now (3 s connect timeout)."""
        if self.hosts_inventory is None or not self.host_roles:
            return {}
        return self._probe(list(self.host_roles), "true", timeout_s=3)
