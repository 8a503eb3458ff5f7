"""Per-block phase times of a Fabric v2.5 / v3.1 peer, from the peer's own log (no patch).

Both releases log, at INFO, per block of a channel (the same format strings in v2.5.16 and v3.1.5):

* ``gossip/privdata/coordinator.go:161`` (v2.5.16: 160), at the start of ``coordinator.StoreBlock``, where v1.2's
  patch 0002 takes ``received_ns``::

      Received block [5] from buffer channel=mychannel

* ``core/committer/txvalidator/v20/validator.go:262`` (and ``v14/validator.go:234``, the validator of
  channels below the V2_0 application capability), at the end of ``TxValidator.Validate``::

      [mychannel] Validated block [5] in 12ms

* ``core/ledger/kvledger/kv_ledger.go`` ``commit`` (v3.1.5 line 724, v2.5.16 line 712), after the history
  database's commit::

      [mychannel] Committed block [5] with 10 transaction(s) in 12ms (state_validation=3ms
      block_and_pvtdata_commit=5ms state_commit=2ms) commitHash=[0a1b...]

Every duration is a Go ``time.Duration`` divided by ``time.Millisecond``: whole milliseconds, truncated
(a phase of 0.9 ms logs ``0ms``); the lines' timestamps are wall-clock milliseconds. The table keeps them
as logged, in ms; its metrics say so. What each
phase covers and which v1.x phase (``blocks``: ``vscc_ns``, ``mvcc_ns``, ``block_commit_ns``,
``state_commit_ns``) it stands beside is in systems/fabric-3.1/README.md, "Per-block phase times".

``parse_peer_log(text)`` reads one log; ``phases_table(point_dir)`` every v2.5/v3.1 peer log a point fetched
(``logs/<host>/fabric3_peer.log``), the table ``fabric3_block_phases``; ``METRICS`` are the v1.x phase
metrics' names computed from it. A log without a timed commit line, or with a commit or validation line
this parser cannot read, raises ``HarnessError``: a phase time is never made up.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pandas as pd

from harness.plugin_api import HarnessError, Metric, Table, commit_throughput_tps

#: The table's name, and the log of the peer process it is parsed from (``logs/<host>/<PEER_LOG>``).
TABLE = "fabric3_block_phases"
PEER_LOG = "fabric3_peer.log"

#: The table's columns. Durations are the peer's whole milliseconds as logged; ``validate_ms`` is -1 for a
#: committed block with no "Validated block" line (the genesis block a peer joins with is committed
#: directly). ``received_at_ns`` / ``validated_at_ns`` / ``committed_at_ns``: the three lines' timestamps
#: (ms resolution, Unix ns), -1 where the block has no such line or the line's time has no zone this parser
#: knows. ``measured``: 1 for a block of the point's
#: measured window (``measured.json`` ``first_block`` on, or every block where the point has none).
COLUMNS = ("host", "channel", "block_number", "tx_count", "validate_ms", "state_validation_ms",
           "block_and_pvtdata_commit_ms", "state_commit_ms", "commit_ms", "received_at_ns", "validated_at_ns",
           "committed_at_ns", "commit_hash", "measured")
STRINGS = frozenset({"host", "channel", "commit_hash"})

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_COMMITTED = re.compile(
    r"\[(?P<channel>[^\]\s]*)\] Committed block \[(?P<block>\d+)\] with (?P<txs>\d+) transaction\(s\) "
    r"in (?P<total>\d+)ms \(state_validation=(?P<sv>\d+)ms block_and_pvtdata_commit=(?P<bpc>\d+)ms "
    r"state_commit=(?P<sc>\d+)ms\) commitHash=\[(?P<hash>[0-9a-f]*)\]")
# v2.2.2 on: "Received block [n] from buffer channel=<c>" (the channel a logger field); v2.2.0 and v2.2.1:
# "[<c>] Received block [n] from buffer" (gossip/privdata/coordinator.go, the channel in the message)
_RECEIVED = re.compile(r"(?:\[(?P<prefix>[^\]\s]+)\] )?Received block \[(?P<block>\d+)\] from buffer"
                       r"(?: channel=(?P<channel>\S+))?")
_VALIDATED = re.compile(r"\[(?P<channel>[^\]\s]*)\] Validated block \[(?P<block>\d+)\] in (?P<ms>\d+)ms")
# fabric-lib-go flogging's default format: %{time:2006-01-02 15:04:05.000 MST} %{id:04x} %{level:.4s} ...
_STAMP = re.compile(r"^(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) (?P<zone>[A-Z]{3,5}|[+-]\d{4}) ")


def _time_ns(line: str) -> int:
    """The line's timestamp as Unix ns (ms resolution), or -1 where its zone is not UTC/GMT or an offset."""
    m = _STAMP.match(line)
    if m:
        zone = m["zone"]
        if zone in ("UTC", "GMT"):
            tz = timezone.utc
        elif zone[0] in "+-":
            tz = timezone((-1 if zone[0] == "-" else 1) * timedelta(hours=int(zone[1:3]), minutes=int(zone[3:5])))
        else:
            return -1  # a zone abbreviation (CET, EST...) names no fixed offset
        t = datetime.strptime(m["time"], "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=tz)
        return int(round(t.timestamp() * 1000)) * 1_000_000
    if line.startswith("{"):  # FABRIC_LOGGING_FORMAT=json: "ts" in Unix seconds
        try:
            return int(round(float(json.loads(line)["ts"]) * 1000)) * 1_000_000
        except (ValueError, KeyError, TypeError):
            return -1
    return -1


def _json_field(line: str, name: str) -> str | None:
    if not line.startswith("{"):
        return None
    try:
        return str(json.loads(line)[name])
    except (ValueError, KeyError, TypeError):
        return None


def parse_peer_log(text: str, host: str = "") -> pd.DataFrame:
    """One row per block the peer logged as committed (columns ``COLUMNS``; ``measured`` 1), in log order.

    Raises ``HarnessError`` when the text has no timed "Committed block" line (a v1.2 peer's untimed line
    does not count), when a "Committed block" or "Validated block" line does not have the v2.5/v3.1 form, or
    when a channel's block is committed twice."""
    validated: dict[tuple[str, int], tuple[int, int]] = {}
    received: dict[tuple[str, int], int] = {}
    rows, seen = [], set()
    for number, raw in enumerate(text.splitlines(), 1):
        if "Committed block [" not in raw and "Validated block [" not in raw and "from buffer" not in raw:
            continue
        line = _ANSI.sub("", raw)
        if "Received block [" in line:
            m = _RECEIVED.search(line)
            channel = m and (m["channel"] or m["prefix"] or _json_field(line, "channel"))
            if not channel:
                raise HarnessError(f"peer log line {number}: a 'Received block' line not in v2.5/v3.1's form "
                                   f"'Received block [n] from buffer channel=<channel>' (nor v2.2.0's "
                                   f"'[<channel>] Received block [n] from buffer'): {line.strip()[:200]}")
            received[(channel, int(m["block"]))] = _time_ns(line)
            continue
        if "Committed block [" not in line and "Validated block [" not in line:
            continue
        if "Validated block [" in line:
            m = _VALIDATED.search(line)
            if not m:
                raise HarnessError(f"peer log line {number}: a 'Validated block' line not in v2.5/v3.1's form "
                                   f"'[channel] Validated block [n] in Xms': {line.strip()[:200]}")
            validated[(m["channel"], int(m["block"]))] = (int(m["ms"]), _time_ns(line))
            continue
        m = _COMMITTED.search(line)
        if not m:
            raise HarnessError(f"peer log line {number}: a 'Committed block' line without v2.5/v3.1's phase times "
                               f"(kv_ledger.go commit: 'in Xms (state_validation=... block_and_pvtdata_commit=... "
                               f"state_commit=...) commitHash=[...]'): {line.strip()[:200]}")
        key = (m["channel"], int(m["block"]))
        if key in seen:
            raise HarnessError(f"peer log line {number}: block {key[1]} of channel {key[0]} committed twice")
        seen.add(key)
        validate_ms, validated_at = validated.pop(key, (-1, -1))
        rows.append({"host": host, "channel": m["channel"], "block_number": key[1], "tx_count": int(m["txs"]),
                     "validate_ms": validate_ms, "state_validation_ms": int(m["sv"]),
                     "block_and_pvtdata_commit_ms": int(m["bpc"]), "state_commit_ms": int(m["sc"]),
                     "commit_ms": int(m["total"]), "received_at_ns": received.pop(key, -1),
                     "validated_at_ns": validated_at,
                     "committed_at_ns": _time_ns(line), "commit_hash": m["hash"], "measured": 1})
    if not rows:
        raise HarnessError("peer log has no 'Committed block [n] with k transaction(s) in Xms (state_validation=... "
                           "block_and_pvtdata_commit=... state_commit=...)' line (kv_ledger.go, INFO): the peer "
                           "committed no block, or logs above INFO for kvledger")
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    for column in COLUMNS:
        if column not in STRINGS:
            df[column] = df[column].astype("int64")
    return df


def phases_table(point_dir: Path, log_name: str = PEER_LOG) -> pd.DataFrame | None:
    """Table ``fabric3_block_phases`` of a point: every ``logs/<host>/fabric3_peer.log``, each row with its host
    and whether it is in the measured window. None where the point has no such log (another system's
    point); a log without phase lines raises ``HarnessError`` naming it. ``log_name``: another peer process's
    log the same way (catchup.py: the committer-catchup driver's second peer)."""
    point_dir = Path(point_dir)
    logs = sorted(point_dir.glob(f"logs/*/{log_name}"))
    if not logs:
        return None
    frames = []
    for log in logs:
        try:
            frames.append(parse_peer_log(log.read_text(errors="replace"), host=log.parent.name))
        except HarnessError as e:
            raise HarnessError(f"{log}: {e.args[0]}") from None
    df = pd.concat(frames, ignore_index=True)
    window = point_dir / "measured.json"
    if window.is_file():
        first = int(json.loads(window.read_text())["first_block"])
        df["measured"] = (df["block_number"] >= first).astype("int64")
    return df


def mean_latency_ms(phases: pd.DataFrame) -> float:
    """Mean per-block time from StoreBlock's start ("Received block") to the commit line (after the history
    database's commit), from the lines' wall-clock timestamps (ms); NaN without a block that has both."""
    b = _measured_data_blocks(phases)
    b = b[(b["received_at_ns"] >= 0) & (b["committed_at_ns"] >= 0)]
    return float(((b["committed_at_ns"] - b["received_at_ns"]) / 1e6).mean()) if len(b) else float("nan")


def _measured_data_blocks(phases: pd.DataFrame) -> pd.DataFrame:
    # as the core's data_blocks: blocks that carry transactions, here in the measured window
    return phases[(phases["tx_count"] > 0) & (phases["measured"] == 1)]


def mean_ms(phases: pd.DataFrame, column: str) -> float:
    """Mean of one logged duration (whole ms) over the measured data blocks that have it; NaN without any."""
    values = _measured_data_blocks(phases)[column]
    values = values[values >= 0]
    return float(values.mean()) if len(values) else float("nan")


def mean_unattributed_ms(phases: pd.DataFrame) -> float:
    """Mean of the commit's total minus its three logged phases (the history database's commit and the steps
    between the phases), each term truncated to whole ms as logged."""
    b = _measured_data_blocks(phases)
    if b.empty:
        return float("nan")
    rest = b["commit_ms"] - b["state_validation_ms"] - b["block_and_pvtdata_commit_ms"] - b["state_commit_ms"]
    return float(rest.mean())


def peer_throughput_tps(phases: pd.DataFrame, block_txs: pd.DataFrame) -> float:
    """Table I's metric on v2.5/v3.1, "the time between committed blocks on the peer": the valid transactions
    of each measured block, from the codes the peer delivered (table ``block_txs``, which the validity checks
    hold against the ledger), over the time between the peer's commit lines (``harness.metrics``
    ``commit_throughput_tps``; the log's times have ms resolution). The v3.1 peer logs each block's
    transaction count but not its valid count, hence the join. NaN where a measured block's codes are missing
    or disagree with its logged count: never a count made up."""
    b = _measured_data_blocks(phases)
    b = b[b["committed_at_ns"] >= 0]
    if b.empty or block_txs is None or block_txs.empty:
        return float("nan")
    codes = block_txs.drop_duplicates(["block_number", "tx_index"])  # one delivered copy per transaction
    per_block = codes.groupby("block_number")["validation_code"].agg(
        txs="size", valid=lambda c: int((c == "VALID").sum()))
    joined = b.join(per_block, on="block_number", how="left")
    if joined["txs"].isna().any() or (joined["txs"] != joined["tx_count"]).any():
        return float("nan")
    blocks = pd.DataFrame({"block_number": joined["block_number"], "tx_count": joined["tx_count"],
                           "valid_count": joined["valid"], "committed_ns": joined["committed_at_ns"]})
    return commit_throughput_tps(blocks)


_AS_LOGGED = "(the v2.5/v3.1 peer's log: whole ms, truncated)"

#: The v1.x phase metrics (harness/metrics.py PHASES, from table ``blocks``) and block latency computed from this
#: table, by the mapping of systems/fabric-3.1/README.md; v1.x's history_commit_ms has no counterpart (not
#: logged apart).
METRICS = (
    Metric("vscc_ms", "ms", (TABLE,), lambda fabric3_block_phases: mean_ms(fabric3_block_phases, "validate_ms"),
           f"mean per-block time of TxValidator.Validate, 'Validated block [n] in Xms' {_AS_LOGGED}"),
    Metric("mvcc_ms", "ms", (TABLE,),
           lambda fabric3_block_phases: mean_ms(fabric3_block_phases, "state_validation_ms"),
           f"mean per-block state_validation: txmgr ValidateAndPrepare (MVCC) {_AS_LOGGED}"),
    Metric("block_commit_ms", "ms", (TABLE,),
           lambda fabric3_block_phases: mean_ms(fabric3_block_phases, "block_and_pvtdata_commit_ms"),
           f"mean per-block block_and_pvtdata_commit: commit hash, block store and private data store {_AS_LOGGED}"),
    Metric("state_commit_ms", "ms", (TABLE,),
           lambda fabric3_block_phases: mean_ms(fabric3_block_phases, "state_commit_ms"),
           f"mean per-block state_commit: txmgr Commit to the state database {_AS_LOGGED}"),
    Metric("block_latency_ms", "ms", (TABLE,), mean_latency_ms,
           "mean per-block time from coordinator.StoreBlock's start ('Received block [n] from buffer') to the "
           "commit line, from the v2.5/v3.1 peer log's timestamps (wall clock, whole ms)"),
    Metric("throughput_tps", "tx/s", (TABLE, "block_txs"),
           lambda fabric3_block_phases, block_txs: peer_throughput_tps(fabric3_block_phases, block_txs),
           "valid tx per second committed by the peer, from inter-block commit times (Table I's metric): the "
           "commit lines of the v2.5/v3.1 peer log (ms) and the valid counts the peer delivered"),
    Metric("kvledger_commit_ms", "ms", (TABLE,), lambda fabric3_block_phases: mean_ms(fabric3_block_phases, "commit_ms"),
           f"mean per-block kvledger commit, state validation through the history database's commit {_AS_LOGGED}"),
    Metric("kvledger_unattributed_ms", "ms", (TABLE,), mean_unattributed_ms,
           "mean per-block kvledger commit minus its three logged phases: the history database's commit and the "
           f"steps between, with up to -1/+3 ms of truncation per block {_AS_LOGGED}"),
)

#: The table as the plugin registers it (one object, so that fabric-2.5, which inherits it, defines the same).
PHASES_TABLE = Table(TABLE, parse=phases_table)
