"""FastFabric's orderer experiment (Fig. 4) on the published code: the driver
orderer-bench of systems/fastfabric/upstream.yaml (systems/fastfabric/playbooks/fastfabric-orderer-bench.yml:
one ZooKeeper server and one Kafka broker, the published storage server as the
endorser, the published perf orderer, the published deliver client discarding
blocks after the set-up, the published broadcast client) and teardown.yml, run
the way harness/runner.py runs a point; a few blocks of transfers padded to
4 KB (so patch 0003's padding is exercised: a transfer's own payload is ~2.9 KB).

Skipped with the reason when the fastfabric snapshot (../shared/upstream),
Ansible, Go or Java/Maven (Kafka) are not at hand.

    pytest systems/fastfabric/tests/test_fastfabric_orderer.py -s
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import collect, metrics, upstream

from tests.upstream.test_fabric_network import point_setup, run_watched
from tests.upstream import needs

from fabricrepro_systems.fastfabric import logs as fastfabric_logs

# 10 per stream over the client's 50 streams: 5 blocks of 100 after the set-up (100 transactions).
TRANSFERS, PAYLOAD_KB = 500, 4


pytestmark = [needs.skip_unless_ready(("ansible-playbook", "go", "ss", "java", "mvn"), "fastfabric", "FastFabric"),
              pytest.mark.network]


@pytest.fixture(scope="module")
def fastfabric_build() -> Path:
    # Opt O-II (with O-I): the published tree.
    return upstream.build("fastfabric", "snapshot", switches={"send_txid_only": True, "parallel_broadcast": True}).path


def test_published_orderer_orders_every_preloaded_transfer(tmp_path, fastfabric_build):
    home_logs = sorted(Path.home().glob("*.log"))
    spec, inventory, variables, point_dir = point_setup(
        tmp_path, "orderer-bench", tmp_path, fastfabric_build, system="fastfabric",
        switches={"send_txid_only": True, "parallel_broadcast": True},
        transactions=TRANSFERS, block_size=100, payload_kb=PAYLOAD_KB)
    watch, _, elapsed = run_watched(tmp_path, spec, inventory, variables, point_dir, 600, [])
    print(f"orderer benchmark point: {elapsed:.1f} s")

    # Servers bound the host's own address (the perf orderer's published 0.0.0.0 is overridden).
    assert ("fastfabric_orderer", "127.0.0.1:7050") in watch.listeners, watch.listeners
    assert not [lst for lst in watch.listeners if lst[1].startswith(("0.0.0.0:", "[::]:", "*:"))], watch.listeners

    # The orderer acknowledged every transfer; the metric comes from the client's txs.csv...
    txs = collect.read_csv(point_dir / "raw" / "localhost" / "txs.csv", "txs")
    assert len(txs) == TRANSFERS and (txs["status"] == "SUCCESS").all(), txs["status"].value_counts()
    assert txs["tx_id"].is_unique
    tps = metrics.orderer_throughput_tps(txs)
    # ...and agrees with the client's own round line (same first send and last acknowledgement).
    logs = point_dir / "logs" / "localhost"
    out = (logs / "fastfabric_broadcast.out").read_text()
    (round_,) = fastfabric_logs.broadcast_rounds(out)
    assert round_["sent"] == round_["acknowledged"] == TRANSFERS
    assert tps == pytest.approx(round_["throughput_tps"], rel=1e-6)
    # Every envelope was padded to the payload size before the timed section.
    assert f"Pre-loaded {TRANSFERS} messages, payload mean {PAYLOAD_KB * 1024} bytes" in out

    # The committer discarded blocks holding exactly the transfers, after committing the set-up.
    blocks = fastfabric_logs.discarded_blocks((logs / "fastfabric_deliver.log").read_text())
    assert blocks[-1]["total"] == TRANSFERS and all(b["txs"] <= 100 for b in blocks)

    # Patch 0003: nothing written to the home directory.
    assert sorted(Path.home().glob("*.log")) == home_logs
