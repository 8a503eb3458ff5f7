"""Turn the raw files fetched from the hosts into the run directory's tables.

After a point, the teardown playbook has fetched every host's raw CSVs into
``points/<point>/raw/<host>/`` and its logs into ``points/<point>/logs/<host>/``.
This module converts the CSVs (docs/interfaces.md) into parquet tables with
units in every column name and the schema version in the parquet metadata:

    blocks.csv      (peer block log, committer benchmark)  -> blocks.parquet
    deliveries.csv  (block watcher)                        -> deliveries.parquet
    txs.csv         (load generator)                       -> txs.parquet
    block_txs.csv   (block watcher; FastFabric's peer bench)   -> block_txs.parquet
    mutations.csv   (drivers corrupting transactions on purpose) -> mutations.parquet
    cc_messages.csv (Fabric v0.6.1 peer and chaincode)     -> cc_messages.parquet

Each table gains a ``host`` column; rows of several hosts are concatenated.
The tables keep every block; an end-to-end point also has ``measured.json``
(written by its playbook) whose ``first_block`` is the first block of the
measured workload, and ``load_measured`` drops the blocks before it (the
chaincode deploy and account creations of loadgen's setup phase).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from . import SCHEMA_VERSION, bftsmart_logs, fastfabric_logs
from .errors import HarnessError

_BLOCK_TIMES = ["received_ns", "validated_ns", "committed_ns", "vscc_ns", "mvcc_ns",
                "block_commit_ns", "state_commit_ns", "history_commit_ns"]

#: For each table: the CSV columns in order (as docs/interfaces.md fixes them)
#: and their renames to carry units.
TABLES = {
    "blocks": {"columns": ["block_number", "tx_count", "valid_count", "bytes"] + _BLOCK_TIMES,
               "rename": {"bytes": "size_bytes"}},
    "deliveries": {"columns": ["block_number", "arrival_ns", "tx_count", "valid_count", "bytes"],
                   "rename": {"bytes": "size_bytes"}},
    "txs": {"columns": ["tx_id", "scheduled_ns", "submitted_ns", "acked_ns", "status"], "rename": {}},
    # block watcher --txs-out: each delivered transaction's ID and validation code
    "block_txs": {"columns": ["block_number", "tx_index", "tx_id", "validation_code"], "rename": {}},
    # the validation-opt peer's phase log (systems/validation-opt/patches/0003; metrics: harness/phase_metrics.py)
    "phases": {"columns": ["block_number", "tx_count", "valid_count", "received_ns", "committed_ns", "vscc_ns",
                           "statedb_read_ns", "mvcc_ns", "ledger_write_ns", "statedb_write_ns", "history_write_ns",
                           "others_ns", "vsc_statedb_read_ns", "ledger_statedb_write_ns"], "rename": {}},
    # transactions a driver corrupted on purpose (mutation tests; harness/validity.py)
    "mutations": {"columns": ["block_number", "tx_index", "tx_id", "mutation"], "rename": {}},
    # Fabric v0.6.1's peer<->chaincode messages (systems/fujitsu-api/patches/0003; harness/chaincode_timing.py)
    "cc_messages": {"columns": ["side", "event", "type", "tx_id", "unix_ns"], "rename": {}},
}
_STRINGS = {"tx_id", "status", "validation_code", "side", "event", "type", "mutation"}
META_VERSION = b"fabricrepro.schema_version"
META_TABLE = b"fabricrepro.table"


def read_csv(path: Path, table: str) -> pd.DataFrame:
    """Read one raw CSV of ``table``, checking its header against the contract."""
    spec = TABLES[table]
    df = pd.read_csv(path, dtype={c: ("string" if c in _STRINGS else "int64") for c in spec["columns"]},
                     keep_default_na=False)
    if list(df.columns) != spec["columns"]:
        raise HarnessError(f"{path}: header {list(df.columns)} differs from the contract {spec['columns']} "
                           "(docs/interfaces.md)")
    return df.rename(columns=spec["rename"])


def write_table(df: pd.DataFrame, path: Path, table: str) -> None:
    """Write ``df`` as parquet with the schema version and table name in its metadata."""
    arrow = pa.Table.from_pandas(df, preserve_index=False)
    metadata = dict(arrow.schema.metadata or {})
    metadata.update({META_VERSION: str(SCHEMA_VERSION).encode(), META_TABLE: table.encode()})
    pq.write_table(arrow.replace_schema_metadata(metadata), path)


def read_table(path: Path) -> pd.DataFrame:
    """Read a stored table, rejecting a schema version this harness does not know."""
    metadata = pq.read_schema(path).metadata or {}
    version = metadata.get(META_VERSION, b"").decode()
    if version != str(SCHEMA_VERSION):
        raise HarnessError(f"{path}: schema_version {version or 'missing'!r} is not supported "
                           f"(this harness reads {SCHEMA_VERSION})")
    return pq.read_table(path).to_pandas()


def convert_point(point_dir: Path) -> list[str]:
    """Convert the raw CSVs under ``point_dir/raw/<host>/`` into ``point_dir/<table>.parquet``.

    Returns the names of the tables written.
    """
    point_dir = Path(point_dir)
    written = []
    for table in TABLES:
        frames = []
        for csv in sorted(point_dir.glob(f"raw/*/{table}.csv")):
            if csv.stat().st_size == 0:
                continue  # its writer was stopped before the header: nothing was recorded
            df = read_csv(csv, table)
            df.insert(0, "host", csv.parent.name)
            frames.append(df)
        if frames:
            write_table(pd.concat(frames, ignore_index=True), point_dir / f"{table}.parquet", table)
            written.append(table)
    # Tables parsed from programs' own logs (the BFT-SMaRt ordering service's, harness/bftsmart_logs.py).
    # Fig. 3's deliveries from FastFabric's second deliver client (harness/fastfabric_logs.py).
    for table, df in {**bftsmart_logs.point_tables(point_dir), **fastfabric_logs.point_tables(point_dir)}.items():
        write_table(df, point_dir / f"{table}.parquet", table)
        written.append(table)
    return written


def load_point(point_dir: Path) -> dict[str, pd.DataFrame]:
    """Every stored table of a point, by name."""
    return {t: read_table(Path(point_dir) / f"{t}.parquet") for t in [*TABLES, *bftsmart_logs.LOG_TABLES]
            if (Path(point_dir) / f"{t}.parquet").exists()}


#: Tables with a ``block_number`` column, cut to the measured window.
BLOCK_TABLES = ("blocks", "deliveries", "block_txs", "phases", "mutations")


def measured_window(point_dir: Path) -> dict | None:
    """``measured.json`` of a point (``first_block`` of the measured workload), or None if it has none."""
    path = Path(point_dir) / "measured.json"
    if not path.exists():
        return None
    window = json.loads(path.read_text())
    if window.get("schema_version") != SCHEMA_VERSION:
        raise HarnessError(f"{path}: schema_version {window.get('schema_version')!r} is not supported "
                           f"(this harness reads {SCHEMA_VERSION})")
    return window


def load_measured(point_dir: Path) -> dict[str, pd.DataFrame]:
    """The point's tables cut to its measured window: blocks before ``first_block`` are dropped.

    Without ``measured.json`` (the committer benchmark, whose blocks are all
    measured) the tables are returned whole.
    """
    tables = load_point(point_dir)
    window = measured_window(point_dir)
    if window is None:
        return tables
    first = int(window["first_block"])
    for name in BLOCK_TABLES:
        if name in tables:
            df = tables[name]
            tables[name] = df[df["block_number"] >= first].reset_index(drop=True)
    return tables
