"""Fabric v1.1.0 with our patches (systems/validation-opt) commits smallbank transactions, on LevelDB and on a real CouchDB.

Each case builds the variant's upstream build (Fabric v1.1.0 from the snapshot,
the fixes and instrumentation, the variant's flavour patches, and CouchDB
3.3.3 from its snapshots; cached by key), then runs one point of the driver
validation-breakdown (systems/validation-opt/playbooks/validation-breakdown.yml) the way
harness/runner.py does and teardown.yml after it: the smallbank accounts and
operations from our load generator (smallbank mode) all commit valid, the
peer's phase log has the paper's breakdown for every measured block, every
server bound the host's own address, and nothing is left running.
Skipped with the reason without ../shared/upstream.

    FABRICREPRO_VALIDATION_TXS=300 pytest systems/validation-opt/tests/test_network.py -s
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from harness import REPO_ROOT, upstream
from tests.upstream.test_fabric_network import run_watched
from tests.upstream.test_fabric_network import point_setup as fabric_point_setup
from tests.upstream import needs

TXS = int(os.environ.get("FABRICREPRO_VALIDATION_TXS", "200"))
BLOCK_SIZE = 50
OPTIMIZED = {"chaincode_cache": True, "parallel_statedb_read": True, "parallel_commit": True}
PHASES = ["vscc_ns", "statedb_read_ns", "mvcc_ns", "ledger_write_ns", "statedb_write_ns", "history_write_ns",
          "others_ns", "vsc_statedb_read_ns", "ledger_statedb_write_ns"]


#: This tree's load generator and block watcher, as `invoke build` (CI: `invoke setup`) built them into bin/
#: (as tests/upstream/test_validity_mutations_networks.py runs this driver): no second build per module.
CLIENTS = REPO_ROOT / "bin"
_UNBUILT = [c for c in ("loadgen", "blockwatch") if not (CLIENTS / c).is_file()]

pytestmark = [needs.skip_unless_ready(("ansible-playbook", "go", "ss", "erl", "make"), "validation-opt",
                                     "Fabric v1.1.0 / CouchDB"), pytest.mark.network,
              pytest.mark.skipif(bool(_UNBUILT), reason=f"bin/ lacks {', '.join(_UNBUILT)} (invoke build)")]


def point_setup(tmp_path: Path, clients: Path, build: Path, switches: dict):
    """Inventory and extra variables of one validation-breakdown point on the local provider, as harness/runner.py makes them."""
    return fabric_point_setup(tmp_path, "validation-breakdown", clients, build, system="validation-opt",
                              switches=switches, transactions=TXS, block_size=BLOCK_SIZE, payload_bytes=0,
                              batch_timeout_ms=1000, vscc_threads=4)


@pytest.mark.parametrize("switches", [
    # Both databases on the optimized build: one cold build serves both cases, and every patch
    # (the baseline's instrumentation included) runs on each database.
    pytest.param({"state_db": "leveldb", **OPTIMIZED}, id="optimized-leveldb"),
    pytest.param({"state_db": "couchdb", **OPTIMIZED}, id="optimized-couchdb"),
])
def test_peer_commits_smallbank(tmp_path, switches):
    build = upstream.build("validation-opt", "snapshot", switches=switches)
    flavours = build.info.get("flavours") or []
    assert flavours == ["cc-cache", "vsc-read-overlap", "parallel-commit"]
    spec, inventory, variables, point_dir = point_setup(tmp_path, CLIENTS, build.path, switches)
    watch, rendered, elapsed = run_watched(tmp_path, spec, inventory, variables, point_dir, 900, ["work/**/core.yaml"])
    print(f"{switches}: point ran in {elapsed:.0f} s")

    # Every listener on the host's own address; CouchDB's HTTP, epmd and distribution ports too.
    # (epmd also listens on the IPv6 loopback beside the address it is given: loopback too.)
    bound = {addr for _, addr in watch.listeners}
    assert all(addr.startswith(("127.0.0.1:", "[::1]:")) for addr in bound), watch.listeners
    assert {"127.0.0.1:7050", "127.0.0.1:7051", "127.0.0.1:7052"} <= bound, watch.listeners
    core = rendered["core.yaml"]
    if switches["state_db"] == "couchdb":
        assert {"127.0.0.1:5984", "127.0.0.1:14369", "127.0.0.1:19100"} <= bound, watch.listeners  # HTTP, epmd, Erlang
        assert "stateDatabase: CouchDB" in core and "couchDBAddress: 127.0.0.1:5984" in core
        version = json.loads((point_dir / "logs" / "localhost" / "couchdb-version.log").read_text())
        assert version["couchdb"] == "Welcome" and version["version"] == "3.3.3", version
    else:
        assert "stateDatabase: goleveldb" in core
        assert not (point_dir / "logs" / "localhost" / "couchdb-version.log").exists()
    assert "validatorPoolSize: 4" in core

    # Every smallbank operation acknowledged and committed valid, after the setup blocks.
    raw = point_dir / "raw" / "localhost"
    txs = pd.read_csv(raw / "txs.csv")
    assert len(txs) == TXS and (txs["status"] == "SUCCESS").all(), txs["status"].value_counts()
    deliveries = pd.read_csv(raw / "deliveries.csv")
    measured = json.loads((point_dir / "measured.json").read_text())
    assert (deliveries["valid_count"] == deliveries["tx_count"]).all(), deliveries
    assert measured["transfer_valid"] == TXS, measured

    # The peer's phase log: one row per block it committed through the
    # coordinator, with the paper's breakdown; what is zero depends on the
    # state database and on the optimizations.
    phases = pd.read_csv(raw / "phases.csv")
    blocks = pd.read_csv(raw / "blocks.csv")
    assert phases["block_number"].tolist() == blocks["block_number"].tolist() == list(range(1, len(blocks) + 1))
    ops = phases[phases["block_number"] >= measured["first_block"]]
    assert ops["valid_count"].sum() == TXS
    assert (ops[PHASES] >= 0).all().all() and (ops["vscc_ns"] > 0).all() and (ops["ledger_write_ns"] > 0).all()
    if switches["state_db"] == "couchdb":
        assert (ops["statedb_read_ns"] > 0).all(), ops  # the bulk read of the read sets
    else:
        assert (ops["statedb_read_ns"] == 0).all(), ops  # LevelDB reads inside MVCC (the paper, Sec. III-C)
    optimized = switches.get("parallel_commit", False)
    assert ((ops["vsc_statedb_read_ns"] > 0) == optimized).all() and ((ops["ledger_statedb_write_ns"] > 0) == optimized).all()
    span = ops["committed_ns"] - ops["received_ns"]
    pairs = (ops["vsc_statedb_read_ns"] + ops["mvcc_ns"] + ops["ledger_statedb_write_ns"] + ops["others_ns"]
             if optimized else ops[["vscc_ns", "statedb_read_ns", "mvcc_ns", "ledger_write_ns", "statedb_write_ns",
                                    "others_ns"]].sum(axis=1))
    assert (pairs == span).all(), "the breakdown must add up to each block's time in the committer"
    print(ops[PHASES].mean().div(1e6).round(2).to_dict())
