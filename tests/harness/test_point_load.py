"""The load average per point (issue 23, item 6): the runner records the controller's 1-minute load
average at a point's start and end in its summary.json, and the report's validity table shows it.

The run store is made of TEST DOUBLES of runs (test_pooling's ``make_run``); nothing is deployed.
"""

import os

from harness.report import render_paper
from harness.rundir import read_json, write_json
from harness.measure import controller_load_1min
from tests.harness.test_pooling import _equal_speed, make_run


def test_the_controller_load_is_the_kernels_one_minute_average():
    load = controller_load_1min()
    assert isinstance(load, float) and load >= 0
    assert abs(load - os.getloadavg()[0]) < 1  # read moments apart


def test_the_validity_table_shows_each_points_load_and_an_older_point_a_dash(root, tmp_path):
    results = tmp_path / "results"
    run = make_run(results, root, "run-a", _equal_speed([100, 102, 98], [50, 51, 49]))
    recorded = sorted((run.path / "points").glob("*/summary.json"))[0]
    write_json(recorded, {**read_json(recorded),
                          "load_average_1min": {"start": 0.52, "end": 3.75, "where": "controller"}})

    md = (render_paper("mini", results, tmp_path / "reports", root / "papers") / "report.md").read_text()

    header = next(line for line in md.splitlines() if "work check" in line)
    assert header.rstrip(" |").endswith("load (1 min): start → end")
    rows = [line for line in md.splitlines() if line.startswith("| ") and "__r" in line]
    assert len(rows) == 12 and [line for line in rows if "0.52 → 3.75" in line] == rows[:1], rows
    assert all(line.rstrip(" |").endswith("–") for line in rows[1:]), rows
