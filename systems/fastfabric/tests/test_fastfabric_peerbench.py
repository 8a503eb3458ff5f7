"""FastFabric's published peer benchmark and storage server, built from the pinned
snapshot with our patches (systems/fastfabric), run by systems/fastfabric/playbooks/fastfabric-peer-bench.yml
and teardown.yml the way harness/runner.py runs a point: a few blocks, every
transfer committed valid, the per-block CSV of our patch 0002 complete, nothing
written outside the point's working directory, no process left.

Skipped with the reason when the fastfabric snapshot (../shared/upstream) or
Ansible is not at hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import collect, metrics, upstream

from tests.upstream.test_fabric_network import point_setup, run_watched
from tests.upstream import needs

BLOCKS, BLOCK_SIZE = 6, 100


pytestmark = [needs.skip_unless_ready(("ansible-playbook", "go", "ss"), "fastfabric", "FastFabric"), pytest.mark.network]


@pytest.fixture(scope="module")
def fastfabric_build() -> Path:
    return upstream.build("fastfabric", "snapshot").path


def test_published_peer_benchmark_commits_every_block(tmp_path, fastfabric_build):
    home_dumps = sorted(Path.home().glob("*.log"))
    spec, inventory, variables, point_dir = point_setup(
        tmp_path, "committer-bench", tmp_path, fastfabric_build, system="fastfabric",
        transactions=BLOCKS * BLOCK_SIZE, block_size=BLOCK_SIZE, payload_bytes=0,
        block_pipeline_goroutines=4, tx_validation_goroutines=2)
    watch, _, elapsed = run_watched(tmp_path, spec, inventory, variables, point_dir, 600, [])
    print(f"peer benchmark point: {elapsed:.1f} s")

    # The storage server bound the host's own address.
    assert ("fastfabric_storage", "127.0.0.1:10000") in watch.listeners, watch.listeners
    raw = point_dir / "raw" / "localhost"
    blocks = collect.read_csv(raw / "blocks.csv", "blocks")
    assert len(blocks) == BLOCKS and (blocks["tx_count"] == BLOCK_SIZE).all()
    assert (blocks["valid_count"] == BLOCK_SIZE).all(), blocks
    assert (blocks["received_ns"] <= blocks["validated_ns"]).all()
    assert (blocks["validated_ns"] <= blocks["committed_ns"]).all()
    assert (blocks["vscc_ns"] > 0).all() and (blocks["mvcc_ns"] == -1).all()
    assert metrics.commit_throughput_tps(blocks) > 0
    # The flags reached the benchmark (it prints them), and it checked every balance.
    out = (point_dir / "logs" / "localhost" / "fastfabric_peerbench.out").read_text()
    assert "Current block pipeline width: 4" in out and "Current transaction pipeline width: 2" in out
    assert "All transactions successfully committed" in out
    # Patch 0001: no dump appended to the home directory, storage under the work dir.
    assert sorted(Path.home().glob("*.log")) == home_dumps
    assert not list((tmp_path / "work").rglob("tx_dump.log"))
