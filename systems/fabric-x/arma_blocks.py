"""Arma's own ordered-block rate end to end (driver arma-loadgen, systems/fabric-x/README.md).

Arma's assembler logs each block it appends to its ledger, the ledger the sidecar pulls from:
"Appended block %d of %d requests to ledger in %v" (fabric-x-orderer v1.0.5,
``node/ledger/assembler_ledger.go:137``), at INFO, in the logger's coloured format
("\\e[34m2026-12-08 00:22:46.677 UTC 0036 INFO\\e[0m [Assembler1] \\e[34;1mfunc1\\e[0m -> Appended block 2 of
3000 requests ..."). Table ``arma_blocks``: block_number, transactions, appended_ns.

``arma_ordered_tps``: the load's transactions per second as the assembler appends them, from the first
load block's append to the last one's; the first block only opens the interval (its transactions are
not counted), as in ``block_commits.run_throughput_tps``. Which blocks are the load's is the committer
store's word (``block_commits.load_blocks``: every block after the set-up ones), so both rates count the
same blocks.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from harness.plugin_api import NS_PER_S

from . import block_commits

TABLE = "arma_blocks"
#: the assembler's log (roles/fabric_x_arma: process_log_name fabric_x_arma-<node>)
LOG = "fabric_x_arma-assembler.log"

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_APPENDED = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) \S+ [0-9a-f]+ INFO \[[^]]+\] \S+ -> "
                       r"Appended block (\d+) of (\d+) requests to ledger")


def arma_blocks_from_text(text: str) -> pd.DataFrame:
    """Each block the assembler appended: block_number, transactions, appended_ns (the zone name is left
    out: only differences within one log are used)."""
    rows = []
    for line in text.splitlines():
        m = _APPENDED.match(_ANSI.sub("", line))
        if m:
            rows.append({"block_number": int(m.group(2)), "transactions": int(m.group(3)),
                         "appended_ns": int(pd.Timestamp(m.group(1)).value)})
    return pd.DataFrame(rows, columns=["block_number", "transactions", "appended_ns"])


def arma_blocks_table(point_dir: Path) -> pd.DataFrame | None:
    """Table ``arma_blocks`` of a point (None where no Arma assembler ran: the mock orderer's points)."""
    logs = sorted(Path(point_dir).glob(f"logs/*/{LOG}"))
    if not logs:
        return None
    return pd.concat([arma_blocks_from_text(p.read_text(errors="replace")) for p in logs], ignore_index=True)


def arma_ordered_tps(arma_blocks: pd.DataFrame, block_txs: pd.DataFrame, loadgen_run: pd.DataFrame) -> float:
    """The load's transactions per second from the first load block's append to the last one's (the first
    block's left out: it opens the interval); NaN when a load block of the store was not logged as appended
    or the load spans fewer than two blocks."""
    try:
        blocks = block_commits.load_blocks(block_txs, int(loadgen_run["transactions"].iloc[0]))
    except ValueError:
        return math.nan
    appended = arma_blocks.drop_duplicates("block_number").set_index("block_number")
    if len(blocks) < 2 or not blocks["block_number"].isin(appended.index).all():
        return math.nan
    load = appended.loc[blocks["block_number"]]
    span_ns = int(load["appended_ns"].max()) - int(load["appended_ns"].min())
    return float(load["transactions"].iloc[1:].sum() / (span_ns / NS_PER_S)) if span_ns > 0 else math.nan
