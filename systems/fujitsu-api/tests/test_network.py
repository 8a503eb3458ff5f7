"""Fabric v0.6.1's 4-node PBFT network with the revised chaincode API, deployed by the Ansible roles.

Runs ``systems/fujitsu-api/playbooks/fujitsu-pbft.yml`` (driver ``chaincode-api`` of
``systems/fujitsu-api/upstream.yaml``), then ``teardown.yml``, the way
harness/runner.py runs a point on the local provider: four PBFT peers and
their chaincode processes, the revised transfer chaincode (one Compound
Request of two DiffUpdates per transfer, the variant with both switches on),
and two client processes spread over the peers. Proves that every transfer
committed (the blocks after the deploy hold exactly the transfers), that all
four peers reach the same height with the balances those transfers imply
(the client's check), that vp0 and its chaincode recorded every transfer's
messages (patch 0003, Fig. 2: one CR and the TRANSACTION/COMPLETED pair, two
round trips each), and that teardown leaves nothing running.

Skipped with a reason without ``../shared/upstream``, Ansible, Go or
Debian's RocksDB headers. It holds the network lock (the ``network`` marker).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from harness import upstream
from harness.collect import read_csv
from tests.upstream.test_fabric_network import point_setup, run_watched
from tests.upstream import needs

from fabricrepro_systems.fujitsu_api.chaincode_timing import transactions

REVISED = {"diff_update": True, "compound": True}
NODES = 4
TRANSFERS = 200


pytestmark = [needs.skip_unless_ready(
    ("ansible-playbook", "go", "ss"), "fujitsu-api", "Fabric v0.6.1",
    also=[None if Path("/usr/include/rocksdb/c.h").is_file()
          else "no RocksDB C headers (Debian librocksdb-dev; `invoke setup` installs it)"]), pytest.mark.network]


def test_four_pbft_peers_commit_every_revised_transfer(tmp_path):
    build = upstream.build("fujitsu-api", "snapshot", switches=REVISED).path
    spec, inventory, variables, point_dir = point_setup(
        tmp_path, "chaincode-api", tmp_path / "bin", build, system="fujitsu-api",
        transactions=TRANSFERS, nodes=NODES, concurrent_processes=2, point_timeout_s=300, process_rate_tps=50,
        chaincode_timing=True)
    variables["fabricrepro_switches"] = REVISED
    watch, _, _ = run_watched(tmp_path, spec, inventory, variables, point_dir, timeout=400, configs=[])
    raw = point_dir / "raw" / "localhost"
    txs = pd.read_csv(raw / "txs.csv")
    assert len(txs) == TRANSFERS and (txs["status"] == "OK").all(), txs["status"].value_counts()
    blocks = pd.read_csv(raw / "blocks.csv")
    assert blocks["tx_count"].sum() == TRANSFERS and (blocks["valid_count"] == blocks["tx_count"]).all(), blocks
    # One PBFT network: the client found every peer at the same height with the balances the
    # transfers imply (its own check; here read from its output).
    checked = json.loads((point_dir / "logs" / "localhost" / "fujitsu_api_client-blocks.out").read_text())
    assert checked["valid"] and checked["transactions"] == TRANSFERS, checked
    assert len(checked["peers"]) == NODES
    for state in checked["peers"].values():
        assert state == {"height": checked["height"],
                         "balances": [1_000_000_000 - TRANSFERS, 1_000_000_000 + TRANSFERS]}, checked
    assert checked["height"] == blocks["block_number"].max() + 1
    # Each peer listened on its own REST, gRPC and events ports, on loopback only.
    listened = {addr for _, addr in watch.listeners}
    assert {f"127.0.0.1:{base + 100 * i}" for i in range(NODES) for base in (7050, 7051, 7053)} <= listened, listened
    assert all(addr.startswith("127.0.0.1:") for addr in listened), listened
    # Fig. 2's timing: every transfer vp0 executed, as two round trips whose phases add up to its time.
    timed = transactions(read_csv(raw / "cc_messages.csv", "cc_messages"))
    assert len(timed) == TRANSFERS and (timed["round_trips"] == 2).all(), timed.describe()
    assert (timed["transfer_ns"] + timed["chaincode_ns"] + timed["peer_ns"] == timed["total_ns"]).all()
    assert (timed[["transfer_ns", "chaincode_ns", "peer_ns"]] > 0).all().all()
