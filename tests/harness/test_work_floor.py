"""The work check's floor (harness/work.py, issue 45 item 3): the upstream peer benchmarks print an untimed floor
section (the same work with the signature checks off, same process, just before the timed section); the timed
section's CPU per transaction must exceed the floor's by FLOOR_MIN_OVER x the owed verifications. The negative
control (checks off in both sections) then fails whatever the machine's load; a build whose patches print the
line fails without it; a run made before it is checked the old way, labelled."""

from __future__ import annotations

import pandas as pd

from harness import logscan, validity, work

WORK = {"verifies_per_tx": 2, "min_covered": 1.2}
#: 1,000 transfers in blocks 12-21 (the floor's blocks 2-11 are not the driver's timed blocks)
CODES = pd.DataFrame({"block_number": [12 + i // 100 for i in range(1000)], "validation_code": ["VALID"] * 1000})
TIMED_BLOCKS = list(range(12, 22))
#: 50 us per verification: 2 owed per transfer are 100 us
RATE = {"before_points": {"verifies_per_cpu_s": 20000}}


def write_log(point_dir, text, name="bench.out"):
    path = point_dir / "logs" / "localhost" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def lines(floor_us_per_tx: float | None, timed_us_per_tx: float, txs: int = 1000) -> str:
    out = ""
    if floor_us_per_tx is not None:
        out += (f"fabricrepro floor_section blocks 10 txs {txs} wall_ns 90000000 "
                f"user_ns {int(floor_us_per_tx * txs * 1000)} system_ns 0\n")
    return out + f"fabricrepro timed_section txs {txs} wall_ns 90000000 user_ns {int(timed_us_per_tx * txs * 1000)} system_ns 0\n"


def check(tmp_path, text, floor_required=True):
    write_log(tmp_path, text)
    return work.work_check(tmp_path, WORK, ["bench"], RATE, CODES, TIMED_BLOCKS, floor_required=floor_required)


def test_the_real_run_exceeds_its_floor_by_the_owed_verifications(tmp_path):
    # timed 300 us, floor 160 us: 140 us over it, x1.4 of the 100 us owed (and x3.0 overall, above min_covered)
    result, problems = check(tmp_path, lines(160, 300))
    assert problems == [] and result["status"] == "passed"
    assert result["covered_over_floor"] == 1.4 and result["floor"]["cpu_us_per_tx"] == 160.0
    assert result["min_over_floor"] == work.FLOOR_MIN_OVER


def test_the_negative_control_fails_on_its_floor_even_when_load_raised_its_cpu(tmp_path):
    # a loaded machine: the control's timed section at x1.67 passes min_covered (1.2) alone, but it spent no more
    # than its floor, which skipped the same verifications in the same process at the same moment
    result, problems = check(tmp_path, lines(170, 167))
    assert result["status"] == "failed" and result["covered"] > WORK["min_covered"]
    assert len(problems) == 1 and "its floor" in problems[0] and "x-0.03" in problems[0], problems


def test_a_missing_floor_line_fails_a_build_that_prints_it(tmp_path):
    result, problems = check(tmp_path, lines(None, 300))
    assert result["status"] == "failed" and result["floor"] is None
    assert len(problems) == 1 and "no floor-section line" in problems[0]


def test_a_run_made_before_the_floor_is_checked_against_min_covered_alone_and_labelled(tmp_path):
    result, problems = check(tmp_path, lines(None, 300), floor_required=False)
    assert problems == [] and result["status"] == "passed" and result["floor"] is None
    assert "no floor section" in result["basis"]
    result, problems = check(tmp_path, lines(None, 100), floor_required=False)
    assert result["status"] == "failed" and "x 1.2" in problems[0]


def test_the_whole_cpu_must_still_cover_min_covered(tmp_path):
    # 60 us over a 40 us floor is x0.6 over it, but 100 us in all is x1.0 of the owed, below min_covered
    result, problems = check(tmp_path, lines(40, 100))
    assert result["status"] == "failed" and len(problems) == 1 and "x 1.2" in problems[0]


def test_a_system_may_declare_its_own_margin_over_the_floor(tmp_path):
    write_log(tmp_path, lines(160, 300))
    result, problems = work.work_check(tmp_path, {**WORK, "min_over_floor": 1.5}, ["bench"], RATE, CODES,
                                       TIMED_BLOCKS, floor_required=True)
    assert result["status"] == "failed" and "below 1.5 x" in problems[0]


def test_floor_owed_reads_the_builds_patches():
    new = {"kind": "upstream", "variants": {"upstream": {"patches": [
        {"name": "0005-peer-bench-skip-vscc-control.patch",
         "description": 'prints "fabricrepro floor_section blocks N txs M ..."'}]}}}
    old = {"kind": "upstream", "variants": {"upstream": {"patches": [
        {"name": "0005-peer-bench-skip-vscc-control.patch", "description": "negative control"}]}}}
    assert work.floor_owed(new) and not work.floor_owed(old)
    assert not work.floor_owed(None) and not work.floor_owed({"kind": "reference"})


def test_the_floor_line_must_lie_before_the_stop():
    assert "floor_section" in {line["name"] for line in logscan.HARNESS_BEFORE_STOP}
    assert work.FLOOR_SECTION.search(lines(1, 2))


def test_the_upstream_patches_print_the_floor_line_and_say_so():
    from harness import REPO_ROOT
    for patch in ("systems/fabric-1.2/patches/0005-peer-bench-skip-vscc-control.patch",
                  "systems/fastfabric/patches/0008-peer-bench-skip-vscc-control.patch"):
        text = (REPO_ROOT / patch).read_text()
        header = text.split("\ndiff --git", 1)[0]
        assert work.FLOOR_MARK in header, patch          # the description floor_owed reads from the build
        assert 'fabricrepro floor_section blocks %d txs %d wall_ns %d user_ns %d system_ns %d' in text, patch
