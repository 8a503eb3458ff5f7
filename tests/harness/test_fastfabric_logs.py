"""The parsers of harness/fastfabric_logs.py on golden samples: real output of
FastFabric's published broadcast and deliver clients with our patch 0003
(tests/harness/fixtures/fastfabric/orderer-*.out, a Fig. 4 point of 2,000
transfers on the published tree), with values computed by hand from the lines."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from harness import fastfabric_logs as L
from harness.errors import HarnessError

FIXTURES = Path(__file__).parent / "fixtures" / "fastfabric"


def test_broadcast_rounds_golden():
    rounds = L.broadcast_rounds((FIXTURES / "orderer-broadcast.out").read_text())
    assert len(rounds) == 1
    r = rounds[0]
    assert (r["round"], r["sent"], r["acknowledged"]) == (0, 2000, 2000)
    # last_ack_ns - first_send_ns = 1795487510745126512 - 1795487509151884728
    assert r["span_ns"] == 1_593_241_784
    assert r["throughput_tps"] == pytest.approx(2000 / 1.593241784)


def test_discarded_blocks_golden():
    blocks = L.discarded_blocks((FIXTURES / "orderer-deliver.out").read_text())
    # 400 set-up transactions (blocks 1-4) were committed; blocks 5-24 hold the 2,000 transfers.
    assert [b["block"] for b in blocks] == list(range(5, 25))
    assert all(b["txs"] == 100 for b in blocks) and blocks[-1]["total"] == 2000
    assert blocks[0]["arrival_ns"] == 1795487509616692435


def test_parsers_refuse_output_without_their_lines():
    with pytest.raises(HarnessError, match="broadcast round"):
        L.broadcast_rounds("Round 0\nInitializing\n")
    with pytest.raises(HarnessError, match="discarded block"):
        L.discarded_blocks("seeking..  -2\nRunning....\n")


def test_broadcast_round_needs_a_positive_span():
    with pytest.raises(HarnessError, match="not after"):
        L.broadcast_rounds("fabricrepro broadcast round 0: sent 1 acknowledged 1 first_send_ns 5 last_ack_ns 5\n")


def test_discarded_blocks_must_follow_each_other():
    text = ("fabricrepro discarded block 5 txs 100 total 100 arrival_ns 1\n"
            "fabricrepro discarded block 7 txs 100 total 200 arrival_ns 2\n")
    with pytest.raises(HarnessError, match="does not follow"):
        L.discarded_blocks(text)


def _committed(blocks: dict[int, tuple[int, int]]) -> pd.DataFrame:
    """A committer's blocks.csv (patch 0003's -blocklog columns): block -> (transactions, valid)."""
    return pd.DataFrame([{"block_number": b, "tx_count": t, "valid_count": v, "bytes": 1000 + b,
                          "received_ns": -1, "validated_ns": -1, "committed_ns": -1} for b, (t, v) in blocks.items()])


def test_reader_deliveries_keep_the_committed_transfer_blocks_with_their_valid_counts():
    # the real discarded lines of blocks 5-24; the committer logged blocks 6-24 (block 7: 3 invalid)
    committed = _committed({b: (100, 97 if b == 7 else 100) for b in range(6, 25)})
    d = L.reader_deliveries((FIXTURES / "orderer-deliver.out").read_text(), committed)
    assert list(d.columns) == ["block_number", "arrival_ns", "tx_count", "valid_count", "size_bytes"]
    assert d["block_number"].tolist() == list(range(6, 25))
    assert d.loc[d.block_number == 7, "valid_count"].item() == 97
    assert d.loc[0, "arrival_ns"] == 1795487509682433063 and d.loc[0, "size_bytes"] == 1006


def test_reader_deliveries_refuse_another_chain():
    with pytest.raises(HarnessError, match="block 5: the reader got 100 transactions, the committer 99"):
        L.reader_deliveries((FIXTURES / "orderer-deliver.out").read_text(), _committed({5: (99, 99)}))
    with pytest.raises(HarnessError, match="none of the blocks"):
        L.reader_deliveries((FIXTURES / "orderer-deliver.out").read_text(), _committed({99: (100, 100)}))


def test_point_tables_read_the_reader_log_beside_the_block_log(tmp_path):
    (tmp_path / "logs" / "peer").mkdir(parents=True)
    (tmp_path / "raw" / "peer").mkdir(parents=True)
    (tmp_path / "logs" / "peer" / "fastfabric_reader.log").write_text(
        (FIXTURES / "orderer-deliver.out").read_text())
    _committed({b: (100, 100) for b in range(5, 25)}).to_csv(tmp_path / "raw" / "peer" / "blocks.csv", index=False)
    (d,) = L.point_tables(tmp_path).values()
    assert len(d) == 20 and set(d["host"]) == {"peer"}
    assert L.point_tables(tmp_path / "nothing") == {}
    (tmp_path / "raw" / "peer" / "blocks.csv").unlink()
    with pytest.raises(HarnessError, match="no block log"):
        L.point_tables(tmp_path)
