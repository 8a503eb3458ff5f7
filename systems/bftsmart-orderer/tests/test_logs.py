"""The parsers of systems/bftsmart-orderer/logs.py on golden samples: output of the
published programs captured on this machine (systems/bftsmart-orderer/tests/fixtures/;
its README says from which run), and the plugin's tables, metrics and role variables."""

from pathlib import Path

import pytest

from fabricrepro_systems.bftsmart_orderer import logs as L
from harness.errors import HarnessError
from harness.systems import plugin, role_variables

FIXTURES = Path(__file__).parent / "fixtures"


def _read(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_receiver_blocks():
    blocks = L.receiver_blocks(_read("deliver_stdout.log"))
    assert [b["block"] for b in blocks] == list(range(6))
    assert blocks[0] == {"block": 0, "signatures": None, "quorum": 0}
    # every later block: 2f+1 = 3 of the 4 nodes' signatures, block and last-config both a valid quorum
    assert all(b["signatures"] == 3 and b["quorum"] == 2 for b in blocks[1:]), blocks


def test_node_throughput():
    reports = L.node_throughput(_read("throughput_3.log"))
    units = {r["unit"] for r in reports}
    assert units == {"envelopes", "blocks"}
    assert all(r["per_s"] > 0 for r in reports)
    assert [r["time"] for r in reports] == sorted(r["time"] for r in reports)


def test_workload_latencies():
    rows = L.workload_latencies(_read("latency_1000.log"))
    assert len(rows) == 20 and all(r["latency_ms"] > 0 and r["block"] >= 1 for r in rows)


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


def test_infinite_rate_is_an_interval_of_no_time():
    # Java's float division by 0 ms: THROUGHPUT_INTERVAL envelopes of one decision in one go
    reports = L.node_throughput("2026-11-23 23:00:00.000\tenvelopes/second\tInfinity\n")
    assert reports[0]["per_s"] == float("inf")


def test_rate_is_items_over_time_without_the_first_report():
    import pandas as pd
    reports = pd.DataFrame({"unit": ["envelopes"] * 4 + ["blocks"], "per_s": [1.0, 100.0, 200.0, float("inf"), 7.0],
                            "time_ns": range(5)})
    # the first report (start-up) is left out; 3 intervals over 1/100 + 1/200 + 0 seconds per item
    assert L.rate(reports, "envelopes") == pytest.approx(200.0)
    assert L.rate(reports, "blocks") == 7.0


def test_point_tables_from_fetched_logs(tmp_path):
    logs = tmp_path / "logs"
    (logs / "orderer").mkdir(parents=True)
    (logs / "server").mkdir()
    (logs / "orderer" / "throughput_0.log").write_text(_read("throughput_3.log"))
    (logs / "orderer" / "throughput_1.log").write_text(_read("throughput_3.log"))  # not the leader: not read
    (logs / "orderer" / "latency_WORKLOAD_CLIENT_ID_IS_UNDEFINED.log").write_text("")
    (logs / "server" / "bftsmart_sigbench-16t-10b.out").write_text(_read("test_signatures.out"))
    tables = L.point_tables(tmp_path)
    assert set(tables) == {"bft_throughput", "bft_signatures"}
    assert len(tables["bft_throughput"]) == len(L.node_throughput(_read("throughput_3.log")))
    sig = tables["bft_signatures"]
    assert set(sig["threads"]) == {16} and set(sig["block_size"]) == {10}
    assert list(sig["per_s"]) == L.signature_rates(_read("test_signatures.out"))


def test_point_tables_leave_out_a_log_without_reports(tmp_path):
    (tmp_path / "logs" / "orderer").mkdir(parents=True)
    (tmp_path / "logs" / "orderer" / "throughput_0.log").write_text("")  # the run ended before 1000 envelopes
    assert L.point_tables(tmp_path) == {}


def test_metrics_of_the_log_tables(tmp_path):
    from harness.analyze import compute_all
    (tmp_path / "logs" / "h").mkdir(parents=True)
    (tmp_path / "logs" / "h" / "throughput_0.log").write_text(_read("throughput_3.log"))
    (tmp_path / "logs" / "h" / "bftsmart_sigbench-16t-10b.out").write_text(_read("test_signatures.out"))
    m = compute_all(L.point_tables(tmp_path))
    rates = sorted(L.signature_rates(_read("test_signatures.out")))
    assert m["signatures_per_s"] == pytest.approx(rates[len(rates) // 2] if len(rates) % 2 else
                                                  (rates[len(rates) // 2 - 1] + rates[len(rates) // 2]) / 2)
    assert m["signed_envelopes_per_s"] == pytest.approx(10 * m["signatures_per_s"])
    assert m["orderer_throughput_tps"] > 0 and "throughput_tps" not in m
    # a point's parameters -> the roles' variables (none for a point of another system: only the systems a point
    # runs are asked)
    v = role_variables(["bftsmart-orderer"], {"nodes": 7, "block_size": 100, "envelope_bytes": 40, "receivers": 1})
    assert v["bftsmart_config_nodes"] == 7 and v["bftsmart_config_block_size"] == 100
    assert v["bftsmart_sigbench_block_size"] == v["bftsmart_geo_block_size"] == 100
    assert v["bftsmart_workload_envelope_bytes"] == 40 and v["bftsmart_config_frontends"] == 1
    assert not [k for k in role_variables(["fabric-1.2"], {"nodes": 4, "block_size": 500}) if k.startswith("bftsmart_")]


def test_each_table_is_parsed_from_its_own_logs(tmp_path):
    (tmp_path / "logs" / "h").mkdir(parents=True)
    (tmp_path / "logs" / "h" / "throughput_0.log").write_text(_read("throughput_3.log"))
    tables = {t.name: t for t in plugin("bftsmart-orderer").tables()}
    assert set(tables) == set(L.COLUMNS)
    assert tables["bft_signatures"].parse(tmp_path) is None
    assert list(tables["bft_throughput"].parse(tmp_path).columns) == L.COLUMNS["bft_throughput"]
