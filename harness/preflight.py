"""Preflight: what a run needs, checked in seconds before anything is deployed or a run directory made.

``check(provider, choice, plan)`` collects every problem it finds and raises
one ``PreflightError`` with one line per problem (issue 24, item 1):

* **ports**: every port the servers of the layout listen on (each role's
  defaults, ``listen_ports``) is free on its host. On the local provider every
  role shares this machine, so a port any process listens on (any address) is
  taken; the line names the port, the components that need it and, where
  visible (``/proc/<pid>/fd`` or ``ss -ltnp``), the process that holds it. On
  netns each host is a network namespace made for the run, so nothing can hold
  its ports before it exists: only two components of one host needing one port
  is a problem there (as on every provider). On ssh, ports are checked on the
  hosts after the provider's own preflight, where the provider can probe them
  (``remote_port_problems``); on aws the hosts do not exist before the run.
* **tools** on PATH: ``ansible-playbook``; Prometheus and node-exporter (the
  per-host metrics); for roles running on this machine (local, netns) the
  runtimes the roles start (each role's ``meta/preflight.yml`` ``tools``: Java
  for Kafka and ZooKeeper, ...); netns:
  ``ip``, ``unshare``, ``ssh``, ``sshd`` and, where links are delayed,
  toxiproxy.
* **build**: the reference build's commands built in ``bin/``; an upstream
  build's source at hand (a cached build of the pin, a snapshot, or a repository
  that answers ``git ls-remote`` within seconds) and its toolchain (Go, and the
  ``tools`` of its components' build kinds, ``harness.plugin_api.BuildKind``).
* **disk**: free space on the file systems of the run store and the work
  directory, at least ``MIN_FREE_GIB[scale]`` (smoke 2 GiB, local 5 GiB,
  paper 20 GiB: a smoke point keeps tens of MB of ledgers, logs and tables,
  the paper scale's many repetitions and long ledgers GBs).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path


from . import REPO_ROOT
from .deploy import role_defaults, role_dir, role_preflight
from .errors import HarnessError
from .providers import THIS_MACHINE
from .topology import as_layout

#: Free space (GiB) the run store and the work directory need per scale.
MIN_FREE_GIB = {"smoke": 2, "local": 5, "paper": 20}

#: What a role needs that its ``<role>_port``/``<role>_ports`` defaults do not say, in the role's own
#: ``meta/preflight.yml`` (so that the core names no system's role):
#:
#: * ``tools``: programs it starts (e.g. ``[java]``);
#: * ``ports``: more ports it listens on, each a variable of its defaults (0: not listening), or
#:   ``{port: VAR, from_role: ROLE, count: VAR, stride: N, offsets: [..]}``: instances ``i < count``
#:   listen on ``port + stride * i + offset`` (Kafka's brokers, BFT-SMaRt's nodes), the variables
#:   read from ``from_role``'s defaults (default: this role's);
#: * ``instances_over_hosts``: true when the role deals its instances over every host of its group, so
#:   that the paper's N servers of the role are laid out as N hosts (harness/topology.py).
#: (the file is ``deploy.PREFLIGHT_META``, read by ``deploy.role_preflight``).


class PreflightError(HarnessError):
    """Problems found before anything was deployed: one line each. Ends the command."""

    def __init__(self, problems: list[str], hint: str | None = None):
        self.problems = list(problems)
        super().__init__(f"preflight: {len(problems)} problem(s), nothing was deployed:\n"
                         + "\n".join(f"  - {p}" for p in problems), hint=hint)


# ---------------------------------------------------------------- ports a layout needs

def _int(value) -> int | None:
    """An integer default (a Jinja expression is not resolved here: None)."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def role_listen_ports(role: str) -> dict[int, str]:
    """``{port: variable}`` of the servers ``role`` starts, from its defaults."""
    doc = role_defaults(role)
    out: dict[int, str] = {}
    if (p := _int(doc.get(f"{role}_port"))) is not None:
        out[p] = f"{role}_port"
    for p in doc.get(f"{role}_ports") or []:
        if _int(p) is not None:
            out[int(p)] = f"{role}_ports"
    for entry in role_preflight(role).get("ports") or []:
        entry = entry if isinstance(entry, dict) else {"port": entry}
        var = entry["port"]
        values = role_defaults(entry["from_role"]) if entry.get("from_role") else doc
        base = _int(values.get(var))
        if not base:  # 0: not listening (e.g. the profile port); a Jinja expression: not resolved here
            continue
        count = _int(values.get(entry["count"])) or 1 if entry.get("count") else 1
        stride = int(entry.get("stride", 1))
        for i in range(count):
            for offset in entry.get("offsets") or [0]:
                shift = stride * i + offset
                out[base + shift] = var + (f" + {shift}" if shift else "")
    return out


def listen_ports(components: list[str]) -> dict[int, list[str]]:
    """``{port: ["component (variable)", ...]}`` of every server among ``components`` (one host's)."""
    out: dict[int, list[str]] = {}
    for c in components:
        for port, var in role_listen_ports(c).items():
            out.setdefault(port, []).append(f"{c} ({var})")
    return dict(sorted(out.items()))


def host_ports_of(provider_name: str, layout: dict[str, list[str]]) -> dict[str, dict[int, list[str]]]:
    """``{host: {port: [needed by]}}``: the ports each host of the layout needs (local: one host)."""
    if provider_name == "local":
        return {"localhost": listen_ports(sorted({c for cs in layout.values() for c in cs}))}
    return {role: listen_ports(list(cs)) for role, cs in layout.items()}


# ---------------------------------------------------------------- who listens on this machine

def listening_ports() -> dict[int, set[str]]:
    """``{port: {inode, ...}}`` of every TCP socket in LISTEN state in this network namespace."""
    out: dict[int, set[str]] = {}
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) > 9 and f[3] == "0A":  # TCP_LISTEN
                out.setdefault(int(f[1].rsplit(":", 1)[1], 16), set()).add(f[9])
    return out


def _holders_by_inode(inodes: set[str]) -> list[str]:
    """``"<comm> (pid N)"`` of the processes whose open files include the sockets ``inodes``."""
    wanted = {f"socket:[{i}]" for i in inodes}
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            for fd in (proc / "fd").iterdir():
                if os.readlink(fd) in wanted:
                    comm = (proc / "comm").read_text().strip()
                    found.append(f"{comm} (pid {proc.name})")
                    break
        except OSError:
            continue
    return found


def _holders_by_ss(port: int) -> list[str]:
    """``"<comm> (pid N)"`` from ``ss -Hltnp`` for ``port`` (empty where ss shows no process)."""
    if not shutil.which("ss"):
        return []
    try:
        out = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True, timeout=5, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    found = []
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 4 and f[3].rsplit(":", 1)[-1] == str(port):
            found += [f"{comm} (pid {pid})" for comm, pid in re.findall(r'\("([^"]*)",pid=(\d+)', line)]
    return sorted(set(found))


def port_holder(port: int, inodes: set[str] | None = None) -> str:
    """Who listens on ``port`` here, as far as this user can see."""
    inodes = inodes if inodes is not None else listening_ports().get(port, set())
    holders = sorted(set(_holders_by_inode(inodes))) or _holders_by_ss(port)
    if holders:
        return "held by " + ", ".join(holders)
    return "held by a process this user cannot see (`sudo ss -ltnp 'sport = :%d'` names it)" % port


def local_port_problems(needed: dict[int, list[str]]) -> list[str]:
    """One line per port of ``needed`` that a process on this machine already listens on."""
    taken = listening_ports()
    return [f"port {port} (needed by {', '.join(by)}) is in use on this machine: {port_holder(port, taken[port])}"
            for port, by in needed.items() if port in taken]


def layout_port_problems(hosts: dict[str, dict[int, list[str]]]) -> list[str]:
    """Two components of one host that need the same port."""
    return [f"port {port} is needed by {len(by)} components on host {host}: {', '.join(by)}"
            for host, ports in hosts.items() for port, by in ports.items() if len(by) > 1]


def remote_port_problems(provider, layout) -> list[str]:
    """Ports taken on an ssh or aws provider's hosts, checked after its ``up`` (which made and checked them).

    One ``ss -Hltnp`` per host with Ansible's ``raw`` module (``providers.ssh_ansible.adhoc``);
    a host where ss fails is left unchecked (the provider's preflight passed already).
    """
    placed = getattr(provider, "placed", None) or {}
    hosts: dict[str, dict[int, list[str]]] = {}
    for name, components in as_layout(layout).by_name().items():
        host = placed.get(name)
        if host:
            for port, by in listen_ports(list(components)).items():
                hosts.setdefault(host, {}).setdefault(port, []).extend(by)
    inventory = getattr(provider, "hosts_inventory", None)
    if not hosts or not inventory:
        return []
    from .providers.ssh_ansible import adhoc
    results = adhoc(inventory, ",".join(sorted(hosts)), "ss -Hltnp 2>/dev/null || ss -Hltn",
                    Path(provider.provider_dir) / "checks" / "ports", timeout_s=10)
    problems = []
    for host, result in sorted(results.items()):
        if result.get("unreachable") or result.get("rc", 0) != 0:
            continue  # no ss there: the provider's own preflight has passed, the roles' waits will tell
        listening: dict[int, set[str]] = {}
        for line in str(result.get("stdout", "")).splitlines():
            f = line.split()
            if len(f) >= 4 and f[3].rsplit(":", 1)[-1].isdigit():
                procs = re.findall(r'\("([^"]*)",pid=(\d+)', line)
                listening.setdefault(int(f[3].rsplit(":", 1)[-1]), set()).update(
                    f"{c} (pid {p})" for c, p in procs)
        for port, by in hosts[host].items():
            if port in listening:
                who = ", ".join(sorted(listening[port])) or "a process ss does not name (not root)"
                problems.append(f"port {port} (needed by {', '.join(by)}) is in use on host {host}: held by {who}")
    return problems


# ---------------------------------------------------------------- tools, build, disk

def tool_problems(provider_name: str, layout: dict[str, list[str]], delayed_links: bool) -> list[str]:
    """Programs missing from PATH that this run would start (each named once, with what needs it)."""
    from .tools import INSTALLED_BY
    needs: dict[str, list[str]] = {"ansible-playbook": ["every provider (deploys the roles)"],
                                   "prometheus": ["the per-host metrics"]}
    if provider_name in THIS_MACHINE:
        needs["prometheus-node-exporter"] = ["the per-host metrics"]
        needs["bash"] = ["the process role (its wrapper records each server's exit for the watcher)"]
        for components in layout.values():
            for c in components:
                for t in role_preflight(c).get("tools") or []:
                    needs.setdefault(t, []).append(f"role {c}")
    if provider_name == "netns":
        for t in ("ip", "unshare", "ssh", "ssh-keygen"):
            needs.setdefault(t, []).append("the netns provider")
    if provider_name in ("ssh", "aws"):
        needs.setdefault("ansible", []).append(f"the {provider_name} provider's checks")
    problems = []
    for tool, by in needs.items():
        if not shutil.which(tool):
            how, _, note = INSTALLED_BY.get(tool, "invoke setup").partition(" (")
            problems.append(f"{tool} not found on PATH (needed by {', '.join(sorted(set(by)))}; `{how}` installs it"
                            + (f", {note}" if note else ")"))
    if provider_name == "netns":
        from .providers.netns_links import find_toxiproxy
        from .providers.netns_namespaces import SSHD
        if not os.access(SSHD, os.X_OK):
            problems.append(f"{SSHD} not found (needed by the netns provider; `invoke setup` installs it)")
        if delayed_links:
            try:
                find_toxiproxy()
            except HarnessError as e:
                problems.append(f"{e.args[0]}; {e.hint}")
    return problems


def build_problems(choice, source: str, bin_dir: Path, systems_dir: Path | None = None) -> list[str]:
    """What keeps the run's build from being used or made: commands not built, source or toolchain missing."""
    from . import upstream
    problems = []
    missing = [b for b in choice.binaries() if not os.access(Path(bin_dir) / b, os.X_OK)]
    if missing:
        problems.append(f"not built: {', '.join('bin/' + b for b in missing)} (in {bin_dir})")
    if choice.kind != "upstream":
        return problems
    systems = Path(systems_dir) if systems_dir else upstream.SYSTEMS
    tools: dict[str, list[str]] = {"go": []}
    for system in choice.systems():
        try:
            recipe = upstream.load_recipe(system, systems)
        except HarnessError as e:
            problems.append(f"upstream build of {system}: {e.args[0]}")
            continue
        why = upstream.source_available(recipe, source)
        if why:
            problems.append(f"upstream build of {system} cannot be made: {why}")
        tools["go"].append(system)
        from .systems import build_kinds  # the kit's target checks ports, tools and disk only
        kinds = build_kinds()
        for tool in dict.fromkeys(t for k in upstream.component_kinds(recipe) if k in kinds for t in kinds[k].tools):
            tools.setdefault(tool, []).append(system)
    for tool, by in tools.items():
        if by and not shutil.which(tool):
            problems.append(f"{tool} not found on PATH (needed to build the upstream {', '.join(by)}; "
                            "`invoke setup` installs it)")
    return problems


def free_bytes(path: Path) -> int:
    """Free bytes for this user on the file system holding ``path`` (its nearest existing parent)."""
    path = Path(path)
    while not path.exists() and path != path.parent:
        path = path.parent
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def disk_problems(scale: str, paths: list[Path]) -> list[str]:
    """A file system among ``paths`` with less than ``MIN_FREE_GIB[scale]`` free (each file system once)."""
    need = MIN_FREE_GIB.get(scale, MIN_FREE_GIB["smoke"])
    problems, seen = [], set()
    for path in paths:
        p = Path(path)
        while not p.exists() and p != p.parent:
            p = p.parent
        dev = os.stat(p).st_dev
        if dev in seen:
            continue
        seen.add(dev)
        free = free_bytes(p)
        if free < need * 2**30:
            problems.append(f"{free / 2**30:.1f} GiB free on the file system of {path}; scale {scale} needs "
                            f"at least {need} GiB (harness/preflight.py MIN_FREE_GIB)")
    return problems


# ---------------------------------------------------------------- the whole check

def delayed_links(plan) -> bool:
    """Whether the run delays links (the experiment's ``network`` or a swept ``network_latency_ms``)."""
    network = plan.experiment.get("network") or {}
    return bool(network.get("delay_ms") or any(l.get("delay_ms") for l in network.get("links", []))
                or any("network_latency_ms" in p.parameters for p in plan.points))


def problems(provider, choice, plan, source: str = "auto", results: Path | None = None,
             systems_dir: Path | None = None) -> list[str]:
    """Every problem the preflight finds for ``plan`` on ``provider`` with build ``choice`` (empty: go)."""
    from .builds import Choice  # the kit's target checks ports, tools and disk only (harness/kit_run.py)
    layout = choice.layout()
    name = provider.name
    hosts = host_ports_of(name, layout)
    found = []
    # two components needing one port on one host: within one driver (the variants' drivers run one at a time)
    for spec in [*choice.drivers.values(), *choice.variant_drivers.values()]:
        one = Choice(choice.kind, {"_": spec}).layout()
        found += [p for p in layout_port_problems(host_ports_of(name, one)) if p not in found]
    if name == "local":
        found += local_port_problems(hosts["localhost"])
    found += tool_problems(name, layout, delayed_links(plan))
    found += build_problems(choice, source, provider.bin_dir, systems_dir)
    paths = [Path(results or REPO_ROOT / "results")]
    if name in THIS_MACHINE:
        paths.append(Path(provider.work_root))
    found += disk_problems(plan.scale, paths)
    found += provider.cpus_problems(largest_cpus(plan))
    return found


def largest_cpus(plan) -> int | None:
    """The most CPUs a point of ``plan`` asks for (the ``cpus`` parameter), None when no point sets it."""
    return max((int(p.parameters["cpus"]) for p in plan.points if "cpus" in p.parameters), default=None)


def check(provider, choice, plan, source: str = "auto", results: Path | None = None,
          systems_dir: Path | None = None) -> None:
    """Raise ``PreflightError`` (one line per problem) unless the run can start."""
    found = problems(provider, choice, plan, source, results, systems_dir)
    if found:
        raise PreflightError(found, hint="run `invoke build`" if any(p.startswith("not built:") for p in found)
                             else None)


def check_hosts(provider, layout: dict[str, list[str]], plan=None) -> None:
    """After ``provider.up`` of ssh/aws (hosts known only then): raise ``PreflightError`` for taken ports
    and for hosts with fewer CPUs than ``plan``'s points ask for."""
    if provider.name in ("ssh", "aws"):
        found = remote_port_problems(provider, layout)
        found += provider.cpus_problems(largest_cpus(plan)) if plan is not None else []
        if found:
            raise PreflightError(found)
