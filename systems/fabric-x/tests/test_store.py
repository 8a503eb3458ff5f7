"""The committed rate from the store's samples, the load generator's log, and the independent check."""

from __future__ import annotations

import json

import pandas as pd

from fabricrepro_systems.fabric_x import store

S = 1_000_000_000


def samples(rows):
    return pd.DataFrame(rows, columns=["t_ns", "committed", "total"])


def test_window_runs_from_the_last_sample_before_the_load_to_the_first_with_every_commit():
    s = samples([(0, 1, 1), (S // 4, 2, 2), (S // 2, 2, 2), (S, 452, 502), (2 * S, 902, 1002), (3 * S, 902, 1002)])
    assert store.measured_window(s, 1000) == (S // 2, 2 * S, 2, 902)
    run = pd.DataFrame([{"start_ns": 0, "end_ns": 3 * S, "transactions": 1000, "exit_status": 1}])
    assert store.committed_tps(s, run) == 900 / 1.5


def test_window_refuses_samples_that_miss_the_load_start():
    s = samples([(0, 600, 600), (S, 1002, 1002)])
    try:
        store.measured_window(s, 1000)
    except ValueError as e:
        assert "no sample before the load" in str(e)
    else:
        raise AssertionError("accepted")


LOG = """\
2026-12-07 21:32:37.889 UTC [load-gen-adapters] mapToStatusBatch -> INFO Received block #0 with 1 TXs and 1 statuses [COMMITTED x 1]
2026-12-07 21:32:38.576 UTC [load-gen-adapters] mapToStatusBatch -> INFO Received block #1 with 1 TXs and 1 statuses [COMMITTED x 1]
2026-12-07 21:32:39.175 UTC [load-gen-adapters] mapToStatusBatch -> INFO Received block #2 with 3 TXs and 3 statuses [COMMITTED x 2, ABORTED_SIGNATURE_INVALID x 1]
"""


def point(tmp_path, log=LOG, fraction=1 / 3):
    (tmp_path / "logs" / "h").mkdir(parents=True)
    (tmp_path / "point.json").write_text(json.dumps({"parameters": {store.INVALID_SIGNATURES: fraction}}))
    (tmp_path / "logs" / "h" / "fabric_x_loadgen.log").write_text(log)
    codes = pd.DataFrame([(0, 0, "a", "VALID"), (1, 0, "b", "VALID"), (2, 0, "c", "VALID"), (2, 1, "d", "VALID"),
                          (2, 2, "e", "ABORTED_SIGNATURE_INVALID")],
                         columns=["block_number", "tx_index", "tx_id", "validation_code"])
    run = pd.DataFrame([{"start_ns": 0, "end_ns": S, "transactions": 3, "exit_status": 1}])
    return {"block_txs": codes, "loadgen_run": run, "store_samples": samples([(0, 1, 1), (S, 4, 5)])}


def test_received_blocks_count_each_status_kind(tmp_path):
    got = store.received_blocks_from_text(LOG)
    assert got.to_dict("records")[2] == {"block_number": 2, "tx_count": 3, "statuses": 3, "committed": 2}


def test_check_passes_when_store_sidecar_and_load_agree(tmp_path):
    section, problems = store.check(tmp_path, point(tmp_path))
    assert problems == [] and section["store_committed"] == 4 and section["setup_transactions"] == 2


def test_check_fails_when_a_signature_was_rejected_that_no_one_spoiled(tmp_path):
    _, problems = store.check(tmp_path, point(tmp_path, fraction=0))
    assert any("no wrong signature was asked for" in p for p in problems), problems


def test_check_fails_when_no_spoiled_signature_was_rejected(tmp_path):
    tables = point(tmp_path, LOG.replace("[COMMITTED x 2, ABORTED_SIGNATURE_INVALID x 1]", "[COMMITTED x 3]"))
    tables["block_txs"].loc[4, "validation_code"] = "VALID"
    tables["store_samples"].loc[1, "committed"] = 5
    _, problems = store.check(tmp_path, tables)
    assert any("the verifier did not reject what it must" in p for p in problems), problems


def test_check_fails_when_the_sidecar_saw_other_codes(tmp_path):
    tables = point(tmp_path, LOG.replace("[COMMITTED x 2, ABORTED_SIGNATURE_INVALID x 1]", "[COMMITTED x 3]"))
    _, problems = store.check(tmp_path, tables)
    assert any("differ between the store and the sidecar" in p for p in problems), problems


def test_check_fails_closed_without_the_load_generator_log(tmp_path):
    tables = point(tmp_path)
    (tmp_path / "logs" / "h" / "fabric_x_loadgen.log").unlink()
    _, problems = store.check(tmp_path, tables)
    assert problems and "no load generator log" in problems[0]


def test_check_fails_when_the_store_holds_more_than_the_load(tmp_path):
    tables = point(tmp_path)
    tables["loadgen_run"].loc[0, "transactions"] = 1
    _, problems = store.check(tmp_path, tables)
    assert any("was asked for 1" in p for p in problems), problems
