"""The netns provider: N hosts as network namespaces on this machine, reached by SSH.

The hosts are a ``NetnsCluster`` (netns_cluster.py: namespaces, bridge,
inventory, teardown), each with its sshd (netns_sshd.py); their links get
delay and bandwidth in netns_links.py; what a cluster leaves on this machine,
and its removal, is in netns_namespaces.py. See docs/netns.md. Leftovers of a killed harness are
removed with::

    python3 -m harness.providers.netns --cleanup fr-1a2b3c     # one cluster
    python3 -m harness.providers.netns --cleanup fr-           # every cluster
    python3 -m harness.providers.netns --list
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import HarnessError
from ..topology import Layout, as_layout
from .base import Provider, groups_of
from .netns_cluster import NetnsCluster
from .netns_namespaces import cleanup, cleanup_orphans, list_clusters, netns_list, preflight, process_alive


class NetnsProvider(Provider):
    """``--provider netns``: one namespace host per host of the run's layout, reached over SSH.

    ``up(layout, run_dir)`` makes a host named after each host of the layout
    (``orderer``, ``kafka-0``, ``client``...; ``_`` becomes ``-``): the paper's
    topology, every instance a host of its own (Table I: 15). Its files are under
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

    def place(self, layout: Layout) -> dict[str, str]:
        return {h.name: self.host_name(h.name) for h in layout.hosts}

    def up(self, layout: Layout | dict[str, list[str]], run_dir: Path) -> dict[str, list[str]]:
        """Create one namespace host per host of ``layout`` and wait until each answers SSH."""
        self.orphans_removed = cleanup_orphans()
        layout = as_layout(layout)
        placed = self.place(layout)
        self.cluster = NetnsCluster(Path(run_dir) / "provider" / "netns", list(placed.values()),
                                    roles={placed[h.name]: list(h.components) for h in layout.hosts},
                                    ssh_timeout_s=self.ssh_timeout_s, bin_dir=self.bin_dir, handle_signals=False)
        self.cluster.start()
        return groups_of(layout, placed)

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
            sshd = c.tracked(f"sshd@{h}")
            if sshd and not process_alive(sshd["pid"], sshd["start_time"]):
                out[h] = f"its sshd (PID {sshd['pid']}) has exited"
        return out


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
