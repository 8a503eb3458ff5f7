"""Parsers of what the BFT-SMaRt ordering service's published programs print.

Each reads the text one program writes (golden samples in tests/fixtures/):

* ``receiver_blocks``: the fork's ``deliver_stdout -quiet -verify`` (a receiver);
* ``node_throughput``: an ordering node's ``throughput_<id>.log`` (bft.BFTNode's
  "throughput" logger, every THROUGHPUT_INTERVAL envelopes and blocks);
* ``signature_rates``: ``bft.test.TestSignatures`` (signatures per second);
* ``microbench_server``: BFT-SMaRt's ``ThroughputLatencyServer`` (operations
  per second and latencies, printed by every replica);
* ``broadcast_summary``: the fork's ``broadcast_msg`` (envelopes acknowledged);
* ``workload_latencies``: ``bft.test.WorkloadClient``'s ``latency_<id>.log`` (its
  "latency" logger: per envelope of its own, the block and milliseconds from
  submission to the block's arrival).
* ``testnodes_latency``: the paper-era frontend emulator ``bft.TestNodes`` (Fig. 7;
  zeromq generation): its ``[latency]`` reports, each over a fixed number of its
  own envelopes, from submission to the block's arrival at that frontend.

``TABLES`` turns a point's fetched logs into the tables its metrics read, one
parser per table reading only its own logs (``harness.collect`` stores them
beside the CSV tables); ``point_tables`` makes them all.

A parser given text without what it looks for raises ``HarnessError`` naming
the program, so a run whose program failed never yields a number.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from harness.plugin_api import HarnessError, point_role_settings

_RECEIVED = re.compile(r"^Received block:\s+(\d+)\s*$", re.M)
_QUORUM = re.compile(r"^Block #(\d+) contains a quorum of valid signatures!", re.M)
_SIGNATURES = re.compile(r"^Block #(\d+) contains (\d+) block signatures", re.M)


def receiver_blocks(text: str) -> list[dict]:
    """Blocks a receiver got, in order: ``{block, signatures, quorum}``.

    ``signatures`` is the number of node signatures on the block (None for
    block 0 and without ``-verify``); ``quorum`` counts the "quorum of valid
    signatures" verdicts deliver_stdout printed for it (two per block with
    the double signature: the block's and its last-config signature's).
    """
    numbers = [int(n) for n in _RECEIVED.findall(text)]
    if not numbers:
        raise HarnessError("deliver_stdout output has no 'Received block:' line")
    signatures = {int(b): int(n) for b, n in _SIGNATURES.findall(text)}
    quorum: dict[int, int] = {}
    for b in _QUORUM.findall(text):
        quorum[int(b)] = quorum.get(int(b), 0) + 1
    return [{"block": n, "signatures": signatures.get(n), "quorum": quorum.get(n, 0)} for n in numbers]


_THROUGHPUT = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})\t(envelopes|blocks)/second\t([0-9.Ee+-]+|Infinity)\s*$",
                         re.M)


def node_throughput(text: str) -> list[dict]:
    """An ordering node's throughput reports: ``{time, unit, per_s}`` (unit ``envelopes`` or ``blocks``).

    bft.BFTNode logs ``envelopes/second`` every THROUGHPUT_INTERVAL envelopes and
    ``blocks/second`` every THROUGHPUT_INTERVAL blocks, each the rate since its
    previous report (the first since the first envelope or block).
    The rate is Java's float division by whole milliseconds: ``Infinity`` when the
    interval took under one millisecond (a decision's envelopes come in one go),
    kept as ``inf`` (an interval of no time; ``rate`` adds it as such).
    """
    out = []
    for stamp, unit, value in _THROUGHPUT.findall(text):
        out.append({"time": datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S.%f"), "unit": unit, "per_s": float(value)})
    if not out:
        raise HarnessError("throughput log has no 'envelopes/second' or 'blocks/second' report")
    return out


_SIGN_RATE = re.compile(r"^Throughput = ([0-9.Ee+-]+) sigs/sec\s*$", re.M)


def signature_rates(text: str) -> list[float]:
    """Signatures per second of each interval TestSignatures reported (100 x its signing batch)."""
    rates = [float(v) for v in _SIGN_RATE.findall(text)]
    if not rates:
        raise HarnessError("TestSignatures output has no 'Throughput = ... sigs/sec' line")
    return rates


_MICRO = re.compile(
    r"^--- Measurements after (\d+) ops \((\d+) samples\) ---\s*\n"
    r"Throughput = ([0-9.Ee+-]+) operations/sec \(Maximum observed: ([0-9.Ee+-]+) ops/sec\)\s*\n"
    r"Total latency = ([0-9.Ee+-]+) \(\+/- (\d+)\) us", re.M)


def microbench_server(text: str) -> list[dict]:
    """ThroughputLatencyServer's reports: ``{ops, interval, ops_per_s, max_ops_per_s, latency_us, latency_sd_us}``."""
    out = [{"ops": int(ops), "interval": int(n), "ops_per_s": float(tp), "max_ops_per_s": float(mx),
            "latency_us": float(lat), "latency_sd_us": float(sd)}
           for ops, n, tp, mx, lat, sd in _MICRO.findall(text)]
    if not out:
        raise HarnessError("ThroughputLatencyServer output has no '--- Measurements after' report")
    return out


_BROADCAST_DONE = re.compile(r"(\d+) / (\d+)\s+100\.00%")


def broadcast_summary(text: str) -> dict:
    """broadcast_msg's end: ``{sent, total}`` (it prints a progress bar that reaches 100.00%)."""
    done = _BROADCAST_DONE.findall(text)
    if not done or "broadcast message finish" not in text:
        raise HarnessError("broadcast_msg output does not reach 100.00% and 'broadcast message finish'")
    sent, total = map(int, done[-1])
    return {"sent": sent, "total": total}


_LATENCY = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})\tblock#(\d+)\t(\d+)\s*$", re.M)


def workload_latencies(text: str) -> list[dict]:
    """WorkloadClient's latency log: ``{time, block, latency_ms}`` per envelope it sent and got back in a block."""
    out = [{"time": datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S.%f"), "block": int(b), "latency_ms": float(ms)}
           for stamp, b, ms in _LATENCY.findall(text)]
    if not out:
        raise HarnessError("WorkloadClient latency log has no 'block#<n>\\t<ms>' line")
    return out


_TESTNODES = re.compile(r"^\[latency\] (\d+) // (Average|Median|90th p|95th p|Max)\s*= (-?\d+)"
                        r"(?: \(\+/- ([0-9.Ee+-]+|NaN)\))? us\s*$", re.M)
_TESTNODES_KEYS = {"Average": "mean_ms", "Median": "p50_ms", "90th p": "p90_ms", "95th p": "p95_ms", "Max": "max_ms"}


def testnodes_latency(text: str) -> list[dict]:
    """bft.TestNodes' latency reports: ``{frontend, report, mean_ms, sd_ms, p50_ms, p90_ms, p95_ms, max_ms}``.

    Each report is five lines (average with its standard deviation, median,
    90th and 95th percentile, maximum), printed in microseconds (the deviation
    in nanoseconds) every
    ``fabricrepro.latency.every`` envelopes of the frontend's own (patch 0101;
    100,000 unpatched), then the sample restarts. A report cut off at the end
    of the file is left out.
    """
    out: list[dict] = []
    current: dict | None = None
    for frontend, key, value, sd in _TESTNODES.findall(text):
        if key == "Average":
            # the standard deviation is printed as Storage.getDP returns it, in nanoseconds
            # (TestNodes labels the line "us" but divides only the average by 1000)
            current = {"frontend": int(frontend), "report": len(out), "mean_ms": int(value) / 1000.0,
                       "sd_ms": float(sd) / 1e6 if sd else None}
        elif current is None or current["frontend"] != int(frontend):
            continue  # a report whose first line is missing
        else:
            current[_TESTNODES_KEYS[key]] = int(value) / 1000.0
            if key == "Max":
                out.append(current)
                current = None
    if not out:
        raise HarnessError("TestNodes output has no complete '[latency] <id> // Average ... Max' report")
    return out


#: The columns of each table parsed from the logs.
COLUMNS = {
    # node 0's (the leader's) throughput reports: unit "envelopes" or "blocks", rate since the previous report
    "bft_throughput": ["node", "time_ns", "unit", "per_s"],
    # TestSignatures' reports: signatures per second per interval, with its threads and block size
    "bft_signatures": ["threads", "block_size", "per_s"],
    # WorkloadClient's latencies (Fig. 6): client (its receiver id), block, milliseconds; with the point's configured
    # envelopes per block (blocks are cut by count), which turns block numbers into envelopes delivered
    "bft_latency": ["client", "time_ns", "block", "latency_ms", "block_size"],
    # TestNodes' latency reports (Fig. 7, zeromq generation): frontend id, its region (the host), report index, ms
    "bft_frontend_latency": ["frontend", "region", "report", "mean_ms", "p50_ms", "p90_ms", "p95_ms", "max_ms"],
}


def _ns(t: datetime) -> int:
    # the logs carry the hosts' local time without a zone; only differences are used
    return int(t.replace(tzinfo=timezone.utc).timestamp() * 1e9)


def _parsed(parser, path: Path) -> list:
    try:
        return parser(path.read_text(errors="replace"))
    except HarnessError:
        return []  # nothing measured in this file


def _frame(name: str, rows: list[dict]) -> pd.DataFrame | None:
    return pd.DataFrame(rows, columns=COLUMNS[name]) if rows else None


# Each table's parser takes a point directory and reads its fetched logs (``logs/<host>/``); it
# returns None when the point has none (another system's point). A log that exists but holds no
# report is an error (the program ran and measured nothing): it is left out, so the point has no
# such metric rather than a made-up one.

def throughput_table(point_dir: Path) -> pd.DataFrame | None:
    """``bft_throughput``: only the leader's (node 0's) throughput log, where the paper measures (seed 004 line 147)."""
    return _frame("bft_throughput", [{"node": 0, "time_ns": _ns(r["time"]), "unit": r["unit"], "per_s": r["per_s"]}
                                     for f in sorted(Path(point_dir).glob("logs/*/throughput_0.log"))
                                     for r in _parsed(node_throughput, f)])


def signatures_table(point_dir: Path) -> pd.DataFrame | None:
    """``bft_signatures``: TestSignatures' rates, its threads and block size read from the output's name."""
    rows = []
    for f in sorted(Path(point_dir).glob("logs/*/bftsmart_sigbench-*t-*b.out")):
        threads, block_size = map(int, re.search(r"-(\d+)t-(\d+)b\.out$", f.name).groups())
        rows += [{"threads": threads, "block_size": block_size, "per_s": r} for r in _parsed(signature_rates, f)]
    return _frame("bft_signatures", rows)


def latency_table(point_dir: Path) -> pd.DataFrame | None:
    """``bft_latency``: every WorkloadClient's latency log, with the block size the point configured (None where
    the run recorded none: then no envelope count is made from block numbers)."""
    block_size = point_role_settings(point_dir).get("bftsmart_config_block_size")
    rows = []
    for f in sorted(Path(point_dir).glob("logs/*/latency_*.log")):
        client = f.stem.removeprefix("latency_")
        if not client.isdigit():
            continue  # latency_WORKLOAD_CLIENT_ID_IS_UNDEFINED.log: the nodes' logback opens it too, empty
        rows += [{"client": int(client), "time_ns": _ns(r["time"]), "block": r["block"], "latency_ms": r["latency_ms"],
                  "block_size": block_size} for r in _parsed(workload_latencies, f)]
    return _frame("bft_latency", rows)


def delivered_rate(latency: pd.DataFrame) -> float:
    """Envelopes per second in the blocks the slowest receiver got from a reply quorum: per receiver, the blocks
    after its first logged one (block size each: blocks are cut by count) over the time from that block's first
    logged arrival to its last block's (as Fabric's Deliver-side rate, systems/fabric-3.1/ordering_bench.py). NaN
    without a configured block size or with fewer than two blocks at some receiver."""
    if "block_size" not in latency:
        return float("nan")  # a table stored before the column was kept
    sizes = latency["block_size"].dropna().unique()
    if len(sizes) != 1 or int(sizes[0]) < 1:
        return float("nan")
    rates = []
    for _, lines in latency.groupby("client"):
        arrivals = lines.groupby("block")["time_ns"].min().sort_index()
        span = int(arrivals.iloc[-1] - arrivals.iloc[0]) if len(arrivals) >= 2 else 0
        if span <= 0:
            return float("nan")
        rates.append((int(arrivals.index[-1]) - int(arrivals.index[0])) * int(sizes[0]) / (span / 1e9))
    return float(min(rates)) if rates else float("nan")


def frontend_latency_table(point_dir: Path) -> pd.DataFrame | None:
    """``bft_frontend_latency``: every TestNodes frontend's reports, its region the host that ran it."""
    return _frame("bft_frontend_latency",
                  [{"region": f.parent.name, **{k: r[k] for k in COLUMNS["bft_frontend_latency"] if k != "region"}}
                   for f in sorted(Path(point_dir).glob("logs/*/testnodes-*.log")) for r in _parsed(testnodes_latency, f)])


#: Each table parsed from the logs, by name, with its parser.
TABLES = {"bft_throughput": throughput_table, "bft_signatures": signatures_table, "bft_latency": latency_table,
          "bft_frontend_latency": frontend_latency_table}


def point_tables(point_dir: Path) -> dict[str, pd.DataFrame]:
    """Every BFT-SMaRt table of a point from its fetched logs; none for other systems."""
    return {name: table for name, parse in TABLES.items() if (table := parse(point_dir)) is not None}


def latency_by(reports: pd.DataFrame, column: str, key: str = "frontend") -> dict:
    """Each frontend's latency ``column`` from TestNodes' reports (``bft_frontend_latency``), keyed by
    ``key`` (``frontend`` id or ``region``): the mean over its reports, the first left out when it has
    three or more (it covers the clients' start)."""
    out = {}
    for k, r in reports.sort_values("report").groupby(key):
        values = r[column].iloc[1:] if len(r) >= 3 else r[column]
        out[k] = float(values.mean())
    return out


def frontend_latency(reports: pd.DataFrame, column: str) -> float:
    """One latency of a point from TestNodes' reports (``bft_frontend_latency``): each frontend's mean
    ``column`` (``latency_by``), then the mean over frontends (each counts once). NaN without reports."""
    per_frontend = list(latency_by(reports, column).values())
    return float(sum(per_frontend) / len(per_frontend)) if per_frontend else float("nan")


#: The percentile columns of TestNodes' reports that Fig. 7 draws (median, 90th, 95th).
FIG7_PERCENTILES = ("p50_ms", "p90_ms", "p95_ms")


def frontend_percentiles(reports: pd.DataFrame) -> float:
    """Fig. 7's latencies of a point as one number: ``frontend_latency`` of each of the median, 90th and 95th
    percentile, averaged. NaN without reports."""
    values = [frontend_latency(reports, column) for column in FIG7_PERCENTILES]
    return float(sum(values) / len(values))


def rate(reports: pd.DataFrame, unit: str) -> float:
    """Mean rate of the leader's ``unit`` reports over the measured window, per second.

    Each report is THROUGHPUT_INTERVAL items over its interval, so the rate over
    several reports is their harmonic mean (items / total time). The first report
    is left out when there are three or more: its interval starts at the first
    item, during the clients' start-up.
    """
    r = reports[reports["unit"] == unit].sort_values("time_ns")["per_s"]
    if len(r) >= 3:
        r = r.iloc[1:]
    if not len(r) or (r <= 0).any() or not (1.0 / r).sum():
        return float("nan")
    return float(len(r) / (1.0 / r).sum())
