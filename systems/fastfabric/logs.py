"""Parsers of what FastFabric's published orderer clients print (systems/fastfabric).

With our patches 0003 (``systems/fastfabric/patches/0003-orderer-bench-settings.patch``) and 0004
(``0004-deliver-arrival-at-recv.patch``):

* ``broadcast_rounds``: the broadcast client (``perf_broadcastclient.go``)
  prints one line per round, ``fabricrepro broadcast round R: sent N
  acknowledged M first_send_ns T0 last_ack_ns T1``; the round's throughput is
  M / (T1 - T0), the paper's "time it takes to send" the transactions
  (seed 000, line 201);
* ``discarded_blocks``: the deliver client run with ``-discardafter`` prints
  ``fabricrepro discarded block B txs K total T recv_ns A`` for every block
  it discards on arrival, A being when the gRPC stream's ``Recv`` returned the
  block (patch 0004; 0003 alone printed ``arrival_ns``, the main loop's clock
  after a buffered channel, which is refused: it did not time the transfer);
* ``point_tables``: Fig. 3's ``deliveries`` table, from the second deliver
  client (role ``fastfabric_reader``, ``logs/<host>/fastfabric_reader.log``),
  which reads the pre-created chain and discards every block: each transfer
  block's arrival, with the transactions, valid transactions and bytes that
  the committing deliver client's ``blocks.csv`` (``raw/<host>/``) recorded
  for the same block.

Golden samples of real output: ``systems/fastfabric/tests/fixtures/``. A
parser given text without what it looks for raises ``HarnessError`` naming the
program, so a run whose program failed never yields a number.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from harness.plugin_api import HarnessError

_ROUND = re.compile(r"^fabricrepro broadcast round (\d+): sent (\d+) acknowledged (\d+) "
                    r"first_send_ns (\d+) last_ack_ns (\d+)\s*$", re.M)
_DISCARDED = re.compile(r"^fabricrepro discarded block (\d+) txs (\d+) total (\d+) recv_ns (\d+)\s*$", re.M)


def broadcast_rounds(text: str) -> list[dict]:
    """Each round of the broadcast client: sent, acknowledged, the time span (ns) and ``throughput_tps``."""
    rounds = []
    for r, sent, acked, first, last in _ROUND.findall(text):
        span = int(last) - int(first)
        if span <= 0:
            raise HarnessError(f"broadcast client round {r}: last acknowledgement {last} is not after "
                               f"the first send {first}")
        rounds.append({"round": int(r), "sent": int(sent), "acknowledged": int(acked), "span_ns": span,
                       "throughput_tps": int(acked) / (span / 1e9)})
    if not rounds:
        raise HarnessError("broadcast client output has no 'fabricrepro broadcast round' line "
                           "(did it finish? is patch 0003 applied?)")
    return rounds


def discarded_blocks(text: str) -> list[dict]:
    """Blocks the deliver client discarded, in arrival order: ``{block, txs, total, arrival_ns}`` (``recv_ns``)."""
    blocks = [{"block": int(b), "txs": int(k), "total": int(t), "arrival_ns": int(a)}
              for b, k, t, a in _DISCARDED.findall(text)]
    if not blocks:
        raise HarnessError("deliver client output has no 'fabricrepro discarded block ... recv_ns' line "
                           "(was it run with -discardafter? is patch 0004 applied?)")
    for prev, cur in zip(blocks, blocks[1:]):
        if cur["block"] != prev["block"] + 1 or cur["total"] != prev["total"] + cur["txs"]:
            raise HarnessError(f"deliver client: block {cur['block']} (total {cur['total']}) does not follow "
                               f"block {prev['block']} (total {prev['total']})")
    return blocks


#: The tables ``point_tables`` makes, with their columns (harness/collect.py's ``deliveries``, renamed).
LOG_TABLES = {"deliveries": ["block_number", "arrival_ns", "tx_count", "valid_count", "size_bytes"]}


def reader_deliveries(reader_log: str, committed: pd.DataFrame) -> pd.DataFrame:
    """The reader's discarded blocks that the committer lists (the transfers), as ``deliveries`` rows.

    ``committed`` is the committer's block log (``blocks.csv`` columns). A block
    whose transaction count differs between the two is an error: they must be
    the same block of one chain.
    """
    arrivals = pd.DataFrame(discarded_blocks(reader_log)).rename(columns={"block": "block_number"})
    rows = arrivals.merge(committed[["block_number", "tx_count", "valid_count", "bytes"]], on="block_number")
    if rows.empty:
        raise HarnessError("the reader received none of the blocks the committer logged (blocks.csv)")
    differ = rows[rows["txs"] != rows["tx_count"]]
    if not differ.empty:
        b = differ.iloc[0]
        raise HarnessError(f"block {b['block_number']}: the reader got {b['txs']} transactions, "
                           f"the committer {b['tx_count']}")
    return rows.rename(columns={"bytes": "size_bytes"})[LOG_TABLES["deliveries"]].reset_index(drop=True)


def point_tables(point_dir: Path) -> dict[str, pd.DataFrame]:
    """Fig. 3's ``deliveries`` from a point's fetched reader log and block log; none for other points."""
    frames = []
    for log in sorted(Path(point_dir).glob("logs/*/fastfabric_reader.log")):
        committed = log.parents[2] / "raw" / log.parent.name / "blocks.csv"
        text = log.read_text(encoding="utf-8", errors="replace")
        if not _DISCARDED.search(text):
            continue  # the reader received nothing: its role failed the point, naming why
        if not committed.is_file():
            raise HarnessError(f"{log}: no block log of the committing deliver client ({committed})")
        df = reader_deliveries(text, pd.read_csv(committed))
        df.insert(0, "host", log.parent.name)
        frames.append(df)
    return {"deliveries": pd.concat(frames, ignore_index=True)} if frames else {}
