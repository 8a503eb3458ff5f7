"""The hosts of a run: each point's per-host CPU, network, memory and disk, and how the links between the
hosts were shaped."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..providers import THIS_MACHINE
from ..resources import plot_resources, read_resources, summarize
from ..rundir import read_json


#: Per-host resource figures drawn per run (the table covers every point; the data is in each point's metrics/).
MAX_RESOURCE_FIGURES = 4


def _links_text(run_meta: dict) -> str:
    """The run's links in one sentence per distinct shaping and outcome (a reason shared by 30 links is said once)."""
    links = (run_meta.get("cluster") or {}).get("links") or []
    if not links:
        return "Links: not shaped (the experiment sets no network delay or bandwidth)."
    groups: dict[tuple[str, str], list[str]] = {}
    for l in links:
        shape = ", ".join(x for x in (f"+{l['delay_ms']} ms each way" if l.get("delay_ms") else "",
                                      f"{l['rate_mbit']} Mbit/s" if l.get("rate_mbit") else "") if x)
        how = ("via " + " and ".join(m for m in (l.get("delay_method"), l.get("rate_method")) if m)
               if l.get("applied", True) else f"not applied: {l.get('reason')}")
        groups.setdefault((shape, how), []).append(f"{l['from']}→{l['to']}")
    parts = []
    for (shape, how), pairs in groups.items():
        if len(pairs) > 3:
            ends = sorted({e for p in pairs for e in p.split("→")})
            which = f"{len(pairs)} links among {', '.join(ends)}"
        else:
            which = ", ".join(pairs)
        parts.append(which + (f" {shape}" if shape else "") + (f" {how}" if how != "via " else ""))  # 0 ms: no shape
    return "Links: " + "; ".join(parts) + "."


def _point_delays(run) -> str:
    """The delay each point set on the links (``points/<point>/links.json``, a list; Fujitsu Fig. 5), if any,
    one entry per distinct delay with the number of points that set it."""
    delays: dict[str, list[str]] = {}
    for path in sorted((run.path / "points").glob("*/links.json")):
        values = {link.get("delay_ms") for link in json.loads(path.read_text())
                  if link.get("proxies") or link.get("delay_method") or link.get("delay_ms")}
        if values:
            delays.setdefault(", ".join(f"{v or 0:g}" for v in sorted(values, key=lambda v: v or 0)),
                              []).append(path.parent.name)
    if not delays:
        return ""
    return (" Each point sets its own delay on these links (the run's metadata keeps the first point's): "
            + "; ".join(f"+{d} ms on {len(ps)} point(s) ({', '.join(ps)})" if len(ps) > 1 else f"{ps[0]} +{d} ms"
                        for d, ps in delays.items()) + ".")


def measured_window(point_dir: Path) -> tuple[int, int] | None:
    """The UTC-ns window of a point's measured blocks: first block received to last block committed
    (``blocks.parquet``, from ``measured.json``'s ``first_block`` on where the point has one), or None."""
    blocks = point_dir / "blocks.parquet"
    if not blocks.is_file():
        return None
    df = pd.read_parquet(blocks)
    measured = point_dir / "measured.json"
    if measured.is_file() and "block_number" in df:
        first = json.loads(measured.read_text()).get("first_block")
        if first is not None:
            df = df[df["block_number"] >= first]
    start = [c for c in ("received_ns", "committed_ns") if c in df]
    if not len(df) or not start:
        return None
    times = df[start].where(df[start] > 0)
    lo, hi = times.min().min(), times.max().max()
    if pd.isna(lo) or pd.isna(hi) or hi <= lo:
        return None
    return int(lo), int(hi)


#: The fewest samples a point's measured window must span for its resource figure to say something about
#: the measurement (at one sample a second, a 1 s window holds one or two).
MIN_WINDOW_SAMPLES = 3


def window_samples(df, window: tuple[int, int]) -> int:
    """The distinct sample times of resources ``df`` (column ``time_ns``) inside ``window`` (UTC ns)."""
    times = df["time_ns"]
    return int(times[(times >= window[0]) & (times <= window[1])].nunique())


def resource_blocks(run, figure_prefix: str) -> list[tuple]:
    """Per-host CPU, memory, network and disk of each point (node-exporter via the run's Prometheus)."""
    rows, figures, measured, few = [], [], 0, []
    for point_dir in sorted((run.path / "points").iterdir()):
        rjson = point_dir / "metrics" / "resources.json"
        if not rjson.is_file():
            continue
        measured += 1
        doc = read_json(rjson)
        parquet = point_dir / "metrics" / "resources.parquet"
        df = read_resources(parquet) if parquet.is_file() else None
        if df is not None and len(df):
            # from the samples, one per host, metric and time (resources.json of older runs counted
            # a stale second memory series); the roles and devices stay the JSON's
            fresh = summarize(df, doc.get("start_ns", 0), doc.get("end_ns", 0))["hosts"]
            doc = {**doc, "hosts": {h: {**v, **doc["hosts"].get(h, {}), "metrics": v["metrics"]}
                                    for h, v in fresh.items()}}
        for host, h in sorted(doc["hosts"].items()):
            m = h.get("metrics", {})

            def stat(name, key="mean", scale=1.0, digits=1):
                v = (m.get(name) or {}).get(key)
                return "–" if v is None else f"{v * scale:.{digits}f}"
            rows.append([point_dir.name, host, ",".join(h.get("roles", [])),
                         f"{stat('cpu_util_ratio', scale=100)} / {stat('cpu_util_ratio', 'max', 100)}",
                         f"{stat('net_rx_bytes_per_s', scale=1e-6, digits=2)} / {stat('net_rx_bytes_per_s', 'max', 1e-6, 2)}",
                         f"{stat('net_tx_bytes_per_s', scale=1e-6, digits=2)} / {stat('net_tx_bytes_per_s', 'max', 1e-6, 2)}",
                         stat("mem_used_bytes", "max", 1e-9, 2), stat("disk_write_bytes_per_s", scale=1e-6, digits=2)])
        window = measured_window(point_dir) if df is not None and len(df) else None
        inside = window_samples(df, window) if window else None
        if inside is not None and inside < MIN_WINDOW_SAMPLES:
            few.append(f"`{point_dir.name}` ({(window[1] - window[0]) / 1e9:.3g} s, {inside} sample(s))")
        elif len(figures) < MAX_RESOURCE_FIGURES and df is not None and len(df):
            figures.append(("img", f"{figure_prefix}-{point_dir.name}-resources.png",
                            plot_resources(df, None, window_ns=window),
                            f"Per-host resources of point {point_dir.name}, one line per host"
                            + ("; shaded: the measured window (first measured block received to last committed)."
                               if window else "; the measured window is not recorded for this point "
                                              "(no blocks.parquet with block times): not shaded.")))
    if not rows:
        return []
    provider = run.metadata.get("provider")
    shared = ("CPU and memory are this machine's, shared by every host of the run; network is each host's own "
              "interface. " if provider in THIS_MACHINE else "")
    hosts = (run.metadata.get("cluster") or {}).get("hosts") or {}
    blocks = [("p", f"**Per-host resources** (provider {provider}, {len(hosts) or 1} host(s); node-exporter scraped "
                    f"every second by the run's Prometheus; mean / max over each point). {shared}"
                    + _links_text(run.metadata) + _point_delays(run)),
              ("table", ["point", "host", "roles", "CPU % mean / max", "net rx MB/s mean / max",
                         "net tx MB/s mean / max", "memory GB max", "disk write MB/s mean"], rows)]
    not_deployed = run.metadata.get("topology_not_deployed") or {}
    if not_deployed and not run.metadata.get("topology"):  # a run laid out by topology.py says it in its table
        blocks.append(("p", "Roles of the paper's topology this build does not deploy yet: "
                            + ", ".join(f"{r} ×{n}" for r, n in sorted(not_deployed.items())) + "."))
    if few:
        blocks.append(("p", f"No resource figure where the measured window spans fewer than {MIN_WINDOW_SAMPLES} "
                            f"samples (one a second): {', '.join(few)}; a plot would show the deployment around "
                            "the measurement, not the measurement. Their means and maxima are in the table."))
    if len(figures) + len(few) < measured:
        blocks.append(("p", f"Figures for the first {len(figures)} points; every point's samples are in "
                            "`points/<point>/metrics/resources.parquet`."))
    return blocks + figures


def _host_cpus(run_meta: dict, host: str) -> str:
    """The CPUs a provider host offered: its preflight's vCPUs (ssh, aws), else this machine's usable CPUs."""
    facts = (((run_meta.get("cluster") or {}).get("hosts") or {}).get(host) or {}).get("facts") or {}
    if facts.get("vcpus"):
        return str(facts["vcpus"])
    if run_meta.get("provider") in THIS_MACHINE:
        usable = (run_meta.get("host") or {}).get("cpus_usable")
        return f"{usable}, shared" if usable else "–"
    return "–"


def topology_blocks(run) -> list[tuple]:
    """The paper's topology (role × count × hardware) beside the one this run used (host × components × CPUs),
    and the deviations derived from the two (``metadata.json`` ``topology``, harness/topology.py)."""
    topo = run.metadata.get("topology")
    if not topo:
        return []
    hardware = ((run.stored("experiment").get("paper") or {}).get("hardware") or {})
    per_server = ", ".join(x for x in (f"{hardware['cores']} hardware threads" if hardware.get("cores") else "",
                                       f"{hardware['memory_gb']} GB" if hardware.get("memory_gb") else "") if x)
    placed = topo.get("placement") or {}
    by_role: dict[str, list[dict]] = {}
    for h in topo.get("hosts") or []:
        by_role.setdefault(h["role"], []).append(h)
    published = topo.get("published") or {}
    rows = []
    for role in [*published, *(r for r in by_role if r not in published)]:
        hosts = by_role.get(role) or []
        n = published.get(role)
        rows.append([role, f"{n} × ({per_server})" if n and per_server else (str(n) if n else "– (not in the paper)"),
                     str(len(hosts)),
                     "; ".join(f"{h['name']} → {placed.get(h['name'], '?')}" for h in hosts) or "–",
                     ", ".join(hosts[0]["components"]) if hosts and hosts[0]["components"] else "idle",
                     ", ".join(sorted({_host_cpus(run.metadata, placed[h["name"]]) for h in hosts if h["name"] in placed}))
                     or "–"])
    distinct = len(set(placed.values()))
    deviations = topo.get("deviations") or []
    text = (f"**Topology** (provider {topo.get('provider', run.metadata.get('provider'))}): the paper's "
            f"{sum(published.values())} server(s) beside the {len(topo.get('hosts') or [])} host(s) laid out here, "
            f"placed on {distinct} host(s) of the provider.")
    blocks = [("p", text),
              ("table", ["role", "paper: servers × hardware", "laid out", "host → where it ran", "components",
                         "CPUs per host"], rows)]
    if deviations:
        blocks.append(("p", "Deviations from the paper's topology (derived from the two): "
                            + "; ".join(deviations) + "."))
    return blocks
