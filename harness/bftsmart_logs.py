"""Parsers of what the BFT-SMaRt ordering service's published programs print.

Each reads the text one program writes (systems/bftsmart-orderer; golden
samples in tests/harness/fixtures/bftsmart-orderer/):

* ``receiver_blocks``: the fork's ``deliver_stdout -quiet -verify`` (a receiver);
* ``node_throughput``: an ordering node's ``throughput_<id>.log`` (bft.BFTNode's
  "throughput" logger, every THROUGHPUT_INTERVAL envelopes and blocks);
* ``signature_rates``: ``bft.test.TestSignatures`` (signatures per second);
* ``microbench_server``: BFT-SMaRt's ``ThroughputLatencyServer`` (operations
  per second and latencies, printed by every replica);
* ``broadcast_summary``: the fork's ``broadcast_msg`` (envelopes acknowledged).

A parser given text without what it looks for raises ``HarnessError`` naming
the program, so a run whose program failed never yields a number.
"""

from __future__ import annotations

import re
from datetime import datetime

from .errors import HarnessError

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
    """
    out = []
    for stamp, unit, value in _THROUGHPUT.findall(text):
        if value == "Infinity":
            raise HarnessError(f"throughput log: an interval of zero milliseconds at {stamp}; raise THROUGHPUT_INTERVAL")
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
