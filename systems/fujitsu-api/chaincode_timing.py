"""Figure 2 of Miyamae et al. (seed 003, Sec. III): where a transaction's chaincode execution time goes.

The paper "analyzed the debug logging of chaincode_example02 in micro-seconds
on both the peer and the chaincode" and found "about 90% of the chaincode
execution time was consumed by message transfers between the peer and the
chaincode" (line 97). Here the same exchange is timed by our instrumentation
patch of Fabric v0.6.1 (systems/fujitsu-api/patches/0003): the peer vp0 and its
chaincode process append one line per message they send or receive to one
file, table ``cc_messages`` (side, event, type, tx_id, unix_ns; both processes
on one host, so one clock).

A transaction's exchange is strictly serial: the peer sends TRANSACTION, the
chaincode answers each of its state requests' RESPONSEs with its next request
and ends with COMPLETED. Ordered by time, its events therefore alternate send
and receive, each receive of the message the other side just sent, and its
execution time (peer's TRANSACTION sent to COMPLETED received) is exactly the
sum of three phases:

- transfer: each message's send to its receipt by the other side (gRPC,
  marshalling, the goroutine hand-over; the paper's "message transfers");
- chaincode: the chaincode's receipt of a message to its next send (the
  chaincode's own code and its shim);
- peer: the peer's receipt of a request to its answer (state access).
"""

from __future__ import annotations

import math

import pandas as pd

NS_PER_MS = 1e6
PHASES = ("transfer", "chaincode", "peer")


def transactions(messages: pd.DataFrame) -> pd.DataFrame:
    """One row per transaction the peer executed on its chaincode and saw COMPLETED.

    Columns: tx_id, round_trips (messages / 2), total_ns and ``<phase>_ns`` of
    each phase. Other exchanges (the deploy's INIT, queries, keep-alives) and
    transactions whose events do not alternate as above (cut off by the end of
    the run) are left out.
    """
    rows = []
    ordered = messages.sort_values(["tx_id", "unix_ns"], kind="stable")
    for tx_id, events in ordered.groupby("tx_id", sort=False):
        row = _phases(list(events[["side", "event", "type", "unix_ns"]].itertuples(index=False, name=None)))
        if row:
            rows.append({"tx_id": tx_id, **row})
    return pd.DataFrame(rows, columns=["tx_id", "round_trips", "total_ns", *(f"{p}_ns" for p in PHASES)])


def _phases(events: list[tuple]) -> dict | None:
    if len(events) < 4 or len(events) % 2:
        return None
    first, last = events[0], events[-1]
    if first[:3] != ("peer", "send", "TRANSACTION") or last[:3] != ("peer", "recv", "COMPLETED"):
        return None
    spent = dict.fromkeys(PHASES, 0)
    for i in range(0, len(events), 2):
        (s_side, s_event, s_type, s_ns), (r_side, r_event, r_type, r_ns) = events[i], events[i + 1]
        if s_event != "send" or r_event != "recv" or s_type != r_type or s_side == r_side:
            return None
        spent["transfer"] += r_ns - s_ns
        if i + 2 < len(events):  # the receiver works until it sends the next message
            spent[r_side] += events[i + 2][3] - r_ns
    return {"round_trips": len(events) // 4, "total_ns": last[3] - first[3],
            **{f"{p}_ns": v for p, v in spent.items()}}


def _mean(messages: pd.DataFrame, column: str, scale: float) -> float:
    txs = transactions(messages)
    return float(txs[column].mean() / scale) if len(txs) else math.nan


def exec_time_ms(messages: pd.DataFrame) -> float:
    """Mean chaincode execution time of a transaction (TRANSACTION sent to COMPLETED received), ms."""
    return _mean(messages, "total_ns", NS_PER_MS)


def message_share_pct(messages: pd.DataFrame) -> float:
    """Share of the chaincode execution time spent in message transfers, % (over all transactions)."""
    txs = transactions(messages)
    total = txs["total_ns"].sum()
    return float(100 * txs["transfer_ns"].sum() / total) if len(txs) and total > 0 else math.nan


def serial_bound_tps(messages: pd.DataFrame) -> float:
    """The rate serial chaincode executions allow: 1 s / mean execution time (the paper's 1 s / 2 ms)."""
    ms = exec_time_ms(messages)
    return 1000 / ms if ms and not math.isnan(ms) else math.nan


#: (name, unit, tables, function, description) as harness.metrics.Metric takes them.
CHAINCODE_METRICS = [
    ("chaincode_exec_time_ms", "ms", ("cc_messages",), exec_time_ms,
     "mean chaincode execution time per transaction, peer's TRANSACTION sent to COMPLETED received"),
    ("chaincode_message_share", "%", ("cc_messages",), message_share_pct,
     "share of the chaincode execution time spent in peer<->chaincode message transfers"),
    ("chaincode_serial_bound_tps", "tx/s", ("cc_messages",), serial_bound_tps,
     "1 s / mean chaincode execution time: the rate serial executions allow"),
    ("chaincode_round_trips", "1", ("cc_messages",), lambda m: _mean(m, "round_trips", 1),
     "peer<->chaincode request/answer pairs per transaction (TRANSACTION/COMPLETED included)"),
    *((f"chaincode_{p}_us", "us", ("cc_messages",), (lambda m, p=p: _mean(m, f"{p}_ns", 1e3)),
       f"mean time per transaction in the {p} phase of the chaincode execution") for p in PHASES),
]
