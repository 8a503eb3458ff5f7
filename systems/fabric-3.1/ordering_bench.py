"""The driver ordering-bench (playbooks/fabric3-ordering-bench.yml): Fabric's orderers alone, fed signed
envelopes (type ENDORSER_TRANSACTION, opaque data) of a fixed size by our load generator (workload envelopes) and read back block by block
from orderer0 by our block watcher (--chain-out). Sousa et al.'s Fig. 6 on v3.1's SmartBFT
(papers/bftsmart-orderer.yaml fig6-revisit-smartbft).

An orderer's blocks carry no validation codes, so the counts rest on the independent check
``ordering-chain`` (docs/validity.md, ``codes: none``), which fails closed:

* the delivered chain (table ``ordering_chain``): blocks 0..n each once and in order, every header's data
  hash the hash of its envelopes, every previous hash the header hash of the block before (block 1's the
  genesis block's), and every block after the genesis block signed by at least a quorum of the ordering
  service (SmartBFT, 4 nodes: 3; Raft: 1) as its SIGNATURES metadata counts them (their bytes are not
  verified here);
* every envelope exactly once: the transaction IDs of blocks 1..n (``block_txs``) are unique, are exactly
  the envelopes the load generator sent (``txs``), each of which the orderers acknowledged (SUCCESS), and
  each block's count agrees in ``deliveries``, ``block_txs`` and ``ordering_chain``;
* a second source the block watcher did not write: the kept block files of orderer0's ledger, which the
  playbook links apart (``raw/<host>/blocks/ordering_bench_ledger/<channel>/``: teardown keeps block files by
  base name per component, and 4 orderers on one host would mix theirs), decoded by ``bin/blockfile --txs`` (which checks their
  hash chain itself), hold the same transactions at the same places of the same blocks.

The metric ``delivered_envelopes_tps`` is envelopes per second in the blocks orderer0 delivered, over the time
between their arrivals (the first data block only opens the interval, as BFT-SMaRt's first throughput report is
left out). bftsmart-orderer computes the same at its receivers (blocks from a reply quorum), so the two services
are compared where their blocks arrive; Fig. 6's own ``orderer_throughput_tps`` (node 0's log) counts envelopes
ordered, ahead of blocks delivered when block generation lags (fig6-revisit-smartbft).
"""

from __future__ import annotations

import subprocess
from io import StringIO
from pathlib import Path

import pandas as pd

from harness.plugin_api import NS_PER_S, HarnessError, IndependentCheck, Metric, Table, point_role_settings

#: the block watcher's --chain-out (cmd/blockwatch): one row per block, in raw/<host>/ordering_chain.csv
CHAIN_COLUMNS = ("block_number", "arrival_ns", "tx_count", "data_hash_ok", "previous_hash", "header_hash", "signatures")
CHAIN_STRINGS = ("previous_hash", "header_hash")


def parse_chain(point_dir: Path) -> pd.DataFrame | None:
    """Table ``ordering_chain``: every host's ``ordering_chain.csv``, whole. Parsed rather than a CSV table of the
    core's kind so that it keeps block 0 (the genesis block its hash chain starts from) whatever the measured
    window: the metrics below take the blocks after the genesis block themselves."""
    frames = []
    for csv in sorted(Path(point_dir).glob("raw/*/ordering_chain.csv")):
        if csv.stat().st_size == 0:
            continue  # stopped before its header: nothing recorded
        df = pd.read_csv(csv, dtype={c: ("string" if c in CHAIN_STRINGS else "int64") for c in CHAIN_COLUMNS},
                         keep_default_na=False)
        if tuple(df.columns) != CHAIN_COLUMNS:
            raise HarnessError(f"{csv}: header {list(df.columns)} is not blockwatch --chain-out's {list(CHAIN_COLUMNS)}")
        df.insert(0, "host", csv.parent.name)
        frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else None


CHAIN_TABLE = Table("ordering_chain", parse=parse_chain)

#: signatures a block must carry: SmartBFT's quorum of 4 nodes (f = 1: 2f + 1), a Raft leader's one
MIN_SIGNATURES = {"BFT": 3, "etcdraft": 1}

#: where the playbook links orderer0's block files, kept by teardown as raw/<host>/blocks/ordering_bench_ledger/<channel>/
LEDGER_COMPONENT = "ordering_bench_ledger"

REPO_ROOT = Path(__file__).resolve().parents[2]


def _data_blocks(chain: pd.DataFrame) -> pd.DataFrame:
    """The blocks after the genesis block that carry envelopes, each once, in order."""
    c = chain[(chain["block_number"] >= 1) & (chain["tx_count"] > 0)].drop_duplicates("block_number")
    return c.sort_values("block_number").reset_index(drop=True)


def throughput(chain: pd.DataFrame) -> float:
    """Envelopes per second in the delivered data blocks: those of blocks 2..n over the time from the first's
    arrival to the last's (NaN with fewer than two)."""
    b = _data_blocks(chain)
    if len(b) < 2:
        return float("nan")
    span = int(b["arrival_ns"].iloc[-1] - b["arrival_ns"].iloc[0])
    return float(b["tx_count"].iloc[1:].sum() / (span / NS_PER_S)) if span > 0 else float("nan")


def blocks_per_s(chain: pd.DataFrame) -> float:
    """Data blocks per second delivered, over the same interval as ``throughput``."""
    b = _data_blocks(chain)
    if len(b) < 2:
        return float("nan")
    span = int(b["arrival_ns"].iloc[-1] - b["arrival_ns"].iloc[0])
    return float((len(b) - 1) / (span / NS_PER_S)) if span > 0 else float("nan")


METRICS = [
    Metric("delivered_envelopes_tps", "tx/s", ("ordering_chain",), throughput,
           "envelopes per second in the blocks orderer0 delivered, from the first data block's arrival to the "
           "last's (on Fabric's Deliver service; bftsmart-orderer's at its receivers)"),
    Metric("blocks_per_s", "blocks/s", ("ordering_chain",), blocks_per_s,
           "data blocks per second orderer0 delivered, over the same interval"),
]


def chain_problems(chain: pd.DataFrame | None, min_signatures: int) -> tuple[dict, list[str]]:
    """The delivered chain's own checks (numbers, data hashes, previous hashes, signature counts)."""
    if chain is None or not len(chain):
        return {}, ["the block watcher recorded no chain (ordering_chain)"]
    c = chain.sort_values("block_number").reset_index(drop=True)
    nums = c["block_number"].tolist()
    problems = []
    if nums[0] != 0:
        problems.append(f"the recorded chain starts at block {nums[0]}, not at the genesis block 0")
    dup = sorted(set(c.loc[c["block_number"].duplicated(), "block_number"]))
    if dup:
        problems.append(f"block(s) {dup[:5]} delivered more than once")
    missing = sorted(set(range(nums[0], nums[-1] + 1)) - set(nums))
    if missing:
        problems.append(f"{len(missing)} block(s) missing from the chain, first {missing[:5]}")
    bad_data = c.loc[c["data_hash_ok"] != 1, "block_number"].tolist()
    if bad_data:
        problems.append(f"block(s) {bad_data[:5]}: the header's data hash is not the hash of the envelopes")
    u = c.drop_duplicates("block_number")
    prev = dict(zip(u["block_number"], u["header_hash"]))
    broken = [int(r.block_number) for r in u.itertuples()
              if r.block_number - 1 in prev and r.previous_hash != prev[r.block_number - 1]]
    if broken:
        problems.append(f"block(s) {broken[:5]}: the previous hash is not the header hash of the block before")
    unsigned = u.loc[(u["block_number"] >= 1) & (u["signatures"] < min_signatures), "block_number"].tolist()
    if unsigned:
        problems.append(f"block(s) {unsigned[:5]} carry fewer than {min_signatures} signatures")
    data = u[u["block_number"] >= 1]
    return {"blocks": int(len(data)), "last_block": int(nums[-1]), "min_signatures_required": min_signatures,
            "min_signatures_seen": int(data["signatures"].min()) if len(data) else None}, problems


def envelope_problems(tables: dict) -> tuple[dict, list[str]]:
    """Every envelope the load generator sent in blocks 1..n exactly once, acknowledged, and nothing else;
    each block's count the same in the three tables."""
    txs, block_txs = tables.get("txs"), tables.get("block_txs")
    deliveries, chain = tables.get("deliveries"), tables.get("ordering_chain")
    problems = []
    for name, t in (("txs", txs), ("block_txs", block_txs), ("deliveries", deliveries)):
        if t is None or not len(t):
            problems.append(f"no {name} table: nothing to count the envelopes by")
    if problems:
        return {}, problems
    bt = block_txs[block_txs["block_number"] >= 1]
    ids = bt["tx_id"].astype(str)
    if (ids == "").any():
        problems.append(f"{int((ids == '').sum())} delivered transaction(s) without a transaction ID")
    dups = ids[ids.duplicated()]
    if len(dups):
        problems.append(f"{len(dups)} envelope(s) delivered more than once, e.g. {dups.iloc[0]}")
    sent = set(txs["tx_id"].astype(str))
    if len(sent) != len(txs):
        problems.append("the load generator lists a transaction ID twice")
    delivered = set(ids)
    lost, foreign = sent - delivered, delivered - sent
    if lost:
        problems.append(f"{len(lost)} sent envelope(s) never delivered, e.g. {sorted(lost)[0]}")
    if foreign:
        problems.append(f"{len(foreign)} delivered transaction(s) the load generator never sent, e.g. {sorted(foreign)[0]}")
    refused = txs[txs["status"] != "SUCCESS"]
    if len(refused):
        problems.append(f"{len(refused)} envelope(s) not acknowledged by the orderers ({refused['status'].iloc[0]})")
    per_block = bt.groupby("block_number").size()
    for name, t in (("deliveries", deliveries), ("ordering_chain", chain)):
        if t is None or not len(t):
            continue
        d = t[t["block_number"] >= 1].drop_duplicates("block_number").set_index("block_number")["tx_count"]
        joined = pd.concat([d.rename("table"), per_block.rename("block_txs")], axis=1).fillna(0)
        off = joined[joined["table"] != joined["block_txs"]]
        if len(off):
            b = off.index[0]
            problems.append(f"{name} counts {int(off.loc[b, 'table'])} transaction(s) in block {b}, "
                            f"block_txs {int(off.loc[b, 'block_txs'])}")
    return {"sent": int(len(txs)), "acknowledged": int((txs["status"] == "SUCCESS").sum()),
            "delivered": int(len(bt)), "distinct_delivered": int(len(delivered))}, problems


def ledger_problems(point_dir: Path, block_txs: pd.DataFrame | None, blockfile_bin: Path) -> tuple[dict, list[str]]:
    """The orderers' kept block files against the delivered transactions, block by block."""
    files = sorted(Path(point_dir).glob(f"raw/*/blocks/{LEDGER_COMPONENT}/*/blockfile_*"))
    if not files:
        return {}, [f"no kept block files of the orderers' ledger (raw/<host>/blocks/{LEDGER_COMPONENT}/)"]
    if not Path(blockfile_bin).is_file():
        return {}, [f"{blockfile_bin} is missing to decode the orderers' block files (invoke build)"]
    ledgers: dict = {}
    for f in files:
        ledgers.setdefault(f.parent, []).append(f)
    out, problems = {"ledgers": []}, []
    for directory, fs in sorted(ledgers.items()):
        key = "/".join(directory.relative_to(point_dir).parts[1:])
        proc = subprocess.run([str(blockfile_bin), "--txs", *map(str, fs)], capture_output=True, text=True)
        if proc.returncode != 0:
            problems.append(f"kept ledger {key}: {proc.stderr.strip() or 'bin/blockfile failed'}")
            continue
        led = pd.read_csv(StringIO(proc.stdout), dtype={"tx_id": str}, keep_default_na=False)
        out["ledgers"].append({"ledger": key, "blocks": int(led["block_number"].nunique()), "transactions": int(len(led))})
        if block_txs is None or not len(block_txs):
            problems.append("no delivered transactions (block_txs) to hold the kept ledger against")
            continue
        d = block_txs.drop_duplicates(["block_number", "tx_index"])
        last = int(d["block_number"].max())
        if int(led["block_number"].max()) < last:
            problems.append(f"kept ledger {key} ends at block {int(led['block_number'].max())}, before the "
                            f"delivered block {last}")
        led = led[led["block_number"] <= last]
        m = led.merge(d, on=["block_number", "tx_index"], how="outer", suffixes=("_ledger", "_delivered"),
                      indicator=True)
        differ = m[(m["_merge"] != "both") | (m["tx_id_ledger"].astype(str) != m["tx_id_delivered"].astype(str))]
        if len(differ):
            r = differ.iloc[0]
            problems.append(f"kept ledger {key} and the delivered blocks differ at {len(differ)} place(s), first "
                            f"block {int(r['block_number'])} transaction {int(r['tx_index'])}")
    return out, problems


def check(point_dir: Path, tables: dict, blockfile_bin: Path | None = None) -> tuple[dict, list[str]]:
    """The independent check ``ordering-chain`` (module docstring)."""
    ordering = str(point_role_settings(point_dir).get("fabric3_network_consensus", ""))
    section: dict = {"ordering": ordering}
    problems: list[str] = []
    if ordering not in MIN_SIGNATURES:
        problems.append(f"the point's ordering service ({ordering!r}) is unknown: cannot tell how many signatures "
                        f"a block needs ({', '.join(MIN_SIGNATURES)})")
    s, p = chain_problems(tables.get("ordering_chain"), MIN_SIGNATURES.get(ordering, 10**9))
    section["chain"], problems = s, problems + p
    s, p = envelope_problems(tables)
    section["envelopes"], problems = s, problems + p
    s, p = ledger_problems(point_dir, tables.get("block_txs"), blockfile_bin or REPO_ROOT / "bin" / "blockfile")
    section["kept_ledger"], problems = s, problems + p
    return section, problems


CHECKS = [IndependentCheck(
    "ordering-chain",
    "orderer0's delivered chain (hash-linked from the genesis block, data hashes, a quorum's signature count), "
    "every sent envelope in it exactly once and acknowledged, and the orderers' kept block files "
    "(bin/blockfile) holding the same transactions at the same places",
    check)]
