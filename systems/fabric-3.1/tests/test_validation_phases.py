"""Javaid et al.'s validation-phase metrics on the v2.5 / v3.1 peer's log (systems/fabric-3.1/validation_phases.py):
every value checked against the lines it comes from, on a real v3.1.5 smoke log and on a written one, and the
negative controls (a block's phase line missing, a block missing between two, delivered codes missing or of
another count): each leaves the point without the metric (NaN), never a made-up phase time."""

import math
from pathlib import Path

import pandas as pd
import pytest

from harness import analyze
from harness.systems import plugin

plugin("fabric-3.1")  # registers the package fabricrepro_systems.fabric_3_1
from fabricrepro_systems.fabric_3_1 import logs as L  # noqa: E402
from fabricrepro_systems.fabric_3_1 import validation_phases as V  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
CH = "mychannel"


def _block_lines(n: int, t0_ms: int, txs: int, validate: int, sv: int, bpc: int, sc: int, total: int,
                 received: bool = True, validated: bool = True) -> list[str]:
    def stamp(ms: int) -> str:
        return f"2026-11-28 15:48:{ms // 1000:02d}.{ms % 1000:03d} UTC"
    lines = []
    if received:
        lines.append(f"{stamp(t0_ms)} 0028 INFO [gossip.privdata] StoreBlock -> Received block [{n}] from buffer channel={CH}")
    if validated:
        lines.append(f"{stamp(t0_ms + validate)} 0029 INFO [committer.txvalidator] Validate -> [{CH}] Validated block [{n}] in {validate}ms")
    lines.append(f"{stamp(t0_ms + validate + total + 3)} 002a INFO [kvledger] commit -> [{CH}] Committed block [{n}] with {txs} "
                 f"transaction(s) in {total}ms (state_validation={sv}ms block_and_pvtdata_commit={bpc}ms "
                 f"state_commit={sc}ms) commitHash=[0a{n:02x}]")
    return lines


# three blocks of 4 transactions, 100 ms apart; block n: Validate 10+n ms, state validation 3, block store 5+n,
# state commit 2, commit total 12+n (history etc. 2 ms), commit line 3 ms after the total's end
BLOCKS = [(n, 1000 + 100 * (n - 3), 4, 10 + n, 3, 5 + n, 2, 12 + n) for n in (3, 4, 5)]


def _log(**missing) -> str:
    lines = []
    for b in BLOCKS:
        lines += _block_lines(*b, received=b[0] != missing.get("no_receive"), validated=b[0] != missing.get("no_validate"))
    return "\n".join(lines) + "\n"


def _codes(blocks=(3, 4, 5), per_block=4, invalid=((4, 1),)) -> pd.DataFrame:
    rows = [{"block_number": n, "tx_index": i,
             "validation_code": "MVCC_READ_CONFLICT" if (n, i) in invalid else "VALID"}
            for n in blocks for i in range(per_block)]
    return pd.DataFrame(rows)


def _metrics(phases: pd.DataFrame, codes: pd.DataFrame) -> dict:
    return {m.name: m.compute(phases, codes) for m in V.METRICS}


def test_each_metric_is_its_lines_mean():
    phases = L.parse_peer_log(_log(), host="peer0")
    got = _metrics(phases, _codes())
    assert got["vscc_latency_ms"] == pytest.approx((13 + 14 + 15) / 3)
    assert got["statedb_read_mvcc_latency_ms"] == pytest.approx(3)
    assert got["ledger_write_latency_ms"] == pytest.approx((8 + 9 + 10) / 3)
    assert got["statedb_write_latency_ms"] == pytest.approx(2)
    # receive to commit line: validate + total + 3 ms; others = that - (validate + sv + bpc + sc) = total + 3 - 10 - n
    assert got["block_validation_latency_ms"] == pytest.approx(sum(2 * (10 + n) + 5 for n in (3, 4, 5)) / 3)
    assert got["others_latency_ms"] == pytest.approx(sum((12 + n + 3) - (3 + 5 + n + 2) for n in (3, 4, 5)) / 3)
    # commit lines at 1000+13+15+3=1031, 1100+14+16+3=1133, 1200+15+17+3=1235 ms; blocks 4, 5: 3 + 4 valid
    assert got["commit_throughput_tps"] == pytest.approx(7 / 0.204)
    assert 0 < got["committer_busy_ratio"] < 1


def test_real_v315_smoke_log_gives_every_metric():
    phases = L.parse_peer_log((FIXTURES / "peer-3.1.5-raft-smoke.log").read_text(encoding="utf-8"), host="peer0")
    data = phases[phases["tx_count"] > 0]
    measured = data[data["block_number"] >= 3]  # the smoke's transfers (blocks 0-2: genesis and lifecycle)
    phases = phases.assign(measured=(phases["block_number"] >= 3).astype("int64"))
    codes = pd.DataFrame([{"block_number": n, "tx_index": 0, "validation_code": "VALID"}
                          for n in measured["block_number"]])
    got = _metrics(phases, codes)
    assert got["vscc_latency_ms"] == pytest.approx(measured["validate_ms"].mean())
    assert got["statedb_write_latency_ms"] == pytest.approx(measured["state_commit_ms"].mean())
    assert all(math.isfinite(v) for v in got.values()), got


@pytest.mark.parametrize("missing", [{"no_validate": 4}, {"no_receive": 5}])
def test_a_missing_phase_line_leaves_the_point_without_the_metrics(missing):
    phases = L.parse_peer_log(_log(**missing), host="peer0")
    assert all(math.isnan(v) for v in _metrics(phases, _codes()).values())
    # logs.py's own means skip such a block; these do not
    assert math.isfinite(L.mean_ms(phases, "validate_ms"))


def test_a_block_missing_between_two_leaves_the_point_without_the_metrics():
    text = "\n".join(line for line in _log().splitlines() if "block [4]" not in line)
    phases = L.parse_peer_log(text, host="peer0")
    assert all(math.isnan(v) for v in _metrics(phases, _codes((3, 5))).values())


@pytest.mark.parametrize("codes", [
    _codes((3, 4)),                 # block 5's codes were never delivered
    _codes((3, 4, 5), per_block=3),  # a block's delivered count disagrees with the logged one
    _codes((3, 4, 5, 6)),            # a delivered block the log lacks
    pd.DataFrame(columns=["block_number", "tx_index", "validation_code"]),
])
def test_codes_that_do_not_match_the_log_leave_the_point_without_the_metrics(codes):
    phases = L.parse_peer_log(_log(), host="peer0")
    assert all(math.isnan(v) for v in _metrics(phases, codes).values())


def test_registered_under_validation_opts_names_for_both_releases():
    names = {m.name for m in V.METRICS}
    assert {"commit_throughput_tps", "vscc_latency_ms", "ledger_write_latency_ms", "statedb_write_latency_ms",
            "others_latency_ms", "block_validation_latency_ms"} <= names
    assert "mvcc_latency_ms" not in names and "statedb_read_latency_ms" not in names  # not timed apart on v3.1
    for system in ("fabric-3.1", "fabric-2.5"):
        assert names <= {m.name for m in plugin(system).metrics()}
    # through the harness: a point's tables give the metrics by name (validation-opt's own need table phases)
    phases = L.parse_peer_log(_log(), host="peer0")
    got = analyze.compute_all({L.TABLE: phases, "block_txs": _codes()})
    assert got["commit_throughput_tps"] == pytest.approx(7 / 0.204)
    assert got["vscc_latency_ms"] == pytest.approx(14)
