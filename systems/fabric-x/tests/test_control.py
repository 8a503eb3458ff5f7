"""Fabric-X's control point as the core judges it (harness/validity.py mutation_check, control_check): the
mutations expected_mutations.py names by ID (block -1) against the store's codes (block_txs). Hand-made
tables standing for a store; the negative controls: a committer that let a wrongly signed or a conflicting
transaction through, or aborted one nobody spoiled, fails the point."""

from __future__ import annotations

import pandas as pd

from harness import validity

CODES = pd.DataFrame({"block_number": [1, 1, 1, 2, 2], "tx_index": [0, 1, 2, 0, 1],
                      "tx_id": ["a", "b", "c", "d", "e"],
                      "validation_code": ["VALID", "ABORTED_SIGNATURE_INVALID", "VALID", "ABORTED_MVCC_CONFLICT",
                                          "VALID"]})
MUTATIONS = pd.DataFrame({"block_number": [-1, -1], "tx_index": [-1, -1], "tx_id": ["b", "d"],
                          "mutation": ["bad_signature", "conflict"]})
POINT = {"parameters": {"invalid_signature_fraction": 0.01, "conflict_fraction": 0.01},
         "control": True}


def _problems(codes):
    _, found = validity.mutation_check(MUTATIONS, codes, "store")
    _, control = validity.control_check(POINT, codes, MUTATIONS, None)
    return found + control


def test_each_planted_transaction_found_exactly_passes():
    assert _problems(CODES) == []


def test_a_wrong_signature_committed_fails():
    codes = CODES.assign(validation_code=CODES["validation_code"].replace("ABORTED_SIGNATURE_INVALID", "VALID"))
    assert any("corrupted transactions have another code" in p for p in _problems(codes))


def test_a_conflict_recorded_as_a_wrong_signature_fails():
    codes = CODES.assign(validation_code=CODES["validation_code"].replace("ABORTED_MVCC_CONFLICT",
                                                                          "ABORTED_SIGNATURE_INVALID"))
    assert any("d conflict -> ABORTED_SIGNATURE_INVALID" in p or "another code" in p for p in _problems(codes))


def test_an_unspoiled_transaction_aborted_fails():
    codes = CODES.copy()
    codes.loc[codes["tx_id"] == "e", "validation_code"] = "ABORTED_MVCC_CONFLICT"
    problems = _problems(codes)
    assert any("were not corrupted are invalid" in p for p in problems)
    assert any("marks 3 transaction(s) invalid" in p for p in problems)
