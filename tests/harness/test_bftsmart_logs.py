"""The parsers of harness/bftsmart_logs.py on golden samples: output of the
published programs captured on this machine (tests/harness/fixtures/bftsmart-orderer/;
its README says from which run, and that throughput_0.log is written from the
source's logging calls, not captured)."""

from pathlib import Path

import pytest

from harness import bftsmart_logs as L
from harness.errors import HarnessError

FIXTURES = Path(__file__).parent / "fixtures" / "bftsmart-orderer"


def _read(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_receiver_blocks():
    blocks = L.receiver_blocks(_read("deliver_stdout.log"))
    assert [b["block"] for b in blocks] == list(range(6))
    assert blocks[0] == {"block": 0, "signatures": None, "quorum": 0}
    # every later block: 2f+1 = 3 of the 4 nodes' signatures, block and last-config both a valid quorum
    assert all(b["signatures"] == 3 and b["quorum"] == 2 for b in blocks[1:]), blocks


def test_node_throughput():
    reports = L.node_throughput(_read("throughput_0.log"))
    units = {r["unit"] for r in reports}
    assert units == {"envelopes", "blocks"}
    assert all(r["per_s"] > 0 for r in reports)
    assert [r["time"] for r in reports] == sorted(r["time"] for r in reports)


def test_signature_rates():
    rates = L.signature_rates(_read("test_signatures.out"))
    assert len(rates) >= 3 and all(r > 0 for r in rates)


def test_microbench_server():
    reports = L.microbench_server(_read("throughput_latency_server.log"))
    assert reports and all(r["ops_per_s"] > 0 and r["latency_us"] > 0 for r in reports)
    assert reports[0]["interval"] == 1000


def test_broadcast_summary():
    assert L.broadcast_summary(_read("broadcast_msg.out")) == {"sent": 1000, "total": 1000}


@pytest.mark.parametrize("parser", [L.receiver_blocks, L.node_throughput, L.signature_rates, L.microbench_server,
                                    L.broadcast_summary])
def test_output_without_the_expected_lines_is_an_error(parser):
    with pytest.raises(HarnessError):
        parser("Exception in thread \"main\" java.lang.NoClassDefFoundError\n")


def test_infinite_rate_is_an_error():
    with pytest.raises(HarnessError, match="zero milliseconds"):
        L.node_throughput("2026-11-23 23:00:00.000\tblocks/second\tInfinity\n")
