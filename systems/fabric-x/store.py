"""Fabric-X's committer store, as the point's raw tables hold it (systems/fabric-x/README.md).

``store_samples`` (fabric_x_store's sampler): the wall clock and the count of COMMITTED transactions in
``tx_status`` every quarter second during the load. ``loadgen_run`` (fabric_x_loadgen's runner): the load's
start and end and the transactions it was asked to send. ``block_txs`` (the store dumped after the load):
every transaction's block, index, ID and code (COMMITTED written as VALID).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd

from harness.plugin_api import NS_PER_S


#: the point parameter (parameters.yaml): the share of transactions the load generator signs wrongly on purpose
INVALID_SIGNATURES = "invalid_signature_fraction"
#: the point parameter: the share of transactions whose next one reads and writes the same new key
CONFLICTS = "conflict_fraction"


def planted_fraction(point_dir: Path, parameter: str = INVALID_SIGNATURES) -> float:
    """The share of spoiled transactions of one kind (``INVALID_SIGNATURES``, ``CONFLICTS``) the point asked for
    (point.json's parameters; 0 without)."""
    path = Path(point_dir) / "point.json"
    parameters = json.loads(path.read_text()).get("parameters", {}) if path.is_file() else {}
    return float(parameters.get(parameter, 0) or 0)


def measured_window(samples: pd.DataFrame, transactions: int) -> tuple[int, int, int, int]:
    """(t_start_ns, t_end_ns, committed_start, committed_end) of the load in the store's samples: from the
    last sample at which none of the load's ``transactions`` had a status yet (the count of every status at
    most the final count less ``transactions``) to the first sample holding the final count. Raises
    ValueError when the samples do not show the load start and end."""
    s = samples.sort_values("t_ns")
    if not len(s):
        raise ValueError("no sample of the store")
    final = int(s["total"].max())
    before = s[s["total"] <= final - transactions]
    if not len(before):
        raise ValueError(f"no sample before the load's first status (first sample: {int(s['total'].iloc[0])} "
                         f"transactions, final {final}, load {transactions})")
    start = before.iloc[-1]
    done = s[(s["total"] == final) & (s["t_ns"] > start["t_ns"])]
    if not len(done):
        raise ValueError("no sample after the load's first status holds the final count")
    end = done.iloc[0]
    return int(start["t_ns"]), int(end["t_ns"]), int(start["committed"]), int(end["committed"])


def committed_tps(store_samples: pd.DataFrame, loadgen_run: pd.DataFrame) -> float:
    """Transactions the committer's store records as COMMITTED per second over the measured window
    (``measured_window``): the committed count's increase over the window's length."""
    t0, t1, c0, c1 = measured_window(store_samples, int(loadgen_run["transactions"].iloc[0]))
    return (c1 - c0) / ((t1 - t0) / NS_PER_S)


# loadgen/adapters/sidecar_receiver.go:121 (v1.0.4):
#   logger.Infof("Received block #%d with %d TXs and %d statuses [%s]", ...), the statuses counted by kind
#   as "COMMITTED x 100, ABORTED_SIGNATURE_INVALID x 3".
RECEIVED = re.compile(r"Received block #(\d+) with (\d+) TXs and (\d+) statuses \[([^\]]*)\]")


def received_blocks(log: Path) -> pd.DataFrame:
    """The blocks with statuses the load generator received from the sidecar (its log): block_number,
    tx_count, statuses, committed."""
    return received_blocks_from_text(log.read_text(errors="replace"))


def received_blocks_from_text(text: str) -> pd.DataFrame:
    """``received_blocks`` of a log's text."""
    rows = []
    for line in text.splitlines():
        m = RECEIVED.search(line)
        if not m:
            continue
        kinds = dict((k.strip(), int(v)) for k, v in
                     (part.rsplit(" x ", 1) for part in m.group(4).split(",") if " x " in part))
        rows.append({"block_number": int(m.group(1)), "tx_count": int(m.group(2)), "statuses": int(m.group(3)),
                     "committed": kinds.get("COMMITTED", 0)})
    return pd.DataFrame(rows, columns=["block_number", "tx_count", "statuses", "committed"])


def loadgen_logs(point_dir: Path) -> list[Path]:
    return sorted(Path(point_dir).glob("logs/*/fabric_x_loadgen.log"))


def check(point_dir: Path, tables: dict) -> tuple[dict, list[str]]:
    """The independent check ``fabric-x-store`` (validity.yaml): the store's codes held against what the
    committer's other record told the load generator (the sidecar's blocks with their statuses, from the
    sidecar's block store) block by block, and against the load the generator was asked to send. Fails
    closed: a missing source is a problem."""
    problems: list[str] = []
    codes, run = tables.get("block_txs"), tables.get("loadgen_run")
    if codes is None or not len(codes):
        return {}, ["the committer's store gave no transaction (block_txs)"]
    if run is None or not len(run):
        return {}, ["the load generator left no record of its run (loadgen_run)"]
    asked = int(run["transactions"].iloc[0])
    logs = loadgen_logs(point_dir)
    if not logs:
        return {}, ["no load generator log (logs/<host>/fabric_x_loadgen.log)"]
    received = pd.concat([received_blocks(p) for p in logs], ignore_index=True)
    if not len(received):
        return {}, ["the load generator's log names no block it received from the sidecar"]
    store = codes.groupby("block_number").agg(tx_count=("tx_id", "size"),
                                              committed=("validation_code", lambda c: int((c == "VALID").sum())))
    got = received.drop_duplicates("block_number").set_index("block_number")
    missing = sorted(set(store.index) - set(got.index))
    extra = sorted(set(got.index) - set(store.index))
    if missing:
        problems.append(f"{len(missing)} block(s) in the store the sidecar never delivered (first: {missing[0]})")
    if extra:
        problems.append(f"{len(extra)} block(s) the sidecar delivered have no transaction in the store (first: {extra[0]})")
    both = store.index.intersection(got.index)
    differ = [b for b in both if (store.loc[b, "tx_count"], store.loc[b, "committed"])
              != (got.loc[b, "statuses"], got.loc[b, "committed"])]
    if differ:
        b = differ[0]
        problems.append(f"{len(differ)} block(s) whose codes differ between the store and the sidecar (first: block {b}: "
                        f"store {int(store.loc[b, 'committed'])} of {int(store.loc[b, 'tx_count'])} committed, sidecar "
                        f"{int(got.loc[b, 'committed'])} of {int(got.loc[b, 'statuses'])})")
    # The load's transactions are the store's rows less the set-up ones (config and namespace blocks before it).
    total, valid = len(codes), int((codes["validation_code"] == "VALID").sum())
    setup = total - asked
    if not 0 <= setup <= 2:
        problems.append(f"the store holds {total} transactions, the load generator was asked for {asked} "
                        f"(set-up transactions: {setup}, expected 1 or 2)")
    # The load's codes: every one COMMITTED when no wrong signature was asked for; else the wrongly signed share
    # ABORTED_SIGNATURE_INVALID within 5 standard deviations of the asked share (the generator draws each).
    fraction = planted_fraction(point_dir)
    aborted = int((codes["validation_code"] == "ABORTED_SIGNATURE_INVALID").sum())
    # MVCC conflicts only where the point planted pairs of transactions on one key (which ones: the control's
    # mutations, held exactly by the core, harness/validity.py mutation_check)
    conflicts = int((codes["validation_code"] == "ABORTED_MVCC_CONFLICT").sum())
    if conflicts and not planted_fraction(point_dir, CONFLICTS):
        problems.append(f"{conflicts} transaction(s) ABORTED_MVCC_CONFLICT, but no conflicting transactions were "
                        "asked for (every key is new)")
    others = total - valid - aborted - conflicts
    if others:
        problems.append(f"{others} transaction(s) of the store neither COMMITTED, ABORTED_SIGNATURE_INVALID nor "
                        "ABORTED_MVCC_CONFLICT")
    expected = fraction * asked
    spread = 5 * math.sqrt(asked * fraction * (1 - fraction))
    if fraction == 0 and aborted:
        problems.append(f"{aborted} transaction(s) ABORTED_SIGNATURE_INVALID, but no wrong signature was asked for")
    if fraction > 0 and (aborted == 0 or abs(aborted - expected) > spread):
        problems.append(f"{aborted} transaction(s) ABORTED_SIGNATURE_INVALID where about {expected:.0f} were signed "
                        f"wrongly ({fraction:g} of {asked}): the verifier did not reject what it must")
    samples = tables.get("store_samples")
    if samples is None or not len(samples):
        problems.append("no sample of the store during the load (store_samples)")
    elif (int(samples["committed"].max()), int(samples["total"].max())) != (valid, total):
        problems.append(f"the store's last sample counts {int(samples['committed'].max())} committed of "
                        f"{int(samples['total'].max())}, its dump {valid} of {total}")
    section = {"store_transactions": total, "store_committed": valid, "store_signature_invalid": aborted,
               "store_mvcc_conflict": conflicts,
               "invalid_signature_fraction": fraction, "loadgen_asked": asked,
               "setup_transactions": setup, "sidecar_blocks": int(len(got)),
               "sidecar_committed": int(got["committed"].sum()), "store_blocks": int(len(store))}
    return section, problems
