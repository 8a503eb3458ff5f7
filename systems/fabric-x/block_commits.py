"""Fig. 6's ``run_throughput_tps`` for Fabric-X's committer (fig6-revisit-fabric-x, issue 49).

The other columns of Fig. 6 time each block from its entry into the committer to its commit
(``harness.metrics.run_throughput_tps``). Fabric-X's committer logs neither at INFO with a block number
(the sidecar's "Block %d arrived in the relay" is a debug line, ``service/sidecar/relay.go:140``), and the
store sampler's quarter-second counts are too coarse for a smoke load that commits in half a second. The
finest commit record each block has is the load generator's line on receiving it, with its statuses, from
the sidecar (``loadgen/adapters/sidecar_receiver.go:121``), which the sidecar sends only once the whole
block is committed: the table ``fabric_x_block_commits`` holds each such block with that line's time.

``run_throughput_tps``: the load's COMMITTED transactions in the committer's own store (``block_txs``,
``tx_status``) over the time from the first load block's commit to the last one's. The first block's
entry is not logged, so, as in ``harness.metrics.commit_throughput_tps``, the first block only opens the
interval and its transactions are not counted.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from harness.plugin_api import NS_PER_S

from . import store

TABLE = "fabric_x_block_commits"

# The load generator's log format (roles/fabric_x_loadgen/templates/loadgen.yaml.j2):
#   "%{time:2006-01-02 15:04:05.000 MST} [%{module}] ..." -> "2026-12-08 00:15:02.123 UTC [...".
STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) \S+ ")


def block_commits_from_text(text: str) -> pd.DataFrame:
    """Each block the load generator received with its statuses, with the time of that line: block_number,
    tx_count, committed, committed_ns (the zone name is left out: only differences within one log are used)."""
    rows = []
    for line in text.splitlines():
        m, t = store.RECEIVED.search(line), STAMP.match(line)
        if not m or not t:
            continue
        block = store.received_blocks_from_text(line).iloc[0]
        rows.append({"block_number": int(block["block_number"]), "tx_count": int(block["statuses"]),
                     "committed": int(block["committed"]),
                     "committed_ns": int(pd.Timestamp(t.group(1)).value)})
    return pd.DataFrame(rows, columns=["block_number", "tx_count", "committed", "committed_ns"])


def block_commits_table(point_dir: Path) -> pd.DataFrame | None:
    """Table ``fabric_x_block_commits`` of a point (None without a load generator log)."""
    logs = store.loadgen_logs(point_dir)
    if not logs:
        return None
    return pd.concat([block_commits_from_text(p.read_text(errors="replace")) for p in logs], ignore_index=True)


def load_blocks(block_txs: pd.DataFrame, asked: int) -> pd.DataFrame:
    """The store's blocks that carry the load, in block order (block_number, tx_count, committed): every
    block after the set-up ones (the config and namespace transactions, which the load generator commits
    before it sends the load). Raises ValueError unless the leading blocks hold exactly the store's
    transactions beyond the ``asked`` ones."""
    per = (block_txs.drop_duplicates(["block_number", "tx_index"]).groupby("block_number")
           .agg(tx_count=("tx_index", "size"), committed=("validation_code", lambda c: int((c == "VALID").sum())))
           .sort_index().reset_index())
    setup = int(per["tx_count"].sum()) - asked
    leading = per["tx_count"].cumsum()
    if setup < 0 or (setup > 0 and setup not in set(leading)):
        raise ValueError(f"the store's {int(per['tx_count'].sum())} transactions are not {asked} of the load "
                         f"after whole set-up blocks")
    return per[leading > setup].reset_index(drop=True)


def run_throughput_tps(fabric_x_block_commits: pd.DataFrame, block_txs: pd.DataFrame,
                       loadgen_run: pd.DataFrame) -> float:
    """COMMITTED load transactions per second from the first load block's commit to the last one's (the
    first block's transactions left out: it opens the interval); NaN when a load block of the store has no
    commit line in the load generator's log, or the load spans fewer than two blocks."""
    try:
        blocks = load_blocks(block_txs, int(loadgen_run["transactions"].iloc[0]))
    except ValueError:
        return math.nan
    times = fabric_x_block_commits.drop_duplicates("block_number").set_index("block_number")["committed_ns"]
    if len(blocks) < 2 or not blocks["block_number"].isin(times.index).all():
        return math.nan
    t = times.loc[blocks["block_number"]].to_numpy()
    span_ns = int(t.max()) - int(t.min())
    return float(blocks["committed"].iloc[1:].sum() / (span_ns / NS_PER_S)) if span_ns > 0 else math.nan
