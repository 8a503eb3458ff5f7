"""The paper's topology laid out: each instance of a topology role is a host of its own.

A catalogue experiment counts its servers per role (``topology``: FastFabric's
Table I ``{orderer: 1, kafka: 3, zookeeper: 3, peer: 1, storage: 1,
endorser: 5, client: 1}``); a build's driver places its components on those
roles (``Choice.layout()``: ``{role: [component, ...]}``). ``lay_out`` turns
both into the hosts a run asks its provider for:

* a role gets one host per instance the paper counts when every component the
  driver places on it deals its instances over the hosts of its group (the
  role's ``meta/preflight.yml`` says ``instances_over_hosts: true``: Kafka's
  brokers, ZooKeeper's servers, BFT-SMaRt's nodes); otherwise one host runs
  them all, and the layout says so (a deviation derived from the two, never
  written by hand);
* a role of the paper's topology on which the build places nothing is laid out
  all the same, its hosts idle (FastFabric's five endorsers, on a build whose
  endorser runs on the storage host): the paper had those servers;
* a role the driver uses that the topology does not count gets one host.

Hosts are named after their role, ``<role>-<i>`` when the role has several
(``kafka-0``, ``kafka-1``, ``kafka-2``). A provider then places each host of
the layout on a host of its own (``Provider.place``): netns makes one
namespace per host, ssh takes the i-th host of the role's inventory group, aws
has Terraform make as many instances, and local keeps them all on this machine.
Where a provider has fewer hosts than the layout, the placement says which
share, and the run records it as a deviation (``--strict-topology`` refuses).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .deploy import role_preflight

#: The key of a role's ``meta/preflight.yml`` saying that it deals its instances over its group's hosts.
SPREADS = "instances_over_hosts"


@dataclass(frozen=True)
class Host:
    """One host of the laid-out topology: the ``index``-th instance of topology role ``role``."""
    name: str
    role: str
    index: int
    components: tuple[str, ...]


@dataclass
class Layout:
    """The hosts a run asks for, with the topology the paper published and how the two differ."""
    hosts: list[Host]
    published: dict[str, int] = field(default_factory=dict)
    deviations: list[str] = field(default_factory=list)

    def roles(self) -> dict[str, list[str]]:
        """``{role: [component, ...]}``: what each role's hosts run (every instance the same)."""
        out: dict[str, list[str]] = {}
        for h in self.hosts:
            out.setdefault(h.role, list(h.components))
        return out

    def counts(self) -> dict[str, int]:
        """``{role: hosts}`` laid out."""
        out: dict[str, int] = {}
        for h in self.hosts:
            out[h.role] = out.get(h.role, 0) + 1
        return out

    def by_name(self) -> dict[str, list[str]]:
        """``{host: [component, ...]}``."""
        return {h.name: list(h.components) for h in self.hosts}

    def groups(self, placed: dict[str, str]) -> dict[str, list[str]]:
        """``{component: [provider host, ...]}`` (Ansible's groups) from where each host was ``placed``.

        A component's group lists its role's hosts in instance order, each once
        (instances placed on one host share it).
        """
        out: dict[str, list[str]] = {}
        for h in self.hosts:
            for c in h.components:
                if placed[h.name] not in out.setdefault(c, []):
                    out[c].append(placed[h.name])
        return out

    def record(self) -> dict:
        """What ``metadata.json`` records under ``topology`` (before a provider placed it)."""
        return {"published": dict(self.published), "laid_out": self.counts(),
                "hosts": [{"name": h.name, "role": h.role, "index": h.index, "components": list(h.components)}
                          for h in self.hosts],
                "deviations": list(self.deviations)}


def one_host_per_role(layout: dict[str, list[str]]) -> Layout:
    """A ``{role: [component]}`` layout as one host per role (no published topology to lay out)."""
    return Layout([Host(role, role, 0, tuple(cs)) for role, cs in layout.items()])


def as_layout(layout) -> Layout:
    """``layout`` as a ``Layout`` (a plain ``{role: [component]}`` dict is one host per role)."""
    return layout if isinstance(layout, Layout) else one_host_per_role(layout)


def spreads(component: str) -> bool:
    """Whether ``component``'s role deals its instances over every host of its group."""
    return bool(role_preflight(component).get(SPREADS))


def host_name(role: str, index: int, count: int) -> str:
    """``role`` for a role of one host, ``<role>-<index>`` for one of several."""
    return role if count == 1 else f"{role}-{index}"


def lay_out(topology: dict[str, int] | None, roles: dict[str, list[str]], spreads=spreads) -> Layout:
    """The hosts of the paper's ``topology`` (``{role: count}``) for a build's ``roles`` (``{role: [component]}``).

    ``spreads(component)`` says whether a component's instances may go to
    several hosts (default: its role's ``meta/preflight.yml``).
    """
    published = {r: int(n) for r, n in (topology or {}).items()}
    hosts: list[Host] = []
    deviations: list[str] = []
    # a role the driver splits into one role per instance (Fujitsu's peer0..peer3 for the topology's peer: 4)
    split = {r for r in published if r not in roles and any(re.fullmatch(re.escape(r) + r"\d+", x) for x in roles)}
    for role in [*roles, *(r for r in published if r not in roles and r not in split)]:
        components = tuple(roles.get(role, ()))
        want = published.get(role)
        count = max(want or 1, 1)
        if count > 1 and components and not all(spreads(c) for c in components):
            single = sorted(c for c in components if not spreads(c))
            deviations.append(f"{role}: the paper's {count} hosts are 1 here: {', '.join(single)} "
                              f"run{'s' if len(single) == 1 else ''} every instance on one host")
            count = 1
        if published and role not in published and not any(re.fullmatch(re.escape(r) + r"\d+", role) for r in split):
            deviations.append(f"{role}: not a server of the paper's topology; this build's driver places "
                              f"{', '.join(components)} on a host of its own")
        if not components and want:
            deviations.append(f"{role}: the paper's {want} host{'s' if want != 1 else ''} "
                              f"{'are' if want != 1 else 'is'} laid out idle: this build places no component there")
        hosts += [Host(host_name(role, i, count), role, i, components) for i in range(count)]
    return Layout(hosts, published, deviations)


def placement_deviations(layout: Layout, placed: dict[str, str], provider: str) -> list[str]:
    """Sentences for the hosts of ``layout`` that share a provider host (``placed``: layout host -> host)."""
    shared: dict[str, list[str]] = {}
    for h in layout.hosts:
        shared.setdefault(placed[h.name], []).append(h.name)
    if len(shared) == 1 and len(layout.hosts) > 1:
        return [f"the {provider} provider puts all {len(layout.hosts)} hosts of the topology on one machine "
                f"({next(iter(shared))})"]
    return [f"{', '.join(names)} share {host} ({provider} provider)"
            for host, names in sorted(shared.items()) if len(names) > 1]


def placement_table(layout: Layout, placed: dict[str, str]) -> list[str]:
    """The placement as lines to print before anything starts: host of the topology -> where it runs."""
    width = max((len(h.name) for h in layout.hosts), default=4)
    return [f"  {h.name:<{width}} -> {placed[h.name]}  [{', '.join(h.components) or 'idle'}]" for h in layout.hosts]
