"""The control point's expected codes (roles/fabric_x_store/files/expected_mutations.py): from the load
generator's marks (patch 0001) walked in the ledger's order, which transaction must be ABORTED_SIGNATURE_INVALID
and which ABORTED_MVCC_CONFLICT. Hand-made marks and ledgers; no build needed."""

from __future__ import annotations

import csv
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "roles" / "fabric_x_store" / "files" / "expected_mutations.py"
spec = importlib.util.spec_from_file_location("expected_mutations", SCRIPT)
em = importlib.util.module_from_spec(spec)
spec.loader.exec_module(em)


def test_the_later_of_a_pair_conflicts_and_a_wrong_signature_wins():
    marks = {"a": (False, {"k1"}), "b": (False, {"k1"}), "c": (True, set()), "d": (True, {"k2"}),
             "e": (False, {"k2"})}
    # d signed wrongly never writes k2, so e (its pair) commits
    assert em.expected(marks, ["x", "a", "b", "c", "d", "e"]) == [("b", "conflict"), ("c", "bad_signature"),
                                                                  ("d", "bad_signature")]


def test_ledger_order_not_generation_order_decides_which_conflicts():
    marks = {"a": (False, {"k1"}), "b": (False, {"k1"})}
    assert em.expected(marks, ["b", "a"]) == [("a", "conflict")]


def test_a_chain_a_conflicting_transaction_writes_nothing():
    # b conflicts on k1, so its k2 is never written and c (b's pair on k2) commits
    marks = {"a": (False, {"k1"}), "b": (False, {"k1", "k2"}), "c": (False, {"k2"})}
    assert em.expected(marks, ["a", "b", "c"]) == [("b", "conflict")]


def test_a_marked_transaction_the_store_lacks_is_still_listed():
    marks = {"a": (False, {"k1"}), "gone": (True, set())}
    assert em.expected(marks, ["a"]) == [("gone", "bad_signature")]


def test_the_script_writes_the_cores_mutations_table(tmp_path):
    (tmp_path / "mutations.log").write_text("t1,dependency,00ff\nt2,dependency,00ff\nt3,bad_signature\n")
    with open(tmp_path / "block_txs.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["block_number", "tx_index", "tx_id", "validation_code"])
        w.writerows([[2, 0, "t2", "VALID"], [1, 1, "t1", "VALID"], [1, 0, "t3", "VALID"]])
    subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "mutations.log"), str(tmp_path / "block_txs.csv"),
                    str(tmp_path / "mutations.csv")], check=True)
    rows = list(csv.DictReader(open(tmp_path / "mutations.csv")))
    assert [(r["block_number"], r["tx_id"], r["mutation"]) for r in rows] == [("-1", "t3", "bad_signature"),
                                                                            ("-1", "t2", "conflict")]


def test_a_line_not_of_the_patch_is_refused(tmp_path):
    (tmp_path / "mutations.log").write_text("t1,something_else\n")
    with pytest.raises(SystemExit, match="not a mark of patch 0001"):
        em.read_marks(tmp_path / "mutations.log")
