"""Mutation tests of the pre-made-block drivers (docs/validity.md): each driver corrupts a stated share
of its timed transfers (a bad creator signature, a bad endorsement signature, a stale read); the
harness's validity check (harness/validity.py) must find exactly those invalid, with the code each
mutation must cause, and every other transfer valid, from the ledger's codes, not the driver's count.

Drivers: FastFabric's published peer benchmark (patch 0006), our Fabric 1.2 peer benchmark
(systems/fabric-1.2 patch 0004), and the reference build's committer benchmark. Each runs the way
harness/runner.py runs a point (playbook, teardown, collect). Skipped with the reason when a source
snapshot, Ansible or a built bin/ is not at hand.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from harness import REPO_ROOT, collect, upstream, validity, work
from harness.builds import reference_driver
from harness.deploy import run_playbook
from harness.providers.local import LocalProvider
from harness.runner import role_variables
from harness.rundir import write_json

from tests.upstream import needs
from tests.upstream.test_fabric_network import groups_of, point_setup, run_watched

BLOCKS, BLOCK_SIZE = 4, 100
#: 3 of each mutation in 400 transfers (evenly spaced choices)
MUTATIONS = {"corrupt_creator_fraction": 0.0075, "corrupt_endorsement_fraction": 0.0075, "stale_read_fraction": 0.0075}
EXPECTED = {"bad_creator": 3, "bad_endorsement": 3, "stale_read": 3}

pytestmark = [pytest.mark.network]


def record_primitives(point_dir: Path) -> None:
    """The run's measured cost of a verification, as harness/reproduce.py records it in metadata.json."""
    point_dir.mkdir(parents=True, exist_ok=True)
    write_json(point_dir.parent.parent / "metadata.json",
               {"primitives": {"before_points": work.measure_primitives(REPO_ROOT / "bin")}})


def checked(point_dir: Path, system: str, parameters: dict, driver: str = "committer-bench",
            build: str = "upstream", build_path: Path | None = None) -> tuple[dict, list[str], dict]:
    """Collect a point's raw files as harness/runner.py does; its validity section, problems and tables
    (the driver, build and build directory the run directory would name, given here: a test's point has
    no experiment.yaml)."""
    collect.convert_point(point_dir)
    tables = collect.load_point(point_dir)
    context = {"driver": driver, "build": build, "primitives": work.run_primitives(point_dir.parent.parent),
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


def assert_mutations_found(section: dict, problems: list[str], tables: dict):
    assert problems == [], problems
    assert section["mutations"] == {"planned": EXPECTED, "invalid_as_planned": sum(EXPECTED.values()),
                                    "refused_at_broadcast": {}}
    invalid = section["ledger_invalid"]
    assert invalid == {"BAD_CREATOR_SIGNATURE": 3, "ENDORSEMENT_POLICY_FAILURE": 3, "MVCC_READ_CONFLICT": 3}, invalid
    # the driver's own per-block count agrees with the ledger (cross-checked, no problem above)
    assert int(tables["blocks"]["valid_count"].sum()) == BLOCKS * BLOCK_SIZE - 9


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
def test_fabric12_peer_benchmark_refuses_exactly_the_corrupted_transfers(tmp_path):
    build = upstream.build("fabric-1.2", "snapshot").path
    section, problems, tables = run_mutated_point(tmp_path, build, "fabric-1.2")
    assert_mutations_found(section, problems, tables)
    assert section["counts_from"].startswith("block files"), section["counts_from"]


@pytest.mark.skipif(not (REPO_ROOT / "bin" / "committerbench").is_file() or bool(needs.missing(("ansible-playbook",))),
                    reason="bin/committerbench is not built (invoke build) or Ansible is missing")
def test_reference_committer_benchmark_refuses_exactly_the_corrupted_transfers(tmp_path):
    section, problems, tables = run_reference_point(tmp_path)
    assert_mutations_found(section, problems, tables)
    assert section["counts_from"].startswith("block files"), section["counts_from"]


def run_reference_point(tmp_path: Path):
    """The reference build's committer-bench point with ``MUTATIONS`` (playbooks/committer-bench.yml)."""
    spec = reference_driver("fabric-1.2", "committer-bench")
    layout: dict[str, list[str]] = {}
    for component, role in spec["placement"].items():
        layout.setdefault(role, []).append(component)
    provider = LocalProvider(work_root=tmp_path / "work", bin_dir=REPO_ROOT / "bin")
    inventory = provider.inventory(tmp_path / "inventory.yml", groups_of(layout, {r: "localhost" for r in layout}))
    point = SimpleNamespace(id="p000", system="fabric-1.2", parameters={
        "transactions": BLOCKS * BLOCK_SIZE, "block_size": BLOCK_SIZE, "point_timeout_s": 300, "payload_bytes": 0,
        "seed": 1, "batch_timeout_ms": 2000, "rate_tps": 0, "loadgen_streams": 4, **MUTATIONS})
    point_dir = tmp_path / "run" / "points" / point.id
    record_primitives(point_dir)
    work = f"test/committer-bench/run/{point.id}"
    variables = {"fabricrepro_point": point.id, "fabricrepro_point_path": work, "fabricrepro_point_dir": str(point_dir),
                 "fabricrepro_controller_dir": str(tmp_path / "controller" / work),
                 "fabricrepro_controller_bin_dir": str(REPO_ROOT / "bin"), "fabricrepro_switches": {},
                 "fabricrepro_stop_order": list(reversed(spec["roles"])), **role_variables(point)}
    try:
        run_playbook(spec["playbook"], inventory, variables, point_dir / "logs" / "ansible-run.log", timeout=300)
    finally:
        run_playbook("teardown.yml", inventory, variables, point_dir / "logs" / "ansible-teardown.log", timeout=120)
    return checked(point_dir, "fabric-1.2", MUTATIONS, build="reference")


FORGED = 10


@pytest.mark.skipif(bool(needs.missing(("ansible-playbook", "go", "ss"), "validation-opt", "Fabric v1.1.0")),
                    reason=needs.missing(("ansible-playbook", "go", "ss"), "validation-opt", "Fabric v1.1.0") or "")
def test_fabric11_peer_refuses_exactly_the_forged_endorsements(tmp_path):
    """validation-opt's network (Fabric v1.1.0 peer, LevelDB): the load generator forges the endorsement of
    the first 10 of 200 smallbank operations; the ledger must mark exactly those ENDORSEMENT_POLICY_FAILURE."""
    switches = {"state_db": "leveldb"}
    build = upstream.build("validation-opt", "snapshot", switches=switches).path
    parameters = {"corrupt_endorsement_fraction": FORGED / 200}
    spec, inventory, variables, point_dir = point_setup(
        tmp_path, "validation-breakdown", REPO_ROOT / "bin", build, system="validation-opt", switches=switches,
        transactions=200, block_size=50, payload_bytes=0, batch_timeout_ms=1000, **parameters)
    assert variables["loadgen_forge_endorsement"] == FORGED
    record_primitives(point_dir)
    run_watched(tmp_path, spec, inventory, variables, point_dir, 900, [])
    section, problems, _ = checked(point_dir, "validation-opt", parameters, driver="validation-breakdown")
    assert problems == [], problems
    assert section["counts_from"].startswith("block files"), section["counts_from"]
    assert section["ledger_invalid"] == {"ENDORSEMENT_POLICY_FAILURE": FORGED}, section["ledger_invalid"]
    # exactly the transactions the load generator says it forged (its stderr: "forged <txid>")
    forged = {line.split()[1] for log in point_dir.glob("logs/*/loadgen*.log")
              for line in log.read_text().splitlines() if line.startswith("forged ")}
    ledger = validity.ledger.agreed_codes(validity.ledger.kept_ledgers(point_dir, REPO_ROOT / "bin" / "blockfile"))[0]
    refused = set(ledger.loc[ledger["validation_code"] == "ENDORSEMENT_POLICY_FAILURE", "tx_id"])
    assert len(forged) == FORGED and refused == forged
