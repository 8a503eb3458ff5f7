"""Fig. 6's run_throughput_tps for Fabric-X (block_commits.py) against a hand-computed golden value, through the
harness's metric registry as a point's analysis computes it."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from harness import analyze
from fabricrepro_systems.fabric_x import block_commits

# The load generator's lines as v1.0.4 writes them (systems/fabric-x/tests/test_store.py has a real run's): the
# config block 0 and the namespace block 1 (set-up), then the load of 8 in blocks 2-4, one wrongly signed.
LOG = """\
2026-12-08 00:20:00.000 UTC [load-gen-adapters] mapToStatusBatch -> INFO Received block #0 with 1 TXs and 1 statuses [COMMITTED x 1]
2026-12-08 00:20:00.600 UTC [load-gen-adapters] mapToStatusBatch -> INFO Received block #1 with 1 TXs and 1 statuses [COMMITTED x 1]
2026-12-08 00:20:01.000 UTC [load-gen] run -> INFO something else, block #9 not a status line
2026-12-08 00:20:01.175 UTC [load-gen-adapters] mapToStatusBatch -> INFO Received block #2 with 3 TXs and 3 statuses [COMMITTED x 2, ABORTED_SIGNATURE_INVALID x 1]
2026-12-08 00:20:01.425 UTC [load-gen-adapters] mapToStatusBatch -> INFO Received block #3 with 3 TXs and 3 statuses [COMMITTED x 3]
2026-12-08 00:20:01.675 UTC [load-gen-adapters] mapToStatusBatch -> INFO Received block #4 with 2 TXs and 2 statuses [COMMITTED x 2]
"""

CODES = [(0, 0, "VALID"), (1, 0, "VALID"), (2, 0, "VALID"), (2, 1, "ABORTED_SIGNATURE_INVALID"), (2, 2, "VALID"),
         (3, 0, "VALID"), (3, 1, "VALID"), (3, 2, "VALID"), (4, 0, "VALID"), (4, 1, "VALID")]


def tables(log: str = LOG, codes=CODES, asked: int = 8) -> dict:
    return {block_commits.TABLE: block_commits.block_commits_from_text(log),
            "block_txs": pd.DataFrame([(b, i, f"t{b}-{i}", c) for b, i, c in codes],
                                      columns=["block_number", "tx_index", "tx_id", "validation_code"]),
            "loadgen_run": pd.DataFrame([{"start_ns": 0, "end_ns": 1, "transactions": asked, "exit_status": 1}])}


def test_golden_value_through_the_metric_registry():
    # Hand-computed: load blocks 2-4 (blocks 0-1 hold the 2 set-up transactions beyond the 8 asked); block 2's
    # commit line (01.175) opens the interval, block 4's (01.675) closes it: blocks 3-4's 5 COMMITTED / 0.5 s.
    assert analyze.compute_all(tables())["run_throughput_tps"] == pytest.approx(10.0, rel=1e-9)


def test_the_log_lines_are_parsed_with_their_times():
    got = block_commits.block_commits_from_text(LOG)
    assert list(got["block_number"]) == [0, 1, 2, 3, 4]
    assert list(got["committed"]) == [1, 1, 2, 3, 2]
    assert int(got["committed_ns"].iloc[3] - got["committed_ns"].iloc[2]) == 250_000_000


def test_a_load_block_without_its_commit_line_gives_no_value():
    t = tables(log="\n".join(line for line in LOG.splitlines() if "#3 " not in line))
    assert math.isnan(block_commits.run_throughput_tps(*(t[k] for k in (block_commits.TABLE, "block_txs", "loadgen_run"))))


def test_a_load_that_is_not_whole_blocks_after_the_set_up_gives_no_value():
    # 7 asked of the store's 10 leaves 3 set-up transactions, which no run of leading blocks holds (1, 2, 5, ...).
    t = tables(asked=7)
    assert math.isnan(block_commits.run_throughput_tps(*(t[k] for k in (block_commits.TABLE, "block_txs", "loadgen_run"))))


def test_the_table_is_read_from_the_points_loadgen_log(tmp_path):
    assert block_commits.block_commits_table(tmp_path) is None
    (tmp_path / "logs" / "committer").mkdir(parents=True)
    (tmp_path / "logs" / "committer" / "fabric_x_loadgen.log").write_text(LOG)
    assert len(block_commits.block_commits_table(tmp_path)) == 5
