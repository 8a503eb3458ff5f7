"""Endorsement throughput of a Fabric v2.5 / v3.1 point, from the peer's own log (no patch): Fujitsu's idea on v3.1.

On v3.x the chaincode runs when the peer endorses (simulates) a proposal, not when it commits, so the cost of the
chaincode<->peer API (Miyamae et al.'s Fig. 4, which on v0.6.1 executed chaincode inside consensus) shows in
endorsement. The end-to-end driver's load generator endorses every transfer before its timed broadcast (16 proposals
in flight); this module measures that phase.

The peer logs one line per chaincode execution, at INFO (``core/endorser/endorser.go`` ``callChaincode``, v3.1.5
line 112; the same in v2.5.16), its logger decorated with the channel and the first 8 hex digits of the txID::

    2026-11-28 19:59:54.401 UTC 09f7 INFO [endorser] callChaincode -> finished chaincode: money-transfer duration: 2ms channel=mychannel txID=ed9c51b0

The chaincode server logs the API it runs with (``money-transfer: chaincode API per-key|batched``, its
``CHAINCODE_API``; ``logs/<host>/fabric3_chaincode.log``). The load generator logs the phase's client-side
duration (``loadgen: pre-endorsed N transfers in D``, cmd/loadgen/main.go; ``logs/<host>/loadgen.log``).

Table ``fabric3_endorsements``: one row per money-transfer/lifecycle/system chaincode execution the peer logged.
Metrics (fail closed: NaN, never a count made up):

* ``endorsement_throughput_tps``: transfers endorsed per second, between the first and the last transfer's
  execution line on the peer, counted only when every transfer of ``txs`` (the load generator's, each answered
  with status 2xx or the load generator would have stopped) has its execution line (its short txID) and every
  transfer not deliberately corrupted (table ``mutations``) is VALID in the ledger (``block_txs``: the peer's
  validation checked its endorsement signature against the policy and its read set), and the chaincode's log
  names its API. A line another transaction (an account creation) shares a transfer's short txID with must come
  before the transfer phase.
* ``client_endorsement_tps``: the same phase as the load generator timed it (its own clock, proposal signing
  included): a second, independent source.
* ``chaincode_exec_ms``: mean logged chaincode duration of the transfers (whole ms, truncated as logged).
* ``chaincode_batched``: 1 when the chaincode logged ``batched``, 0 ``per-key``; absent otherwise.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pandas as pd

from harness.plugin_api import HarnessError, Metric, Table

from .logs import PEER_LOG

TABLE = "fabric3_endorsements"
CLIENT_TABLE = "fabric3_client_endorsement"
CHAINCODE_LOG = "fabric3_chaincode.log"
LOADGEN_LOG = "loadgen.log"
TRANSFER_CHAINCODE = "money-transfer"

COLUMNS = ("host", "chaincode", "channel", "tx_prefix", "duration_ms", "finished_at_ns", "chaincode_api")
STRINGS = frozenset({"host", "chaincode", "channel", "tx_prefix", "chaincode_api"})
CLIENT_COLUMNS = ("host", "transfers", "duration_ns")

_FINISHED = re.compile(r"finished chaincode: (?P<cc>\S+) duration: (?P<ms>\d+)ms channel=(?P<channel>\S*) "
                       r"txID=(?P<tx>[0-9a-f]+)")
_API = re.compile(r"money-transfer: chaincode API (?P<api>per-key|batched)\b")
_PRE_ENDORSED = re.compile(r"loadgen: pre-endorsed (?P<n>\d+) transfers in (?P<d>\S+)")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# fabric-lib-go flogging's default format: %{time:2006-01-02 15:04:05.000 MST} ... (as logs.py reads it)
_STAMP = re.compile(r"^(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) (?P<zone>UTC|GMT|[+-]\d{4}) ")
_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)")
_UNIT_NS = {"h": 3_600e9, "m": 60e9, "s": 1e9, "ms": 1e6, "us": 1e3, "µs": 1e3, "ns": 1.0}


def line_time_ns(line: str) -> int:
    """The line's timestamp as Unix ns (ms resolution), or -1 where it has none in UTC/GMT or an offset."""
    m = _STAMP.match(line)
    if not m:
        return -1
    zone = m["zone"]
    tz = timezone.utc if zone in ("UTC", "GMT") else timezone(
        (-1 if zone[0] == "-" else 1) * timedelta(hours=int(zone[1:3]), minutes=int(zone[3:5])))
    t = datetime.strptime(m["time"], "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=tz)
    return int(round(t.timestamp() * 1000)) * 1_000_000


def parse_go_duration(text: str) -> int:
    """A Go ``time.Duration.String()`` ("222ms", "1.234s", "1m2.5s") in ns; ``HarnessError`` otherwise."""
    if text == "0s":
        return 0
    parts = _GO_DURATION.findall(text)
    if not parts or "".join(v + u for v, u in parts) != text:
        raise HarnessError(f"not a Go duration: {text!r}")
    return int(round(sum(float(v) * _UNIT_NS[u] for v, u in parts)))


def chaincode_api(text: str) -> str:
    """The API the chaincode server logged it runs with, or "" where it logged none (an older binary)."""
    apis = {m["api"] for m in _API.finditer(text)}
    if len(apis) > 1:
        raise HarnessError(f"the chaincode logged two APIs: {sorted(apis)}")
    return apis.pop() if apis else ""


def parse_peer_log(text: str, host: str = "", api: str = "") -> pd.DataFrame:
    """One row per "finished chaincode" line of a v2.5/v3.1 peer log (columns ``COLUMNS``), in log order; a
    line naming the message without the v2.5/v3.1 form raises ``HarnessError``."""
    rows = []
    for number, raw in enumerate(text.splitlines(), 1):
        if "finished chaincode: " not in raw:
            continue
        line = _ANSI.sub("", raw)
        m = _FINISHED.search(line)
        if not m:
            raise HarnessError(f"peer log line {number}: a 'finished chaincode' line not in v2.5/v3.1's form "
                               f"'finished chaincode: <name> duration: Xms channel=<c> txID=<id>': {line.strip()[:200]}")
        rows.append({"host": host, "chaincode": m["cc"], "channel": m["channel"], "tx_prefix": m["tx"],
                     "duration_ms": int(m["ms"]), "finished_at_ns": line_time_ns(line), "chaincode_api": api})
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    for column in COLUMNS:
        if column not in STRINGS:
            df[column] = df[column].astype("int64")
    return df


def endorsements_table(point_dir: Path) -> pd.DataFrame | None:
    """Table ``fabric3_endorsements`` of a point: every ``logs/<host>/fabric3_peer.log``, each row with the API
    its host's chaincode logged. None where the point has no such log (another system's point) or no load
    generator's log (a driver without transfers to endorse: nothing to time)."""
    point_dir = Path(point_dir)
    logs = sorted(point_dir.glob(f"logs/*/{PEER_LOG}"))
    if not logs or not any(point_dir.glob(f"logs/*/{LOADGEN_LOG}")):
        return None
    frames = []
    for log in logs:
        cc_log = log.parent / CHAINCODE_LOG
        api = chaincode_api(cc_log.read_text(errors="replace")) if cc_log.is_file() else ""
        try:
            frames.append(parse_peer_log(log.read_text(errors="replace"), host=log.parent.name, api=api))
        except HarnessError as e:
            raise HarnessError(f"{log}: {e.args[0]}") from None
    return pd.concat(frames, ignore_index=True)


def client_table(point_dir: Path) -> pd.DataFrame | None:
    """Table ``fabric3_client_endorsement``: the load generator's "pre-endorsed N transfers in D" of each host
    (the transfer phase's log; None where no fabric3 peer log shows this is a v2.5/v3.1 point, or no line)."""
    point_dir = Path(point_dir)
    if not any(point_dir.glob(f"logs/*/{PEER_LOG}")):
        return None
    rows = []
    for log in sorted(point_dir.glob(f"logs/*/{LOADGEN_LOG}")):
        for m in _PRE_ENDORSED.finditer(log.read_text(errors="replace")):
            rows.append({"host": log.parent.name, "transfers": int(m["n"]), "duration_ns": parse_go_duration(m["d"])})
    if not rows:
        return None
    df = pd.DataFrame(rows, columns=list(CLIENT_COLUMNS))
    df[["transfers", "duration_ns"]] = df[["transfers", "duration_ns"]].astype("int64")
    return df


def _transfer_rows(endorsements: pd.DataFrame, txs: pd.DataFrame) -> pd.DataFrame | None:
    """The execution lines of the load generator's transfers, or None unless each transfer has exactly as many
    lines inside the transfer phase as transfers share its short txID (every one endorsed once, nothing else
    matched) and the chaincode named its API.

    The peer logs 8 hex digits of each txID: at local scale (20,000 account creations beside 10,000 transfers)
    about one point in twenty has a creation sharing a transfer's (run 20261129T053042Z). The load generator
    creates every account before it endorses a transfer, so such a prefix's surplus lines must all come before
    the phase, which the other transfers' lines bound; inside it only the transfer's own count."""
    ids = txs["tx_id"].astype(str)
    if ids.empty or ids.duplicated().any():
        return None
    want = ids.str[:8].value_counts()
    cc = endorsements[endorsements["chaincode"] == TRANSFER_CHAINCODE]
    rows = cc[cc["tx_prefix"].isin(set(want.index))]
    have = rows["tx_prefix"].value_counts().reindex(want.index, fill_value=0)
    surplus = set(want.index[have > want])
    clear = rows[~rows["tx_prefix"].isin(surplus)]
    if (have < want).any() or clear.empty:
        return None
    start, end = clear["finished_at_ns"].min(), clear["finished_at_ns"].max()
    shared = rows[rows["tx_prefix"].isin(surplus)]
    inside = shared[shared["finished_at_ns"].between(start, end)]
    if (shared["finished_at_ns"] > end).any() or not inside["tx_prefix"].value_counts().reindex(
            sorted(surplus), fill_value=0).equals(want.reindex(sorted(surplus))):
        return None
    rows = pd.concat([clear, inside])
    if (rows["chaincode_api"] == "").any() or rows["chaincode_api"].nunique() != 1:
        return None
    return rows


def _ledger_valid(txs: pd.DataFrame, block_txs: pd.DataFrame, mutations: pd.DataFrame | None) -> bool:
    """Every transfer not deliberately corrupted is VALID in the ledger (one delivered copy per transaction)."""
    corrupt = set(mutations["tx_id"].astype(str)) if mutations is not None and len(mutations) else set()
    want = set(txs["tx_id"].astype(str)) - corrupt
    codes = block_txs.drop_duplicates("tx_id").set_index("tx_id")["validation_code"]
    return bool(want) and all(codes.get(t) == "VALID" for t in want)


def endorsement_throughput_tps(endorsements: pd.DataFrame, txs: pd.DataFrame, block_txs: pd.DataFrame,
                               mutations: pd.DataFrame | None = None) -> float:
    """Transfers endorsed per second on the peer: (n - 1) over the time from the first transfer's execution
    line to the last (ms timestamps); NaN unless every transfer is in the peer's log once and every one not
    corrupted on purpose is VALID in the ledger."""
    rows = _transfer_rows(endorsements, txs)
    if rows is None or not _ledger_valid(txs, block_txs, mutations) or (rows["finished_at_ns"] < 0).any():
        return float("nan")
    window_ns = int(rows["finished_at_ns"].max() - rows["finished_at_ns"].min())
    return (len(rows) - 1) / (window_ns / 1e9) if window_ns > 0 and len(rows) > 1 else float("nan")


def client_endorsement_tps(client: pd.DataFrame, txs: pd.DataFrame) -> float:
    """The load generator's transfers over its own pre-endorsement time; NaN unless it endorsed every transfer
    of ``txs`` in one logged phase."""
    if len(client) != 1 or int(client["transfers"].iloc[0]) != len(txs) or int(client["duration_ns"].iloc[0]) <= 0:
        return float("nan")
    return len(txs) / (int(client["duration_ns"].iloc[0]) / 1e9)


def chaincode_exec_ms(endorsements: pd.DataFrame, txs: pd.DataFrame) -> float:
    rows = _transfer_rows(endorsements, txs)
    return float(rows["duration_ms"].mean()) if rows is not None else float("nan")


def chaincode_batched(endorsements: pd.DataFrame, txs: pd.DataFrame) -> float:
    rows = _transfer_rows(endorsements, txs)
    return float(rows["chaincode_api"].iloc[0] == "batched") if rows is not None else float("nan")


METRICS = (
    Metric("endorsement_throughput_tps", "tx/s", (TABLE, "txs", "block_txs"),
           lambda fabric3_endorsements, txs, block_txs, mutations=None:
           endorsement_throughput_tps(fabric3_endorsements, txs, block_txs, mutations),
           "transfers endorsed (chaincode executed) per second by the v2.5/v3.1 peer during the load generator's "
           "pre-endorsement, from its 'finished chaincode' lines (ms); every transfer in the log and VALID in the "
           "ledger", optional=("mutations",)),
    Metric("client_endorsement_tps", "tx/s", (CLIENT_TABLE, "txs"),
           lambda fabric3_client_endorsement, txs: client_endorsement_tps(fabric3_client_endorsement, txs),
           "transfers pre-endorsed per second as the load generator timed the phase (its log; signing included)"),
    Metric("chaincode_exec_ms", "ms", (TABLE, "txs"),
           lambda fabric3_endorsements, txs: chaincode_exec_ms(fabric3_endorsements, txs),
           "mean chaincode execution time of a transfer as the v2.5/v3.1 peer logs it (whole ms, truncated)"),
    Metric("chaincode_batched", "1", (TABLE, "txs"),
           lambda fabric3_endorsements, txs: chaincode_batched(fabric3_endorsements, txs),
           "1 when the money-transfer chaincode ran with v3.1's batched calls, 0 per-key (its log)"),
)

#: The tables as the plugin registers them.
TABLES = (Table(TABLE, parse=endorsements_table), Table(CLIENT_TABLE, parse=client_table))
