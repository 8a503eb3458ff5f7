"""The validation-phase paper's metrics (Javaid et al., Sec. III-C and IV-A), from the peer's phase log.

Raw table ``phases`` (columns in this system's ``plugin.py``; the upstream validation-opt build's patch 0003,
``FABRICREPRO_PHASE_LOG``): one row per block the peer committed,
``block_number, tx_count, valid_count, received_ns, committed_ns`` and the
per-block latencies in ns: the six of the original validation phase
(``vscc, statedb_read, mvcc, ledger_write, statedb_write, others``), the
history write (inside ``others``, which the paper says it dominates), and
the two overlapped phases of the optimized one (``vsc_statedb_read,
ledger_statedb_write``; 0 in the original). Each metric is the mean over the
measured data blocks, in ms, under the catalogue's name (docs/catalogue.md);
``commit_throughput_tps`` is FastFabric's inter-block formula
(``harness.metrics.commit_throughput_tps``) over the same blocks, counting
only valid transactions.
"""

from __future__ import annotations

import math

import pandas as pd

from harness.plugin_api import (NS_PER_MS, commit_throughput_tps, committer_busy_ratio, data_blocks,
                                mean_block_latency_ms)

#: Catalogue metric -> the phase-log columns it sums.
LATENCIES = {
    "vscc_latency_ms": ["vscc_ns"],
    "statedb_read_latency_ms": ["statedb_read_ns"],
    "mvcc_latency_ms": ["mvcc_ns"],
    "ledger_write_latency_ms": ["ledger_write_ns"],
    "statedb_write_latency_ms": ["statedb_write_ns"],
    "others_latency_ms": ["others_ns"],
    "history_write_latency_ms": ["history_write_ns"],
    "vsc_statedb_read_latency_ms": ["vsc_statedb_read_ns"],
    "ledger_statedb_write_latency_ms": ["ledger_statedb_write_ns"],
    # What Sec. IV-B compares the optimized pairs with.
    "vscc_plus_statedb_read_latency_ms": ["vscc_ns", "statedb_read_ns"],
    "commit_phases_latency_ms": ["ledger_write_ns", "statedb_write_ns", "others_ns"],
}


def mean_latency_ms(phases: pd.DataFrame, columns: list[str]) -> float:
    """Mean over data blocks of the sum of ``columns`` (ns), in ms; NaN without blocks."""
    b = data_blocks(phases)
    return float(b[columns].sum(axis=1).mean() / NS_PER_MS) if len(b) else math.nan


#: ``(name, unit, tables, compute, description)`` of each metric; plugin.py makes them Metrics.
PHASE_METRICS = (
    ("commit_throughput_tps", "tx/s", ("phases",), commit_throughput_tps,
     "valid tx per second committed by the peer, from inter-block commit times (the paper's commit throughput)"),
    ("block_validation_latency_ms", "ms", ("phases",), mean_block_latency_ms,
     "mean per-block time from entering the committer to commit (the paper's block validation latency)"),
    ("committer_busy_ratio", "ratio", ("phases",), committer_busy_ratio,
     "share of the measured span the peer's committer spent validating and committing blocks (1 = saturated)"),
    *((name, "ms", ("phases",), (lambda phases, cols=cols: mean_latency_ms(phases, cols)),
       "mean per-block " + " + ".join(c[:-3] for c in cols) + " latency (phase log)")
      for name, cols in LATENCIES.items()),
)
