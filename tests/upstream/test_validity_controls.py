"""Negative controls of the work check (docs/validity.md, "Work"; issue 31): each upstream peer benchmark
runs once as measured and once with ``control_skip_signature_checks`` (systems/fabric-1.2 patch 0005,
systems/fastfabric patch 0008: every ECDSA verification answers valid without being computed). Each benchmark also
prints an untimed floor section (``fabricrepro floor_section blocks N txs M wall_ns W user_ns U system_ns S``:
the same work with the signature checks off, same process, just before the timed section). The harness's work
check (harness/work.py) must pass the measured point and fail the control on its floor: the timed section's CPU
per transfer over the floor's, below ``FLOOR_MIN_OVER`` x the 2 verifications owed (at the harness's cost of one,
measured here as a run measures it at its start). That difference is taken within one process at one moment, so
the machine's load does not move it: ``test_controls_fail_the_work_check_on_a_loaded_machine`` holds both
systems to it at a load average of 4 or more (issue 45 item 3). And FastFabric's kept timed blocks
(patch 0009) must decode with ``bin/blockfile --txs`` to exactly the codes of its block_txs.csv.

Each point runs the way harness/runner.py runs one (playbook, teardown, collect). Skipped with the reason
when a source snapshot, Ansible, Go or a built bin/ is not at hand.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from contextlib import contextmanager
from io import StringIO
from pathlib import Path

import pandas as pd
import pytest

from harness import REPO_ROOT, upstream, validity, work
from harness.measure import measure_primitives

from tests.upstream import needs
from tests.upstream.test_fabric_network import point_setup, run_watched

VERIFIES_PER_TX = 2
BLOCKS, BLOCK_SIZE = 10, 100
#: The control tests' blocks: sections of 1,000 transfers last 50-150 ms, where a loaded machine's swings moved
#: FastFabric's control over its floor by up to x0.8 (2026-12-07); 4,000 average them out.
CONTROL_BLOCKS = 40
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


def run_point(tmp_path: Path, system: str, build: Path, blocks: int = BLOCKS, **parameters) -> Path:
    """One committer-bench point of ``system`` under ``tmp_path``; its point directory."""
    spec, inventory, variables, point_dir = point_setup(
        tmp_path, "committer-bench", REPO_ROOT / "bin", build, system=system,
        transactions=blocks * BLOCK_SIZE, block_size=BLOCK_SIZE, payload_bytes=0, **parameters)
    run_watched(tmp_path, spec, inventory, variables, point_dir, 600, [])
    return point_dir


def work_of(point_dir: Path, system: str, component: str, bin_dir: Path = REPO_ROOT / "bin") -> tuple[dict, list[str]]:
    """The harness's work check (harness/work.py) of one point, the owed verifications' cost measured now as a run
    measures it at its start (bin/committerbench --ecdsa-verify-rate), the ledger count taken from the driver's own
    (the codes are another test's), and the floor line required (the build's patches print it)."""
    txs = timed_section(point_dir, component)["txs"]
    codes = pd.DataFrame({"block_number": [0] * txs, "validation_code": ["VALID"] * txs})
    primitives = {"before_points": measure_primitives(bin_dir)}
    return work.work_check(point_dir, validity.load_rules(system)["work"], [component], primitives, codes,
                           floor_required=True)


def assert_control_separates(tmp_path: Path, system: str, build: Path, component: str, **parameters):
    """The measured point passes the work check, its negative control fails it on the floor: the timed section's
    CPU per transfer over the floor's (same process, signature checks off) stays below FLOOR_MIN_OVER x the owed
    verifications. Also the older comparison of the two points' timed sections, which the machine's load moves."""
    real = run_point(tmp_path / "real", system, build, CONTROL_BLOCKS, **parameters)
    control = run_point(tmp_path / "control", system, build, CONTROL_BLOCKS, control_skip_signature_checks=True,
                        **parameters)
    r, c = timed_section(real, component), timed_section(control, component)
    assert r["txs"] == c["txs"] == CONTROL_BLOCKS * BLOCK_SIZE
    assert control_said(control, component) and not control_said(real, component)
    (rw, rp), (cw, cp) = work_of(real, system, component), work_of(control, system, component)
    for w in (rw, cw):
        assert w["floor"]["txs"] == CONTROL_BLOCKS * BLOCK_SIZE, w
    numbers = ", ".join(f"{name} timed {w['cpu_us_per_tx']:.0f} us/tx, floor {w['floor']['cpu_us_per_tx']:.0f}, "
                        f"2 x {w['verify_us']:.0f} us owed: x{w['covered']:.2f}, over the floor x{w['covered_over_floor']:.2f}"
                        for name, w in (("real", rw), ("control", cw)))
    print(f"{system} (load {os.getloadavg()[0]:.1f}): {numbers}")  # pytest -s shows them
    assert not rp, f"{system}: {numbers}: {rp}"
    # the control fails the work check; on its floor as a rule (a loaded FastFabric control of 40 blocks once spent
    # x0.52 over it and failed on min_covered alone: systems/fastfabric/README.md, "Negative control")
    assert cw["status"] == "failed" and cp, f"{system}: {numbers}: the control passed the work check"
    return real, control


@contextmanager
def loaded_machine(min_load: float = 4.0, loops: int = 6, wait_s: float = 180):
    """``loops`` busy Python loops until the 1-minute load average reaches ``min_load`` (they run on after, and are
    stopped by PID whatever happens)."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(loops)]
    try:
        deadline = time.monotonic() + wait_s
        while os.getloadavg()[0] < min_load:
            assert time.monotonic() < deadline, f"load {os.getloadavg()[0]:.1f} < {min_load} after {wait_s} s"
            time.sleep(2)
        yield
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def blockfile_codes(files: list[Path]) -> pd.DataFrame:
    out = subprocess.run([str(BLOCKFILE), "--txs", *map(str, files)], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    return pd.read_csv(StringIO(out), dtype={"tx_id": "string", "validation_code": "string"},
                       keep_default_na=False)


def assert_kept_blocks_match(point_dir: Path, blocks: int = BLOCKS) -> pd.DataFrame:
    """FastFabric's kept timed blocks (patch 0009) decode to exactly block_txs.csv's codes (patch 0006)."""
    kept = sorted(point_dir.glob("raw/*/blocks/fastfabric_peerbench/*/blockfile_*"))
    assert [f.name for f in kept] == ["blockfile_000000"], kept
    assert kept[0].parent.name == "test"  # the published channel, the benchmark's own
    codes = blockfile_codes(kept)
    recorded = pd.read_csv(next(point_dir.glob("raw/*/block_txs.csv")),
                           dtype={"tx_id": "string", "validation_code": "string"}, keep_default_na=False)
    assert len(codes) == blocks * BLOCK_SIZE
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
    # The control's timed section alone reached min_covered (1.2) on the machine of 2026-11-29 (x1.13-1.21); over
    # its floor it stays near x0 (systems/fabric-1.2/README.md, "Negative control of the work check").
    assert_control_separates(tmp_path, "fabric-1.2", build, "fabric_peerbench")


# The FastFabric control test was a timing comparison on 2 shared cores that CI could not hold to (CI runs of
# 2026-12-07: control x2.15 and x1.76 against the real point's x2.85 and x2.22). Since the floor section (patch
# 0008) the check is a difference within one process, which the load does not move: on by default again.
FASTFABRIC_P3 = {"block_pipeline_goroutines": 4, "tx_validation_goroutines": 2}


@pytest.mark.skipif(bool(FASTFABRIC), reason=FASTFABRIC or "")
def test_fastfabric_control_without_signature_checks_stands_apart_from_the_measured_point(tmp_path):
    build = upstream.build("fastfabric", "snapshot").path
    # Under load the control's timed section alone reached min_covered (x1.27 in CI on 2026-11-28, x1.67 on the
    # machine of 2026-11-29); over its floor it stays near x0 (systems/fabric-1.2/README.md, "Negative control").
    real, control = assert_control_separates(tmp_path, "fastfabric", build, "fastfabric_peerbench", **FASTFABRIC_P3)
    for point_dir in (real, control):
        assert set(assert_kept_blocks_match(point_dir, CONTROL_BLOCKS)["validation_code"]) == {"VALID"}


@pytest.mark.skipif(bool(FASTFABRIC), reason=FASTFABRIC or "")
def test_fastfabric_kept_blocks_carry_the_validators_refusals(tmp_path):
    """With 3 + 3 + 3 corrupted transfers of 1,000, the kept blocks hold their refusals, as block_txs.csv."""
    build = upstream.build("fastfabric", "snapshot").path
    point_dir = run_point(tmp_path, "fastfabric", build, block_pipeline_goroutines=4, tx_validation_goroutines=2,
                          corrupt_creator_fraction=0.003, corrupt_endorsement_fraction=0.003, stale_read_fraction=0.003)
    codes = assert_kept_blocks_match(point_dir)
    invalid = codes.loc[codes["validation_code"] != "VALID", "validation_code"].value_counts().to_dict()
    assert invalid == {"BAD_CREATOR_SIGNATURE": 3, "ENDORSEMENT_POLICY_FAILURE": 3, "MVCC_READ_CONFLICT": 3}, invalid


@pytest.mark.skipif(bool(FABRIC12) or bool(FASTFABRIC), reason=FABRIC12 or FASTFABRIC or "")
def test_controls_fail_the_work_check_on_a_loaded_machine(tmp_path):
    """Issue 45 item 3: busy loops raise the 1-minute load average to 4 or more (2 cores); under it each system's
    negative control fails the work check on its floor and its measured point passes it."""
    with loaded_machine():
        assert_control_separates(tmp_path / "fabric-1.2", "fabric-1.2", upstream.build("fabric-1.2", "snapshot").path,
                                 "fabric_peerbench")
        assert_control_separates(tmp_path / "fastfabric", "fastfabric", upstream.build("fastfabric", "snapshot").path,
                                 "fastfabric_peerbench", **FASTFABRIC_P3)
        assert os.getloadavg()[0] >= 4
