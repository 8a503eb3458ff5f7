"""``tc`` command lines that shape links on the ssh and aws providers' hosts, and the parsing of their routes.

Rendered here, in Python, so that they are unit-tested and recorded with each
link exactly as run (playbooks/links.yml only runs them). See docs/providers.md,
"Links".
"""

from __future__ import annotations

import re

#: htb needs a rate on every class; a delay-only link gets this one, far above any NIC it will meet.
UNSHAPED_RATE_MBIT = 100_000
#: netem's queue must hold what is in flight during the delay; without a rate, assume a 10 Gbit/s NIC.
NETEM_ASSUMED_MBIT = 10_000
NETEM_HINT = ("that host's kernel lacks the netem qdisc (Debian/Ubuntu: apt-get install "
              "linux-modules-extra-$(uname -r); modprobe sch_netem)")


def tc_number(x: float) -> str:
    """``x`` as tc reads it: an integer without a fraction, else the shortest decimal."""
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
                              "rate", f"{tc_number(rate_mbit)}mbit", "ceil", f"{tc_number(rate_mbit)}mbit",
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
    return ["netem", "delay", f"{tc_number(delay_ms)}ms", "limit", str(max(1000, int(in_flight * 1.5) + 1))]


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
