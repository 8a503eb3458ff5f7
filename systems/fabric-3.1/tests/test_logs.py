"""The v2.5 / v3.1 peer's per-block phase times (systems/fabric-3.1/logs.py) on golden samples of real peer
logs (tests/fixtures/, its README says from which smoke), the negative controls, and the table and metrics
as the harness registers them (the v1.x phase metrics' names, from table fabric3_block_phases)."""

import json
import math
import shutil
from pathlib import Path

import pytest

from harness import analyze, collect
from harness.errors import HarnessError
from harness.metrics import METRICS
from harness.systems import plugin

plugin("fabric-3.1")  # registers the package fabricrepro_systems.fabric_3_1
from fabricrepro_systems.fabric_3_1 import logs as L  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"


def _read(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("release", ["3.1.5", "2.5.16"])
def test_real_log_gives_one_row_per_committed_block(release):
    df = L.parse_peer_log(_read(f"peer-{release}-raft-smoke.log"), host="peer0")
    assert list(df.columns) == list(L.COLUMNS)
    assert df["block_number"].tolist() == list(range(15)) and (df["tx_count"] == 1).all()
    assert set(df["channel"]) == {"mychannel"} and set(df["host"]) == {"peer0"}
    # the genesis block is committed directly by the join: no Received/Validated line, no commit hash
    genesis = df.iloc[0]
    assert (genesis["validate_ms"], genesis["received_at_ns"], genesis["validated_at_ns"]) == (-1, -1, -1)
    assert genesis["commit_hash"] == ""
    later = df.iloc[1:]
    assert (later["validate_ms"] >= 0).all() and (later["commit_hash"].str.len() == 64).all()
    # the three lines of a block in the order the peer runs them: StoreBlock, Validate, kvledger commit
    assert (later["received_at_ns"] <= later["validated_at_ns"]).all()
    assert (later["validated_at_ns"] <= later["committed_at_ns"]).all()
    # the phases are whole ms; their sum is at most the commit's total plus the truncation of each
    parts = later["state_validation_ms"] + later["block_and_pvtdata_commit_ms"] + later["state_commit_ms"]
    assert (parts <= later["commit_ms"] + 3).all()


def test_golden_values_of_the_v31_smoke():
    df = L.parse_peer_log(_read("peer-3.1.5-raft-smoke.log")).set_index("block_number")
    # 2026-11-28 15:44:55.041/.042/.045 UTC; "in 3ms (state_validation=1ms block_and_pvtdata_commit=1ms state_commit=0ms)"
    row = df.loc[2]
    assert row[["validate_ms", "state_validation_ms", "block_and_pvtdata_commit_ms", "state_commit_ms",
                "commit_ms"]].tolist() == [0, 1, 1, 0, 3]
    assert row["received_at_ns"] == 1795880695041000000
    assert row["validated_at_ns"] == 1795880695042000000 and row["committed_at_ns"] == 1795880695045000000
    assert row["commit_hash"].startswith("a9459b4afc5283")
    assert df.loc[1, "validate_ms"] == 1


@pytest.mark.parametrize("fixture, why", [
    ("peer-3.1.5-no-commit.log", "no 'Committed block"),
    # Fabric v1.2's untimed line is not the v2.5/v3.1 form
    ("peer-1.2.0-untimed.log", "without v2.5/v3.1's phase times"),
])
def test_log_without_phase_lines_fails_closed(fixture, why):
    with pytest.raises(HarnessError, match=why):
        L.parse_peer_log(_read(fixture))
    with pytest.raises(HarnessError):
        L.parse_peer_log("")


def test_changed_or_repeated_lines_fail_closed():
    line = ("2026-11-28 15:44:55.045 UTC 010a INFO [kvledger] commit -> [mychannel] Committed block [2] with 1 "
            "transaction(s) in 3ms (state_validation=1ms block_and_pvtdata_commit=1ms state_commit=0ms) commitHash=[ab]")
    assert len(L.parse_peer_log(line)) == 1
    with pytest.raises(HarnessError, match="committed twice"):
        L.parse_peer_log(line + "\n" + line)
    with pytest.raises(HarnessError, match="Validated block"):
        L.parse_peer_log("2026-11-28 15:44:55.042 UTC 00f7 INFO [committer.txvalidator] Validate -> "
                         "[mychannel] Validated block [2] in 0.4ms\n" + line)


def test_timestamps_other_zones_and_json():
    line = ("{} [kvledger] commit -> [c] Committed block [7] with 2 transaction(s) in 5ms (state_validation=1ms "
            "block_and_pvtdata_commit=2ms state_commit=1ms) commitHash=[]")
    utc = L.parse_peer_log(line.format("2026-11-28 15:00:00.250 UTC 0001 INFO"))["committed_at_ns"].iloc[0]
    assert L.parse_peer_log(line.format("2026-11-28 16:00:00.250 +0100 0001 INFO"))["committed_at_ns"].iloc[0] == utc
    # an abbreviation names no fixed offset: no time rather than a wrong one
    assert L.parse_peer_log(line.format("2026-11-28 16:00:00.250 CET 0001 INFO"))["committed_at_ns"].iloc[0] == -1
    message = line.format("").strip().split(" -> ", 1)[1]
    js = json.dumps({"level": "info", "ts": utc / 1e9, "name": "kvledger", "msg": message})
    assert L.parse_peer_log(js)["committed_at_ns"].iloc[0] == utc


def _point(tmp_path: Path, logs: dict, first_block: int | None = None) -> Path:
    point = tmp_path / "points" / "p__r0"
    for host, fixture in logs.items():
        (point / "logs" / host).mkdir(parents=True)
        shutil.copy(FIXTURES / fixture, point / "logs" / host / L.PEER_LOG)
    point.mkdir(parents=True, exist_ok=True)
    if first_block is not None:
        (point / "measured.json").write_text(json.dumps({"schema_version": 1, "first_block": first_block}))
    return point


def test_point_table_and_measured_window(tmp_path):
    assert L.phases_table(tmp_path) is None  # another system's point: no v2.5/v3.1 peer log
    point = _point(tmp_path, {"peer0": "peer-3.1.5-raft-smoke.log", "peer1": "peer-2.5.16-raft-smoke.log"},
                   first_block=4)
    df = L.phases_table(point)
    assert sorted(set(df["host"])) == ["peer0", "peer1"] and len(df) == 30
    assert df.loc[df["measured"] == 1, "block_number"].min() == 4 and (df["measured"] == 1).sum() == 22
    # the metrics count only the measured window's blocks (as load_measured cuts the core's blocks table)
    measured = df[df["block_number"] >= 4]
    assert L.mean_ms(df, "state_validation_ms") == pytest.approx(measured["state_validation_ms"].mean())


def test_a_point_whose_peer_log_has_no_phase_lines_fails_closed(tmp_path):
    point = _point(tmp_path, {"peer0": "peer-3.1.5-no-commit.log"})
    with pytest.raises(HarnessError, match=r"peer0/fabric3_peer\.log"):
        L.phases_table(point)


def test_harness_registers_the_table_and_the_v1x_phase_metrics(tmp_path):
    for system in ("fabric-3.1", "fabric-2.5"):  # fabric-2.5 extends fabric-3.1: the same table object
        assert L.PHASES_TABLE in plugin(system).tables()
    assert collect.tables()[L.TABLE] is L.PHASES_TABLE
    point = _point(tmp_path, {"peer0": "peer-3.1.5-raft-smoke.log"}, first_block=3)
    raw = collect.raw_tables(point)
    assert set(raw) == {L.TABLE} and len(raw[L.TABLE]) == 15
    metrics = analyze.compute_all(raw)
    # the v1.x phase metrics by their names (harness/metrics.py PHASES; history_commit has no counterpart)
    for name in ("vscc_ms", "mvcc_ms", "block_commit_ms", "state_commit_ms", "block_latency_ms"):
        assert name in METRICS and name in metrics and not math.isnan(metrics[name]), name
    assert "history_commit_ms" not in metrics
    assert metrics["vscc_ms"] == 0.0 and metrics["block_commit_ms"] == 0.0  # blocks 3-14: every phase under 1 ms
    assert metrics["kvledger_commit_ms"] == pytest.approx(5 / 12)  # "in Xms" of blocks 3-14: 0,0,0,0,1,0,0,1,0,1,1,1
    assert 0 < metrics["block_latency_ms"] < 5
    units = {k: m.unit for k, m in analyze.all_metrics().items() if k.endswith(f"@{L.TABLE}")}
    assert set(units) == {f"{p}_ms@{L.TABLE}" for p in ("vscc", "mvcc", "block_commit", "state_commit", "block_latency")} \
        | {f"throughput_tps@{L.TABLE}"}
    assert set(units.values()) == {"ms", "tx/s"}


def _phases(committed_s: list[float], txs: int = 100):
    import pandas as pd
    return pd.DataFrame({"block_number": range(3, 3 + len(committed_s)), "tx_count": txs, "measured": 1,
                         "committed_at_ns": [int(t * 1e9) for t in committed_s]})


def _codes(valid_per_block: dict, txs: int = 100):
    import pandas as pd
    rows = [{"host": "client", "block_number": b, "tx_index": i,
             "validation_code": "VALID" if i < valid else "MVCC_READ_CONFLICT"}
            for b, valid in valid_per_block.items() for i in range(txs)]
    return pd.DataFrame(rows)


def test_table_1s_metric_joins_the_commit_lines_with_the_delivered_codes():
    phases = _phases([10.0, 11.0, 12.0])
    # the first block only opens the interval: (90 + 80) valid over 2 s
    assert L.peer_throughput_tps(phases, _codes({3: 100, 4: 90, 5: 80})) == pytest.approx(85.0)
    # negative controls: a block without its codes, or codes that disagree with the logged count, give no value
    assert math.isnan(L.peer_throughput_tps(phases, _codes({3: 100, 4: 90})))
    assert math.isnan(L.peer_throughput_tps(phases, _codes({3: 100, 4: 90, 5: 80}, txs=99)))
    assert math.isnan(L.peer_throughput_tps(phases, None))
