"""Per-host resource metrics: node-exporter on every host, one Prometheus per run.

    mon = ResourceMonitor(work_dir, targets)        # targets: netns_targets(cluster) or local_targets(roles)
    mon.start()                                      # exporters + Prometheus, waits until every target is up
    ... run a point ...
    df = mon.collect(start_ns, end_ns, out_dir)      # resources.parquet + resources.json
    mon.stop()                                       # every process it started, by PID

On one machine the hosts share CPUs and memory: ``cpu_util_ratio`` and
``mem_used_bytes`` are the machine's, the same for every netns host, while the
network counters are each host's own (its ``eth0`` inside its namespace).
"""

from __future__ import annotations

import json
import math
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import yaml

from .errors import HarnessError

#: Version of resources.parquet and resources.json.
RESOURCES_SCHEMA_VERSION = 1
NODE_EXPORTER = "prometheus-node-exporter"
PROMETHEUS = "prometheus"
SCRAPE_INTERVAL_S = 1
#: Window of ``rate()``: a few scrapes, so that one late scrape does not leave a gap.
RATE_WINDOW = "5s"
#: The metrics stored, with units in their names; ``{sel}`` is the host's selector.
QUERIES = {
    "cpu_util_ratio": '1 - avg(rate(node_cpu_seconds_total{{{sel},mode="idle"}}[{w}]))',
    "mem_used_bytes": 'node_memory_MemTotal_bytes{{{sel}}} - node_memory_MemAvailable_bytes{{{sel}}}',
    "net_rx_bytes_per_s": 'sum(rate(node_network_receive_bytes_total{{{sel},{dev}}}[{w}]))',
    "net_tx_bytes_per_s": 'sum(rate(node_network_transmit_bytes_total{{{sel},{dev}}}[{w}]))',
    "disk_write_bytes_per_s": 'sum(rate(node_disk_written_bytes_total{{{sel}}}[{w}]))',
}


@dataclass
class HostTarget:
    """One host to watch: where its node-exporter listens and which device is its network."""

    host: str
    roles: list[str]
    address: str
    port: int
    device: str | None                # None: every device but loopback (a real server's NICs)
    netns: str | None = None          # start the exporter inside this network namespace
    log_dir: Path | None = None
    external: bool = False            # its node-exporter is started elsewhere (Ansible on a real server)


@dataclass
class _Proc:
    name: str
    popen: subprocess.Popen
    log: Path


def free_port(address: str = "127.0.0.1") -> int:
    """A TCP port free on ``address`` now (the kernel's choice)."""
    with socket.socket() as s:
        s.bind((address, 0))
        return s.getsockname()[1]


def netns_targets(cluster) -> list[HostTarget]:
    """One target per host of a ``NetnsCluster``: its address, port 9100, device ``eth0``."""
    return [HostTarget(h, cluster.roles[h], cluster.ip(h), 9100, "eth0", netns=cluster.netns(h),
                       log_dir=cluster.host_dir(h)) for h in cluster.hosts]


def local_targets(roles: list[str], host: str = "localhost") -> list[HostTarget]:
    """The single target of the local provider: loopback, a free port, device ``lo``."""
    return [HostTarget(host, list(roles), "127.0.0.1", free_port(), "lo")]


def _require(tool: str) -> str:
    path = shutil.which(tool)
    if not path:
        raise HarnessError(f"{tool} not found on PATH (needed for per-host metrics)",
                           hint="`invoke setup` installs it (Debian: prometheus prometheus-node-exporter)")
    return path


def _get_json(url: str, timeout: float = 5) -> dict:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


@dataclass
class ResourceMonitor:
    """node-exporters and a Prometheus for one run.

    ``track`` (e.g. ``NetnsCluster.track``) is told about every process
    started, so that a cluster teardown or ``--cleanup`` also stops them.
    """

    work_dir: Path
    targets: list[HostTarget]
    track: Callable[[subprocess.Popen, str], None] | None = None
    prometheus_port: int | None = None
    _procs: list[_Proc] = field(default_factory=list)

    @property
    def url(self) -> str:
        """Base URL of the run's Prometheus."""
        return f"http://127.0.0.1:{self.prometheus_port}"

    def _spawn(self, name: str, argv: list[str], log: Path) -> subprocess.Popen:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        self._procs.append(_Proc(name, p, log))
        if self.track:
            self.track(p, name)
        return p

    def config(self) -> dict:
        """The Prometheus configuration: one scrape job per host, labelled ``host`` and ``roles``."""
        return {"global": {"scrape_interval": f"{SCRAPE_INTERVAL_S}s", "evaluation_interval": f"{SCRAPE_INTERVAL_S}s",
                           "scrape_timeout": f"{int(SCRAPE_INTERVAL_S * 900)}ms"},
                "scrape_configs": [{"job_name": f"node-{t.host}",
                                    "static_configs": [{"targets": [f"{t.address}:{t.port}"],
                                                        "labels": {"host": t.host, "roles": ",".join(t.roles)}}]}
                                   for t in self.targets]}

    def start(self, timeout_s: float = 20.0) -> "ResourceMonitor":
        """Start one node-exporter per target and Prometheus; wait until every target is scraped."""
        exporter, prometheus = _require(NODE_EXPORTER), _require(PROMETHEUS)
        self.work_dir = Path(self.work_dir)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        try:
            for t in (t for t in self.targets if not t.external):
                # Debian's exporter skips lo by default; the local provider's traffic is all on lo
                argv = [exporter, f"--web.listen-address={t.address}:{t.port}", "--no-collector.systemd",
                        "--collector.netdev.device-exclude=^$"]
                if t.netns:
                    argv = ["ip", "netns", "exec", t.netns] + argv
                self._spawn(f"node-exporter@{t.host}", argv, (t.log_dir or self.work_dir) / "node-exporter.log")
            self.prometheus_port = self.prometheus_port or free_port()
            cfg = self.work_dir / "prometheus.yml"
            cfg.write_text(yaml.safe_dump(self.config(), sort_keys=False))
            self._spawn("prometheus", [prometheus, f"--config.file={cfg}",
                                       f"--storage.tsdb.path={self.work_dir / 'prometheus-data'}",
                                       f"--web.listen-address=127.0.0.1:{self.prometheus_port}"],
                        self.work_dir / "prometheus.log")
            self.wait_targets(timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def wait_targets(self, timeout_s: float) -> None:
        """Wait until Prometheus reports every target ``up``; name the ones that are not."""
        deadline = time.monotonic() + timeout_s
        down: dict[str, str] = {t.host: "not scraped yet" for t in self.targets}
        while time.monotonic() < deadline:
            for p in self._procs:
                if p.popen.poll() is not None:
                    tail = " | ".join(p.log.read_text(errors="replace").strip().splitlines()[-2:])
                    raise HarnessError(f"{p.name} exited with code {p.popen.returncode}: {tail}", log=str(p.log))
            try:
                active = _get_json(f"{self.url}/api/v1/targets?state=active", timeout=2)["data"]["activeTargets"]
                for a in active:
                    h = a["labels"].get("host")
                    if a["health"] == "up":
                        down.pop(h, None)
                    elif h in down and a.get("lastError"):
                        down[h] = a["lastError"]
                if not down:
                    return
            except (urllib.error.URLError, OSError, KeyError, ValueError):
                pass
            time.sleep(0.2)
        raise HarnessError("node-exporter not scraped for host(s) "
                           + "; ".join(f"{h}: {why}" for h, why in sorted(down.items())),
                           log=str(self.work_dir / "prometheus.log"))

    def query_range(self, query: str, start_s: float, end_s: float, step_s: float = SCRAPE_INTERVAL_S) -> list:
        """The ``result`` of ``/api/v1/query_range`` for ``query``."""
        qs = urllib.parse.urlencode({"query": query, "start": f"{start_s:.3f}", "end": f"{end_s:.3f}", "step": step_s})
        doc = _get_json(f"{self.url}/api/v1/query_range?{qs}", timeout=30)
        if doc.get("status") != "success":
            raise HarnessError(f"Prometheus query failed: {query}: {doc.get('error')}")
        return doc["data"]["result"]

    def collect(self, start_ns: int, end_ns: int, out_dir: Path):
        """Fetch every metric of every host between two UTC times; write resources.parquet and .json.

        Returns the table (pandas DataFrame with columns ``time_ns, host,
        role, metric, value``). Waits one scrape past ``end_ns`` so that the
        last second is in.
        """
        import pandas as pd

        wait = end_ns / 1e9 + 2 * SCRAPE_INTERVAL_S - time.time()
        if wait > 0:
            time.sleep(wait)
        rows = []
        for t in self.targets:
            # the instance too: a resumed run restarts Prometheus on the same TSDB, where the previous
            # exporter's series (another port, same host label) still answer an instant selector for
            # 5 minutes with its last value (mem_used_bytes then came back twice per timestamp)
            sel = f'host="{t.host}",instance="{t.address}:{t.port}"'
            for metric, q in QUERIES.items():
                dev = f'device="{t.device}"' if t.device else 'device!="lo"'
                for series in self.query_range(q.format(sel=sel, dev=dev, w=RATE_WINDOW),
                                               start_ns / 1e9, end_ns / 1e9):
                    for ts, val in series["values"]:
                        v = float(val)
                        if math.isfinite(v):
                            rows.append((int(round(float(ts) * 1e3)) * 1_000_000, t.host, ",".join(t.roles), metric, v))
        df = pd.DataFrame(rows, columns=["time_ns", "host", "role", "metric", "value"])
        df = df.astype({"time_ns": "int64", "host": "string", "role": "string", "metric": "string", "value": "float64"})
        df = dedupe(df.sort_values(["host", "metric", "time_ns"], kind="stable").reset_index(drop=True))
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        write_resources(df, out_dir / "resources.parquet")
        (out_dir / "resources.json").write_text(json.dumps(summarize(df, start_ns, end_ns, self.targets),
                                                           indent=1, sort_keys=True) + "\n")
        return df

    def stop(self) -> None:
        """Stop every process this monitor started, by PID (SIGTERM, then SIGKILL)."""
        for p in self._procs:
            if p.popen.poll() is None:
                p.popen.terminate()
        for p in self._procs:
            try:
                p.popen.wait(timeout=3)
            except subprocess.TimeoutExpired:
                p.popen.kill()
                p.popen.wait(timeout=3)

    def pids(self) -> list[int]:
        """PIDs of the processes this monitor started."""
        return [p.popen.pid for p in self._procs]

    def __enter__(self) -> "ResourceMonitor":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def write_resources(df, path: Path) -> None:
    """Write resources.parquet with the schema version and table name in its metadata (as collect.write_table)."""
    from .collect import write_table

    write_table(df, Path(path), "resources")


def read_resources(path: Path):
    """Read a point's resources.parquet: one value per host, metric and timestamp.

    Files written before the schema version was stored (no metadata) are read too; a version this
    harness does not know is rejected. Duplicates of older files are removed (``dedupe``).
    """
    import pyarrow.parquet as pq

    from .collect import META_VERSION

    version = ((pq.read_schema(path).metadata or {}).get(META_VERSION) or b"").decode()
    if version and version != str(RESOURCES_SCHEMA_VERSION):
        raise HarnessError(f"{path}: schema_version {version!r} is not supported "
                           f"(this harness reads {RESOURCES_SCHEMA_VERSION})")
    return dedupe(pq.read_table(path).to_pandas())


def dedupe(df):
    """One value per host, metric and timestamp.

    Runs resumed before the instance was part of the selector stored a second, stale series per host
    for instant metrics (``mem_used_bytes``): the previous exporter's last value, the same at every
    timestamp. Where a timestamp holds several values, a value repeated at every such timestamp is
    that stale series and is dropped; whatever still repeats keeps its first row (the order of the
    series Prometheus returned).
    """
    import pandas as pd

    if not len(df):
        return df
    keys = ["host", "metric", "time_ns"]
    dup = df.duplicated(keys, keep=False)
    if not dup.any():
        return df
    drop = []
    for _, g in df[dup].groupby(["host", "metric"], sort=False):
        stamps = g["time_ns"].nunique()
        for value, rows in g.groupby("value", sort=False):
            if rows["time_ns"].nunique() == stamps and stamps > 1:
                drop += list(rows.index)
    out = df.drop(index=drop)
    # a timestamp left with nothing (the stale value equalled the live one) keeps its first original row
    lost = df[dup & ~df.set_index(keys).index.isin(out.set_index(keys).index)]
    if len(lost):
        out = pd.concat([out, lost.drop_duplicates(keys)])
    return out.drop_duplicates(keys, keep="first").sort_values(["host", "metric", "time_ns"], kind="stable") \
        .reset_index(drop=True)


def summarize(df, start_ns: int, end_ns: int, targets: list[HostTarget] | None = None) -> dict:
    """Mean and max of every metric per host, with the schema version and the window."""
    hosts: dict = {}
    for t in targets or []:
        hosts[t.host] = {"roles": list(t.roles), "device": t.device, "metrics": {}}
    for (host, metric), g in df.groupby(["host", "metric"], sort=True):
        h = hosts.setdefault(str(host), {"roles": str(g["role"].iloc[0]).split(","), "metrics": {}})
        h["metrics"][str(metric)] = {"mean": float(g["value"].mean()), "max": float(g["value"].max()),
                                     "samples": int(len(g))}
    return {"schema_version": RESOURCES_SCHEMA_VERSION, "start_ns": int(start_ns), "end_ns": int(end_ns),
            "step_s": SCRAPE_INTERVAL_S, "rate_window": RATE_WINDOW, "source": "prometheus node-exporter",
            "queries": dict(QUERIES), "hosts": hosts}


#: How each metric is drawn: axis label in human units and the factor from the stored unit.
DISPLAY = {"cpu_util_ratio": ("CPU %", 100.0), "mem_used_bytes": ("memory used (GB)", 1e-9),
           "net_rx_bytes_per_s": ("net rx (MB/s)", 1e-6), "net_tx_bytes_per_s": ("net tx (MB/s)", 1e-6),
           "disk_write_bytes_per_s": ("disk write (MB/s)", 1e-6)}


def plot_resources(df, path: Path | None, metrics: tuple[str, ...] = ("cpu_util_ratio", "net_rx_bytes_per_s",
                                                              "net_tx_bytes_per_s", "mem_used_bytes"),
                   window_ns: tuple[int, int] | None = None) -> Path:
    """One panel per metric, one line per host; a deterministic PNG for the report.

    Axes in human units (``DISPLAY``: CPU %, MB/s, GB), no offset notation. ``window_ns`` (UTC ns),
    the point's measured window, is shaded on every panel. Written to ``path`` (returned), or returned
    as PNG bytes when ``path`` is None.
    """
    from .figure_png import png_bytes  # matplotlib only when a report is drawn
    import matplotlib.pyplot as plt

    present = [m for m in metrics if m in set(df["metric"])] or sorted(set(df["metric"]))[:1]
    fig, axes = plt.subplots(len(present), 1, figsize=(7, 2.2 * max(1, len(present))), sharex=True, squeeze=False)
    t0 = int(df["time_ns"].min()) if len(df) else 0
    for ax, m in zip(axes[:, 0], present):
        label, factor = DISPLAY.get(m, (m, 1.0))
        sub = df[df["metric"] == m]
        for host, g in sub.groupby("host", sort=True):
            ax.plot((g["time_ns"] - t0) / 1e9, g["value"] * factor, label=str(host), linewidth=1)
        if window_ns:
            ax.axvspan((window_ns[0] - t0) / 1e9, (window_ns[1] - t0) / 1e9, color="0.85", zorder=0,
                       label="measured window" if ax is axes[0, 0] else None)
        ax.set_ylabel(label, fontsize=8)
        ax.ticklabel_format(axis="y", style="plain", useOffset=False)
        ax.grid(True, linewidth=0.3)
    axes[-1, 0].set_xlabel("time since start of the point's samples (s)")
    if len(df):
        axes[0, 0].legend(fontsize=7, ncol=4, loc="upper right")
    png = png_bytes(fig)
    if path is None:
        return png
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png)
    return path
