"""harness/report/caliper.py: Caliper 0.6's summary table read back from its log (the table caliper-core's
report.js prints with the npm table module's "ramac" border, after a log line of its own)."""

from harness.report.caliper import caliper_point, caliper_table

LOG = """\
2026.12.07-21:10:01.100 \x1b[32minfo \x1b[39m [caliper] [report-builder] \t### Test result ###
2026.12.07-21:10:01.101 \x1b[32minfo \x1b[39m [caliper] [report-builder] \t
+----------+------+------+-----------------+-----------------+-----------------+-----------------+------------------+
| Name     | Succ | Fail | Send Rate (TPS) | Max Latency (s) | Min Latency (s) | Avg Latency (s) | Throughput (TPS) |
|----------|------|------|-----------------|-----------------|-----------------|-----------------|------------------|
| transfer | 198  | 2    | 150.3           | 2.10            | 0.41            | 1.20            | 95.2             |
+----------+------+------+-----------------+-----------------+-----------------+-----------------+------------------+

2026.12.07-21:10:01.200 \x1b[32minfo \x1b[39m [caliper] [round-orchestrator] \tFinished round 1 (transfer)
+------+------+
| Type | Name |
|------|------|
| x    | y    |
+------+------+
2026.12.07-21:10:02.000 \x1b[32minfo \x1b[39m [caliper] [report-builder] \t### All test results ###
+----------+------+------+-----------------+-----------------+-----------------+-----------------+------------------+
| Name     | Succ | Fail | Send Rate (TPS) | Max Latency (s) | Min Latency (s) | Avg Latency (s) | Throughput (TPS) |
|----------|------|------|-----------------|-----------------|-----------------|-----------------|------------------|
| transfer | 198  | 2    | 150.3           | 2.10            | -               | 1.20            | 95.2             |
+----------+------+------+-----------------+-----------------+-----------------+-----------------+------------------+
"""


def test_caliper_table_reads_each_round_once_with_numbers():
    (row,) = caliper_table(LOG)
    assert row["Name"] == "transfer"
    assert (row["Succ"], row["Fail"], row["Throughput (TPS)"], row["Avg Latency (s)"]) == (198, 2, 95.2, 1.2)
    assert row["Min Latency (s)"] is None  # "-": no successful transaction to time, as Caliper prints it


def test_a_point_without_a_caliper_round_has_none(tmp_path):
    assert caliper_point(tmp_path) is None


def test_a_point_with_a_report_but_no_window_names_why_its_ledger_count_is_missing(tmp_path):
    (tmp_path / "caliper").mkdir()
    (tmp_path / "caliper" / "report.html").write_text("<html></html>")
    (tmp_path / "logs" / "localhost").mkdir(parents=True)
    (tmp_path / "logs" / "localhost" / "caliper.out").write_text(LOG)
    found = caliper_point(tmp_path)
    assert found["caliper"]["Succ"] == 198
    assert found["ledger"] == {"error": "no measured.json with last_block"}
