"""Links between netns hosts: delay by toxiproxy, bandwidth by ``tc htb``.

Delay: a toxiproxy in the ``to`` host's namespace listens on a new address of
``to`` (a "link address") at each port and forwards to ``to``'s own address;
the ``from`` host's /etc/hosts maps ``to``'s name to the link address, so a
client that dials the host by name goes through the proxy. A proxy rather than
netem because the kernels this runs on may lack netem. Bandwidth: an htb class
on ``from``'s eth0 for packets to ``to`` (and to its link address). See
docs/netns.md.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import urllib.error
import urllib.request
from pathlib import Path

from ..errors import HarnessError
from .netns_namespaces import ETC_NETNS, run

TOXIPROXY_VERSION = "v2.12.0"
TOXIPROXY_INSTALL = (f"infra/netns/install-toxiproxy.sh "
                     f"(go install github.com/Shopify/toxiproxy/v2/cmd/server@{TOXIPROXY_VERSION})")
#: Port of each toxiproxy's HTTP API, on the destination host's address.
TOXIPROXY_API_PORT = 8474


def find_toxiproxy() -> str:
    """The path of the toxiproxy server, or an error naming the command that installs it.

    Looked up as ``$FABRICREPRO_TOXIPROXY``, ``toxiproxy-server`` on PATH, then
    ``$(go env GOPATH)/bin/toxiproxy-server`` and ``.../bin/server`` (the name
    ``go install .../cmd/server`` gives it).
    """
    candidates = [os.environ.get("FABRICREPRO_TOXIPROXY"), shutil.which("toxiproxy-server")]
    gopath = os.environ.get("GOPATH")
    if not gopath and shutil.which("go"):
        gopath = run(["go", "env", "GOPATH"], check=False).stdout.strip()
    for gp in (gopath, str(Path.home() / "go")):
        if gp:
            candidates += [str(Path(gp) / "bin" / "toxiproxy-server"), str(Path(gp) / "bin" / "server")]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    raise HarnessError("toxiproxy-server not found (needed for per-link delay, the kernel has no netem)",
                       hint=f"`invoke setup` installs it: {TOXIPROXY_INSTALL} "
                            "(then $(go env GOPATH)/bin/server is used, or set FABRICREPRO_TOXIPROXY)")


def apply_links(cluster, links: list[dict]) -> list[dict]:
    """Give ``cluster``'s links delay and bandwidth (``NetnsCluster.apply_links``); return what was applied."""
    applied = []
    shaped: dict[str, list[dict]] = {}
    toxi_ports: dict[str, str] = {}
    for link in links:
        src, dst = link["from"], link["to"]
        for h in (src, dst):
            if h not in cluster.hosts:
                raise HarnessError(f"link {src}->{dst}: unknown host {h!r}; hosts: {', '.join(cluster.hosts)}")
        ports = [int(p) for p in (link.get("ports") or ([link["port"]] if link.get("port") else []))]
        rec = {"from": src, "to": dst, "ports": ports, "delay_ms": link.get("delay_ms"),
               "rate_mbit": link.get("rate_mbit"), "delay_method": None, "rate_method": None}
        if link.get("delay_ms") is not None:  # 0 too: a later point may set another (set_link_delay)
            if not ports:
                raise HarnessError(f"link {src}->{dst}: delay_ms needs a port (toxiproxy proxies TCP ports)")
            if dst not in toxi_ports:
                toxi_ports[dst] = _start_toxiproxy(cluster, dst)
            rec.update(_add_delay(cluster, src, dst, ports, float(link["delay_ms"]), toxi_ports[dst]))
        if link.get("rate_mbit"):
            shaped.setdefault(src, []).append(rec)
        applied.append(rec)
    for src, recs in shaped.items():
        _shape(cluster, src, recs)
    return applied


def set_link_delay(links_applied: list[dict], delay_ms: float) -> list[dict]:
    """Set ``delay_ms`` on every delayed link (both directions of each of its proxies); return the links."""
    out = []
    for rec in links_applied:
        for name in rec.get("proxies") or []:
            for stream in ("upstream", "downstream"):
                _http_json("POST", f"{rec['toxiproxy_api']}/proxies/{name}/toxics/latency_{stream}",
                           {"attributes": {"latency": int(round(delay_ms)), "jitter": 0}})
        out.append({**rec, **({"delay_ms": delay_ms, "rtt_added_ms": 2 * int(round(delay_ms))}
                              if rec.get("proxies") else {})})
    return out


def _start_toxiproxy(cluster, host: str) -> str:
    binary = find_toxiproxy()
    api = f"http://{cluster.ip(host)}:{TOXIPROXY_API_PORT}"
    cluster.popen(host, [binary, "-host", cluster.ip(host), "-port", str(TOXIPROXY_API_PORT)], name="toxiproxy",
                  log=cluster.host_dir(host) / "toxiproxy.log")
    deadline = time.monotonic() + 10
    while True:
        try:
            with urllib.request.urlopen(f"{api}/version", timeout=1):
                return api
        except (urllib.error.URLError, OSError):
            if time.monotonic() > deadline:
                raise HarnessError(f"toxiproxy on netns host {host} did not answer at {api}",
                                   log=str(cluster.host_dir(host) / "toxiproxy.log"))
            time.sleep(0.1)


def _add_delay(cluster, src: str, dst: str, ports: list[int], delay_ms: float, api: str) -> dict:
    addr = cluster.new_link_address()
    run(["ip", "-n", cluster.netns(dst), "addr", "add", f"{addr}/32", "dev", "eth0"])
    proxies = []
    for port in ports:
        name = f"{src}-{dst}-{port}"
        _http_json("POST", f"{api}/proxies", {"name": name, "listen": f"{addr}:{port}",
                                              "upstream": f"{cluster.ip(dst)}:{port}", "enabled": True})
        for stream in ("upstream", "downstream"):
            _http_json("POST", f"{api}/proxies/{name}/toxics",
                       {"name": f"latency_{stream}", "type": "latency", "stream": stream,
                        "toxicity": 1.0, "attributes": {"latency": int(round(delay_ms)), "jitter": 0}})
        proxies.append(name)
    _map_name(cluster.netns(src), dst, addr)
    return {"delay_method": "toxiproxy", "link_addr": addr, "proxies": proxies, "toxiproxy_api": api,
            "toxiproxy_version": TOXIPROXY_VERSION, "rtt_added_ms": 2 * int(round(delay_ms))}


def _map_name(src_ns: str, dst: str, addr: str) -> None:
    # rewrite in place: the file is bind-mounted into running processes, a rename would not be seen
    path = ETC_NETNS / src_ns / "hosts"
    lines = [ln for ln in path.read_text().splitlines() if not (ln.split()[1:2] == [dst])]
    lines.append(f"{addr} {dst}")
    with open(path, "r+") as f:
        f.seek(0)
        f.write("\n".join(lines) + "\n")
        f.truncate()


def _shape(cluster, src: str, recs: list[dict]) -> None:
    tc = ["ip", "netns", "exec", cluster.netns(src), "tc"]
    run(tc + ["qdisc", "replace", "dev", "eth0", "root", "handle", "1:", "htb", "default", "1"])
    # the default class stays fast: only the listed destinations are shaped
    run(tc + ["class", "replace", "dev", "eth0", "parent", "1:", "classid", "1:1", "htb", "rate", "10gbit"])
    for i, rec in enumerate(recs, start=10):
        rate = f"{rec['rate_mbit']}mbit"
        run(tc + ["class", "replace", "dev", "eth0", "parent", "1:", "classid", f"1:{i}", "htb",
                  "rate", rate, "ceil", rate])
        dests = [cluster.ip(rec["to"])] + ([rec["link_addr"]] if rec.get("link_addr") else [])
        for d in dests:
            run(tc + ["filter", "add", "dev", "eth0", "parent", "1:", "protocol", "ip", "prio", "1",
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
