"""Javaid et al.'s validation-phase metrics (papers/validation-opt.yaml, systems/validation-opt/phase_metrics.py)
on a Fabric v2.5 / v3.1 peer, from its own per-block log lines (table ``fabric3_block_phases``, logs.py).

The v1.1 build of validation-opt times its committer with our patch 0003 (ns clocks); the v3.1 peer logs the
same stages itself, in whole milliseconds (truncated), and its lines' timestamps (ms). Under the same metric
name where the stage is the same, under a name of its own where it is not (systems/fabric-3.1/README.md,
"Javaid et al.'s idea on v3.1"):

================================  =========================================================  ==================
metric (validation-opt's name)    v3.1's source, per measured data block                      same meaning?
================================  =========================================================  ==================
``vscc_latency_ms``               ``Validated block [n] in Xms`` (TxValidator.Validate)       yes (patch 0003's
                                                                                              VSCC times Validate)
``statedb_read_mvcc_latency_ms``  ``state_validation=`` (txmgr ValidateAndPrepare: the bulk   v3.1's own name: v1.1
                                  read of committed versions, CouchDB's included, and MVCC)   splits it in
                                                                                              statedb_read + mvcc
``ledger_write_latency_ms``       ``block_and_pvtdata_commit=``                               nearly: v3.1 adds the
                                                                                              commit hash, a lock
                                                                                              wait, purge markers
``statedb_write_latency_ms``      ``state_commit=`` (txmgr Commit)                            yes
``others_latency_ms``             (commit line's time - receive line's time) - the four       yes (patch 0003: the
                                  above: history commit, private data, locks, logging          committer's time not
                                                                                              in the phases)
``block_validation_latency_ms``   commit line's time - receive line's time                    yes (received_ns to
                                                                                              committed_ns)
``commit_throughput_tps``         valid tx of the delivered codes (``block_txs``) over the    yes (the same formula
                                  time between the commit lines                                over the same blocks)
``committer_busy_ratio``          sum of the blocks' latencies over the span first receive     yes
                                  to last commit
================================  =========================================================  ==================

Not computed for v3.1 (no line times them apart): ``statedb_read_latency_ms``, ``mvcc_latency_ms``,
``history_write_latency_ms``; and the optimized pipeline's overlapped pairs ``vsc_statedb_read_latency_ms`` and
``ledger_statedb_write_latency_ms`` (v3.1 runs those stages one after another).

Fail closed: every metric here is NaN (the point gets no value for it, so no question or figure takes one from
it) unless every measured data block has all three lines (received, validated, committed, with their times),
the measured blocks are consecutive (no block's commit line missing between the first and the last), and each
has the delivered codes of exactly its logged transaction count: ``complete_blocks``.
"""

from __future__ import annotations

import math

import pandas as pd

from harness.plugin_api import Metric, commit_throughput_tps, committer_busy_ratio, mean_block_latency_ms

from . import logs

_AS_LOGGED = "(the v2.5/v3.1 peer's log: whole ms, truncated)"


def complete_blocks(phases: pd.DataFrame, block_txs: pd.DataFrame | None) -> pd.DataFrame | None:
    """The measured data blocks of ``phases`` in block order with ``valid_count`` (from ``block_txs``), or None
    where any of them lacks a line or a time, the measured blocks have a gap, or the delivered codes of a block
    are missing or disagree with its logged transaction count."""
    b = phases[(phases["tx_count"] > 0) & (phases["measured"] == 1)].sort_values("block_number")
    if b.empty or block_txs is None or block_txs.empty:
        return None
    if (b[["validate_ms", "received_at_ns", "validated_at_ns", "committed_at_ns"]] < 0).any().any():
        return None  # a line (or its time) is missing for a block: no phase time is made up
    numbers = b["block_number"].tolist()
    if numbers != list(range(numbers[0], numbers[0] + len(numbers))) or b["block_number"].duplicated().any():
        return None  # a block between the first and the last has no commit line (or two hosts' logs mixed)
    codes = block_txs.drop_duplicates(["block_number", "tx_index"])
    per_block = codes.groupby("block_number")["validation_code"].agg(
        txs="size", valid=lambda c: int((c == "VALID").sum()))
    delivered = per_block[per_block.index >= numbers[0]]
    if sorted(delivered.index) != numbers:
        return None  # a delivered block the log lacks, or a logged block nobody delivered
    joined = b.join(per_block, on="block_number", how="left")
    if joined["txs"].isna().any() or (joined["txs"] != joined["tx_count"]).any():
        return None
    return joined.assign(valid_count=joined["valid"].astype("int64")).reset_index(drop=True)


def _latency_ms(b: pd.DataFrame) -> pd.Series:
    return (b["committed_at_ns"] - b["received_at_ns"]) / 1e6


def phase_mean_ms(phases: pd.DataFrame, block_txs: pd.DataFrame, column: str) -> float:
    """Mean of one logged duration over the measured data blocks; NaN unless they are complete."""
    b = complete_blocks(phases, block_txs)
    return float(b[column].mean()) if b is not None else math.nan


def others_ms(phases: pd.DataFrame, block_txs: pd.DataFrame) -> float:
    """Mean of the block's time in the committer (receive line to commit line) less its four logged phases."""
    b = complete_blocks(phases, block_txs)
    if b is None:
        return math.nan
    phases_ms = b["validate_ms"] + b["state_validation_ms"] + b["block_and_pvtdata_commit_ms"] + b["state_commit_ms"]
    return float((_latency_ms(b) - phases_ms).mean())


def block_validation_latency_ms(phases: pd.DataFrame, block_txs: pd.DataFrame) -> float:
    """Mean time from the receive line to the commit line (the paper's block validation latency)."""
    b = complete_blocks(phases, block_txs)
    return mean_block_latency_ms(b, "received_at_ns", "committed_at_ns") if b is not None else math.nan


def commit_throughput(phases: pd.DataFrame, block_txs: pd.DataFrame) -> float:
    """Valid transactions per second between the commit lines (harness.metrics commit_throughput_tps)."""
    b = complete_blocks(phases, block_txs)
    if b is None:
        return math.nan
    return commit_throughput_tps(pd.DataFrame({"block_number": b["block_number"], "tx_count": b["tx_count"],
                                               "valid_count": b["valid_count"],
                                               "committed_ns": b["committed_at_ns"]}))


def busy_ratio(phases: pd.DataFrame, block_txs: pd.DataFrame) -> float:
    """Share of the span from the first block's receive line to the last one's commit line spent on blocks."""
    b = complete_blocks(phases, block_txs)
    return committer_busy_ratio(b, "received_at_ns", "committed_at_ns") if b is not None else math.nan


def _phase(column: str):
    return lambda fabric3_block_phases, block_txs: phase_mean_ms(fabric3_block_phases, block_txs, column)


_TABLES = (logs.TABLE, "block_txs")

#: validation-opt's metric names where v3.1 times the same stage (module docstring), and v3.1's own name where not.
METRICS = (
    Metric("commit_throughput_tps", "tx/s", _TABLES, commit_throughput,
           "valid tx per second committed by the peer, from the time between its commit lines and the delivered "
           "codes (Javaid et al.'s commit throughput on v2.5/v3.1; every measured block's lines complete)"),
    Metric("vscc_latency_ms", "ms", _TABLES, _phase("validate_ms"),
           f"mean per-block TxValidator.Validate, 'Validated block [n] in Xms' (VSCC) {_AS_LOGGED}"),
    Metric("statedb_read_mvcc_latency_ms", "ms", _TABLES, _phase("state_validation_ms"),
           "mean per-block state_validation: txmgr ValidateAndPrepare, the bulk read of the committed versions "
           f"and MVCC together (v1.1's statedb_read + mvcc) {_AS_LOGGED}"),
    Metric("ledger_write_latency_ms", "ms", _TABLES, _phase("block_and_pvtdata_commit_ms"),
           f"mean per-block block_and_pvtdata_commit: block and private data store, with the commit hash {_AS_LOGGED}"),
    Metric("statedb_write_latency_ms", "ms", _TABLES, _phase("state_commit_ms"),
           f"mean per-block state_commit: txmgr Commit to the state database {_AS_LOGGED}"),
    Metric("others_latency_ms", "ms", _TABLES, others_ms,
           "mean per-block time in the committer (receive to commit line, log timestamps) outside the four logged "
           f"phases: history commit, private data, locks {_AS_LOGGED}"),
    Metric("block_validation_latency_ms", "ms", _TABLES, block_validation_latency_ms,
           "mean per-block time from 'Received block' to 'Committed block' (log timestamps, whole ms)"),
    Metric("committer_busy_ratio", "ratio", _TABLES, busy_ratio,
           "share of the measured span the peer's committer spent on blocks (1 = saturated), from the log's lines"),
)
