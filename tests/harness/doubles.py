"""TEST DOUBLES of stored points: a point's tables written as its hosts' raw CSVs (the contract of
docs/interfaces.md) and converted as the runner converts them, so the stored tables equal the raw
files, as the validity checks require of every point (harness/analyze.py)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from harness import collect


def store_point_tables(point_dir: Path, tables: dict[str, pd.DataFrame]) -> None:
    """Write each table (its stored columns, with ``host``) as ``raw/<host>/<table>.csv``, then convert."""
    for name, df in tables.items():
        spec = collect.tables()[name]
        back = {v: k for k, v in spec.rename.items()}
        for host, rows in df.groupby("host"):
            raw = Path(point_dir) / "raw" / str(host)
            raw.mkdir(parents=True, exist_ok=True)
            rows.drop(columns="host").rename(columns=back)[list(spec.columns)].to_csv(raw / f"{name}.csv", index=False)
    collect.convert_point(point_dir)
