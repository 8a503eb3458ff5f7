"""harness/validity.py and harness/ledger.py: counts from the ledger's codes, mutations, log patterns and the work
check, each shown to fail (a negative control per check) and to fail closed where its evidence is missing.

Tables here are small hand-made frames; the end-to-end checks against the
real drivers are in tests/upstream/test_validity_mutations.py.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from harness import REPO_ROOT as REPO, ledger, logscan, validity, work
from harness.errors import HarnessError


def codes(rows):
    return pd.DataFrame(rows, columns=["block_number", "tx_index", "tx_id", "validation_code"])


LEDGER = codes([(5, 0, "a", "VALID"), (5, 1, "b", "BAD_CREATOR_SIGNATURE"), (5, 2, "c", "VALID"),
                (6, 0, "d", "VALID"), (6, 1, "e", "MVCC_READ_CONFLICT"), (6, 2, "f", "VALID")])


def driver_blocks(valid, host="peer0", numbers=(5, 6)):
    return pd.DataFrame({"host": host, "block_number": list(numbers), "tx_count": [3] * len(numbers),
                         "valid_count": valid})


def test_driver_count_equal_to_the_ledger_passes():
    assert ledger.cross_check(driver_blocks([2, 2]), LEDGER, "driver's block log", "ledger") == []


def test_driver_count_above_the_ledger_fails_naming_both_counts():
    # FastFabric's peer benchmark on a channel without MSP: every transfer refused, the driver said valid.
    problems = ledger.cross_check(driver_blocks([3, 3]), LEDGER, "driver's block log", "ledger")
    assert len(problems) == 1
    assert "counts 6 valid" in problems[0] and "ledger 4" in problems[0] and "first block 5: 3/3 vs 2/3" in problems[0]


def test_a_block_on_one_side_only_fails_naming_it_and_the_host():
    # the driver claims a block the ledger does not hold (a ledger cut in half looks the same)
    extra = driver_blocks([2, 2, 3], numbers=(5, 6, 7))
    problems = ledger.cross_check(extra, LEDGER, "driver's block log", "ledger")
    assert len(problems) == 1 and "block 7" in problems[0] and "host peer0" in problems[0]
    # the ledger holds a block inside the driver's range that the driver never reported
    gap = pd.concat([LEDGER, LEDGER[LEDGER["block_number"] == 5].assign(block_number=7)], ignore_index=True)
    problems = ledger.cross_check(driver_blocks([2, 2], numbers=(5, 7)), gap, "block watcher", "ledger")
    assert len(problems) == 1 and "missing from the block watcher on host peer0 (first: block 6)" in problems[0]


def test_every_host_is_checked_and_a_duplicate_with_other_counts_fails():
    # a second host's inflated rows fail although the first host's agree
    rows = pd.concat([driver_blocks([2, 2]), driver_blocks([3, 2], host="peer1")], ignore_index=True)
    problems = ledger.cross_check(rows, LEDGER, "block watcher", "ledger")
    assert len(problems) == 1 and "host peer1" in problems[0]
    twice = pd.concat([driver_blocks([2, 2]), driver_blocks([3], numbers=(5,))], ignore_index=True)
    problems = ledger.cross_check(twice, LEDGER, "block watcher", "ledger")
    assert any("reports block 5 2 times with different counts" in p for p in problems)
    # the same row twice (a block logged twice with the same counts) is no difference
    same = pd.concat([driver_blocks([2, 2]), driver_blocks([2], numbers=(5,))], ignore_index=True)
    assert ledger.cross_check(same, LEDGER, "block watcher", "ledger") == []


MUTATIONS = pd.DataFrame({"block_number": [5, 6], "tx_index": [1, 1], "tx_id": ["b", "e"],
                          "mutation": ["bad_creator", "stale_read"]})


def test_mutations_with_their_codes_and_the_rest_valid_pass():
    section, problems = validity.mutation_check(MUTATIONS, LEDGER, "ledger")
    assert problems == []
    assert section == {"planned": {"bad_creator": 1, "stale_read": 1}, "invalid_as_planned": 2,
                       "refused_at_broadcast": {}}


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
    counts, problems = logscan.scan_logs(tmp_path, PATTERNS)
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
    assert logscan.log_bytes_at_stop(point, "localhost") == {"peer.log": len(before)}
    counts, problems = logscan.scan_logs(point, PATTERNS)
    assert counts["bad_creator_signature"] == 1 and counts["go_panic"] == 0 and len(problems) == 1


def test_a_stop_offset_of_zero_hides_nothing(tmp_path):
    # a forged or stale log_bytes_at_stop row of 0 must not hide a log that has content
    write_log(tmp_path, "peer.log", "panic: boom\n")
    (tmp_path / "raw" / "localhost").mkdir(parents=True)
    (tmp_path / "raw" / "localhost" / "log_bytes_at_stop.csv").write_text("log,bytes\npeer.log,0\n")
    counts, problems = logscan.scan_logs(tmp_path, PATTERNS)
    assert counts["go_panic"] == 1 and len(problems) == 1
    # only a line the stop itself causes (a stop_effect pattern) is left out of such a log
    write_log(tmp_path, "peer.log", "Error handling chaincode support stream: EOF\n")
    lost = [{"name": "stream_lost", "regex": "support stream", "meaning": "m", "stop_effect": True}]
    assert logscan.scan_logs(tmp_path, lost) == ({**{p["name"]: 0 for p in logscan.COMMON_PATTERNS},
                                                   "stream_lost": 0}, [])
    (tmp_path / "raw" / "localhost" / "log_bytes_at_stop.csv").write_text("log,bytes\npeer.log,46\n")
    assert logscan.scan_logs(tmp_path, lost)[0]["stream_lost"] == 1   # before the stop it counts


STALE = pd.DataFrame({"block_number": [5], "tx_index": [1], "tx_id": ["b"], "mutation": ["stale_read"]})


def test_planned_conflicts_are_forgiven_only_as_many_times_as_mutations_were_recorded(tmp_path):
    write_log(tmp_path, "peer.log", "x MVCC_READ_CONFLICT\n")
    counts, problems = logscan.scan_logs(tmp_path, PATTERNS, STALE)
    assert counts["mvcc_read_conflict"] == 1 and problems == []
    # negative controls: no recorded mutation (a parameter alone explains nothing), and one line too many
    assert len(logscan.scan_logs(tmp_path, PATTERNS, None)[1]) == 1
    write_log(tmp_path, "peer.log", "x MVCC_READ_CONFLICT\ny MVCC_READ_CONFLICT\n")
    problems = logscan.scan_logs(tmp_path, PATTERNS, STALE)[1]
    assert len(problems) == 1 and "2 log line(s) of mvcc_read_conflict" in problems[0] and "1 explained" in problems[0]


def test_a_refused_envelope_is_forgiven_once_per_orderer_it_went_to(tmp_path):
    """fabric-3.1's orderer_rejected_broadcast: under SmartBFT every envelope goes to each of 4 orderers, so one
    bad creator explains 4 lines; under Raft one (lines_per_mutation read at the point's ``ordering``)."""
    rules = validity.load_rules("fabric-3.1")
    (pattern,) = [p for p in rules["log_patterns"] if p["name"] == "orderer_rejected_broadcast"]
    bad = pd.DataFrame({"block_number": [0], "tx_index": [0], "tx_id": ["c"], "mutation": ["bad_creator"]})
    for i in range(4):
        write_log(tmp_path, f"fabric3_orderer{i}.log", "[channel: c] Rejecting broadcast of normal message from x\n")
    assert logscan.scan_logs(tmp_path, [pattern], bad, {"ordering": "BFT"})[1] == []
    problems = logscan.scan_logs(tmp_path, [pattern], bad, {"ordering": "etcdraft"})[1]  # negative control
    assert len(problems) == 1 and "4 log line(s) of orderer_rejected_broadcast" in problems[0]
    assert len(logscan.scan_logs(tmp_path, [pattern], bad, {})[1]) == 1  # the default ordering is Raft
    write_log(tmp_path, "fabric3_orderer4.log", "Rejecting broadcast of normal message from y\n")  # a fifth
    assert len(logscan.scan_logs(tmp_path, [pattern], bad, {"ordering": "BFT"})[1]) == 1


def test_rules_extend_their_base_and_refuse_bad_files(tmp_path):
    """The base is the one system.yaml declares (``extends``); validity.yaml may not declare another."""
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "system.yaml").write_text("id: base\n")
    (tmp_path / "base" / "validity.yaml").write_text(
        "schema_version: 1\nlog_patterns:\n  - {name: a, regex: 'A', meaning: base}\n"
        "work: {verifies_per_tx: 2, min_covered: 1.2}\nevidence:\n  d: {upstream: {codes: none, counts: blocks}}\n")
    (tmp_path / "child").mkdir()
    (tmp_path / "child" / "system.yaml").write_text("id: child\nextends: base\n")
    (tmp_path / "child" / "validity.yaml").write_text(
        "schema_version: 1\nlog_patterns:\n  - {name: b, regex: 'B', meaning: child}\n")
    rules = validity.load_rules("child", tmp_path)
    assert [p["name"] for p in rules["log_patterns"]] == ["a", "b"] and rules["work"]["verifies_per_tx"] == 2
    assert rules["evidence"]["d"]["upstream"]["counts"] == "blocks"
    (tmp_path / "grandchild").mkdir()  # no validity.yaml of its own: its base's rules
    (tmp_path / "grandchild" / "system.yaml").write_text("id: grandchild\nextends: child\n")
    assert [p["name"] for p in validity.load_rules("grandchild", tmp_path)["log_patterns"]] == ["a", "b"]
    (tmp_path / "base" / "system.yaml").write_text("id: base\nextends: grandchild\n")
    with pytest.raises(HarnessError, match="'extends' loops through"):
        validity.load_rules("child", tmp_path)
    (tmp_path / "base" / "system.yaml").write_text("id: base\n")
    (tmp_path / "child" / "validity.yaml").write_text("schema_version: 1\nextends: base\n")
    with pytest.raises(HarnessError, match="'extends' belongs in system.yaml"):
        validity.load_rules("child", tmp_path)
    assert validity.load_rules("none", tmp_path)["log_patterns"] == []
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "validity.yaml").write_text("schema_version: 1\nlog_patterns:\n  - {name: c, regex: '(', meaning: m}\n")
    with pytest.raises(HarnessError, match="regex does not compile"):
        validity.load_rules("bad", tmp_path)
    (tmp_path / "bad" / "validity.yaml").write_text(
        "schema_version: 1\nlog_patterns:\n  - {name: c, regex: 'C', meaning: m, lines_per_mutation: {values: {}}}\n")
    with pytest.raises(HarnessError, match="lines_per_mutation must be a number or"):
        validity.load_rules("bad", tmp_path)
    (tmp_path / "bad" / "validity.yaml").write_text("schema_version: 1\nlog_patterns: [a: b: c]\n")
    with pytest.raises(HarnessError, match="not valid YAML"):
        validity.load_rules("bad", tmp_path)
    for evidence, match in (("d: {upstream: {codes: ledger, validators: [p]}}", "'ledgers'"),
                            ("d: {upstream: {codes: none}}", "must say what it counts"),
                            ("d: {upstream: {codes: guess}}", "'codes' must be one of"),
                            ("d: {nightly: {codes: none, counts: x}}", "upstream or reference"),
                            ("d: {upstream: {codes: none, counts: x, logz: [a]}}", "unknown key")):
        (tmp_path / "bad" / "validity.yaml").write_text(f"schema_version: 1\nevidence:\n  {evidence}\n")
        with pytest.raises(HarnessError, match=match):
            validity.load_rules("bad", tmp_path)


WORK = {"verifies_per_tx": 2, "min_covered": 1.0}
#: 2,000 transfers in blocks 1-20 of the ledger (and a set-up block 0 the driver did not time)
TIMED = codes([(b, i, f"t{b}-{i}", "VALID") for b in range(1, 21) for i in range(100)] + [(0, 0, "setup", "VALID")])
RATE = {"before_points": {"per_core_verifies_per_s": 20000}}


def timed_line(txs, user_ns):
    return f"fabricrepro timed_section txs {txs} wall_ns 90000000 user_ns {user_ns} system_ns 0\n"


def test_work_check_fails_a_run_cheaper_than_its_signatures(tmp_path):
    # 2,000 transfers x 2 verifies at 20,000/s need 0.2 CPU-s; 0.05 CPU-s cannot have verified them.
    write_log(tmp_path, "bench.out", timed_line(2000, 50_000_000))
    result, problems = work.work_check(tmp_path, WORK, ["bench"], RATE, TIMED, list(range(1, 21)))
    assert result["status"] == "failed" and result["needed_cpu_s"] == 0.2 and result["cpu_s"] == 0.05
    assert "need at least 0.200 CPU-s" in problems[0]


def test_work_check_passes_when_the_cpu_covers_the_signatures_with_the_margin(tmp_path):
    write_log(tmp_path, "bench.out", timed_line(2000, 520_000_000))
    primitives = {"before_points": {"verifies_per_cpu_s": 20000, "per_core_verifies_per_s": 18000},
                  "after_points": {"verifies_per_cpu_s": 40000}}
    result, problems = work.work_check(tmp_path, WORK, ["bench"], primitives, TIMED, list(range(1, 21)))
    # the cost is the harness's, measured per CPU-second at the run's start (not the cheaper one after the points)
    assert problems == [] and result["status"] == "passed" and result["verify_us"] == 50.0
    assert result["covered"] == pytest.approx(2.6) and "the run's start" in result["cost_from"]
    # the same CPU fails a margin above it: the negative control's side of the threshold
    result, problems = work.work_check(tmp_path, {**WORK, "min_covered": 3.0}, ["bench"], primitives, TIMED,
                                           list(range(1, 21)))
    assert result["status"] == "failed" and "x 3.0" in problems[0]


def test_work_check_counts_the_ledgers_transactions_not_the_drivers(tmp_path):
    # the driver says it timed 2,000 transactions; the ledger holds 1,000 in the blocks it timed
    write_log(tmp_path, "bench.out", timed_line(2000, 900_000_000))
    result, problems = work.work_check(tmp_path, WORK, ["bench"], RATE, TIMED, list(range(1, 11)))
    assert result["status"] == "failed" and "says 2000 transactions, the ledger holds 1000" in problems[0]


def test_work_check_without_a_measurement_fails(tmp_path):
    result, problems = work.work_check(tmp_path, WORK, ["bench"], RATE, TIMED)
    assert result["status"] == "not measured" and "no timed-section line" in problems[0]
    write_log(tmp_path, "bench.out", timed_line(2000, 900_000_000))
    for codes_, rate, why in ((TIMED, {}, "no ECDSA verification cost at this run's start"),
                              (TIMED, {"after_points": {"verifies_per_cpu_s": 20000}}, "at this run's start"),
                              (None, RATE, "no ledger count")):
        result, problems = work.work_check(tmp_path, WORK, ["bench"], rate, codes_, list(range(1, 21)))
        assert result["status"] == "not measured" and len(problems) == 1 and why in problems[0], problems


def test_run_primitives_reads_the_run_metadata(tmp_path):
    (tmp_path / "metadata.json").write_text(json.dumps({"primitives": {"before_points": {"per_core_verifies_per_s": 1}}}))
    assert work.run_primitives(tmp_path) == {"before_points": {"per_core_verifies_per_s": 1}}
    assert work.run_primitives(tmp_path / "none") == {}


def test_patterns_apply_to_the_components_they_name(tmp_path):
    # FastFabric's storage server refuses each block's second delivery (expected there, nowhere else)
    write_log(tmp_path, "fastfabric_storage.log", "Reason code [MVCC_READ_CONFLICT]\n")
    write_log(tmp_path, "fastfabric_deliver.log", "Reason code [MVCC_READ_CONFLICT]\n")
    patterns = [{"name": "mvcc", "regex": "MVCC_READ_CONFLICT", "meaning": "m", "components_except": ["fastfabric_storage"]},
                {"name": "replay", "regex": "MVCC_READ_CONFLICT", "meaning": "r", "unexpected": False,
                 "components": ["fastfabric_storage"]}]
    counts, problems = logscan.scan_logs(tmp_path, patterns, {})
    assert counts["mvcc"] == 1 and counts["replay"] == 1
    assert len(problems) == 1 and "fastfabric_deliver.log" in problems[0]


def test_work_check_falls_back_to_the_components_whole_life(tmp_path):
    # an end-to-end peer prints no timed section: its life-time CPU (set-up included) must still cover
    raw = tmp_path / "raw" / "peer0"
    raw.mkdir(parents=True)
    (raw / "cpu_fabric_peer.csv").write_text("component,pid,user_s,system_s\nfabric_peer,42,0.05,0.01\n")
    (raw / "cpu_orderer.csv").write_text("component,pid,user_s,system_s\norderer,43,9.0,1.0\n")
    result, problems = work.work_check(tmp_path, WORK, ["fabric_peer"], RATE, TIMED)
    assert result["status"] == "failed" and result["cpu_s"] == pytest.approx(0.06)   # the orderer's CPU is not the peer's
    assert result["txs"] == 2001 and "whole life of fabric_peer" in problems[0]


def test_the_ledger_holding_most_transactions_is_the_evidence(tmp_path, monkeypatch):
    # FastFabric Table I: the endorser keeps blocks 0-2 only, the storage server every block
    for name in ("fastfabric_storage", "fastfabric_storage_endorser", "fastfabric_endorser"):
        d = tmp_path / "raw" / "localhost" / "blocks" / name / "test"
        d.mkdir(parents=True)
        (d / "blockfile_000000").write_text("")
    full, short = LEDGER, LEDGER[LEDGER["block_number"] == 5]
    decoded = {"fastfabric_storage": full, "fastfabric_storage_endorser": short, "fastfabric_endorser": short}
    monkeypatch.setattr(ledger, "decode_ledger", lambda files, _bin: decoded[files[0].parent.parent.name])
    codes, source = ledger.agreed_codes(ledger.kept_ledgers(tmp_path, tmp_path / "blockfile"))
    assert source.startswith("block files of localhost/fastfabric_storage/test") and len(codes) == len(LEDGER)
    decoded["fastfabric_endorser"] = short.assign(validation_code="VALID")   # disagrees on block 5 tx 1
    with pytest.raises(HarnessError, match="disagree on block 5 tx 1"):
        ledger.agreed_codes(ledger.kept_ledgers(tmp_path, tmp_path / "blockfile"))


def test_a_system_without_rules_gets_every_key(tmp_path):
    assert validity.load_rules("none", tmp_path) == {"log_patterns": [], "work": None, "evidence": {},
                                                     "before_stop": [], "capacity_limits": [], "sources": []}


DECL = {"codes": "ledger", "validators": ["peer"], "ledgers": ["peer"], "logs": ["peer"], "tables": ["deliveries"]}


def started(point_dir, *components):
    raw = point_dir / "raw" / "localhost"
    raw.mkdir(parents=True, exist_ok=True)
    for c in components:
        (raw / f"affinity_{c}.csv").write_text(f'component,pid,cpus_allowed_list\n{c},1,"0"\n')


def test_required_evidence_fails_on_every_absence(tmp_path):
    deliveries = {"deliveries": driver_blocks([2, 2])}
    # nothing records what ran
    assert "no record of the components" in validity.required_evidence(tmp_path, DECL, deliveries)[0]
    # the validator never started
    started(tmp_path, "orderer")
    assert any("none of the validating components peer" in p
               for p in validity.required_evidence(tmp_path, DECL, deliveries))
    # it started, but left an empty log, an empty block file and no deliveries
    started(tmp_path, "peer")
    write_log(tmp_path, "peer.log", "")
    ledger_dir = tmp_path / "raw" / "localhost" / "blocks" / "peer" / "ch"
    ledger_dir.mkdir(parents=True)
    (ledger_dir / "blockfile_000000").write_bytes(b"")
    problems = validity.required_evidence(tmp_path, DECL, {})
    assert any("log of peer on host localhost is empty" in p for p in problems), problems
    assert any("kept block files of peer on host localhost are empty" in p for p in problems), problems
    assert any("no deliveries rows" in p for p in problems), problems
    # all there: nothing missing (positive control)
    write_log(tmp_path, "peer.log", "started\n")
    (ledger_dir / "blockfile_000000").write_bytes(b"\x01x")
    assert validity.required_evidence(tmp_path, DECL, deliveries) == []


def test_a_verifier_that_disagrees_or_cannot_verify_fails(tmp_path):
    """TEST DOUBLES of bin/txverify: one that derives another code than the ledger recorded (exit 3),
    and one that cannot read the ledger (exit 1); each fails the ledger, naming it."""
    lg = ledger.Ledger("localhost", "peer", "ch", [tmp_path / "blockfile_000000"], LEDGER)
    lg.files[0].write_bytes(b"x")
    disagree = tmp_path / "txverify-disagrees"
    disagree.write_text("#!/bin/sh\necho block_number,tx_index,tx_id,recorded_code,derived_code\n"
                        "echo 5,0,a,VALID,BAD_CREATOR_SIGNATURE\n"
                        'echo \'{"txs": 6, "checked": 1, "agree": 0, "disagree": 1}\' >&2\nexit 3\n')
    broken = tmp_path / "txverify-broken"
    broken.write_text("#!/bin/sh\necho 'no MSP in the ledger' >&2\nexit 1\n")
    for f in (disagree, broken):
        f.chmod(0o755)
    section, problems = ledger.verify(lg, disagree, None, "p")
    assert section["status"] == "failed" and "recorded VALID, derived BAD_CREATOR_SIGNATURE" in problems[0]
    section, problems = ledger.verify(lg, broken, None, "p")
    assert section["status"] == "failed" and "could not check the ledger localhost/peer/ch" in problems[0]
    assert ledger.verify(lg, tmp_path / "missing", None, "p")[1][0].endswith("(invoke build)")


# ---- issue 45: no check disabled by its own input

COMMIT = "Channel [ch]: Committed block [{}] with 100 transaction(s)\n"
COMMITTED = [{"name": "committed_block", "regex": r"Committed block \[\d+\] with \d+ transaction",
              "meaning": "the peer committed a block", "components": ["peer"]}]


def stop_offsets(point_dir, **sizes):
    (point_dir / "raw" / "localhost").mkdir(parents=True, exist_ok=True)
    (point_dir / "raw" / "localhost" / "log_bytes_at_stop.csv").write_text(
        "log,bytes\n" + "".join(f"{name.replace('_', '.')},{n}\n" for name, n in sizes.items()))


def test_a_stop_offset_must_be_consistent_with_the_log(tmp_path):
    """log_bytes_at_stop.csv may hide what a stop causes, not the run: a recorded length before a line the
    component wrote while the point ran (a commit, the timed section) or beyond the log's end fails."""
    before = COMMIT.format(1) + COMMIT.format(2)
    write_log(tmp_path, "peer.log", before + "panic: boom\n")
    stop_offsets(tmp_path, peer_log=len(before))   # consistent: the panic came with the stop, and is not counted
    counts, problems = logscan.scan_logs(tmp_path, PATTERNS, before_stop=COMMITTED)
    assert problems == [] and counts["go_panic"] == 0
    stop_offsets(tmp_path, peer_log=1)             # forged: it would hide the panic with the commits
    counts, problems = logscan.scan_logs(tmp_path, PATTERNS, before_stop=COMMITTED)
    assert len(problems) == 1 and "says peer.log held 1 bytes when the stop began" in problems[0], problems
    assert "committed_block line" in problems[0] and "ends at byte 54" in problems[0]
    # without the system's line the harness knows none in this log: the forged length hides the panic (why the
    # systems declare their commit lines)
    assert logscan.scan_logs(tmp_path, PATTERNS)[1] == []
    stop_offsets(tmp_path, peer_log=len(before) + 100)   # longer than the log: cut after the run
    problems = logscan.scan_logs(tmp_path, PATTERNS, before_stop=COMMITTED)[1]
    assert len(problems) == 2 and "the log is shorter than it was at the stop" in problems[0], problems
    assert "go_panic" in problems[1]                      # and the whole log is read
    # the harness's own lines count for every system: a timed section past the recorded length
    bench = tmp_path / "bench"
    write_log(bench, "bench.log", "x\n" + timed_line(2000, 1))
    stop_offsets(bench, bench_log=2)
    problems = logscan.scan_logs(bench, [])[1]
    assert len(problems) == 1 and "timed_section line" in problems[0] and "bench.log" in problems[0]
    # a line the system declares for another component is no evidence about this log
    orderer = tmp_path / "orderer"
    write_log(orderer, "orderer.log", COMMIT.format(3))
    stop_offsets(orderer, orderer_log=0)
    assert logscan.scan_logs(orderer, [], before_stop=COMMITTED)[1] == []


def test_a_declared_log_is_each_file_not_any_file_of_the_component(tmp_path):
    decl = {"codes": "none", "counts": "x", "logs": ["peer", "bench.out"]}
    started(tmp_path, "peer", "bench")
    write_log(tmp_path, "peer.out", "stdout\n")     # the .out is there, the peer's log (its error lines) is not
    write_log(tmp_path, "bench.out", "timed\n")
    problems = validity.required_evidence(tmp_path, decl, {})
    assert problems == ["the log of peer on host localhost is missing (logs/localhost/peer.log)"]
    write_log(tmp_path, "peer.log", "")
    assert validity.required_evidence(tmp_path, decl, {}) == [
        "the log of peer on host localhost is empty (logs/localhost/peer.log)"]
    write_log(tmp_path, "peer.log", "started\n")
    (tmp_path / "logs" / "localhost" / "bench.out").unlink()
    write_log(tmp_path, "bench.log", "stderr\n")     # a .log does not stand in for a declared .out either
    assert validity.required_evidence(tmp_path, decl, {}) == [
        "the log of bench on host localhost is missing (logs/localhost/bench.out)"]
    assert validity.declared_log("peer") == ("peer", "peer.log")
    assert validity.declared_log("committerbench.out") == ("committerbench", "committerbench.out")


def cost_line(before_ns, after_ns):
    return f"fabricrepro verify_cost verifies 200 before_cpu_ns_per_verify {before_ns} after_cpu_ns_per_verify {after_ns}\n"


def test_a_validators_cost_line_only_confirms_the_harness_cost(tmp_path):
    """The cost of one verification is the harness's, measured at the run's start (50 us here); a validator's
    line must lie within x3 of it, and may raise the cost but never lower it."""
    primitives = {"before_points": {"verifies_per_cpu_s": 20000}}
    blocks = list(range(1, 21))
    # 0.1 CPU-s for 2,000 transfers: a quarter of the 0.2 CPU-s owed at 50 us
    write_log(tmp_path, "bench.out", timed_line(2000, 100_000_000) + cost_line(1000, 1000))
    result, problems = work.work_check(tmp_path, WORK, ["bench"], primitives, TIMED, blocks)
    assert result["status"] == "failed" and len(problems) == 1, problems
    assert "verify_cost line says 1.00 us per verification" in problems[0] and "50.00 us" in problems[0]
    assert "more than x3 apart" in problems[0]
    # before issue 45 the line alone set the cost: 2,000 x 2 x 1 us = 4 ms, covered x25 (the attack)
    write_log(tmp_path, "bench.out", timed_line(2000, 100_000_000) + cost_line(20_000, 30_000))
    result, problems = work.work_check(tmp_path, WORK, ["bench"], primitives, TIMED, blocks)
    # within x3 but cheaper: the harness's 50 us stands, and 0.1 CPU-s covers half the owed
    assert result["verify_us"] == 50.0 and result["validator_verify_us"] == [20.0, 30.0]
    assert result["status"] == "failed" and result["covered"] == 0.5
    # dearer within x3 (the validator's build verifies slower): its cheaper line raises the cost
    write_log(tmp_path, "bench.out", timed_line(2000, 1_000_000_000) + cost_line(80_000, 120_000))
    result, problems = work.work_check(tmp_path, WORK, ["bench"], primitives, TIMED, blocks)
    assert problems == [] and result["verify_us"] == 80.0 and "validator's verify_cost" in result["cost_from"]
    write_log(tmp_path, "bench.out", timed_line(2000, 1_000_000_000) + cost_line(80_000, 200_000))
    assert "200.00 us per verification" in work.work_check(tmp_path, WORK, ["bench"], primitives, TIMED, blocks)[1][0]


def test_no_margin_defaults(tmp_path):
    """Every system with a validating component declares its margin (``work.min_covered``): a rule without one
    is refused by the loader ``invoke validate`` uses, and the work check never assumes x1.0."""
    import subprocess
    import sys
    from harness.validate import validate_file
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "system.yaml").write_text("id: toy\n")
    path = tmp_path / "toy" / "validity.yaml"
    evidence = "evidence:\n  d: {upstream: {codes: ledger, validators: [peer], ledgers: [peer]}}\n"
    path.write_text("schema_version: 1\nwork: {verifies_per_tx: 2, why: w}\n" + evidence)
    (error,) = validate_file(path)
    assert "work declares no margin 'min_covered'" in error and "none defaults" in error
    proc = subprocess.run([sys.executable, "-m", "invoke", "validate", str(path)], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1 and "work declares no margin 'min_covered'" in proc.stdout, proc.stdout + proc.stderr
    path.write_text("schema_version: 1\n" + evidence)  # a validator, and no work at all
    assert "declares validating components, but the system declares no 'work'" in validate_file(path)[0]
    path.write_text("schema_version: 1\nwork: {verifies_per_tx: 2, min_covered: 0.5}\n" + evidence)
    assert "work.min_covered must be a number of at least 1" in validate_file(path)[0]
    path.write_text("schema_version: 1\nwork: {verifies_per_tx: 2, min_covered: 1.2}\n" + evidence)
    assert validate_file(path) == []    # positive control
    write_log(tmp_path, "bench.out", timed_line(2000, 900_000_000))
    result, problems = work.work_check(tmp_path, {"verifies_per_tx": 2}, ["bench"], RATE, TIMED, list(range(1, 21)))
    assert result["status"] == "not measured" and "declares no margin min_covered" in problems[0]


def test_the_verifier_cache_is_keyed_on_the_files_content_and_the_verifier(tmp_path):
    """A stored verifier result is reused only for block files of the same content checked by the same
    verifier: a file changed with its size and time restored, or another bin/txverify, verify anew. TEST
    DOUBLES of bin/txverify that count their runs."""
    import os
    blockfile = tmp_path / "blockfile_000000"
    blockfile.write_bytes(b"\x00" * 64)
    lg = ledger.Ledger("localhost", "peer", "ch", [blockfile], LEDGER)
    runs = tmp_path / "runs"

    def txverify(name, code):
        f = tmp_path / name
        f.write_text(f"#!/bin/sh\necho run >> {runs}\necho block_number,tx_index,tx_id,recorded_code,derived_code\n"
                     f"echo 5,0,a,VALID,{code}\n"
                     f'echo \'{{"txs": 6, "checked": 1, "agree": 1, "disagree": 0}}\' >&2\n')
        f.chmod(0o755)
        return f

    agrees, other = txverify("txverify", "VALID"), txverify("txverify-rebuilt", "BAD_CREATOR_SIGNATURE")
    cache = tmp_path / "verifier.json"
    assert ledger.verify(lg, agrees, None, "p", cache)[0]["status"] == "agreed"
    assert ledger.verify(lg, agrees, None, "p", cache)[0]["status"] == "agreed"
    assert len(runs.read_text().splitlines()) == 1          # the second was the stored result
    stat = blockfile.stat()
    blockfile.write_bytes(b"\x00" * 63 + b"\x0b")          # a code flipped, size and time restored
    os.utime(blockfile, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    ledger.verify(lg, agrees, None, "p", cache)
    assert len(runs.read_text().splitlines()) == 2
    section, problems = ledger.verify(lg, other, None, "p", cache)   # another verifier, the same files
    assert len(runs.read_text().splitlines()) == 3 and section["status"] == "failed" and problems
