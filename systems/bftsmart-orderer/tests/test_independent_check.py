"""The BFT-SMaRt ordering service's independent checks (systems/bftsmart-orderer/evidence.py) on point
directories built by hand: the log lines are the programs' own formats (tests/fixtures/ holds real
samples: throughput_3.log, latency_1000.log, testnodes_1000.log), the tables are made from them by the
harness's own collection (harness.collect.raw_tables), and the settings are where a run records them
(the run's metadata.json role_settings, the point's logs/ansible-run.vars.json).

A consistent point passes; each kind of disagreement fails naming its cause; every missing input fails
(the check fails closed)."""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from fabricrepro_systems.bftsmart_orderer import evidence
from harness.collect import raw_tables
from harness.systems import independent_check, plugin

FIXTURES = Path(__file__).parent / "fixtures"
T0 = datetime(2026, 11, 28, 8, 46, 50)


def _stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S.") + f"{t.microsecond // 1000:03d}"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _affinity(point: Path, host: str, name: str) -> None:
    _write(point / "raw" / host / f"affinity_{name}.csv", f'component,pid,cpus_allowed_list\n{name},4242,"0-1"\n')


def _run_dir(tmp_path: Path, role_settings: dict, run_vars: dict) -> Path:
    run = tmp_path / "run"
    _write(run / "metadata.json", json.dumps({"build": {"role_settings": role_settings}}))
    point = run / "points" / "p"
    _write(point / "logs" / "ansible-run.vars.json", json.dumps(run_vars))
    return point


# ------------------------------------------------------------------------------------------ Fig. 6

def _throughput(reports: int, per_s: float = 1000.0) -> str:
    # bft.BFTNode's "throughput" logger: one line per THROUGHPUT_INTERVAL envelopes (its logback pattern)
    return "".join(f"{_stamp(T0 + timedelta(seconds=i))}\tenvelopes/second\t{per_s}\n" for i in range(reports))


def _latency(last_block: int, per_block: int = 3, first_block: int = 1) -> str:
    # WorkloadClient's "latency" logger: one line per own envelope back in a block
    return "".join(f"{_stamp(T0 + timedelta(milliseconds=10 * b))}\tblock#{b}\t{40 + j}\n"
                   for b in range(first_block, last_block + 1) for j in range(per_block))


def fig6_point(tmp_path: Path, *, nodes=4, leader=10, replicas=None, receivers=(1000,), last_block=990,
               per_block=3, at_stop_reports=None, settings=True, counted_at=None) -> Path:
    """A Fig. 6 point: 4 nodes on host orderer, receivers on host client; interval 1000, 10 envelopes a block. ``leader``: node 0's reports; ``replicas``: the others' (default: as node 0's)."""
    role_settings = {"bftsmart_config": {"bftsmart_config_throughput_interval": 1000,
                                         "bftsmart_config_signing_threads": 16, "bftsmart_config_block_size": 100}}
    run_vars = {"bftsmart_config_block_size": 10, "bftsmart_config_nodes": nodes,
                "bftsmart_config_frontends": len(receivers), "bftsmart_config_signing_threads": 16}
    point = _run_dir(tmp_path, role_settings if settings else {}, run_vars if settings else {})
    if counted_at:
        _write(point / "point.json", json.dumps({"parameters": {"counted_at": counted_at}}))
    replicas = replicas if replicas is not None else [leader] * (nodes - 1)
    for i in range(nodes):
        _affinity(point, "orderer", f"bftsmart_node-{i}_node{i}")
        _write(point / "logs" / "orderer" / f"bftsmart_node-{i}.log", "Replica state is up to date\n")
        _write(point / "logs" / "orderer" / f"throughput_{i}.log", _throughput(leader if i == 0 else replicas[i - 1]))
    at_stop = len(_throughput(leader if at_stop_reports is None else at_stop_reports).encode())
    _write(point / "raw" / "orderer" / "log_bytes_at_stop.csv", f"log,bytes\nthroughput_0.log,{at_stop}\n")
    for rid in receivers:
        _affinity(point, "client", f"bftsmart_workload-{rid}_client{rid}")
        _write(point / "logs" / "client" / f"bftsmart_workload-{rid}.log", "Channel active\n")
        _write(point / "logs" / "client" / f"latency_{rid}.log", _latency(last_block, per_block))
    return point


def _run(point: Path, name: str = "bft-receivers"):
    return independent_check("bftsmart-orderer", name).run(point, raw_tables(point))


def test_the_plugin_offers_both_checks():
    names = {c.name for c in plugin("bftsmart-orderer").independent_checks()}
    assert names == {"bft-receivers", "bft-frontends"}


def test_consistent_fig6_point_passes(tmp_path):
    section, problems = _run(fig6_point(tmp_path, receivers=(1000, 2000)))
    assert problems == []
    assert section["leader_envelopes"] == 10_000 and section["leader_envelopes_at_stop"] == 10_000
    # 1000 envelopes/s x 2 s in flight + 2 blocks of 10
    assert section["tolerance_envelopes"] == 2000 + 20
    assert section["receivers"]["1000"]["last_block"] == 990 and section["receivers"]["2000"]["envelopes"] == 9900
    assert section["replica_envelopes"] == {"0": 10_000, "1": 10_000, "2": 10_000, "3": 10_000}
    assert section["reply_quorum"] == 3


def test_receiver_short_of_blocks_fails(tmp_path):
    _, problems = _run(fig6_point(tmp_path, receivers=(1000, 2000)))
    assert problems == []
    # receiver 2000 stopped getting blocks at #500: 5,000 envelopes where node 0 counted 10,000
    point = fig6_point(tmp_path / "b", receivers=(1000, 2000))
    _write(point / "logs" / "client" / "latency_2000.log", _latency(500))
    _, problems = _run(point)
    assert len(problems) == 1 and problems[0].startswith("receiver 2000 is short of blocks: it got blocks up to #500")


def test_the_real_overloaded_smoke_point_fails(tmp_path):
    # run 20261128T084613Z (4 nodes, 10/block, 40 B, 2 receivers, 2 shared cores at load 8-12): node 0
    # counted 6 reports (5 when the stop began), the other replicas 8, 8 and 11, the receivers had blocks
    # up to #99 and #106 (latencies of 6.5 s rising to 18.6 s): ordering ran ahead of block delivery.
    point = fig6_point(tmp_path, leader=6, replicas=[8, 8, 11], receivers=(1000, 2000), last_block=99,
                       at_stop_reports=5)
    _write(point / "logs" / "client" / "latency_2000.log", _latency(106))
    section, problems = _run(point)
    assert [p.split(":")[0] for p in problems] == ["receiver 1000 is short of blocks", "receiver 2000 is short of blocks"]
    assert section["leader_envelopes_at_stop"] == 5000 and section["receivers"]["2000"]["envelopes"] == 1060


def test_counted_at_the_receivers_a_receiver_behind_node_0_is_the_measurement(tmp_path):
    # the same overloaded point as above, in an experiment that counts what the receivers got (fig6-revisit-smartbft)
    point = fig6_point(tmp_path, leader=6, replicas=[8, 8, 11], receivers=(1000, 2000), last_block=99,
                       at_stop_reports=5, counted_at="receivers")
    _write(point / "logs" / "client" / "latency_2000.log", _latency(106))
    section, problems = _run(point)
    assert problems == [] and section["counted_at"] == "receivers"
    # the bounds on what the receivers hold still hold there: beyond a quorum of replicas, or too few blocks, fails
    _, problems = _run(fig6_point(tmp_path / "b", last_block=3000, counted_at="receivers"))
    assert any(p.startswith("receiver 1000 holds blocks up to #3000") for p in problems)
    _, problems = _run(fig6_point(tmp_path / "c", last_block=2, counted_at="receivers"))
    assert any("logged 2 blocks, fewer than 3" in p for p in problems)
    _, problems = _run(fig6_point(tmp_path / "d", replicas=[10, 5, 5], counted_at="receivers"))
    assert any(p.startswith("only 1 of the 3 other replicas") for p in problems)


def test_delivered_rate_is_the_slowest_receivers_blocks_over_their_arrivals(tmp_path):
    point = fig6_point(tmp_path, receivers=(1000, 2000))
    # receiver 2000 got blocks 1-500 only: 10 ms apart in both logs (_latency), so its rate is the same per block
    _write(point / "logs" / "client" / "latency_2000.log", _latency(500, first_block=101))
    table = raw_tables(point)["bft_latency"]
    assert set(table["block_size"]) == {10}
    # 989 blocks of 10 after the first over 9.89 s: 1,000 envelopes/s at both; the slowest counts
    assert evidence.logs.delivered_rate(table) == pytest.approx(1000.0)
    # receiver 2000's blocks twice as far apart: it is the slowest, at 500 envelopes/s
    slow, late = table.copy(), table["client"] == 2000
    first = slow.loc[late, "time_ns"].min()
    slow.loc[late, "time_ns"] = first + (slow.loc[late, "time_ns"] - first) * 2
    assert evidence.logs.delivered_rate(slow) == pytest.approx(500.0)
    # fails closed: no configured block size, or one block only
    assert math.isnan(evidence.logs.delivered_rate(table.assign(block_size=None)))
    assert math.isnan(evidence.logs.delivered_rate(table[table["block"] == 101]))


def test_replicas_short_of_node_0_fail(tmp_path):
    # node 0 counted 10,000; two of the three others only 5,000: no quorum of 2f = 2 besides node 0
    _, problems = _run(fig6_point(tmp_path, replicas=[10, 5, 5]))
    assert problems[0].startswith("only 1 of the 3 other replicas executed as many envelopes")
    # and the receiver's 9,900 envelopes are more than the third replica's 5,000 (+ one report)
    assert len(problems) == 2 and "more than a quorum of 3 replicas executed (at most 6,000)" in problems[1]


def test_receiver_beyond_a_quorum_fails(tmp_path):
    # blocks up to #3000 at 10 envelopes = 30,000: more than any quorum of replicas executed (11,000)
    _, problems = _run(fig6_point(tmp_path, last_block=3000))
    assert any(p.startswith("receiver 1000 holds blocks up to #3000") and "more than a quorum" in p for p in problems)


def test_block_larger_than_configured_fails(tmp_path):
    _, problems = _run(fig6_point(tmp_path, per_block=11))
    assert any("more of its own envelopes in a block than the block size 10: block #1 has 11" in p for p in problems)


def test_counts_after_the_stop_began_beyond_what_is_in_flight_fail(tmp_path):
    # 10 reports, only 5 of them before teardown began stopping the receivers
    _, problems = _run(fig6_point(tmp_path, at_stop_reports=5, last_block=490))
    assert any(p.startswith("node 0 counted 5,000 envelopes after teardown began") for p in problems)


def test_too_short_to_confirm_fails(tmp_path):
    # 2 reports (2,000 envelopes): what may be in flight (2,020) is more than half of it
    _, problems = _run(fig6_point(tmp_path, leader=2, last_block=200))
    assert any("too few for the receivers to confirm" in p for p in problems)


@pytest.mark.parametrize("breakage, expected", [
    ("no_leader_log", "node 0 reported no envelopes"),
    ("empty_leader_log", "node 0 reported no envelopes"),
    ("no_latency_log", "receiver 1000 logged no block"),
    ("empty_latency_log", "receiver 1000 logged no block"),
    ("no_replica_log", "node 2's throughput log logs/orderer/throughput_2.log is missing"),
    ("no_log_bytes_at_stop", "raw/orderer/log_bytes_at_stop.csv does not say how far throughput_0.log had got"),
    ("no_receiver_started", "no receiver (bft.test.WorkloadClient) was started"),
    ("no_node_0_started", "no record that node 0 was started"),
    ("no_settings", "the point records no usable bftsmart_config_throughput_interval"),
    ("no_node_log", "the log of bftsmart_node-2 on host orderer is missing or empty"),
    ("empty_receiver_log", "the log of bftsmart_workload-1000 on host client is missing or empty"),
])
def test_every_missing_input_fails(tmp_path, breakage, expected):
    point = fig6_point(tmp_path, settings=breakage != "no_settings")
    logs, raw = point / "logs", point / "raw"
    if breakage == "no_leader_log":
        (logs / "orderer" / "throughput_0.log").unlink()
    elif breakage == "empty_leader_log":
        _write(logs / "orderer" / "throughput_0.log", "")
    elif breakage == "no_latency_log":
        (logs / "client" / "latency_1000.log").unlink()
    elif breakage == "empty_latency_log":
        _write(logs / "client" / "latency_1000.log", "")
    elif breakage == "no_replica_log":
        (logs / "orderer" / "throughput_2.log").unlink()
    elif breakage == "no_log_bytes_at_stop":
        (raw / "orderer" / "log_bytes_at_stop.csv").unlink()
    elif breakage == "no_receiver_started":
        (raw / "client" / "affinity_bftsmart_workload-1000_client1000.csv").unlink()
    elif breakage == "no_node_log":
        (logs / "orderer" / "bftsmart_node-2.log").unlink()
    elif breakage == "empty_receiver_log":
        _write(logs / "client" / "bftsmart_workload-1000.log", "")
    elif breakage == "no_node_0_started":
        (raw / "orderer" / "affinity_bftsmart_node-0_node0.csv").unlink()
    _, problems = _run(point)
    assert any(p.startswith(expected) for p in problems), problems


def test_a_real_throughput_log_counts_its_envelope_reports():
    # node 3's whole file of a real Fig. 6 smoke point: envelopes and blocks reports mixed
    text = (FIXTURES / "throughput_3.log").read_text(encoding="utf-8")
    assert evidence._reports(text) == text.count("envelopes/second")
    assert evidence._reports("") == 0


# ------------------------------------------------------------------------------------------ Fig. 7

REGIONS = {1000: "oregon", 2000: "virginia", 3000: "sao-paulo"}
NODES = {0: "oregon", 1: "ireland", 2: "sydney", 3: "sao-paulo"}


def _testnodes(frontend: int, reports: int) -> str:
    # bft.TestNodes' five-line report (patch 0101: every fabricrepro.latency.every of its own envelopes)
    head = f"Connecting to replica 0 at /10.77.0.1:11000\nChannel active\nWaiting 15 seconds...\n"
    body = "".join(f"[latency] {frontend} // Average = {790000 + r} (+/- NaN) us \n"
                   f"[latency] {frontend} // Median  = 784000 us \n[latency] {frontend} // 90th p  = 990000 us \n"
                   f"[latency] {frontend} // 95th p  = 1059000 us \n[latency] {frontend} // Max     = 1200000 us \n"
                   for r in range(reports))
    return head + body


def fig7_point(tmp_path: Path, *, reports=None, every=400, node_reports=0, settings=True) -> Path:
    role_settings = {"bftsmart_geo": {"bftsmart_geo_latency_every": every, "bftsmart_geo_clients": 1,
                                      "bftsmart_geo_client_delay_ms": 15}}
    run_vars = {"bftsmart_geo_clients": 1, "bftsmart_geo_client_delay_ms": 15, "bftsmart_geo_block_size": 100}
    point = _run_dir(tmp_path, role_settings if settings else {}, run_vars if settings else {})
    reports = reports or {1000: 3, 2000: 3, 3000: 3}
    for node, host in NODES.items():
        _affinity(point, host, f"node-{node}_node{node}")
        _write(point / "logs" / host / f"node-{node}.log", "-- Replica state is up to date\n"
               + "Throughput = 1234.5 envelopes/sec\n" * node_reports)
    for fid, host in REGIONS.items():
        _affinity(point, host, f"testnodes-{fid}_frontend{fid}")
        _write(point / "logs" / host / f"testnodes-{fid}.log", _testnodes(fid, reports.get(fid, 0)))
    return point


def test_consistent_fig7_point_passes(tmp_path):
    section, problems = _run(fig7_point(tmp_path), "bft-frontends")
    assert problems == []
    assert section["frontend_envelopes"] == 3 * 3 * 400
    # one report and 2 s of one client sending every 15 ms
    assert section["frontend_spread_allowed"] == 400 + 134
    assert section["reply_quorum"] == 3 and section["quorum_executed_at_most"] == 10_000


def test_a_real_testnodes_log_passes(tmp_path):
    # the fixture's point was overloaded (3 x 2 clients every 5 ms): its replicas were past 10,000 envelopes
    point = fig7_point(tmp_path, every=2000, node_reports=1)
    real = (FIXTURES / "testnodes_1000.log").read_text(encoding="utf-8")
    for fid, host in REGIONS.items():  # the same real report for every frontend, under its own id
        _write(point / "logs" / host / f"testnodes-{fid}.log", real.replace("[latency] 1000 ", f"[latency] {fid} "))
    section, problems = _run(point, "bft-frontends")
    assert problems == [] and section["frontends"]["1000"]["reports"] == 3


def test_frontend_falling_behind_fails(tmp_path):
    _, problems = _run(fig7_point(tmp_path, reports={1000: 4, 2000: 4, 3000: 1}), "bft-frontends")
    assert len(problems) == 1 and problems[0].startswith("frontend 3000 got back 400 of its envelopes, frontend 1000 1,600")


def test_frontends_beyond_what_replicas_executed_fail(tmp_path):
    # 3 x 5 reports of 1,000 = 15,000 envelopes back, and no replica reached 10,000
    _, problems = _run(fig7_point(tmp_path, reports={1000: 5, 2000: 5, 3000: 5}, every=1000), "bft-frontends")
    assert any(p.startswith("the frontends got back 15,000 envelopes, more than a reply quorum") for p in problems)
    # with every replica past 10,000 the same samples are covered
    _, problems = _run(fig7_point(tmp_path / "b", reports={1000: 5, 2000: 5, 3000: 5}, every=1000, node_reports=1),
                       "bft-frontends")
    assert problems == []


@pytest.mark.parametrize("breakage, expected", [
    ("no_reports", "frontend 2000 (virginia) made no complete latency report"),
    ("no_frontend_log", "frontend 2000's log logs/virginia/testnodes-2000.log is missing or empty"),
    ("no_node_log", "replica 2's log logs/sydney/node-2.log is missing or empty"),
    ("no_frontend_started", "no frontend (bft.TestNodes) was started"),
    ("no_node_started", "no replica (bft.BFTNode) was started"),
    ("no_settings", "the point records no usable bftsmart_geo_latency_every"),
])
def test_every_missing_fig7_input_fails(tmp_path, breakage, expected):
    point = fig7_point(tmp_path, settings=breakage != "no_settings")
    if breakage == "no_reports":
        _write(point / "logs" / "virginia" / "testnodes-2000.log", _testnodes(2000, 0))
    elif breakage == "no_frontend_log":
        (point / "logs" / "virginia" / "testnodes-2000.log").unlink()
    elif breakage == "no_node_log":
        (point / "logs" / "sydney" / "node-2.log").unlink()
    elif breakage == "no_frontend_started":
        for f in point.glob("raw/*/affinity_testnodes-*.csv"):
            f.unlink()
    elif breakage == "no_node_started":
        for f in point.glob("raw/*/affinity_node-*.csv"):
            f.unlink()
    _, problems = _run(point, "bft-frontends")
    assert any(p.startswith(expected) for p in problems), problems


def test_delivery_lagging_ordering_is_a_capacity_limit_and_nothing_else_is(tmp_path):
    # validity.yaml capacity_limits (harness/capacity.py), held against the check's own problems as
    # harness/validity.py prefixes them: the receivers short of node 0's count, node 0 counting on after the stop
    from harness import capacity
    limits = capacity.load("bftsmart-orderer")

    def classify(point):
        return capacity.classify(limits, [f"independent check bft-receivers: {p}" for p in _run(point)[1]])
    short = fig6_point(tmp_path / "a", receivers=(1000, 2000))
    _write(short / "logs" / "client" / "latency_2000.log", _latency(500))
    assert classify(short)["limits"] == ["delivery_lags_ordering"]
    assert classify(fig6_point(tmp_path / "b", at_stop_reports=5, last_block=490))["limits"] == ["delivery_lags_ordering"]
    # replicas short of node 0, a receiver beyond a quorum, a run too short to confirm: not the machine's limit
    assert classify(fig6_point(tmp_path / "c", replicas=[10, 5, 5])) is None
    assert classify(fig6_point(tmp_path / "d", last_block=3000)) is None
    assert classify(fig6_point(tmp_path / "e", leader=2, last_block=200)) is None
