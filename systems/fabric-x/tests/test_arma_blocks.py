"""Arma's ordered rate (arma_blocks.py): the assembler's "Appended block" lines parsed from its coloured log,
and arma_ordered_tps over the load's blocks with a hand-computed golden value."""

import math

import pandas as pd

from fabricrepro_systems.fabric_x import arma_blocks

# Lines of a real assembler log (fabric-x-orderer v1.0.5, node/ledger/assembler_ledger.go:137), colours kept.
LOG = (
    "\x1b[34m2026-12-08 00:22:45.630 UTC 0032 INFO\x1b[0m [Assembler1] \x1b[34;1mfunc1\x1b[0m -> "
    "Appended block 1 of 1 requests to ledger in 763.929µs\n"
    "\x1b[34m2026-12-08 00:22:46.434 UTC 0033 INFO\x1b[0m [Assembler1] \x1b[34;1mfunc3\x1b[0m -> "
    "Assembler pulled from 127.0.0.1:27063 batch Sh,Pr,Sq,Dg: <1,1,1,b98d>\n"
    "\x1b[34m2026-12-08 00:22:46.677 UTC 0036 INFO\x1b[0m [Assembler1] \x1b[34;1mfunc1\x1b[0m -> "
    "Appended block 2 of 3000 requests to ledger in 39.112013ms\n"
    "\x1b[34m2026-12-08 00:22:47.177 UTC 003b INFO\x1b[0m [Assembler1] \x1b[34;1mfunc1\x1b[0m -> "
    "Appended block 3 of 2000 requests to ledger in 4.103829ms\n"
)


def _store(sizes: dict[int, int]) -> pd.DataFrame:
    return pd.DataFrame([{"host": "h", "block_number": b, "tx_index": i, "tx_id": f"{b}-{i}", "validation_code": "VALID"}
                         for b, n in sizes.items() for i in range(n)])


def test_appended_blocks_are_parsed_from_the_coloured_log():
    table = arma_blocks.arma_blocks_from_text(LOG)
    assert table["block_number"].tolist() == [1, 2, 3]
    assert table["transactions"].tolist() == [1, 3000, 2000]
    assert table["appended_ns"].iloc[2] - table["appended_ns"].iloc[1] == 500_000_000


def test_ordered_rate_counts_the_load_blocks_after_the_first():
    table = arma_blocks.arma_blocks_from_text(LOG)
    run = pd.DataFrame([{"transactions": 5000}])
    # block 0: config, block 1: namespace (set-up); the load is blocks 2 and 3: 2000 tx over 0.5 s
    assert arma_blocks.arma_ordered_tps(table, _store({0: 1, 1: 1, 2: 3000, 3: 2000}), run) == 4000.0
    # a load block the assembler did not log: no rate
    assert math.isnan(arma_blocks.arma_ordered_tps(table.iloc[:2], _store({0: 1, 1: 1, 2: 3000, 3: 2000}), run))
