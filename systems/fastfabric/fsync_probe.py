"""fsync latency of the disk a ledger is written to.

    python systems/fastfabric/fsync_probe.py --dir build/work --bytes 307200 --count 300

Appends ``--bytes`` to a fresh file in ``--dir`` and fsyncs it, ``--count``
times, as a block store appends and syncs one block (a FastFabric block of 100
transfers is about 300 KB); ``--bytes 4096`` is closer to a LevelDB write
batch with ``sync=true``. Prints one JSON line: milliseconds per append+fsync
(median, p90, p99, max) and how many such syncs per second one writer gets.
The file is removed afterwards. Used to explain the peer benchmarks' commit
times (systems/fastfabric/README.md, "Measured"). It needs only the standard
library: copy this one file to a host to probe its disk.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (q in 0..100)."""
    if not sorted_values:
        raise ValueError("no values")
    rank = max(1, -(-len(sorted_values) * q // 100))   # ceil, at least the first
    return sorted_values[int(rank) - 1]


def probe(directory: Path, block_bytes: int, count: int) -> dict:
    """Time ``count`` appends of ``block_bytes`` each followed by fsync."""
    if block_bytes <= 0 or count <= 0:
        raise ValueError(f"--bytes and --count must be positive (got {block_bytes}, {count})")
    if not directory.is_dir():
        raise ValueError(f"{directory} is not a directory")
    payload = os.urandom(block_bytes)   # random: nothing for a compressing disk to shrink
    fd, name = tempfile.mkstemp(prefix="fsync-probe-", dir=directory)
    ms = []
    try:
        for _ in range(count):
            t0 = time.perf_counter_ns()
            os.write(fd, payload)
            os.fsync(fd)
            ms.append((time.perf_counter_ns() - t0) / 1e6)
    finally:
        os.close(fd)
        os.unlink(name)
    ms.sort()
    median = statistics.median(ms)
    return {
        "dir": str(directory),
        "bytes": block_bytes,
        "count": count,
        "median_ms": round(median, 4),
        "p90_ms": round(percentile(ms, 90), 4),
        "p99_ms": round(percentile(ms, 99), 4),
        "max_ms": round(ms[-1], 4),
        "syncs_per_s_at_median": round(1000.0 / median, 1) if median > 0 else None,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", type=Path, default=Path("."), help="directory on the disk to probe")
    ap.add_argument("--bytes", type=int, default=300 * 1024, help="bytes appended before each fsync")
    ap.add_argument("--count", type=int, default=300, help="append+fsync repetitions")
    args = ap.parse_args(argv)
    try:
        print(json.dumps(probe(args.dir, args.bytes, args.count)))
    except (ValueError, OSError) as exc:
        print(f"fsync_probe: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
