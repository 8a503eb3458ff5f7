"""Mutation tests of the drivers tests/upstream/test_validity_mutations.py leaves out (docs/validity.md, item 2).

* The networks our load generator drives (cmd/loadgen): Table I's Fabric 1.2 network (system fabric-1.2,
  driver end-to-end, upstream build) and Fabric 1.1 (validation-opt, driver validation-breakdown, LevelDB).
  The load generator corrupts an evenly spaced share of its transfers of each kind and lists them in
  mutations.csv (block and index -1: a client does not know them). A transfer with a corrupted creator
  signature never reaches a block: the orderer (v1.2.0's and v1.1.0's broadcast SigFilter,
  orderer/common/msgprocessor/sigfilter.go) checks that same signature against the channel's Writers
  policy and answers FORBIDDEN, so the test asserts that refusal instead of a BAD_CREATOR_SIGNATURE code;
  every other mutated transfer must carry its code in the peer's kept ledger, and every other
  transaction be VALID.
* FastFabric's peer benchmark in the flavours P-I (p1-alone: Fabric v1.2.0's peer benchmark, patch 0004,
  with the published hash-table state grafted in) and P-II (p2-approx: the published benchmark, patch
  0006, without P-III's unmarshal cache), as the existing test runs P-III.

Skipped with the reason when a source snapshot, Ansible, Go or ``ss`` is not at hand.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from harness import REPO_ROOT, upstream, validity

from tests.upstream import needs
from tests.upstream.test_fabric_network import point_setup, run_watched
from tests.upstream.test_validity_mutations import EXPECTED, checked, record_primitives, run_mutated_point

pytestmark = [pytest.mark.network]

TRANSFERS, BLOCK_SIZE = 200, 50
#: 4 of each mutation in 200 transfers (loadgen spreads them evenly, interleaved by kind)
MUTATIONS = {"corrupt_creator_fraction": 0.02, "corrupt_endorsement_fraction": 0.02, "stale_read_fraction": 0.02}
EACH = 4
CODES = {"bad_endorsement": "ENDORSEMENT_POLICY_FAILURE", "stale_read": "MVCC_READ_CONFLICT",
         "bad_creator": "BAD_CREATOR_SIGNATURE"}


def kept_codes(point_dir: Path) -> pd.DataFrame:
    """Every transaction's code in the point's kept ledgers (the peer's block files, bin/blockfile)."""
    codes, _ = validity.ledger.agreed_codes(validity.ledger.kept_ledgers(point_dir, REPO_ROOT / "bin" / "blockfile"))
    assert codes is not None, "no validated ledger was kept"
    return codes


def run_loadgen_point(tmp_path: Path, build: Path, system: str, driver: str, switches: dict | None = None):
    """One point of a loadgen-driven network with ``MUTATIONS``; returns its directory."""
    spec, inventory, variables, point_dir = point_setup(
        tmp_path, driver, REPO_ROOT / "bin", build, system=system, switches=switches,
        transactions=TRANSFERS, block_size=BLOCK_SIZE, payload_bytes=0, batch_timeout_ms=1000, **MUTATIONS)
    # the harness's parameters reach the loadgen role as counts of its transfers
    assert (variables["loadgen_corrupt_creator"], variables["loadgen_forge_endorsement"],
            variables["loadgen_stale_read"]) == (EACH, EACH, EACH), variables
    record_primitives(point_dir)
    run_watched(tmp_path, spec, inventory, variables, point_dir, 600, [])
    return point_dir


def assert_loadgen_mutations(point_dir: Path, system: str, driver: str):
    """mutations.csv lists 4 of each kind; the orderer refused exactly the bad creators; the ledger marks
    exactly the other listed transactions invalid, each with its kind's code, and every other one VALID."""
    raw = point_dir / "raw" / "localhost"
    mutations = pd.read_csv(raw / "mutations.csv", dtype={"tx_id": str})
    assert list(mutations.columns) == ["block_number", "tx_index", "tx_id", "mutation"]
    assert (mutations[["block_number", "tx_index"]] == -1).all().all()
    assert mutations["mutation"].value_counts().to_dict() == {k: EACH for k in CODES}, mutations
    kind = dict(zip(mutations["tx_id"], mutations["mutation"]))

    # The orderer's answers (txs.csv): FORBIDDEN for every bad creator, SUCCESS for every other transfer.
    txs = pd.read_csv(raw / "txs.csv", dtype={"tx_id": str})
    assert len(txs) == TRANSFERS
    refused = set(txs.loc[txs["status"] != "SUCCESS", "tx_id"])
    assert refused == {t for t, k in kind.items() if k == "bad_creator"}, txs.loc[txs["status"] != "SUCCESS"]
    assert set(txs.loc[txs["status"] != "SUCCESS", "status"]) == {"FORBIDDEN"}

    # The peer's kept ledger: none of the refused, the others with their codes, every other transfer VALID.
    codes = kept_codes(point_dir)
    assert not refused & set(codes["tx_id"])
    transfers = codes[codes["tx_id"].isin(txs["tx_id"])]
    assert len(transfers) == TRANSFERS - EACH
    invalid = transfers[transfers["validation_code"] != "VALID"]
    assert invalid["validation_code"].value_counts().to_dict() == {
        "ENDORSEMENT_POLICY_FAILURE": EACH, "MVCC_READ_CONFLICT": EACH}, invalid
    assert set(invalid["tx_id"]) == set(kind) - refused
    for row in invalid.itertuples():
        assert row.validation_code == CODES[kind[row.tx_id]], row
    # every transaction of the ledger that is no transfer (the set-up's) is VALID
    assert (codes.loc[~codes["tx_id"].isin(txs["tx_id"]), "validation_code"] == "VALID").all()

    # The harness's own check of the point (harness/validity.py) agrees on the ledger and on every mutation:
    # the refused bad creators are in no block, the orderer's refusal lines and the peer's 3 lines per forged
    # endorsement (its VSCC warning, the validator's error, the committer's reason code) are explained by the
    # recorded mutations, and our verifier re-derives every code.
    section, problems, _ = checked(point_dir, system, MUTATIONS, driver=driver)
    assert section["ledger_invalid"] == {"ENDORSEMENT_POLICY_FAILURE": EACH, "MVCC_READ_CONFLICT": EACH}, section
    assert section["mutations"] == {"planned": {k: EACH for k in sorted(CODES)}, "invalid_as_planned": 2 * EACH,
                                    "refused_at_broadcast": {"bad_creator": EACH}}, section["mutations"]
    assert problems == [], problems
    assert [v["status"] for v in section["verifier"]] == ["agreed"], section["verifier"]
    return problems


FABRIC12 = needs.missing(("ansible-playbook", "go", "ss"), "fabric-1.2", "Fabric 1.2")


@pytest.mark.skipif(bool(FABRIC12), reason=FABRIC12 or "")
def test_fabric12_network_refuses_exactly_the_mutated_transfers(tmp_path):
    """Table I's Fabric 1.2 network (solo orderer, one peer): 4 bad creators (refused by the orderer),
    4 forged endorsements and 4 stale reads in 200 transfers."""
    build = upstream.build("fabric-1.2", "snapshot").path
    point_dir = run_loadgen_point(tmp_path, build, "fabric-1.2", "end-to-end")
    assert_loadgen_mutations(point_dir, "fabric-1.2", "end-to-end")


FABRIC11 = needs.missing(("ansible-playbook", "go", "ss"), "validation-opt", "Fabric v1.1.0")


@pytest.mark.skipif(bool(FABRIC11), reason=FABRIC11 or "")
def test_fabric11_network_refuses_exactly_the_mutated_operations(tmp_path):
    """validation-opt's network (Fabric v1.1.0 peer, LevelDB, smallbank): bad creators and stale reads
    beside the forged endorsements, 4 of each in 200 operations."""
    switches = {"state_db": "leveldb"}
    build = upstream.build("validation-opt", "snapshot", switches=switches).path
    point_dir = run_loadgen_point(tmp_path, build, "validation-opt", "validation-breakdown", switches)
    assert_loadgen_mutations(point_dir, "validation-opt", "validation-breakdown")


FASTFABRIC = needs.missing(("ansible-playbook", "go"), "fastfabric", "FastFabric")
P1 = {"state_db": "hashtable"}
P2 = {"state_db": "hashtable", "parallel_validation": True, "offload_storage_endorsement": True}
#: Lines a peer benchmark's log holds per mutation of the kind (Fabric 1.2's validator code, both benchmarks):
#: a bad creator 2 (msgvalidation's "checkSignatureFromCreator returns err", valimpl's "marked as invalid by
#: committer. Reason code [BAD_CREATOR_SIGNATURE]"), a forged endorsement 3 (VSCC's "Endorsement policy
#: failure" warning, the txvalidator's "VSCCValidateTx ... VSCC error: endorsement policy failure", valimpl's
#: reason code).
PEER_LOG_LINES = {"bad_creator_signature": 2, "endorsement_policy_failure": 3}


def assert_peer_benchmark_mutations(point_dir: Path, section: dict, problems: list[str], tables: dict):
    """3 of each kind in 400 transfers: the codes (the validator's recorded ones, else the kept ledger's) mark
    exactly the transactions of mutations.csv invalid, each with its kind's code, and every other VALID."""
    assert section["ledger_invalid"] == {"BAD_CREATOR_SIGNATURE": 3, "ENDORSEMENT_POLICY_FAILURE": 3,
                                         "MVCC_READ_CONFLICT": 3}, section
    assert section["mutations"] == {"planned": EXPECTED, "invalid_as_planned": 9, "refused_at_broadcast": {}}, \
        section["mutations"]
    mutations = tables["mutations"]
    codes = tables["block_txs"] if len(tables.get("block_txs", [])) else kept_codes(point_dir)
    invalid = codes[codes["validation_code"] != "VALID"]
    kind = dict(zip(mutations["tx_id"], mutations["mutation"]))
    assert len(kind) == 9 and set(invalid["tx_id"]) == set(kind), (invalid, mutations)
    for row in invalid.itertuples():
        assert row.validation_code == CODES[kind[row.tx_id]], row
    assert int(tables["blocks"]["valid_count"].sum()) == 400 - 9
    # the peer's PEER_LOG_LINES per mutation are explained (validity.yaml lines_per_mutation): no problem
    assert problems == [], problems
    for name, n in PEER_LOG_LINES.items():
        assert section["log_counts"][name] == 3 * n, section["log_counts"]


@pytest.mark.skipif(bool(FASTFABRIC) or bool(FABRIC12), reason=FASTFABRIC or FABRIC12 or "")
def test_fastfabric_p1_peer_benchmark_refuses_exactly_the_corrupted_transfers(tmp_path):
    """P-I alone (flavour p1-alone): Fabric v1.2.0 with the published hash-table state grafted in, run by
    Fabric 1.2's peer benchmark (a variant built on a base runs the base's driver), whose mutation switches
    are that benchmark's (systems/fabric-1.2 patch 0004, not FastFabric's 0006); checked by Fabric 1.2's
    rules, whose evidence (the kept ledger) that benchmark leaves."""
    built = upstream.build("fastfabric", "snapshot", switches=P1)
    assert built.info.get("base") == "fabric-1.2" and built.info.get("flavours") == ["p1-alone"], built.info
    section, problems, tables = run_mutated_point(tmp_path, built.path, "fabric-1.2")
    assert section["counts_from"].startswith("block files"), section["counts_from"]
    assert_peer_benchmark_mutations(tmp_path / "run" / "points" / "p000", section, problems, tables)


@pytest.mark.skipif(bool(FASTFABRIC), reason=FASTFABRIC or "")
def test_fastfabric_p2_peer_benchmark_refuses_exactly_the_corrupted_transfers(tmp_path):
    """P-II without P-III (flavour p2-approx): the published peer benchmark's parallel validation, its
    block cache keeping nothing it unmarshalled; patch 0006's switches (-corrupt-creator etc.)."""
    built = upstream.build("fastfabric", "snapshot", switches=P2)
    assert built.info.get("flavours") == ["p2-approx"], built.info
    section, problems, tables = run_mutated_point(tmp_path, built.path, "fastfabric",
                                                  block_pipeline_goroutines=4, tx_validation_goroutines=2)
    assert section["counts_from"].startswith("block files of localhost/fastfabric_peerbench"), section["counts_from"]
    assert len(tables["block_txs"]) == 400
    assert section["log_counts"].get("msp_channel_missing", 0) == 0
    assert_peer_benchmark_mutations(tmp_path / "run" / "points" / "p000", section, problems, tables)
