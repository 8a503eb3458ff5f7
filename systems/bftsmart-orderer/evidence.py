"""Independent checks of the BFT-SMaRt ordering service's counts (harness/systems.py ``IndependentCheck``).

The ordering service keeps no per-transaction validation code: it orders envelopes and validates
none (seed 004 line 112). What a point counts is the driver's own word, so each check compares it
with programs that did not write it, and fails closed: a log, a table or a setting it needs and
cannot find is a problem, never a pass.

``bft-receivers`` (driver ``bft-ordering``, Fig. 6). The metric is node 0's throughput log
(``throughput_0.log``, table ``bft_throughput``): it counts the envelopes node 0 *executed* in the
agreed order, THROUGHPUT_INTERVAL at a time, before they are cut into blocks, signed and sent.
Two witnesses that node 0 did not write:

* every other replica's ``throughput_<i>.log``: a replica counts the same decided sequence in its
  own process, so at least 2f of them must have executed what node 0 counted (one interval less:
  each log reports in whole intervals);
* every receiver (``bft.test.WorkloadClient`` with an id in RECEIVERS) gets every block through
  its ``ProxyReplyListener``, which hands out block *k* only after 2f+1 replicas sent identical
  copies of it (release-1.2 ``ProxyReplyListener.processReplyBlock``, reply quorum
  ``(n+f)/2 + 1`` in integer division, ServiceProxy.getReplyQuorum) and strictly in order (``getNext``), and logs the block number of each of its
  own envelopes (``latency_<id>.log``, table ``bft_latency``). The highest block it logged, times
  the configured block size (blocks are cut by count: the workload sends no TIMEOUT), is what it
  holds. It must cover what node 0 had counted when teardown began stopping the receivers
  (``log_bytes_at_stop.csv``), less what may legitimately be between ordering and arrival: what
  node 0 orders in ``IN_FLIGHT_S`` at its measured rate (blocks being cut, signed, sent and gathered
  from a quorum), and two blocks (the one being filled, the one on the wire). No receiver may hold
  more than a quorum of replicas executed, and no block may carry more of one receiver's envelopes
  than the block size. A point whose count at the stop is under twice that tolerance cannot be
  confirmed and fails.

  Why a time and not the signing threads: release-1.2's BFTNode hands BLOCKS_PER_THREAD blocks
  (10,000 in the shipped node.config, which bftsmart_config keeps) to one signing thread before it
  takes the next, so in a run of a few thousand blocks one thread signs and sends them all, and the
  queue in front of it is not bounded by the thread count. A backlog longer than ``IN_FLIGHT_S`` is
  ordering outrunning block generation: node 0's count then is not blocks the service delivered.

Where an experiment counts at the receivers (point parameter ``counted_at: receivers``, metric
``delivered_envelopes_tps``: fig6-revisit-smartbft, which compares with a Deliver-side count), a receiver
lagging node 0 is what is measured, not a miscount: the check then keeps every bound on what the receivers
hold (a quorum of replicas executed it, no block over its size, node 0 backed by 2f replicas) and requires
``MIN_RECEIVED_BLOCKS`` blocks at each receiver, and drops the two comparisons with node 0's count at the stop.

The receivers verify no node signature (WorkloadClient compares the copies; only the fork's
``deliver_stdout -verify``, not a Fig. 6 driver, checks the 2f+1 signatures): the check cannot see
signatures, only that 2f+1 replicas sent the same block.

``bft-frontends`` (driver ``bft-geo``, Fig. 7). The metric is each ``bft.TestNodes`` frontend's
latency reports (``testnodes-<id>.log``, table ``bft_frontend_latency``), each over
``fabricrepro.latency.every`` of its own envelopes (patch 0101). Every frontend receives every block
from a reply quorum of replicas, in order, and all frontends send at the same configured pace, so
each is a witness for the others: every frontend the point started must have reported, and their
sample counts must agree within one report plus what one frontend sends in ``IN_FLIGHT_S`` (start
and stop are not simultaneous across hosts). The replicas' own counts (``Throughput = ...
envelopes/sec``, every 10,000 executed envelopes, a constant of the zeromq ``BFTNode``) bound the
frontends' from above: the frontends cannot have got back more envelopes than a reply quorum of
replicas executed. At smoke scale no replica reaches 10,000, so that bound is loose.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd

from harness.plugin_api import (HarnessError, IndependentCheck, log_bytes_at_stop, point_role_settings,
                                started_components)

from . import logs

#: Seconds an envelope node 0 counted may still be between its ordering and a receiver's arrival when
#: teardown stops the receivers (cut, signed, sent, a reply quorum gathered). Our choice: on a LAN that
#: takes milliseconds; a 100-envelope smoke point on 2 shared cores at load 11 was about 1 s behind
#: (receiver at 4,500 of node 0's 5,000 envelopes at 489/s); a backlog longer than this is ordering
#: outrunning block generation.
IN_FLIGHT_S = 2.0
#: Blocks a receiver must have logged for its delivered count (``counted_at: receivers``) to be a count: our choice,
#: a rate needs an interval and a few blocks past the first.
MIN_RECEIVED_BLOCKS = 3
#: Envelopes between two "Throughput = ... envelopes/sec" lines of the zeromq generation's bft.BFTNode
#: (BFTNode.java ``private int interval = 10000``; not configurable).
ZEROMQ_NODE_INTERVAL = 10000

_ZEROMQ_THROUGHPUT = re.compile(r"^Throughput = ([0-9.Ee+-]+|Infinity) envelopes/sec\s*$", re.M)




def _int_setting(values: dict, name: str, problems: list[str]) -> int | None:
    try:
        return int(values[name])
    except (KeyError, TypeError, ValueError):
        problems.append(f"the point records no usable {name} (logs/ansible-run.vars.json, the run's metadata.json "
                        "role_settings)")
        return None


def started(point_dir: Path, pattern: str) -> dict[str, str]:
    """The components the process role started whose name matches ``pattern`` (``raw/<host>/affinity_<name>.csv``):
    {name: host}."""
    return {name: min(hosts) for name, hosts in started_components(point_dir, pattern).items()}


def _instance_ids(components: dict[str, str], prefix: str) -> dict[int, str]:
    """{id: host} of instances named ``<prefix><id>_<instance dir>``."""
    out = {}
    for name, host in components.items():
        m = re.match(re.escape(prefix) + r"(\d+)(?:_|$)", name)
        if m:
            out[int(m.group(1))] = host
    return out


def _component_logs(point_dir: Path, components: dict[str, str], prefix: str, stem: str) -> list[str]:
    """Each started instance's own log (``logs/<host>/<stem>.log``) must be there and non-empty. (The
    process role records an instance as ``<log name>_<instance dir>``, and validity.yaml's ``logs``
    takes role names matched exactly, so the check itself asks for them.)"""
    problems = []
    for i, host in sorted(_instance_ids(components, prefix).items()):
        log = Path(point_dir) / "logs" / host / f"{stem.format(i)}.log"
        if not log.is_file() or not log.stat().st_size:
            problems.append(f"the log of {stem.format(i)} on host {host} is missing or empty (logs/{host}/{log.name})")
    return problems


def _reports(text: str) -> int:
    """How many ``envelopes/second`` reports a release-1.2 node's throughput log holds."""
    try:
        return sum(1 for r in logs.node_throughput(text) if r["unit"] == "envelopes")
    except HarnessError:
        return 0  # no report yet: fewer than one interval executed


def _quorum(n: int) -> int:
    """BFT-SMaRt's reply quorum for n replicas, f = (n-1)/3 (ServiceProxy.getReplyQuorum): 2f+1 for n = 3f+1."""
    f = (n - 1) // 3
    return (n + f) // 2 + 1


# ----------------------------------------------------------------------------- bft-ordering (Fig. 6)

def counted_at(point_dir: Path) -> str:
    """Where the point's experiment counts (parameter ``counted_at``, point.json): ``node0`` (default, Fig. 6's
    metric: node 0's throughput log) or ``receivers`` (the blocks the receivers got, ``delivered_envelopes_tps``)."""
    path = Path(point_dir) / "point.json"
    parameters = (json.loads(path.read_text(encoding="utf-8")).get("parameters") or {}) if path.is_file() else {}
    return str(parameters.get("counted_at") or "node0")


def receivers_check(point_dir: Path, tables: dict[str, pd.DataFrame]) -> tuple[dict, list[str]]:
    """Node 0's envelope count against the other replicas' counts and every receiver's blocks (module doc); where
    the point counts at the receivers, their blocks against what a quorum of replicas executed."""
    point_dir = Path(point_dir)
    problems: list[str] = []
    at_receivers = counted_at(point_dir) == "receivers"
    values = point_role_settings(point_dir)
    interval = _int_setting(values, "bftsmart_config_throughput_interval", problems)
    block_size = _int_setting(values, "bftsmart_config_block_size", problems)

    nodes = _instance_ids(started(point_dir, "bftsmart_node-*"), "bftsmart_node-")
    receivers = _instance_ids(started(point_dir, "bftsmart_workload-*"), "bftsmart_workload-")
    if 0 not in nodes:
        problems.append("no record that node 0 was started (raw/<host>/affinity_bftsmart_node-0_*.csv)")
    if not receivers:
        problems.append("no receiver (bft.test.WorkloadClient) was started (raw/<host>/affinity_bftsmart_workload-*.csv)")
    problems += _component_logs(point_dir, started(point_dir, "bftsmart_node-*"), "bftsmart_node-", "bftsmart_node-{}")
    problems += _component_logs(point_dir, started(point_dir, "bftsmart_workload-*"), "bftsmart_workload-",
                                "bftsmart_workload-{}")
    leader = tables.get("bft_throughput")
    leader = leader[leader["unit"] == "envelopes"] if leader is not None and len(leader) else None
    if leader is None or not len(leader):
        problems.append("node 0 reported no envelopes (table bft_throughput, logs/<host>/throughput_0.log)")
    if problems:
        return {"nodes": sorted(nodes), "receivers": sorted(receivers)}, problems

    leader_envelopes = len(leader) * interval
    rate = logs.rate(leader, "envelopes")
    tolerance = math.ceil((rate if math.isfinite(rate) else 0.0) * IN_FLIGHT_S) + 2 * block_size

    # Node 0's count when teardown began stopping (the receivers stop before the nodes).
    host0 = nodes[0]
    log0 = point_dir / "logs" / host0 / "throughput_0.log"
    at_stop = log_bytes_at_stop(point_dir, host0)
    leader_at_stop = None
    if not log0.is_file() or not log0.stat().st_size:
        problems.append(f"node 0's throughput log logs/{host0}/throughput_0.log is missing or empty")
    elif "throughput_0.log" not in at_stop:
        problems.append(f"raw/{host0}/log_bytes_at_stop.csv does not say how far throughput_0.log had got when "
                        "teardown began: what node 0 counted before the receivers stopped is unknown")
    else:
        leader_at_stop = _reports(log0.read_bytes()[:at_stop["throughput_0.log"]].decode("utf-8", "replace")) * interval

    # The other replicas' own counts (whole logs: each stops after node 0).
    replica_envelopes: dict[int, int] = {}
    for node, host in sorted(nodes.items()):
        path = point_dir / "logs" / host / f"throughput_{node}.log"
        if not path.is_file():
            problems.append(f"node {node}'s throughput log logs/{host}/throughput_{node}.log is missing")
            continue
        replica_envelopes[node] = _reports(path.read_text(errors="replace")) * interval
    n = len(nodes)
    f = (n - 1) // 3
    others_agreeing = [i for i, e in replica_envelopes.items() if i != 0 and e >= leader_envelopes - interval]
    if len(others_agreeing) < 2 * f:
        problems.append(f"only {len(others_agreeing)} of the {n - 1} other replicas executed as many envelopes as node 0 "
                        f"counted ({leader_envelopes:,} less one report of {interval:,}); a quorum needs 2f = {2 * f}: "
                        + ", ".join(f"node {i} {e:,}" for i, e in sorted(replica_envelopes.items())))
    ranked = sorted(replica_envelopes.values(), reverse=True)
    quorum = _quorum(n)
    quorum_executed = ranked[quorum - 1] + interval if len(ranked) >= quorum else None

    latency = tables.get("bft_latency")
    per_receiver: dict[str, dict] = {}
    for rid, host in sorted(receivers.items()):
        lines = latency[latency["client"] == rid] if latency is not None and len(latency) else None
        if lines is None or not len(lines):
            problems.append(f"receiver {rid} logged no block (logs/{host}/latency_{rid}.log missing, empty or "
                            "without a 'block#<n>' line)")
            continue
        last = int(lines["block"].max())
        held = last * block_size
        fullest = lines.groupby("block").size()
        per_receiver[str(rid)] = {"host": host, "last_block": last, "envelopes": held,
                                  "own_envelopes_logged": int(len(lines)), "most_own_in_a_block": int(fullest.max())}
        if len(fullest) < MIN_RECEIVED_BLOCKS and at_receivers:
            problems.append(f"receiver {rid} logged {len(fullest)} blocks, fewer than "
                            f"{MIN_RECEIVED_BLOCKS}: too few to count what it was delivered")
        if leader_at_stop is not None and held < leader_at_stop - tolerance and not at_receivers:
            problems.append(f"receiver {rid} is short of blocks: it got blocks up to #{last} ({held:,} envelopes of "
                            f"{block_size}), node 0 had counted {leader_at_stop:,} when teardown began stopping the "
                            f"receivers (tolerance {tolerance:,}: blocks in flight)")
        if quorum_executed is not None and held > quorum_executed + block_size:
            problems.append(f"receiver {rid} holds blocks up to #{last} ({held:,} envelopes at {block_size} a block), "
                            f"more than a quorum of {quorum} replicas executed (at most {quorum_executed:,}): blocks "
                            "smaller than the configured size, or counts lost")
        over = fullest[fullest > block_size]
        if len(over):
            problems.append(f"receiver {rid} logged more of its own envelopes in a block than the block size "
                            f"{block_size}: block #{int(over.index[0])} has {int(over.iloc[0])}")

    if leader_at_stop is not None and not at_receivers:
        if leader_envelopes - leader_at_stop > tolerance:
            problems.append(f"node 0 counted {leader_envelopes - leader_at_stop:,} envelopes after teardown began "
                            f"stopping the receivers, more than can be in flight ({tolerance:,}): no receiver can "
                            "confirm them")
        if tolerance * 2 > leader_at_stop:
            problems.append(f"node 0 had counted {leader_at_stop:,} envelopes when the stop began, less than twice "
                            f"what may be in flight ({tolerance:,}): too few for the receivers to confirm")

    section = {"counted_at": "receivers" if at_receivers else "node0",
               "leader_envelopes": leader_envelopes, "leader_envelopes_at_stop": leader_at_stop,
               "leader_rate_per_s": round(rate, 3) if math.isfinite(rate) else None,
               "tolerance_envelopes": tolerance,
               "tolerance_why": f"node 0's rate x {IN_FLIGHT_S:g} s + 2 blocks of {block_size}",
               "throughput_interval": interval, "block_size": block_size,
               "replica_envelopes": {str(k): v for k, v in sorted(replica_envelopes.items())},
               "reply_quorum": quorum, "quorum_executed_at_most": quorum_executed,
               "receivers": per_receiver}
    return section, problems


# ----------------------------------------------------------------------------- bft-geo (Fig. 7)

def zeromq_node_reports(text: str) -> int:
    """How many ``Throughput = ... envelopes/sec`` lines a zeromq bft.BFTNode printed (one per 10,000 envelopes)."""
    return len(_ZEROMQ_THROUGHPUT.findall(text))


def frontends_check(point_dir: Path, tables: dict[str, pd.DataFrame]) -> tuple[dict, list[str]]:
    """Every TestNodes frontend reported, their sample counts agree, and the replicas executed at least as many."""
    point_dir = Path(point_dir)
    problems: list[str] = []
    values = point_role_settings(point_dir)
    every = _int_setting(values, "bftsmart_geo_latency_every", problems)
    clients = _int_setting(values, "bftsmart_geo_clients", problems)
    delay_ms = _int_setting(values, "bftsmart_geo_client_delay_ms", problems)
    frontends = _instance_ids(started(point_dir, "testnodes-*"), "testnodes-")
    nodes = _instance_ids(started(point_dir, "node-*"), "node-")
    if not frontends:
        problems.append("no frontend (bft.TestNodes) was started (raw/<host>/affinity_testnodes-*.csv)")
    if not nodes:
        problems.append("no replica (bft.BFTNode) was started (raw/<host>/affinity_node-*.csv)")
    if problems:
        return {"frontends": sorted(frontends), "nodes": sorted(nodes)}, problems

    reports = tables.get("bft_frontend_latency")
    samples: dict[int, int] = {}
    per_frontend: dict[str, dict] = {}
    for fid, host in sorted(frontends.items()):
        log = point_dir / "logs" / host / f"testnodes-{fid}.log"
        mine = reports[reports["frontend"] == fid] if reports is not None and len(reports) else None
        if not log.is_file() or not log.stat().st_size:
            problems.append(f"frontend {fid}'s log logs/{host}/testnodes-{fid}.log is missing or empty")
        if mine is None or not len(mine):
            problems.append(f"frontend {fid} ({host}) made no complete latency report (table bft_frontend_latency)")
            continue
        samples[fid] = len(mine) * every
        per_frontend[str(fid)] = {"host": host, "reports": int(len(mine)), "envelopes": samples[fid]}

    sends_per_s = clients * 1000.0 / delay_ms if delay_ms > 0 else float("inf")
    spread_allowed = every + math.ceil(sends_per_s * IN_FLIGHT_S) if math.isfinite(sends_per_s) else None
    if len(samples) >= 2 and spread_allowed is not None:
        low, high = min(samples, key=samples.get), max(samples, key=samples.get)
        if samples[high] - samples[low] > spread_allowed:
            problems.append(f"frontend {low} got back {samples[low]:,} of its envelopes, frontend {high} "
                            f"{samples[high]:,}: more apart than one report and {IN_FLIGHT_S:g} s of sending "
                            f"({spread_allowed:,}); every frontend receives every block at the same pace")

    executed: dict[int, int] = {}
    for node, host in sorted(nodes.items()):
        log = point_dir / "logs" / host / f"node-{node}.log"
        if not log.is_file() or not log.stat().st_size:
            problems.append(f"replica {node}'s log logs/{host}/node-{node}.log is missing or empty")
            continue
        executed[node] = zeromq_node_reports(log.read_text(errors="replace")) * ZEROMQ_NODE_INTERVAL
    quorum = _quorum(len(nodes))
    ranked = sorted(executed.values(), reverse=True)
    bound = ranked[quorum - 1] + ZEROMQ_NODE_INTERVAL if len(ranked) >= quorum else None
    if bound is None and not problems:
        problems.append(f"fewer replica logs ({len(ranked)}) than a reply quorum ({quorum})")
    total = sum(samples.values())
    if bound is not None and total > bound:
        problems.append(f"the frontends got back {total:,} envelopes, more than a reply quorum of {quorum} replicas "
                        f"executed (at most {bound:,})")
    section = {"latency_every": every, "frontends": per_frontend, "frontend_envelopes": total,
               "frontend_spread_allowed": spread_allowed,
               "replica_envelopes_reported": {str(k): v for k, v in sorted(executed.items())},
               "reply_quorum": quorum, "quorum_executed_at_most": bound}
    return section, problems


CHECKS = [
    IndependentCheck(
        "bft-receivers",
        "node 0's envelope count (throughput_0.log) against the envelopes 2f other replicas counted "
        "(throughput_<i>.log) and the blocks every receiver got from a 2f+1 reply quorum (latency_<id>.log)",
        receivers_check),
    IndependentCheck(
        "bft-frontends",
        "each TestNodes frontend's latency samples (testnodes-<id>.log) against the other frontends', which receive "
        "the same blocks at the same pace, and against the envelopes a reply quorum of replicas executed (node-<id>.log)",
        frontends_check),
]
