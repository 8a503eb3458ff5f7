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

and each system's own (its plugin's ``tables``: CSVs of its programs, or
tables parsed from their logs).

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

from . import SCHEMA_VERSION, systems
from .errors import HarnessError
from .systems import Table

_BLOCK_TIMES = ("received_ns", "validated_ns", "committed_ns", "vscc_ns", "mvcc_ns",
                "block_commit_ns", "state_commit_ns", "history_commit_ns")

#: The core's tables: what the shared roles (peer, committer benchmark, block watcher, load generator) write,
#: with the CSV columns in order (as docs/interfaces.md fixes them) and their renames to carry units.
#: Each system adds its own (``Plugin.tables``, harness/systems.py).
CORE_TABLES = (
    Table("blocks", ("block_number", "tx_count", "valid_count", "bytes") + _BLOCK_TIMES, {"bytes": "size_bytes"}),
    Table("deliveries", ("block_number", "arrival_ns", "tx_count", "valid_count", "bytes"), {"bytes": "size_bytes"}),
    Table("txs", ("tx_id", "scheduled_ns", "submitted_ns", "acked_ns", "status"), strings=frozenset({"tx_id", "status"})),
    # block watcher --txs-out: each delivered transaction's ID and validation code
    Table("block_txs", ("block_number", "tx_index", "tx_id", "validation_code"),
          strings=frozenset({"tx_id", "validation_code"})),
    # transactions a driver corrupted on purpose (mutation tests; harness/validity.py)
    Table("mutations", ("block_number", "tx_index", "tx_id", "mutation"), strings=frozenset({"tx_id", "mutation"})),
)
META_VERSION = b"fabricrepro.schema_version"
META_TABLE = b"fabricrepro.table"


def tables() -> dict[str, Table]:
    """Every table a point can have, by name: the core's and every system's."""
    out = {t.name: t for t in CORE_TABLES}
    for name, table in systems.tables().items():
        if name in out and table.parse is None:
            raise HarnessError(f"table {name!r} of a system's plugin redefines one of the core's tables")
        out.setdefault(name, table)
    return out


def read_csv(path: Path, table: str) -> pd.DataFrame:
    """Read one raw CSV of ``table``, checking its header against the contract."""
    spec = tables()[table]
    df = pd.read_csv(path, dtype={c: ("string" if c in spec.strings else "int64") for c in spec.columns},
                     keep_default_na=False)
    if tuple(df.columns) != spec.columns:
        raise HarnessError(f"{path}: header {list(df.columns)} differs from the contract {list(spec.columns)} "
                           "(docs/interfaces.md)")
    return df.rename(columns=spec.rename)


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


def raw_tables(point_dir: Path) -> dict[str, pd.DataFrame]:
    """Every table of a point made from its raw files (``raw/<host>/*.csv`` and the systems' log parsers),
    by name; what ``convert_point`` stores and ``invoke verify`` re-reads."""
    point_dir = Path(point_dir)
    out = {}
    # The systems' parsers of tables from their programs' logs. A system may parse one of the core's
    # tables (FastFabric's second deliver client's ``deliveries``): its rows join the CSVs'.
    parsers = {name: t.parse for name, t in systems.tables().items() if t.parse is not None}
    for table in tables().values():
        frames = []
        for csv in sorted(point_dir.glob(f"raw/*/{table.name}.csv")) if table.columns else []:
            if csv.stat().st_size == 0:
                continue  # its writer was stopped before the header: nothing was recorded
            df = read_csv(csv, table.name)
            df.insert(0, "host", csv.parent.name)
            frames.append(df)
        if table.name in parsers and (df := parsers[table.name](point_dir)) is not None:
            frames.append(df)
        if frames:
            out[table.name] = pd.concat(frames, ignore_index=True)
    return out


def tables_differ(raw: dict[str, pd.DataFrame], stored: dict[str, pd.DataFrame]) -> list[str]:
    """Problems where a point's stored parquet tables (what the metrics are computed from) are not what its raw
    files give: one line per table, naming it. Each stored table must be made again, column for column, from the
    raw files. What today's parsers make beyond what a run stored (a table or a column added to the harness after
    the run) is no difference: no stored metric comes from it, and a table missing from the stored ones yields
    no number, so a re-analysis of an older run stays as valid as its stored evidence."""
    problems = []
    for name in sorted(stored):
        a, b = raw.get(name), stored[name]
        if a is None:
            problems.append(f"table {name}: only stored, the raw files and the stored tables differ")
        elif (missing := [c for c in b.columns if c not in a.columns]):
            problems.append(f"table {name}: stored columns {', '.join(missing)} are not in the raw files")
        elif not a[list(b.columns)].reset_index(drop=True).equals(b.reset_index(drop=True)):
            problems.append(f"table {name}: the raw files ({len(a)} rows) differ from the stored table ({len(b)} rows)")
    return problems


def convert_point(point_dir: Path) -> list[str]:
    """Convert the raw CSVs under ``point_dir/raw/<host>/`` into ``point_dir/<table>.parquet``.

    Returns the names of the tables written.
    """
    converted = raw_tables(point_dir)
    for name, df in converted.items():
        write_table(df, Path(point_dir) / f"{name}.parquet", name)
    return list(converted)


def load_point(point_dir: Path) -> dict[str, pd.DataFrame]:
    """Every stored table of a point, by name."""
    return {t: read_table(Path(point_dir) / f"{t}.parquet") for t in tables()
            if (Path(point_dir) / f"{t}.parquet").exists()}


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
    point = load_point(point_dir)
    window = measured_window(point_dir)
    if window is None:
        return point
    first = int(window["first_block"])
    for name, table in tables().items():
        if table.per_block and name in point:
            df = point[name]
            point[name] = df[df["block_number"] >= first].reset_index(drop=True)
    return point
