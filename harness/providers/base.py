"""The provider interface: make hosts for a run's layout and describe them as an Ansible inventory.

A run asks for a *layout* (``harness.topology.Layout``): the hosts of the
experiment's topology, one per instance of a role where the components allow
it (``kafka-0``, ``kafka-1``, ``kafka-2``, ``peer``, ``client``...), each
with the components the driver places there. ``place`` says where each host of
the layout goes (the provider's own hosts; several may share one where the
provider has fewer), before anything starts; ``up`` makes those hosts exist and
answer, and turns the placement into inventory groups, one per component
(``{"kafka": ["kafka-0", "kafka-1", "kafka-2"], "loadgen": ["client"], ...}``).
A plain ``{role: [component]}`` dict is a layout of one host per role. Deployment is then
the same Ansible roles for every provider. ``down`` removes whatever ``up``
made; the harness calls it in a ``finally``, so it must be idempotent and
safe after a partial ``up``.

Every host's variables set ``fabricrepro_work_root`` (where points keep their
working files on that host), ``fabricrepro_bin_dir`` (where the built commands
are on that host) and ``fabricrepro_address`` (the name or address other hosts
dial to reach its services; a netns host is dialled by name so that a delayed
link's proxy can stand in for it).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path

import yaml

from .. import cpus as host_cpus
from ..errors import HarnessError
from ..topology import Layout, as_layout


class Provider(ABC):
    """Makes hosts available and describes them as an Ansible inventory."""

    #: The name given to ``--provider``.
    name: str = ""
    #: Where points keep their working files on the controller (crypto material, ...).
    work_root: Path
    #: The built commands on the controller.
    bin_dir: Path

    def check(self) -> None:
        """Fail on bad input (a missing inventory, no credentials, no root) before any run is created."""

    #: Refuse a layout whose hosts would share one of the provider's (``--strict-topology``).
    strict_topology: bool = False

    def place(self, layout: Layout) -> dict[str, str]:
        """``{layout host: provider host}``: where each host of ``layout`` runs, known before ``up``.

        The default: each host of the layout is a host of its own, of the same name.
        """
        return {h.name: h.name for h in layout.hosts}

    @abstractmethod
    def up(self, layout: Layout | dict[str, list[str]], run_dir: Path) -> dict[str, list[str]]:
        """Make the hosts of ``layout`` ready, placed as ``place`` says; return ``{component: [host, ...]}``.

        ``run_dir`` is the run directory: the provider keeps its own files
        (logs, generated inventories, Terraform state) there. A host that
        cannot be made ready raises HarnessError naming it and the reason.
        """

    def hold(self, label: str, plan=None) -> None:
        """Claim what the run needs before its checks (the local provider: this machine, whose ports the
        checks read); released by ``down``. ``plan`` is the run's (``plan.Plan``, controls included), for a
        provider that says what the run will cost (aws). Nothing for providers whose hosts are the run's own."""

    def down(self) -> None:
        """Remove everything ``up`` made (idempotent; also after a failed ``up``)."""

    @abstractmethod
    def host_vars(self, host: str) -> dict:
        """Ansible variables of one host (connection, work root, binary directory, address)."""

    def describe(self) -> dict:
        """What the run records about its hosts in ``metadata.json`` (``cluster``)."""
        return {"provider": self.name}

    def monitor_targets(self, groups: dict[str, list[str]]) -> list:
        """The hosts to watch with node-exporter (``resources.HostTarget``), one per host."""
        return []

    def track(self, popen, name: str) -> None:
        """Told about every controller process started for the run (e.g. Prometheus)."""

    def apply_links(self, links: list[dict]) -> list[dict]:
        """Give links between hosts delay and bandwidth; return what was (or was not) applied.

        A provider that cannot shape links (all roles on one loopback) records
        each link as not applied, with the reason, instead of failing: the
        report then says the network of the paper was not emulated.
        """
        self.links_recorded = [{**link, "applied": False,
                                "reason": f"the {self.name} provider runs every role on one host; "
                                          "use --provider netns (toxiproxy, tc htb) or ssh/aws (tc netem, tbf)"}
                               for link in links]
        return self.links_recorded

    def set_link_delay(self, delay_ms: float) -> list[dict]:
        """Set the delay of every delayed link applied so far (one sweep point's); return the links.

        A provider that applied no delay has nothing to change: it returns the
        links as recorded (not applied, with the reason).
        """
        recorded = getattr(self, "links_recorded", None)
        if recorded is None:
            raise HarnessError(f"the {self.name} provider cannot change the links' delay from one point to the next")
        return [{**link, "delay_ms": delay_ms} for link in recorded]

    def tune(self, sysctls: dict) -> list[dict]:
        """Set the kernel parameters a paper states for its hosts; return what was (or was not) set.

        A provider whose hosts share this machine's kernel settings does not
        change them: each is recorded as not applied, with the reason.
        """
        return [{"name": k, "value": v, "applied": False,
                 "reason": f"the {self.name} provider does not change this machine's kernel settings"}
                for k, v in sysctls.items()]

    def cpus_problems(self, cpus: int | None) -> list[str]:
        """Why points asking for ``cpus`` CPUs (the parameter; None: unset) cannot have them on this
        provider's hosts; empty when they can. Local and netns hosts are this machine: the CPUs this
        process may run on (the process role pins each component to the first ``cpus`` of them)."""
        allowed = host_cpus.usable()
        if cpus and cpus > len(allowed):
            return [f"cpus={cpus}: the {self.name} provider's hosts are this machine, which lets the run use "
                    f"{len(allowed)} CPUs ({','.join(map(str, allowed))})"]
        return []

    def unreachable(self) -> dict[str, str]:
        """Hosts that no longer answer, with the reason (checked after a point fails)."""
        return {}

    def inventory(self, path: Path, groups: dict[str, list[str]]) -> Path:
        """Write the YAML inventory of ``groups`` (``{component: [host]}``) to ``path``."""
        all_hosts = sorted({h for hs in groups.values() for h in hs})
        doc = {"all": {"hosts": {h: self.host_vars(h) for h in all_hosts},
                       "children": {role: {"hosts": {h: None for h in hs}} for role, hs in groups.items()}}}
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(doc, sort_keys=True), encoding="utf-8")
        return path


def groups_of(layout: Layout | dict[str, list[str]], placed: dict[str, str]) -> dict[str, list[str]]:
    """``{component: [host]}`` from a layout (a plain ``{role: [component]}``: one host per role, named after
    it) and where each of its hosts was placed."""
    return as_layout(layout).groups(placed)
