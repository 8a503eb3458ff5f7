"""FastFabric's Fig. 6 on v3.1's committer, the driver committer-catchup (systems/fabric-3.1/catchup.py): the
catch-up peer's core.yaml, its table from its log, the metric run_throughput_tps and the rules it rests on (each
with a negative control: a rule that can fail), the per-peer log budgets of the mutation control point, and the
catalogue's experiment fig6-revisit-v31. Fast (no build, no network; under 2 s): the end-to-end run of the driver
is `invoke reproduce --paper fastfabric --experiment fig6-revisit-v31 --build upstream` (README, "FastFabric's
peer on v3.1"), behind FABRICREPRO_BUILD_TODAYS_FABRIC=all in test_catchup_point_end_to_end below."""

import json
import math
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from harness import analyze, catalogue, logscan, validity
from harness.systems import plugin

plugin("fabric-3.1")  # registers the package fabricrepro_systems.fabric_3_1
from fabricrepro_systems.fabric_3_1 import catchup as C  # noqa: E402
from fabricrepro_systems.fabric_3_1 import logs as L  # noqa: E402
from fabricrepro_systems.fabric_3_1 import network  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
FIXTURES = Path(__file__).parent / "fixtures"
MS = 1_000_000
T0 = 1_764_000_000_000 * MS  # a UTC instant in whole ms, as the log's timestamps are


# ------------------------------------------------------------------ tables as the logs give them

def phases(blocks, host="peer0", first_measured=3):
    """A phase table: ``blocks`` = [(number, txs, received_ms, committed_ms)] after T0."""
    rows = [{"host": host, "channel": "mychannel", "block_number": n, "tx_count": k, "validate_ms": 5,
             "state_validation_ms": 1, "block_and_pvtdata_commit_ms": 2, "state_commit_ms": 1, "commit_ms": 5,
             "received_at_ns": T0 + r * MS if r is not None else -1, "validated_at_ns": -1,
             "committed_at_ns": T0 + c * MS if c is not None else -1, "commit_hash": "ab",
             "measured": int(n >= first_measured)} for n, k, r, c in blocks]
    return pd.DataFrame(rows, columns=list(L.COLUMNS))


def codes(blocks, invalid=()):
    """block_txs: ``blocks`` = [(number, txs)]; ``invalid`` = [(number, index)] not VALID."""
    return pd.DataFrame([{"block_number": n, "tx_index": i, "tx_id": f"t{n}-{i}",
                          "validation_code": "ENDORSEMENT_POLICY_FAILURE" if (n, i) in invalid else "VALID"}
                         for n, k in blocks for i in range(k)])


# peer0 committed the transfer blocks 3-5 by t = 300 ms; the catch-up peer received block 3 at 1,000 ms and
# committed blocks 3, 4, 5 at 1,040, 1,080 and 1,100 ms: 300 valid transfers in 100 ms
PEER0 = phases([(0, 1, None, 0), (1, 1, 10, 20), (2, 2, 30, 40), (3, 100, 100, 150), (4, 100, 160, 220),
                (5, 100, 230, 300)])
CATCHUP = phases([(0, 1, None, 900), (1, 1, 910, 920), (2, 2, 930, 990), (3, 100, 1000, 1040),
                  (4, 100, 1041, 1080), (5, 100, 1081, 1100)], host="peer0")
DELIVERED = codes([(3, 100), (4, 100), (5, 100)])


def test_run_throughput_is_valid_transfers_over_first_entry_to_last_commit():
    assert C.catchup_problems(CATCHUP, DELIVERED, PEER0) == []
    assert C.catchup_throughput_tps(CATCHUP, DELIVERED, PEER0) == pytest.approx(300 / 0.100)
    # only VALID codes count (a mutation control point's invalid ones do not)
    two_invalid = codes([(3, 100), (4, 100), (5, 100)], invalid={(3, 0), (5, 99)})
    assert C.catchup_throughput_tps(CATCHUP, two_invalid, PEER0) == pytest.approx(298 / 0.100)
    # setup blocks (before measured.json's first block) are not timed: the span starts at block 3's receive line
    assert C.catchup_throughput_tps(CATCHUP, DELIVERED, PEER0) != pytest.approx(300 / 0.200)


def test_blocks_not_made_before_the_catch_up_peer_began_give_no_number():
    # negative control: the catch-up peer received block 3 (at 250 ms) before peer0 committed block 5 (300 ms),
    # so it may have waited for the orderers to cut blocks: not a commit of pre-made blocks
    early = phases([(3, 100, 250, 260), (4, 100, 261, 280), (5, 100, 301, 320)])
    problems = C.catchup_problems(early, DELIVERED, PEER0)
    assert any("not all made before it began" in p for p in problems)
    assert math.isnan(C.catchup_throughput_tps(early, DELIVERED, PEER0))
    # and without peer0's commit times there is no proof either way: no number
    assert math.isnan(C.catchup_throughput_tps(CATCHUP, DELIVERED, None))
    no_last = PEER0[PEER0["block_number"] != 5]
    assert any("did not log the commit of the last transfer block" in p
               for p in C.catchup_problems(CATCHUP, DELIVERED, no_last))


def test_a_block_missing_or_miscounted_gives_no_number():
    # a transfer block delivered but not committed by the catch-up peer (its log ends early)
    short = CATCHUP[CATCHUP["block_number"] != 5]
    assert any("are not the catch-up peer's" in p for p in C.catchup_problems(short, DELIVERED, PEER0))
    assert math.isnan(C.catchup_throughput_tps(short, DELIVERED, PEER0))
    # a gap in the catch-up peer's blocks
    gap = CATCHUP[CATCHUP["block_number"] != 4]
    assert any("gaps" in p for p in C.catchup_problems(gap, DELIVERED, PEER0))
    # a block whose logged count is not the delivered one
    wrong = codes([(3, 100), (4, 99), (5, 100)])
    assert any("other transaction counts" in p for p in C.catchup_problems(CATCHUP, wrong, PEER0))
    assert math.isnan(C.catchup_throughput_tps(CATCHUP, wrong, PEER0))
    # no delivered codes, no count; no timestamp, no time
    assert math.isnan(C.catchup_throughput_tps(CATCHUP, DELIVERED.iloc[0:0], PEER0))
    untimed = CATCHUP.copy()
    untimed.loc[untimed["block_number"] == 3, "received_at_ns"] = -1
    assert any("lacks the timestamp" in p for p in C.catchup_problems(untimed, DELIVERED, PEER0))
    assert C.catchup_problems(None, DELIVERED, PEER0) and C.catchup_problems(CATCHUP.iloc[0:0], DELIVERED, PEER0)


def test_the_metric_replaces_the_cores_under_figure_6s_name(tmp_path):
    metrics = analyze.all_metrics()
    ours = [m for m in metrics.values() if m.name == "run_throughput_tps" and C.TABLE in m.tables]
    assert len(ours) == 1
    computed = analyze.compute_all({C.TABLE: CATCHUP, "block_txs": DELIVERED, L.TABLE: PEER0})
    assert computed["run_throughput_tps"] == pytest.approx(3000.0)
    assert computed["catchup_commit_ms"] == pytest.approx(5.0)
    # a committer-bench point (table blocks, no catch-up table) keeps the core's
    core = metrics["run_throughput_tps"]
    assert core.tables == ("blocks",)
    blocks = pd.DataFrame({"block_number": [1, 2], "tx_count": [100, 100], "valid_count": [100, 100],
                           "received_ns": [0, 10 * MS], "committed_ns": [10 * MS, 100 * MS]})
    assert core.compute(blocks) == pytest.approx(2000.0)


def test_table_comes_from_the_catch_up_peers_log_only(tmp_path):
    point = tmp_path / "point"
    (point / "logs" / "peer").mkdir(parents=True)
    assert C.phases_table(point) is None  # a point without a catch-up peer (every other driver's)
    shutil.copy(FIXTURES / "peer-3.1.5-raft-smoke.log", point / "logs" / "peer" / C.PEER_LOG)
    (point / "measured.json").write_text(json.dumps({"schema_version": 1, "first_block": 5}))
    table = C.phases_table(point)
    assert table["block_number"].tolist() == list(range(15)) and set(table["host"]) == {"peer"}
    assert table.loc[table["block_number"] >= 5, "measured"].eq(1).all()
    assert table.loc[table["block_number"] < 5, "measured"].eq(0).all()
    assert L.phases_table(point) is None  # peer0's table reads peer0's log alone, as before


def test_core_yaml_is_peer0s_with_its_own_ports_directory_and_no_gossip():
    peer0 = {"peer": {"id": "peer0.org1.example.com", "listenAddress": "0.0.0.0:17080", "address": "h:17080",
                      "chaincodeListenAddress": "0.0.0.0:17082", "chaincodeAddress": "h:17082",
                      "fileSystemPath": "/w/fabric3_peer/data/production",
                      "mspConfigPath": "/w/fabric3_peer/crypto/peers/peer0/msp",
                      "tls": {"cert": {"file": "/w/fabric3_peer/crypto/tls/server.crt"}},
                      "gossip": {"bootstrap": "h:17080", "endpoint": "h:17080", "externalEndpoint": "h:17080",
                                 "useLeaderElection": False, "orgLeader": True,
                                 "pvtData": {"pullRetryThreshold": "60s", "reconciliationEnabled": True}}},
             "operations": {"listenAddress": "0.0.0.0:17083"},
             "chaincode": {"externalBuilders": [{"name": "ccaas", "path": "/w/fabric3_peer/ccaas_builder"}]},
             "other": "/w/fabric3_peer_not_a_child"}
    doc = C.core_yaml(peer0, "/w/fabric3_peer", "/w/fabric3_catchup_peer", "h", "0.0.0.0", 17110)
    assert doc["peer"]["address"] == "h:17110" and doc["peer"]["listenAddress"] == "0.0.0.0:17110"
    assert doc["peer"]["chaincodeAddress"] == "h:17112" and doc["operations"]["listenAddress"] == "0.0.0.0:17113"
    assert doc["peer"]["gossip"]["bootstrap"] == doc["peer"]["gossip"]["externalEndpoint"] == "h:17110"
    assert doc["peer"]["gossip"]["pvtData"] == {"pullRetryThreshold": C.PVT_PULL_RETRY, "reconciliationEnabled": False}
    assert doc["peer"]["fileSystemPath"] == "/w/fabric3_catchup_peer/data/production"
    assert doc["peer"]["tls"]["cert"]["file"] == "/w/fabric3_catchup_peer/crypto/tls/server.crt"
    assert doc["chaincode"]["externalBuilders"][0]["path"] == "/w/fabric3_catchup_peer/ccaas_builder"
    assert doc["other"] == "/w/fabric3_peer_not_a_child"  # a prefix of a name is not its directory
    assert peer0["peer"]["address"] == "h:17080"  # peer0's own is left as it was
    # negative controls: the same directory as peer0's, and a key the release does not read
    with pytest.raises(ValueError):
        C.core_yaml(peer0, "/w/fabric3_peer", "/w/fabric3_peer", "h", "0.0.0.0", 17110)
    del peer0["peer"]["gossip"]["pvtData"]["reconciliationEnabled"]
    with pytest.raises(KeyError):
        C.core_yaml(peer0, "/w/fabric3_peer", "/w/fabric3_catchup_peer", "h", "0.0.0.0", 17110)


def test_ports_do_not_meet_any_layouts_nodes():
    for release, consensus in (("3.1", "etcdraft"), ("3.1", "BFT"), ("2.5", "etcdraft")):
        lay = network.layout(release, consensus, base_port=17050)
        used = {p for n in [*lay.orderers, lay.peer] for p in (n.port, n.cluster_port, n.admin_port,
                                                                n.operations_port, n.chaincode_port) if p}
        used.add(int(lay.chaincode_address.rsplit(":", 1)[1]))
        ours = {17050 + C.PORT_OFFSET + k for k in (0, 2, 3)}
        assert not used & ours
    preflight = yaml.safe_load((REPO / "systems/fabric-3.1/roles/fabric3_catchup_peer/meta/preflight.yml").read_text())
    assert preflight["ports"][0]["offsets"] == [C.PORT_OFFSET, C.PORT_OFFSET + 2, C.PORT_OFFSET + 3]


# ------------------------------------------------------------------ validity: evidence and per-peer log budgets

def _point_with_logs(tmp_path, peer0_lines, catchup_lines):
    point = tmp_path / "point"
    (point / "logs" / "peer").mkdir(parents=True)
    line = ("2026-11-28 15:44:55.041 UTC 0001 WARN [vscc] x -> validation of endorsement policy for chaincode "
            "money-transfer in tx 7:3 failed: signature set did not satisfy policy\n")
    (point / "logs" / "peer" / "fabric3_peer.log").write_text(line * peer0_lines)
    (point / "logs" / "peer" / "fabric3_catchup_peer.log").write_text(line * catchup_lines)
    return point


def test_each_peer_log_has_the_mutations_budget_of_its_own(tmp_path):
    rules = validity.load_rules("fabric-3.1")
    decl = rules["evidence"]["committer-catchup"]["upstream"]
    assert decl["codes"] == "ledger" and decl["validators"] == ["fabric3_catchup_peer"]
    assert {"fabric3_peer", "fabric3_catchup_peer"} <= set(decl["ledgers"]) and "fabric3_catchup_phases" in decl["tables"]
    mutations = pd.DataFrame({"block_number": [7], "tx_index": [3], "tx_id": ["t"], "mutation": ["bad_endorsement"]})
    # one forged endorsement: 4 lines in each peer's log, each within its own budget of 4
    _, problems = logscan.scan_logs(_point_with_logs(tmp_path / "a", 4, 4), rules["log_patterns"], mutations)
    assert problems == []
    # negative controls: a fifth line in either log is unexplained
    _, problems = logscan.scan_logs(_point_with_logs(tmp_path / "b", 4, 5), rules["log_patterns"], mutations)
    assert any("catchup_endorsement_policy_failure" in p for p in problems)
    _, problems = logscan.scan_logs(_point_with_logs(tmp_path / "c", 5, 4), rules["log_patterns"], mutations)
    assert any(p.startswith("5 log line(s) of endorsement_policy_failure") for p in problems)
    # and without the mutation, any line fails
    _, problems = logscan.scan_logs(_point_with_logs(tmp_path / "d", 0, 1), rules["log_patterns"], None)
    assert problems


def test_a_point_without_the_catch_up_peers_evidence_fails(tmp_path):
    decl = validity.load_rules("fabric-3.1")["evidence"]["committer-catchup"]["upstream"]
    point = tmp_path / "point"
    (point / "raw" / "peer").mkdir(parents=True)
    (point / "logs" / "peer").mkdir(parents=True)
    for component in ("fabric3_peer", "fabric3_catchup_peer"):
        (point / "raw" / "peer" / f"affinity_{component}.csv").write_text("pid,cpus\n1,0-1\n")
    (point / "logs" / "peer" / "fabric3_peer.log").write_text("x\n")
    problems = validity.required_evidence(point, decl, {})
    assert any("fabric3_catchup_peer on host peer" in p and "block files" in p for p in problems)
    assert any("the log of fabric3_catchup_peer on host peer is missing" in p for p in problems)
    assert any("fabric3_catchup_phases" in p for p in problems)


# ------------------------------------------------------------------ the catalogue's experiment

def test_fig6_revisit_is_ours_with_questions_that_can_go_either_way():
    paper = catalogue.load_paper("fastfabric")
    exp = paper.experiment("fig6-revisit-v31")
    assert "ours, not the paper's" in exp["title"] and exp["published"] == [] and exp["claims"] == []
    assert all("ours, not the paper's" in d["what"] for d in exp["deviations"])
    assert exp["metric"] == "run_throughput_tps" and exp["driver"] == "committer-catchup"
    drivers = {v["id"]: v.get("driver", exp["driver"]) for v in exp["variants"]}
    assert drivers == {"fabric-1.2": "committer-bench", "opt-p3": "committer-bench", "fabric-3.1": "committer-catchup"}
    p3 = next(v for v in exp["variants"] if v["id"] == "opt-p3")
    fig6 = paper.experiment("fig6-peer-throughput")
    assert p3["switches"] == next(v for v in fig6["variants"] if v["id"] == "opt-p3")["switches"]
    questions = {q["id"]: q for q in exp["questions"]}
    assert set(questions) == {"v31-over-12", "v31-reaches-p3", "p3-over-12"}
    for q in questions.values():
        assert q["numerator"]["variant"] != q["denominator"]["variant"] and q.get("threshold", 1.0) > 0
    drivers_31 = yaml.safe_load((REPO / "systems/fabric-3.1/upstream.yaml").read_text())["drivers"]
    assert drivers_31["committer-catchup"]["playbook"] == "fabric3-committer-catchup.yml"
    assert (REPO / "systems/fabric-3.1/playbooks/fabric3-committer-catchup.yml").is_file()


@pytest.mark.integration
@pytest.mark.network
@pytest.mark.skipif(os.environ.get("FABRICREPRO_BUILD_TODAYS_FABRIC") != "all",
                    reason="the committer-catchup driver's end-to-end run (its control point and one point of the v3.1 "
                           "network, transfers and catch-up: about 45-50 s each here, 2 min with the machine's lock) runs "
                           "with FABRICREPRO_BUILD_TODAYS_FABRIC=all: CI's time budget")
def test_catchup_point_end_to_end(fabric31_build, tmp_path):
    import subprocess
    import sys
    transfers = 400
    env = {**os.environ, "FABRICREPRO_RESULTS": str(tmp_path / "results"),
           "FABRICREPRO_REPORTS": str(tmp_path / "reports")}
    r = subprocess.run([sys.executable, "-m", "invoke", "reproduce", "--paper", "fastfabric", "--experiment",
                        "fig6-revisit-v31", "--build", "upstream", "--variant", "fabric-3.1",
                        "--set", f"transactions={transfers}"],
                       capture_output=True, text=True, timeout=900, cwd=REPO, env=env)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    (run,) = [d for d in (tmp_path / "results" / "fastfabric" / "fig6-revisit-v31").iterdir() if not d.is_symlink()]
    summaries = {p.name: json.loads((p / "summary.json").read_text()) for p in sorted((run / "points").iterdir())}
    assert sorted(summaries) == ["control__fabric-3.1__r0", "fabric-3.1__r0"], sorted(summaries)
    for name, s in summaries.items():
        v = s["validity"]
        assert s["status"] == "complete" and v["evidence"] == "ledger-proven" and v["problems"] == [], (name, v)
        # our verifier (v2 rules) re-derived both peers' kept ledgers, each in agreement
        assert sorted(c["ledger"].split("/")[1] for c in v["verifier"]) == ["fabric3_catchup_peer", "fabric3_peer"]
        assert all(c["status"] == "agreed" and c["rules"] == "v2" for c in v["verifier"]), v["verifier"]
        assert "fabric3_catchup_peer" in v["counts_from"] and "fabric3_peer" in v["counts_from"]
        assert v["work"]["status"] == "passed" and v["work"]["components"] == ["fabric3_catchup_peer"]
    control = summaries["control__fabric-3.1__r0"]["validity"]
    # the control's forged endorsements and stale reads in both peers' logs, each within its own budget
    assert control["log_counts"]["catchup_endorsement_policy_failure"] == control["log_counts"]["endorsement_policy_failure"] > 0
    measured = summaries["fabric-3.1__r0"]
    # genesis, the lifecycle's approve and commit, 2 creates per transfer, the transfers: all VALID
    assert measured["validity"]["ledger_valid"] == 1 + 2 + 3 * transfers
    assert measured["metrics"]["run_throughput_tps"] > 0
