"""The ssh provider's links: ``tc`` on the sending host, rendered by tc.py and run by playbooks/links.yml.

``SshLinks`` is a part of ``SshProvider`` (ssh.py), kept apart because the
links are a concern of their own: which device routes each destination, one
shaping per destination address, and the state ``down`` must undo. It uses the
provider's ``placed``, ``hosts_inventory``, ``provider_dir``, ``_address``,
``_describe_host``, ``_playbook`` and ``_checks``.
"""

from __future__ import annotations

import ipaddress
import shlex
import socket

from ..errors import HarnessError
from .ssh_ansible import adhoc, adhoc_reason
from .tc import netem_args, route_devices, tc_clear_commands, tc_commands, tc_number

LINKS_PLAYBOOK = "links.yml"


class SshLinks:
    """Delay and bandwidth between the ssh provider's hosts (``apply_links``, ``set_link_delay``)."""

    def _reset_links(self) -> None:
        self.links_applied: list[dict] = []
        self._links: dict[tuple[str, str], dict] = {}   # (from role, to role) -> link as asked
        self._shaped: dict[str, set[str]] = {}          # host -> devices with our root qdisc

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
        asked = [self._asked_link(link) for link in links]
        links_by_key = dict(self._links)
        for a in asked:
            links_by_key[(a["from"], a["to"])] = a
        touched_hosts = sorted({self.placed[a["from"]] for a in asked})
        devices = self._route_devices(touched_hosts, links_by_key)

        commands: dict[str, list[dict]] = {}
        records: dict[tuple[str, str], dict] = {}
        new_shaped: dict[str, set[str]] = {}
        for h in touched_hosts:
            commands[h], host_records, new_shaped[h] = self._render_host(h, links_by_key, devices[h])
            records.update(host_records)
            # devices shaped before but no longer used by any link of this host: clear them
            for dev in sorted(self._shaped.get(h, set()) - new_shaped[h]):
                commands[h].extend(tc_clear_commands(dev))
        # recorded before running: a failure half way must still be undone by down()
        for h, devs in new_shaped.items():
            self._shaped.setdefault(h, set()).update(devs)
        self._playbook(LINKS_PLAYBOOK, "links.log", {"fabricrepro_tc_commands": commands}, "shaping links",
                       timeout=300)
        for h in touched_hosts:
            self._shaped[h] = new_shaped[h]
        self._links = links_by_key
        applied = [records[(a["from"], a["to"])] for a in asked]
        self.links_applied = [r for r in self.links_applied if (r["from"], r["to"]) not in records] + \
            [records[k] for k in records]
        return applied

    def _asked_link(self, link: dict) -> dict:
        """``link`` checked against the layout, with its destination's IPv4 address."""
        src, dst = link.get("from"), link.get("to")
        for r in (src, dst):
            if r not in self.placed:
                raise HarnessError(f"link {src}->{dst}: unknown host {r!r} of the layout; its hosts: {', '.join(self.placed)}")
        delay, rate = link.get("delay_ms"), link.get("rate_mbit")
        if delay is None and not rate:
            raise HarnessError(f"link {src}->{dst}: give delay_ms and/or rate_mbit")
        if (delay is not None and float(delay) < 0) or (rate is not None and float(rate) <= 0):
            raise HarnessError(f"link {src}->{dst}: delay_ms must be >= 0 and rate_mbit > 0")
        if self.placed[src] == self.placed[dst]:
            raise HarnessError(f"link {src}->{dst}: both hosts of the layout are on host {self.placed[src]}")
        return {"from": src, "to": dst, "delay_ms": delay, "rate_mbit": rate,
                "to_address": self._ipv4(self._address(self.placed[dst]), dst)}

    def _render_host(self, h: str, links_by_key: dict[tuple[str, str], dict],
                     devices: dict[str, str]) -> tuple[list[dict], dict[tuple[str, str], dict], set[str]]:
        """Sending host ``h``'s tc commands for all its links, the records of those links, the devices shaped."""
        per_dev: dict[str, list[dict]] = {}
        for a in links_by_key.values():
            if self.placed[a["from"]] != h:
                continue
            dev = devices[a["to_address"]]
            if dev == "lo":
                raise HarnessError(f"link {a['from']}->{a['to']}: {a['to_address']} is an address of "
                                   f"host {h} itself")
            per_dev.setdefault(dev, []).append(a)
        commands: list[dict] = []
        records: dict[tuple[str, str], dict] = {}
        for dev, items in sorted(per_dev.items()):
            cmds = tc_commands(dev, self._destinations(h, items))
            commands.extend(cmds)
            netem = {c["dest"]: c["netem"] for c in cmds if "netem" in c}
            for a in items:
                records[(a["from"], a["to"])] = {
                    "from": a["from"], "to": a["to"], "applied": True, "from_host": h,
                    "to_host": self.placed[a["to"]], "to_address": a["to_address"], "device": dev,
                    "delay_ms": a["delay_ms"], "rate_mbit": a["rate_mbit"],
                    "delay_method": "tc netem" if a["delay_ms"] is not None else None,
                    "rate_method": "tc htb" if a["rate_mbit"] else None,
                    "rtt_added_ms": a["delay_ms"] or 0,
                    **({"netem": netem[a["to_address"]]} if a["to_address"] in netem else {}),
                    "tc": [shlex.join(c["argv"]) for c in cmds
                           if c["dest"] in (None, a["to_address"]) and not c["may_fail"]]}
        return commands, records, set(per_dev)

    @staticmethod
    def _destinations(h: str, links: list[dict]) -> list[dict]:
        """One shaping per destination address (two roles on one destination host share it); a clash raises."""
        by_addr: dict[str, dict] = {}
        for a in links:
            want = {"address": a["to_address"], "delay_ms": a["delay_ms"], "rate_mbit": a["rate_mbit"]}
            have = by_addr.setdefault(a["to_address"], want)
            if have != want:
                raise HarnessError(f"link {a['from']}->{a['to']}: host {h} already shapes traffic to "
                                   f"{a['to_address']} with delay_ms={have['delay_ms']}, "
                                   f"rate_mbit={have['rate_mbit']} (one shaping per destination address)")
        return list(by_addr.values())

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
                       f"setting the links' delay to {tc_number(delay_ms)} ms", timeout=300)
        for r in delayed:   # a later apply_links re-renders the links with the delay they have now
            self._links[(r["from"], r["to"])]["delay_ms"] = delay_ms
        return [{**r, "delay_ms": delay_ms, "rtt_added_ms": delay_ms,
                 "tc_change": changed[(r["from_host"], r["netem"]["device"], r["netem"]["parent"])]}
                if r.get("netem") else r for r in self.links_applied]

    def _clear_links(self) -> None:
        """Remove the root qdisc of every device shaped (the kernel's default comes back); raise on failure."""
        if not self._shaped:
            return
        clear = {h: [c for d in sorted(devs) for c in tc_clear_commands(d)] for h, devs in self._shaped.items()}
        self._playbook(LINKS_PLAYBOOK, "links-clear.log", {"fabricrepro_tc_commands": clear},
                       "removing link shaping", timeout=300, fresh=True)
        self._shaped = {}

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
            why = adhoc_reason(results[h])
            if why:
                raise HarnessError(f"link shaping: cannot ask {self._describe_host(h)} for its routes: {why}")
            out[h] = route_devices(str(results[h].get("stdout", "")))
            for a in links.values():
                if self.placed[a["from"]] == h and a["to_address"] not in out[h]:
                    raise HarnessError(f"link {a['from']}->{a['to']}: host {h} has no route to {a['to_address']} "
                                       f"(`ip route get` said: {str(results[h].get('stdout', '')).strip()!r})")
        return out
