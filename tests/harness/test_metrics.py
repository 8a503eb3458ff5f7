"""Every metric against hand-computed golden values (fixtures/golden/expected.json)."""

import json
from pathlib import Path
import math

import pandas as pd
import pytest

from harness import analyze, metrics
from harness.collect import read_csv, tables as all_tables

FIXTURES = Path(__file__).resolve().parent / "fixtures"

GOLDEN = FIXTURES / "golden"
EXPECTED = json.loads((GOLDEN / "expected.json").read_text())


@pytest.fixture(scope="module")
def tables():
    return {t: read_csv(GOLDEN / f"{t}.csv", t) for t in ("blocks", "deliveries", "txs", "block_txs", "phases", "cc_messages",
                                                            "store_samples", "loadgen_run")}


#: Metrics over the CSV tables (the core's and the systems'); those over tables parsed from programs' logs
#: (BFT-SMaRt's) are checked on golden logs in their system's tests.
LOG_TABLES = {name for name, t in all_tables().items() if not t.columns}
CSV_METRICS = sorted(k for k, m in analyze.all_metrics().items() if not set(m.tables) & LOG_TABLES)


@pytest.mark.parametrize("name", CSV_METRICS)
def test_metric_matches_golden(tables, name):
    # a key is the metric's name, or name@table where an earlier system has the name from other tables (analyze
    # all_metrics: fabric-3.1's vscc_latency_ms from its peer's log beside validation-opt's from the phase log)
    name = analyze.all_metrics()[name].name
    assert analyze.compute_all(tables)[name] == pytest.approx(EXPECTED[name], rel=1e-9)


def test_every_metric_has_a_golden_value():
    assert {analyze.all_metrics()[k].name for k in CSV_METRICS} == {k for k in EXPECTED if not k.startswith("_")}


def test_throughput_counts_only_valid_transactions(tables):
    blocks = tables["blocks"].copy()
    blocks["valid_count"] = blocks["tx_count"]
    assert metrics.commit_throughput_tps(blocks) > metrics.commit_throughput_tps(tables["blocks"])


def test_throughput_needs_two_blocks(tables):
    assert math.isnan(metrics.commit_throughput_tps(tables["blocks"].head(2)))


def test_without_block_txs_transactions_are_matched_to_blocks_in_ack_order(tables):
    """Runs stored before the watcher recorded transaction IDs."""
    matched = metrics.tx_commit_times(tables["txs"], tables["deliveries"])
    assert list(matched["tx_id"]) == ["a", "b", "c", "d"]
    assert list(matched["commit_ns"]) == [1_020_000_000] * 2 + [1_040_000_000] * 2


def test_measured_window_drops_setup_blocks(tables, tmp_path):
    """measured.json's first_block cuts blocks and deliveries; txs are kept whole."""
    from harness.collect import load_measured, write_table

    for name, df in tables.items():
        write_table(df, tmp_path / f"{name}.parquet", name)
    whole = load_measured(tmp_path)
    assert all(len(whole[n]) == len(tables[n]) for n in tables)
    first = int(tables["blocks"]["block_number"].sort_values().iloc[2])
    (tmp_path / "measured.json").write_text(json.dumps({"schema_version": 1, "first_block": first}))
    cut = load_measured(tmp_path)
    assert (cut["blocks"]["block_number"] >= first).all() and len(cut["blocks"]) == len(tables["blocks"]) - 2
    assert (cut["deliveries"]["block_number"] >= first).all()
    assert len(cut["txs"]) == len(tables["txs"])


def test_transactions_are_matched_by_id_and_invalid_ones_excluded(tables):
    """The watcher's block_txs: a and d rode block 1, b and c block 2 (not ack order); an invalidated tx has no commit."""
    matched = metrics.tx_commit_times(tables["txs"], tables["deliveries"], tables["block_txs"])
    assert dict(zip(matched["tx_id"], matched["commit_ns"])) == {
        "a": 1_020_000_000, "d": 1_020_000_000, "b": 1_040_000_000, "c": 1_040_000_000}
    invalid = tables["block_txs"].copy()
    invalid.loc[invalid["tx_id"] == "c", "validation_code"] = "MVCC_READ_CONFLICT"
    matched = metrics.tx_commit_times(tables["txs"], tables["deliveries"], invalid)
    assert sorted(matched["tx_id"]) == ["a", "b", "d"]
    assert analyze.compute_all({**tables, "block_txs": invalid})["tx_latency_p99_ms"] == pytest.approx(
        20 + 0.98 * (39 - 20))


def test_stored_tables_must_be_what_the_raw_files_give_and_what_the_harness_added_since_is_no_difference():
    """collect.tables_differ, which every (re-)analysis and `invoke verify` apply: a stored table must be made again,
    column for column, from the raw files; a table or a column today's parsers add to an older run's is not a
    difference (no stored metric comes from it), so `invoke report` does not fail a run for the harness's growth."""
    from harness.collect import tables_differ
    blocks = pd.DataFrame({"block_number": [1, 2], "valid_count": [100, 100]})
    assert tables_differ({"blocks": blocks}, {"blocks": blocks.copy()}) == []
    # added since the run: a table, and a column of a stored table
    grown = {"blocks": blocks.assign(block_size=10), "new_table": pd.DataFrame({"x": [1]})}
    assert tables_differ(grown, {"blocks": blocks.copy()}) == []
    # negative controls: an altered stored value, a stored table the raw files do not give, a stored column they lack
    altered = blocks.copy()
    altered.loc[0, "valid_count"] = 101
    assert tables_differ({"blocks": blocks}, {"blocks": altered}) == [
        "table blocks: the raw files (2 rows) differ from the stored table (2 rows)"]
    assert tables_differ({}, {"blocks": blocks}) == ["table blocks: only stored, the raw files and the stored tables differ"]
    assert tables_differ({"blocks": blocks}, {"blocks": blocks.assign(extra=1)}) == [
        "table blocks: stored columns extra are not in the raw files"]


def test_a_reanalysis_starts_from_the_measurement_not_from_an_earlier_verdict(tmp_path):
    """measure.measured_status: `invoke report` re-analyses stored runs; validity is judged afresh from the point's
    measurement, so a point an earlier analysis failed for validity is judged again, and one whose measurement
    failed stays failed."""
    from harness.measure import measured_status
    judged_failed = {"status": "failed", "reason": "validity: table x: only in the raw files"}
    (tmp_path / "measurement.json").write_text(json.dumps({"schema_version": 1, "status": "complete", "reason": None}))
    assert measured_status(tmp_path, judged_failed) == ("complete", None)
    # negative control: the measurement itself failed (a host died): no re-analysis makes it complete
    (tmp_path / "measurement.json").write_text(json.dumps({"schema_version": 1, "status": "failed", "reason": "peer exited"}))
    assert measured_status(tmp_path, {"status": "complete", "reason": None}) == ("failed", "peer exited")
    # a run stored before measurement.json: a failure of validity alone is judged again, any other stays
    old_run = tmp_path / "old"
    old_run.mkdir()
    assert measured_status(old_run, judged_failed) == ("complete", None)
    assert measured_status(old_run, {"status": "failed", "reason": "timeout"}) == ("failed", "timeout")
    assert measured_status(old_run, {"status": "interrupted", "reason": "SIGINT"}) == ("interrupted", "SIGINT")
