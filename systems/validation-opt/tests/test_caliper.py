"""Hyperledger Caliper 0.6.0 drives our smallbank chaincode on Fabric v1.1.0 with our patches (systems/validation-opt).

The paper's client was Caliper's smallbank benchmark (seed 002, Sec. III-B).
This runs systems/validation-opt/playbooks/validation-caliper.yml on the local provider: the
validation-phase network on LevelDB (the original variant's build), then
Caliper with its own Fabric connector (fabric-network 2.2) and the
smallbank workload modules of the pinned caliper-benchmarks source: a
"create" round and a "modify" round of random smallbank operations. Caliper's
count of successful transactions must equal the valid transactions the peer
committed in its phase log, every transaction committed invalid (MVCC conflicts of random operations on
few accounts) is one of Caliper's failures, and its report is kept in the point's directory.
Skipped with the reason without ../shared/upstream or node/npm. On a fresh
clone the caliper role installs Caliper into build/caliper-0.6.0 (npm install
and bind, about 2 minutes here, then cached); the run itself takes about 90 s.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest

from harness import upstream
from harness.providers.base import groups_of
from harness.providers.local import LocalProvider
from tests.upstream.test_fabric_network import run_watched
from tests.upstream import needs

from fabricrepro_systems.validation_opt.tests.test_network import point_setup

ACCOUNTS = OPERATIONS = 20


pytestmark = [needs.skip_unless_ready(
    ("ansible-playbook", "go", "ss", "node", "npm"), "validation-opt", "Fabric v1.1.0",
    also=["no caliper-benchmarks snapshot in ../shared/upstream"
          if upstream.snapshot_archive({"snapshot": "caliper-benchmarks"}) is None else None]), pytest.mark.network]


def _caliper_rows(log: str) -> dict[str, tuple[int, int]]:
    """Caliper's summary table: round -> (succ, fail)."""
    rows = {}
    for m in re.finditer(r"^\|\s*(create|modify)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|", log, re.M):
        rows[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    return rows


def test_caliper_drives_smallbank(tmp_path):
    switches = {"state_db": "leveldb"}
    # Caliper is the client: no command of this tree runs (no load generator, block watcher or blockfile),
    # so the point's bin directory stays empty instead of holding a fresh build of them.
    clients = tmp_path / "bin"
    clients.mkdir()
    build = upstream.build("validation-opt", "snapshot", switches=switches)
    spec, inventory, variables, point_dir = point_setup(tmp_path, clients, build.path, switches)
    spec = {"playbook": "validation-caliper.yml",
            "roles": [r for r in spec["roles"] if r not in ("blockwatch", "loadgen")] + ["caliper"],
            "placement": {**{k: v for k, v in spec["placement"].items() if k not in ("blockwatch", "loadgen")},
                          "caliper": "client"}}
    layout: dict[str, list[str]] = {}
    for component, role in spec["placement"].items():
        layout.setdefault(role, []).append(component)
    inventory = LocalProvider(work_root=tmp_path / "work", bin_dir=clients).inventory(
        tmp_path / "inventory.yml", groups_of(layout, {r: "localhost" for r in layout}))
    variables.update({"fabricrepro_stop_order": list(reversed(spec["roles"])),
                      "caliper_accounts": ACCOUNTS, "caliper_operations": OPERATIONS})
    run_watched(tmp_path, spec, inventory, variables, point_dir, 900, [])

    logs = point_dir / "logs" / "localhost"
    log = (logs / "caliper.out").read_text() + (logs / "caliper.log").read_text()
    rows = _caliper_rows(log)
    assert set(rows) == {"create", "modify"}, log[-3000:]
    assert rows["create"] == (ACCOUNTS, 0), rows
    # Caliper's own modify round can pick account index 0, which its create round never makes
    # (caliper-benchmarks' smallbank.js): those fail at endorsement and never reach a block.
    assert rows["modify"][0] + rows["modify"][1] == OPERATIONS and rows["modify"][0] > 0, rows
    assert (point_dir / "caliper" / "report.html").stat().st_size > 0

    # What Caliper counted as successful is what the peer committed as valid.
    phases = pd.read_csv(point_dir / "raw" / "localhost" / "phases.csv")
    assert phases["valid_count"].sum() == 1 + rows["create"][0] + rows["modify"][0], phases  # + the instantiation
    # Random operations on 20 accounts conflict (MVCC) within a block: every transaction the peer committed as
    # invalid is one Caliper counted as failed (the rest of its failures never reached a block).
    committed_invalid = int(phases["tx_count"].sum() - phases["valid_count"].sum())
    assert committed_invalid <= rows["modify"][1], (committed_invalid, rows)
    assert phases["tx_count"].sum() - 1 - rows["create"][0] <= OPERATIONS, phases
