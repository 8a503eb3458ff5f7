"""The parsers of systems/fastfabric/logs.py on golden samples: real output of
FastFabric's published clients with our patches, with values computed by hand
from the lines (systems/fastfabric/tests/fixtures/):

* orderer-broadcast.out: the broadcast client of a Fig. 4 point (2,000 transfers);
* reader.out, reader-committer-blocks.csv: Fig. 3's reader and the committing
  deliver client's block log of one point (block size 100, run
  20261124T095928Z-ad43e94 of the whole paper at smoke, patches 0003 + 0004);
* orderer-deliver-0003-only.out: a discarding deliver client before patch 0004
  (its times are the main loop's, not the transfer's: refused)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from harness.errors import HarnessError
from harness.metrics import METRICS

from fabricrepro_systems.fastfabric import logs as L

FIXTURES = Path(__file__).parent / "fixtures"


def test_broadcast_rounds_golden():
    rounds = L.broadcast_rounds((FIXTURES / "orderer-broadcast.out").read_text())
    assert len(rounds) == 1
    r = rounds[0]
    assert (r["round"], r["sent"], r["acknowledged"]) == (0, 2000, 2000)
    # last_ack_ns - first_send_ns = 1795487510745126512 - 1795487509151884728
    assert r["span_ns"] == 1_593_241_784
    assert r["throughput_tps"] == pytest.approx(2000 / 1.593241784)


def test_discarded_blocks_golden():
    blocks = L.discarded_blocks((FIXTURES / "reader.out").read_text())
    # the reader discards every block after the genesis block: 4 set-up blocks, then blocks 5-24 of transfers
    assert [b["block"] for b in blocks] == list(range(1, 25))
    assert all(b["txs"] == 100 for b in blocks) and blocks[-1]["total"] == 2400
    # recv_ns: when the gRPC stream returned the block (patch 0004)
    assert blocks[4]["arrival_ns"] == 1795514480068706846


def test_discard_lines_of_patch_0003_alone_are_refused():
    # real output before patch 0004: the main loop's clock after a buffered channel ("arrival_ns")
    with pytest.raises(HarnessError, match="patch 0004"):
        L.discarded_blocks((FIXTURES / "orderer-deliver-0003-only.out").read_text())


def test_parsers_refuse_output_without_their_lines():
    with pytest.raises(HarnessError, match="broadcast round"):
        L.broadcast_rounds("Round 0\nInitializing\n")
    with pytest.raises(HarnessError, match="discarded block"):
        L.discarded_blocks("seeking..  -2\nRunning....\n")


def test_broadcast_round_needs_a_positive_span():
    with pytest.raises(HarnessError, match="not after"):
        L.broadcast_rounds("fabricrepro broadcast round 0: sent 1 acknowledged 1 first_send_ns 5 last_ack_ns 5\n")


def test_discarded_blocks_must_follow_each_other():
    text = ("fabricrepro discarded block 5 txs 100 total 100 recv_ns 1\n"
            "fabricrepro discarded block 7 txs 100 total 200 recv_ns 2\n")
    with pytest.raises(HarnessError, match="does not follow"):
        L.discarded_blocks(text)


def _committed(blocks: dict[int, tuple[int, int]]) -> pd.DataFrame:
    """A committer's blocks.csv (patch 0003's -blocklog columns): block -> (transactions, valid)."""
    return pd.DataFrame([{"block_number": b, "tx_count": t, "valid_count": v, "bytes": 1000 + b,
                          "received_ns": -1, "validated_ns": -1, "committed_ns": -1} for b, (t, v) in blocks.items()])


def test_reader_deliveries_keep_the_committed_transfer_blocks_with_their_valid_counts():
    # the real discarded lines of blocks 1-24; the committer logged blocks 6-24 (block 7: 3 invalid)
    committed = _committed({b: (100, 97 if b == 7 else 100) for b in range(6, 25)})
    d = L.reader_deliveries((FIXTURES / "reader.out").read_text(), committed)
    assert list(d.columns) == ["block_number", "arrival_ns", "tx_count", "valid_count", "size_bytes"]
    assert d["block_number"].tolist() == list(range(6, 25))
    assert d.loc[d.block_number == 7, "valid_count"].item() == 97
    assert d.loc[0, "arrival_ns"] == 1795514480077463233 and d.loc[0, "size_bytes"] == 1006


def test_reader_deliveries_refuse_another_chain():
    with pytest.raises(HarnessError, match="block 5: the reader got 100 transactions, the committer 99"):
        L.reader_deliveries((FIXTURES / "reader.out").read_text(), _committed({5: (99, 99)}))
    with pytest.raises(HarnessError, match="none of the blocks"):
        L.reader_deliveries((FIXTURES / "reader.out").read_text(), _committed({99: (100, 100)}))


def test_point_tables_read_the_reader_log_beside_the_block_log(tmp_path):
    # a real Fig. 3 point (block size 100): the reader's log and the committer's blocks.csv
    (tmp_path / "logs" / "peer").mkdir(parents=True)
    (tmp_path / "raw" / "peer").mkdir(parents=True)
    (tmp_path / "logs" / "peer" / "fastfabric_reader.log").write_text((FIXTURES / "reader.out").read_text())
    (tmp_path / "raw" / "peer" / "blocks.csv").write_text((FIXTURES / "reader-committer-blocks.csv").read_text())
    (d,) = L.point_tables(tmp_path).values()
    assert len(d) == 20 and set(d["host"]) == {"peer"} and d["block_number"].tolist() == list(range(5, 25))
    assert d["size_bytes"].iloc[0] == 306400
    # 1,900 valid transfers of blocks 6-24 over recv_ns(24) - recv_ns(5) = 54,066,378 ns
    assert METRICS["delivery_throughput_tps"].compute(d) == pytest.approx(1900 / 0.054066378)
    assert L.point_tables(tmp_path / "nothing") == {}
    (tmp_path / "raw" / "peer" / "blocks.csv").unlink()
    with pytest.raises(HarnessError, match="no block log"):
        L.point_tables(tmp_path)
