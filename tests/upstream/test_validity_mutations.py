"""Mutation tests of the pre-made-block drivers (docs/validity.md): each driver corrupts a stated share
of its timed transfers (a bad creator signature, a bad endorsement signature, a stale read); the
harness's validity check (harness/validity.py) must find exactly those invalid, with the code each
mutation must cause, and every other transfer valid, from the ledger's codes, not the driver's count.

Drivers: FastFabric's published peer benchmark (patch 0006), our Fabric 1.2 peer benchmark
(systems/fabric-1.2 patch 0004), and the reference build's committer benchmark. FastFabric's runs the way
harness/runner.py runs a point (playbook, teardown, collect), with 3 of each mutation in 400 transfers. The
other two are the control points (1% of each kind) of the runs labs 05 (upstream) and 01 (reference) make
with their documented ``invoke reproduce`` commands, once per session (the fixture ``lab_run``,
tests/conftest.py; tests/labs/test_labs.py reads the same runs): the harness ran and checked them, and its
stored validity section is what these tests read. Skipped with the reason when a source snapshot, Ansible
or a built bin/ is not at hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import REPO_ROOT, collect, upstream, validity, work
from harness.rundir import write_json
from harness.measure import measure_primitives

from tests.upstream import needs
from tests.upstream.test_fabric_network import point_setup, run_watched

BLOCKS, BLOCK_SIZE = 4, 100
#: 3 of each mutation in 400 transfers (evenly spaced choices)
MUTATIONS = {"corrupt_creator_fraction": 0.0075, "corrupt_endorsement_fraction": 0.0075, "stale_read_fraction": 0.0075}
EXPECTED = {"bad_creator": 3, "bad_endorsement": 3, "stale_read": 3}
#: the mutation each parameter plans
KINDS = {"corrupt_creator_fraction": "bad_creator", "corrupt_endorsement_fraction": "bad_endorsement",
         "stale_read_fraction": "stale_read"}

pytestmark = [pytest.mark.network]


def record_primitives(point_dir: Path) -> None:
    """The run's measured cost of a verification, as harness/reproduce.py records it in metadata.json."""
    point_dir.mkdir(parents=True, exist_ok=True)
    write_json(point_dir.parent.parent / "metadata.json",
               {"primitives": {"before_points": measure_primitives(REPO_ROOT / "bin")}})


def checked(point_dir: Path, system: str, parameters: dict, driver: str = "committer-bench",
            build: str = "upstream", build_path: Path | None = None) -> tuple[dict, list[str], dict]:
    """Collect a point's raw files as harness/runner.py does; its validity section, problems and tables
    (the driver, build and build directory the run directory would name, given here: a test's point has
    no experiment.yaml)."""
    collect.convert_point(point_dir)
    tables = collect.load_point(point_dir)
    context = {"experiment": {"driver": driver}, "build": build, "primitives": work.run_primitives(point_dir.parent.parent),
               "build_paths": {"test": str(build_path) if build_path else None}}
    section, problems = validity.check_point(point_dir, {"id": point_dir.name, "system": system, "variant": "test",
                                                         "parameters": parameters}, tables, context=context)
    return section, problems, tables


def run_mutated_point(tmp_path: Path, build: Path, system: str, **extra) -> tuple[dict, list[str], dict]:
    """Run one committer-bench point of ``system`` with ``MUTATIONS``; its validity section, problems, tables."""
    spec, inventory, variables, point_dir = point_setup(
        tmp_path, "committer-bench", REPO_ROOT / "bin", build, system=system,
        transactions=BLOCKS * BLOCK_SIZE, block_size=BLOCK_SIZE, payload_bytes=0, **MUTATIONS, **extra)
    record_primitives(point_dir)
    run_watched(tmp_path, spec, inventory, variables, point_dir, 600, [])
    return checked(point_dir, system, MUTATIONS, build_path=build)


def assert_mutations_found(section: dict, problems: list[str], tables: dict, planned: dict = EXPECTED,
                           transfers: int = BLOCKS * BLOCK_SIZE):
    assert problems == [], problems
    assert section["mutations"] == {"planned": planned, "invalid_as_planned": sum(planned.values()),
                                    "refused_at_broadcast": {}}
    invalid = section["ledger_invalid"]
    assert invalid == {"BAD_CREATOR_SIGNATURE": planned["bad_creator"], "ENDORSEMENT_POLICY_FAILURE":
                       planned["bad_endorsement"], "MVCC_READ_CONFLICT": planned["stale_read"]}, invalid
    # the driver's own per-block count agrees with the ledger (cross-checked, no problem above)
    assert int(tables["blocks"]["valid_count"].sum()) == transfers - sum(planned.values())


def lab_control_point(lab_run, lab: str, build: str) -> tuple[dict, list[str], dict, dict, int]:
    """The control point of lab ``lab``'s run on ``build`` (tests/conftest.py): its validity section and
    problems as the harness stored them (summary.json), its tables, the count of each mutation its
    parameters plan (a share of its transfers), and its transfers."""
    where, _ = lab_run(lab)
    points = [p for p in where.glob("results/*/*/2*/points/control__*")
              if json.loads((p.parent.parent / "metadata.json").read_text())["build"]["kind"] == build]
    assert len(points) == 1, f"lab {lab}'s commands made {len(points)} control points on the {build} build"
    (point,) = points
    parameters = json.loads((point / "point.json").read_text())["parameters"]
    planned = {kind: round(float(parameters[name]) * parameters["transactions"])
               for name, kind in KINDS.items()}
    section = json.loads((point / "summary.json").read_text())["validity"]
    assert section["driver"] == "committer-bench" and section["build"] == build, section
    return section, section["problems"], collect.load_point(point), planned, parameters["transactions"]


@pytest.mark.skipif(bool(needs.missing(("ansible-playbook", "go"), "fastfabric", "FastFabric")),
                    reason=needs.missing(("ansible-playbook", "go"), "fastfabric", "FastFabric") or "")
def test_fastfabric_peer_benchmark_refuses_exactly_the_corrupted_transfers(tmp_path):
    build = upstream.build("fastfabric", "snapshot").path
    section, problems, tables = run_mutated_point(tmp_path, build, "fastfabric",
                                                  block_pipeline_goroutines=4, tx_validation_goroutines=2)
    assert_mutations_found(section, problems, tables)
    assert section["counts_from"].startswith(("block files", "per-transaction codes"))
    # the validator's codes were recorded per transaction (patch 0006) and the creator checks ran
    assert len(tables["block_txs"]) == BLOCKS * BLOCK_SIZE
    assert section["log_counts"].get("msp_channel_missing", 0) == 0


@pytest.mark.skipif(bool(needs.missing(("ansible-playbook", "go"), "fabric-1.2", "Fabric 1.2")),
                    reason=needs.missing(("ansible-playbook", "go"), "fabric-1.2", "Fabric 1.2") or "")
def test_fabric12_peer_benchmark_refuses_exactly_the_corrupted_transfers(lab_run):
    # lab 05's upstream run of Fig. 6 (Fabric 1.2's peer benchmark): its control point
    section, problems, tables, planned, transfers = lab_control_point(lab_run, "05", "upstream")
    assert_mutations_found(section, problems, tables, planned, transfers)
    assert section["counts_from"].startswith("block files"), section["counts_from"]


@pytest.mark.skipif(not (REPO_ROOT / "bin" / "committerbench").is_file() or bool(needs.missing(("ansible-playbook",))),
                    reason="bin/committerbench is not built (invoke build) or Ansible is missing")
def test_reference_committer_benchmark_refuses_exactly_the_corrupted_transfers(lab_run):
    # lab 01's run of Fig. 5 on the reference build (playbooks/committer-bench.yml): its control point
    section, problems, tables, planned, transfers = lab_control_point(lab_run, "01", "reference")
    assert_mutations_found(section, problems, tables, planned, transfers)
    assert section["counts_from"].startswith("block files"), section["counts_from"]


# Fabric v1.1.0's peer (validation-opt, driver validation-breakdown, LevelDB) refusing exactly the forged
# endorsements is proven by tests/upstream/test_validity_mutations_networks.py
# (test_fabric11_network_refuses_exactly_the_mutated_operations: the same build and driver, with bad creators
# and stale reads beside them, the codes read from the kept ledger and re-derived by our verifier), and the
# load generator's "forged <txid>" lines by tests/harness/test_verify_stored_run.py (its network's control).
