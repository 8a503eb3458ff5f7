"""Every number the harness reports, computed from raw tables by one pure function each.

Raw tables (see docs/results-format.md):

* ``blocks``: one row per block committed by the peer (or the committer benchmark):
  ``block_number, tx_count, valid_count, size_bytes, received_ns, validated_ns,
  committed_ns, vscc_ns, mvcc_ns, block_commit_ns, state_commit_ns, history_commit_ns``.
* ``deliveries``: one row per block delivered to the block watcher:
  ``block_number, arrival_ns, tx_count, valid_count, size_bytes``.
* ``txs``: one row per transaction of the load generator:
  ``tx_id, scheduled_ns, submitted_ns, acked_ns, status``.

Blocks without transactions (the genesis and other config blocks) are left out
of every block metric. Only valid transactions count as throughput. ``METRICS``
names each metric of the core with its unit, each system's plugin adds its own
(``analyze.all_metrics``), and ``analyze`` computes every metric whose tables a
point has. This module imports nothing of the harness: systems use its functions
through ``harness.plugin_api``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import pandas as pd

NS_PER_S = 1e9
NS_PER_MS = 1e6


def data_blocks(blocks: pd.DataFrame) -> pd.DataFrame:
    """Blocks that carry transactions, in block-number order."""
    return blocks[blocks["tx_count"] > 0].sort_values("block_number").reset_index(drop=True)


def commit_throughput_tps(blocks: pd.DataFrame, time_column: str = "committed_ns") -> float:
    """FastFabric's throughput: block size over the time between consecutive committed blocks.

    The paper (Sec. IV-D) measures "the time between committed blocks on the
    peer and take[s] the mean over a single run". With blocks 0..n in commit
    order this is the valid transactions of blocks 1..n over the time from the
    commit of block 0 to that of block n (equal to the mean valid block size
    over the mean inter-block time). The first block only opens the interval.
    Returns NaN with fewer than two blocks.
    """
    b = data_blocks(blocks)
    if len(b) < 2:
        return math.nan
    span_ns = b[time_column].iloc[-1] - b[time_column].iloc[0]
    if span_ns <= 0:
        return math.nan
    return float(b["valid_count"].iloc[1:].sum() / (span_ns / NS_PER_S))


def run_throughput_tps(blocks: pd.DataFrame) -> float:
    """A pre-made-block driver's whole run: valid transactions over the time from the first block's
    entry (``received_ns``) to the last block's commit.

    FastFabric's Figs. 5-8 report "validation and commitment of 100,000
    transactions for a single run" (seed 000 line 224), which the published
    driver times around the whole run. Unlike ``commit_throughput_tps`` it
    counts a pipeline's fill: a driver that validates many blocks before its
    first commit is not credited for the time before that commit.
    """
    b = data_blocks(blocks)
    if b.empty:
        return math.nan
    span_ns = b["committed_ns"].max() - b["received_ns"].min()
    return float(b["valid_count"].sum() / (span_ns / NS_PER_S)) if span_ns > 0 else math.nan


def block_latency_ms(blocks: pd.DataFrame, received: str = "received_ns", committed: str = "committed_ns"
                     ) -> pd.Series:
    """Per-block peer latency: from the block entering the committer to its commit (ms); ``received`` and
    ``committed`` name the columns where a system's table calls them otherwise."""
    b = data_blocks(blocks)
    return (b[committed] - b[received]) / NS_PER_MS


def mean_block_latency_ms(blocks: pd.DataFrame, received: str = "received_ns", committed: str = "committed_ns"
                          ) -> float:
    """Mean of ``block_latency_ms`` over the run (FastFabric Fig. 5; Javaid et al.'s block validation
    latency); NaN without blocks."""
    lat = block_latency_ms(blocks, received, committed)
    return float(lat.mean()) if len(lat) else math.nan


def committer_busy_ratio(blocks: pd.DataFrame, received: str = "received_ns", committed: str = "committed_ns"
                         ) -> float:
    """Share of the measured span the committer spent on blocks (1 = saturated: a block always waiting),
    the span running from the first data block's arrival to the last one's commit. A commit throughput
    measures the peer only when this is near 1; below it the peer waited for blocks and the throughput is
    the offered load's."""
    b = data_blocks(blocks)
    if not len(b):
        return math.nan
    span = b[committed].iloc[-1] - b[received].iloc[0]
    return float((b[committed] - b[received]).sum() / span) if span > 0 else math.nan


#: Commit pipeline phases of the per-block record (docs/interfaces.md), in pipeline order.
PHASES = ("vscc", "mvcc", "block_commit", "state_commit", "history_commit")


def mean_phase_ms(blocks: pd.DataFrame, phase: str) -> float:
    """Mean time per data block spent in one commit phase (``<phase>_ns`` column), in ms.

    NaN without blocks, or when the driver does not time that phase apart
    (it writes -1, e.g. FastFabric's peer benchmark times MVCC and the state
    and history commits as one).
    """
    b = data_blocks(blocks)
    times = b[f"{phase}_ns"][b[f"{phase}_ns"] >= 0]
    return float(times.mean() / NS_PER_MS) if len(times) else math.nan


def valid_fraction(blocks: pd.DataFrame) -> float:
    """Share of the transactions in data blocks that were valid."""
    b = data_blocks(blocks)
    total = b["tx_count"].sum()
    return float(b["valid_count"].sum() / total) if total else math.nan


def tx_commit_times(txs: pd.DataFrame, deliveries: pd.DataFrame,
                    block_txs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Match each acknowledged transaction to the block that carried it.

    With the block watcher's ``block_txs`` (each delivered transaction's ID
    and validation code) transactions are matched by ID, and only those the
    peer marked VALID count: an invalidated or never-delivered transaction has
    no commit time. Runs stored before the watcher recorded IDs have no
    ``block_txs``; for them transactions are matched by position: acknowledged
    transactions in acknowledgement order fill the delivered data blocks in
    block order, ``tx_count`` at a time (exact only for one load generator
    whose envelopes the orderer acknowledges in the order it orders them).
    Returns the acknowledged transactions with a ``commit_ns`` column (the
    block's arrival at the watcher).
    """
    acked = txs[txs["status"] == "SUCCESS"].sort_values(["acked_ns", "tx_id"]).reset_index(drop=True)
    if block_txs is not None and len(block_txs):
        valid = block_txs.loc[block_txs["validation_code"] == "VALID", ["tx_id", "block_number"]]
        arrival = deliveries[["block_number", "arrival_ns"]].drop_duplicates("block_number")
        out = acked.merge(valid, on="tx_id").merge(arrival, on="block_number")
        out = out.rename(columns={"arrival_ns": "commit_ns"}).drop(columns="block_number")
        return out.sort_values(["acked_ns", "tx_id"]).reset_index(drop=True)
    blocks = data_blocks(deliveries)
    commit = blocks["arrival_ns"].repeat(blocks["tx_count"].astype(int)).reset_index(drop=True)
    n = min(len(acked), len(commit))
    out = acked.iloc[:n].copy()
    out["commit_ns"] = commit.iloc[:n].to_numpy()
    return out


def tx_latency_ms(txs: pd.DataFrame, deliveries: pd.DataFrame, block_txs: pd.DataFrame | None = None) -> pd.Series:
    """Per-transaction end-to-end latency (ms): from its scheduled send time to its commit.

    Measured from the schedule, not the actual send, so that time spent queued
    behind a slow system is counted (no coordinated omission).
    """
    t = tx_commit_times(txs, deliveries, block_txs)
    return (t["commit_ns"] - t["scheduled_ns"]) / NS_PER_MS


def percentile(values: pd.Series, q: float) -> float:
    """The ``q``-th percentile (0-100, linear interpolation); NaN for no values."""
    return float(values.quantile(q / 100)) if len(values) else math.nan


def loadgen_lag_ms(txs: pd.DataFrame) -> pd.Series:
    """Per-transaction lag of the load generator behind its schedule (ms): submitted - scheduled."""
    return (txs["submitted_ns"] - txs["scheduled_ns"]) / NS_PER_MS


def orderer_throughput_tps(txs: pd.DataFrame) -> float:
    """Transactions the orderer acknowledged with SUCCESS per second, from the first send to the last ack."""
    ok = txs[txs["status"] == "SUCCESS"]
    if len(ok) < 1:
        return math.nan
    span_ns = ok["acked_ns"].max() - txs["submitted_ns"].min()
    return float(len(ok) / (span_ns / NS_PER_S)) if span_ns > 0 else math.nan


@dataclass(frozen=True)
class Metric:
    """A named scalar over a point's raw tables."""

    name: str
    unit: str
    tables: tuple[str, ...]
    compute: Callable[..., float]
    description: str
    #: tables passed by name when the point has them (the watcher's block_txs)
    optional: tuple[str, ...] = ()


METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("throughput_tps", "tx/s", ("blocks",), lambda blocks: commit_throughput_tps(blocks),
           "valid tx per second committed by the peer, from inter-block commit times (FastFabric)"),
    Metric("run_throughput_tps", "tx/s", ("blocks",), run_throughput_tps,
           "valid tx per second over the whole run, first block's entry to last block's commit (FastFabric Figs. 5-8)"),
    Metric("delivery_throughput_tps", "tx/s", ("deliveries",),
           lambda deliveries: commit_throughput_tps(deliveries, "arrival_ns"),
           "valid tx per second delivered to the block watcher, from inter-block arrival times"),
    Metric("block_latency_ms", "ms", ("blocks",), mean_block_latency_ms,
           "mean per-block time from entering the committer to commit"),
    Metric("valid_fraction", "1", ("blocks",), valid_fraction, "share of valid transactions"),
    Metric("tx_latency_p50_ms", "ms", ("txs", "deliveries"),
           lambda txs, deliveries, block_txs=None: percentile(tx_latency_ms(txs, deliveries, block_txs), 50),
           "median scheduled-to-commit latency of valid transactions", optional=("block_txs",)),
    Metric("tx_latency_p99_ms", "ms", ("txs", "deliveries"),
           lambda txs, deliveries, block_txs=None: percentile(tx_latency_ms(txs, deliveries, block_txs), 99),
           "99th percentile scheduled-to-commit latency of valid transactions", optional=("block_txs",)),
    Metric("loadgen_max_lag_ms", "ms", ("txs",), lambda txs: float(loadgen_lag_ms(txs).max()),
           "largest lag of the load generator behind its schedule"),
    Metric("loadgen_p99_lag_ms", "ms", ("txs",), lambda txs: percentile(loadgen_lag_ms(txs), 99),
           "99th percentile lag of the load generator behind its schedule"),
    Metric("orderer_throughput_tps", "tx/s", ("txs",), orderer_throughput_tps,
           "transactions acknowledged by the orderer per second"),
    *(Metric(f"{phase}_ms", "ms", ("blocks",), (lambda blocks, phase=phase: mean_phase_ms(blocks, phase)),
             f"mean per-block time of the {phase.replace('_', ' ')} phase")
      for phase in PHASES),
)}
