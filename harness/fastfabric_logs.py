"""Parsers of what FastFabric's published orderer clients print (systems/fastfabric).

With our patch 0003 (``systems/fastfabric/patches/0003-orderer-bench-settings.patch``):

* ``broadcast_rounds``: the broadcast client (``perf_broadcastclient.go``)
  prints one line per round, ``fabricrepro broadcast round R: sent N
  acknowledged M first_send_ns T0 last_ack_ns T1``; the round's throughput is
  M / (T1 - T0), the paper's "time it takes to send" the transactions
  (seed 000, line 201);
* ``discarded_blocks``: the deliver client run with ``-discardafter`` prints
  ``fabricrepro discarded block B txs K total T arrival_ns A`` for every block
  it discards on arrival.

Golden samples of real output: ``tests/harness/fixtures/fastfabric/``. A
parser given text without what it looks for raises ``HarnessError`` naming the
program, so a run whose program failed never yields a number.
"""

from __future__ import annotations

import re

from .errors import HarnessError

_ROUND = re.compile(r"^fabricrepro broadcast round (\d+): sent (\d+) acknowledged (\d+) "
                    r"first_send_ns (\d+) last_ack_ns (\d+)\s*$", re.M)
_DISCARDED = re.compile(r"^fabricrepro discarded block (\d+) txs (\d+) total (\d+) arrival_ns (\d+)\s*$", re.M)


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
    """Blocks the deliver client discarded, in arrival order: ``{block, txs, total, arrival_ns}``."""
    blocks = [{"block": int(b), "txs": int(k), "total": int(t), "arrival_ns": int(a)}
              for b, k, t, a in _DISCARDED.findall(text)]
    if not blocks:
        raise HarnessError("deliver client output has no 'fabricrepro discarded block' line "
                           "(was it run with -discardafter?)")
    for prev, cur in zip(blocks, blocks[1:]):
        if cur["block"] != prev["block"] + 1 or cur["total"] != prev["total"] + cur["txs"]:
            raise HarnessError(f"deliver client: block {cur['block']} (total {cur['total']}) does not follow "
                               f"block {prev['block']} (total {prev['total']})")
    return blocks
