"""harness/validity.py: counts from the ledger's codes, mutations, log patterns and the work check.

Tables here are small hand-made frames; the end-to-end checks against the
real drivers are in tests/upstream/test_validity_mutations.py.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from harness import REPO_ROOT as REPO, validity
from harness.errors import HarnessError


def codes(rows):
    return pd.DataFrame(rows, columns=["block_number", "tx_index", "tx_id", "validation_code"])


LEDGER = codes([(5, 0, "a", "VALID"), (5, 1, "b", "BAD_CREATOR_SIGNATURE"), (5, 2, "c", "VALID"),
                (6, 0, "d", "VALID"), (6, 1, "e", "MVCC_READ_CONFLICT"), (6, 2, "f", "VALID")])


def driver_blocks(valid):
    return pd.DataFrame({"block_number": [5, 6], "tx_count": [3, 3], "valid_count": valid})


def test_driver_count_equal_to_the_ledger_passes():
    assert validity.cross_check(driver_blocks([2, 2]), LEDGER, "driver's block log", "ledger") == []


def test_driver_count_above_the_ledger_fails_naming_both_counts():
    # FastFabric's peer benchmark on a channel without MSP: every transfer refused, the driver said valid.
    problems = validity.cross_check(driver_blocks([3, 3]), LEDGER, "driver's block log", "ledger")
    assert len(problems) == 1
    assert "counts 6 valid" in problems[0] and "ledger 4" in problems[0] and "first block 5: 3 vs 2" in problems[0]


def test_driver_blocks_unknown_to_the_ledger_cannot_be_checked():
    other = pd.DataFrame({"block_number": [9], "tx_count": [3], "valid_count": [3]})
    assert "cannot be checked" in validity.cross_check(other, LEDGER, "driver's block log", "ledger")[0]


MUTATIONS = pd.DataFrame({"block_number": [5, 6], "tx_index": [1, 1], "tx_id": ["b", "e"],
                          "mutation": ["bad_creator", "stale_read"]})


def test_mutations_with_their_codes_and_the_rest_valid_pass():
    section, problems = validity.mutation_check(MUTATIONS, LEDGER, "ledger")
    assert problems == []
    assert section == {"planned": {"bad_creator": 1, "stale_read": 1}, "invalid_as_planned": 2}


def test_a_mutation_counted_valid_fails():
    ledger = LEDGER.copy()
    ledger.loc[1, "validation_code"] = "VALID"   # the bad creator slipped through
    _, problems = validity.mutation_check(MUTATIONS, ledger, "ledger")
    assert any("1 of 2 corrupted transactions have another code" in p and "bad_creator -> VALID" in p
               for p in problems)


def test_an_untouched_transaction_counted_invalid_fails():
    ledger = LEDGER.copy()
    ledger.loc[0, "validation_code"] = "ENDORSEMENT_POLICY_FAILURE"
    _, problems = validity.mutation_check(MUTATIONS, ledger, "ledger")
    assert any("were not corrupted are invalid" in p for p in problems)


def write_log(point_dir, name, text):
    path = point_dir / "logs" / "localhost" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


PATTERNS = [
    {"name": "bad_creator_signature", "regex": r"BAD_CREATOR_SIGNATURE", "meaning": "creator refused"},
    {"name": "mvcc_read_conflict", "regex": r"MVCC_READ_CONFLICT", "meaning": "stale read",
     "planned_by": "stale_read_fraction"},
]


def test_log_scan_counts_and_fails_on_unexpected_patterns(tmp_path):
    write_log(tmp_path, "peer.log", "ok\nBlock [3] Transaction index [0] marked as invalid ... BAD_CREATOR_SIGNATURE\n"
                                    "x MVCC_READ_CONFLICT\npanic: boom\n")
    write_log(tmp_path, "ansible-run.log", "BAD_CREATOR_SIGNATURE quoted by a command line\n")
    counts, problems = validity.scan_logs(tmp_path, PATTERNS, {})
    assert counts["bad_creator_signature"] == 1 and counts["mvcc_read_conflict"] == 1 and counts["go_panic"] == 1
    assert len(problems) == 3
    assert any(p.startswith("1 log line(s) of bad_creator_signature") and "localhost/peer.log" in p
               for p in problems)


def test_what_a_log_gets_once_the_stop_began_is_not_counted(tmp_path):
    """The process role's stop.sh notes each log's length before it stops anything; a peer's complaint that
    its chaincode went away (written during the stop) is then not a problem, one written before it is."""
    import subprocess

    work = tmp_path / "work"
    (work / "peer").mkdir(parents=True)
    before = "x BAD_CREATOR_SIGNATURE\n"
    (work / "peer" / "peer.log").write_text(before)
    stop_sh = REPO / "playbooks" / "roles" / "process" / "files" / "stop.sh"
    subprocess.run(["sh", str(stop_sh), "1", "--components", str(work), "peer"], check=True, timeout=30)
    with open(work / "peer" / "peer.log", "a") as f:  # as the peer would while its chaincode is stopped
        f.write("panic: the stream is gone\nBAD_CREATOR_SIGNATURE\n")
    point = tmp_path / "point"
    write_log(point, "peer.log", (work / "peer" / "peer.log").read_text())
    (point / "raw" / "localhost").mkdir(parents=True)
    (point / "raw" / "localhost" / "log_bytes_at_stop.csv").write_text((work / "log_bytes_at_stop.csv").read_text())
    assert validity.log_bytes_at_stop(point, "localhost") == {"peer.log": len(before)}
    counts, problems = validity.scan_logs(point, PATTERNS, {})
    assert counts["bad_creator_signature"] == 1 and counts["go_panic"] == 0 and len(problems) == 1


def test_planned_conflicts_are_counted_but_do_not_fail(tmp_path):
    write_log(tmp_path, "peer.log", "x MVCC_READ_CONFLICT\n")
    counts, problems = validity.scan_logs(tmp_path, PATTERNS, {"stale_read_fraction": 0.1})
    assert counts["mvcc_read_conflict"] == 1 and problems == []


def test_rules_extend_their_base_and_refuse_bad_files(tmp_path):
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "validity.yaml").write_text(
        "schema_version: 1\nlog_patterns:\n  - {name: a, regex: 'A', meaning: base}\n"
        "work: {verifies_per_tx: 2, components: [x]}\n")
    (tmp_path / "child").mkdir()
    (tmp_path / "child" / "validity.yaml").write_text(
        "schema_version: 1\nextends: base\nlog_patterns:\n  - {name: b, regex: 'B', meaning: child}\n")
    rules = validity.load_rules("child", tmp_path)
    assert [p["name"] for p in rules["log_patterns"]] == ["a", "b"] and rules["work"]["verifies_per_tx"] == 2
    assert validity.load_rules("none", tmp_path)["log_patterns"] == []
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "validity.yaml").write_text("schema_version: 1\nlog_patterns:\n  - {name: c, regex: '(', meaning: m}\n")
    with pytest.raises(HarnessError, match="regex does not compile"):
        validity.load_rules("bad", tmp_path)
    (tmp_path / "bad" / "validity.yaml").write_text("schema_version: 1\nlog_patterns: [a: b: c]\n")
    with pytest.raises(HarnessError, match="not valid YAML"):
        validity.load_rules("bad", tmp_path)


WORK = {"verifies_per_tx": 2, "components": ["bench"]}


def test_work_check_fails_a_run_cheaper_than_its_signatures(tmp_path):
    # 2,000 transfers x 2 verifies at 20,000/s need 0.2 CPU-s; 0.05 CPU-s cannot have verified them.
    write_log(tmp_path, "bench.out", "fabricrepro timed_section txs 2000 wall_ns 90000000 user_ns 40000000 "
                                     "system_ns 10000000\n")
    result, problems = validity.work_check(tmp_path, WORK, {"before_points": {"per_core_verifies_per_s": 20000}})
    assert result["status"] == "failed" and result["needed_cpu_s"] == 0.2 and result["cpu_s"] == 0.05
    assert "need at least 0.200 CPU-s" in problems[0]


def test_work_check_passes_when_the_cpu_covers_the_signatures(tmp_path):
    write_log(tmp_path, "bench.out", "fabricrepro timed_section txs 2000 wall_ns 300000000 user_ns 500000000 "
                                     "system_ns 20000000\n")
    primitives = {"before_points": {"per_core_verifies_per_s": 18000},
                  "after_points": {"per_core_verifies_per_s": 20000}}
    result, problems = validity.work_check(tmp_path, WORK, primitives)
    # the fastest measured rate bounds the cost from below
    assert problems == [] and result["status"] == "passed" and result["verify_us"] == 50.0
    assert result["covered"] == pytest.approx(2.6)


def test_work_check_without_a_measurement_says_so(tmp_path):
    result, problems = validity.work_check(tmp_path, WORK, {})
    assert problems == [] and result["status"] == "not measured"


def test_run_primitives_reads_the_run_metadata(tmp_path):
    (tmp_path / "metadata.json").write_text(json.dumps({"primitives": {"before_points": {"per_core_verifies_per_s": 1}}}))
    assert validity.run_primitives(tmp_path) == {"before_points": {"per_core_verifies_per_s": 1}}
    assert validity.run_primitives(tmp_path / "none") == {}


def test_patterns_apply_to_the_components_they_name(tmp_path):
    # FastFabric's storage server refuses each block's second delivery (expected there, nowhere else)
    write_log(tmp_path, "fastfabric_storage.log", "Reason code [MVCC_READ_CONFLICT]\n")
    write_log(tmp_path, "fastfabric_deliver.log", "Reason code [MVCC_READ_CONFLICT]\n")
    patterns = [{"name": "mvcc", "regex": "MVCC_READ_CONFLICT", "meaning": "m", "components_except": ["fastfabric_storage"]},
                {"name": "replay", "regex": "MVCC_READ_CONFLICT", "meaning": "r", "unexpected": False,
                 "components": ["fastfabric_storage"]}]
    counts, problems = validity.scan_logs(tmp_path, patterns, {})
    assert counts["mvcc"] == 1 and counts["replay"] == 1
    assert len(problems) == 1 and "fastfabric_deliver.log" in problems[0]


def test_work_check_falls_back_to_the_components_whole_life(tmp_path):
    # an end-to-end peer prints no timed section: its life-time CPU (set-up included) must still cover
    raw = tmp_path / "raw" / "peer0"
    raw.mkdir(parents=True)
    (raw / "cpu_fabric_peer.csv").write_text("component,pid,user_s,system_s\nfabric_peer,42,0.05,0.01\n")
    (raw / "cpu_orderer.csv").write_text("component,pid,user_s,system_s\norderer,43,9.0,1.0\n")
    work = {"verifies_per_tx": 2, "components": ["fabric_peer"]}
    rate = {"before_points": {"per_core_verifies_per_s": 20000}}
    result, problems = validity.work_check(tmp_path, work, rate, owed_txs=2000)
    assert result["status"] == "failed" and result["cpu_s"] == pytest.approx(0.06)   # the orderer's CPU is not the peer's
    assert "whole life of fabric_peer" in problems[0]
    assert validity.work_check(tmp_path, work, rate, owed_txs=None)[0]["status"] == "not measured"


def test_the_ledger_holding_most_transactions_is_the_evidence(tmp_path, monkeypatch):
    # FastFabric Table I: the endorser keeps blocks 0-2 only, the storage server every block
    for name in ("fastfabric_storage", "fastfabric_storage_endorser", "fastfabric_endorser"):
        d = tmp_path / "raw" / "localhost" / "blocks" / name / "test"
        d.mkdir(parents=True)
        (d / "blockfile_000000").write_text("")
    full, short = LEDGER, LEDGER[LEDGER["block_number"] == 5]
    decoded = {"fastfabric_storage": full, "fastfabric_storage_endorser": short, "fastfabric_endorser": short}
    monkeypatch.setattr(validity, "decode_ledger", lambda files, _bin: decoded[files[0].parent.parent.name])
    codes, source = validity.ledger_codes(tmp_path, tmp_path / "blockfile")
    assert source == "block files of localhost/fastfabric_storage/test" and len(codes) == len(LEDGER)
    decoded["fastfabric_endorser"] = short.assign(validation_code="VALID")   # disagrees on block 5 tx 1
    with pytest.raises(HarnessError, match="disagree on block 5 tx 1"):
        validity.ledger_codes(tmp_path, tmp_path / "blockfile")


def test_a_system_without_rules_gets_every_key(tmp_path):
    assert validity.load_rules("none", tmp_path) == {"log_patterns": [], "work": None, "no_ledger": None, "sources": []}
