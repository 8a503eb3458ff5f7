"""FastFabric's end-to-end experiment (Table I) on the published code, briefly: the driver
end-to-end-kafka of systems/fastfabric/upstream.yaml (systems/fastfabric/playbooks/fastfabric-end-to-end.yml: 3 ZooKeeper
servers and 3 Kafka brokers with replication 3, the published storage server, a second instance of it
as the endorser, the published perf orderer, the published deliver client as the committing peer, the
published broadcast client over the point's loadgen_streams streams) and teardown.yml, run the way
harness/runner.py runs a point.

What it checks beyond a point's own checks:

- the kept block files: teardown fetches the storage server's block store to
  raw/localhost/blocks/fastfabric_storage/<channel>/blockfile_*; they decode with this tree's
  ``blockfile`` (Fabric's block-file encoding, the chain's hashes checked) and hold every block of the
  peer's blocks.csv with the same transaction and valid counts (and every block from 0 on);
- no server logs an MVCC_READ_CONFLICT (each committed block reaches each server once);
- the broadcast client used the point's loadgen_streams (Fabric 1.2's column uses the same setting).

Skipped with the reason when the fastfabric snapshot (../shared/upstream), Ansible, Go or Java/Maven
(Kafka) are not at hand.

    flock -o /tmp/fabricrepro-network.lock pytest systems/fastfabric/tests/test_fastfabric_table1.py -s
"""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from harness import upstream

from tests.upstream.test_fabric_network import clients, point_setup, run_watched  # noqa: F401 (fixture)
from tests.upstream import needs

# 20 per stream over 50 streams: 10 blocks of 100 transfers after the set-up (200 transactions of 10 accounts).
TRANSFERS, STREAMS = 1000, 50
SWITCHES = {"send_txid_only": True, "parallel_broadcast": True, "state_db": "hashtable", "parallel_validation": True,
            "offload_storage_endorsement": True, "unmarshal_cache": True}

pytestmark = [needs.skip_unless_ready(("ansible-playbook", "go", "ss", "java", "mvn"), "fastfabric", "FastFabric"),
              pytest.mark.network]


@pytest.fixture(scope="module")
def fastfabric_build() -> Path:
    # FastFabric, every optimization on: the published tree.
    return upstream.build("fastfabric", "snapshot", switches=SWITCHES).path


def _blockfile(binary: Path, files: list[Path]) -> pd.DataFrame:
    out = subprocess.run([str(binary), *map(str, files)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return pd.read_csv(io.StringIO(out.stdout))


def test_table1_keeps_every_measured_block(tmp_path, fastfabric_build, clients):  # noqa: F811
    spec, inventory, variables, point_dir = point_setup(
        tmp_path, "end-to-end-kafka", clients, fastfabric_build, system="fastfabric", switches=SWITCHES,
        transactions=TRANSFERS, block_size=100, loadgen_streams=STREAMS, orderer_type="kafka")
    watch, _, elapsed = run_watched(tmp_path, spec, inventory, variables, point_dir, 900, [])
    print(f"Table I FastFabric point: {elapsed:.1f} s")

    # The storage server (10000) and the endorser (10001) bound the host's own address.
    ports = {lst[1] for lst in watch.listeners}
    assert {"127.0.0.1:10000", "127.0.0.1:10001"} <= ports, watch.listeners
    assert not [lst for lst in watch.listeners if lst[1].startswith(("0.0.0.0:", "[::]:", "*:"))], watch.listeners

    raw, logs = point_dir / "raw" / "localhost", point_dir / "logs" / "localhost"
    committed = pd.read_csv(raw / "blocks.csv")
    assert committed["tx_count"].sum() == TRANSFERS and committed["valid_count"].sum() == TRANSFERS, committed

    # The broadcast client sent over the point's streams (TRANSFERS / STREAMS per stream).
    assert f"{TRANSFERS // STREAMS} messages per goroutine" in (logs / "fastfabric_broadcast.out").read_text()

    # The storage server's block store was kept, decodes, and holds every measured block.
    files = sorted((raw / "blocks" / "fastfabric_storage").glob("*/blockfile_*"))
    assert files, sorted(p.relative_to(point_dir) for p in raw.rglob("*"))
    kept = _blockfile(clients / "blockfile", files)
    assert list(kept["block_number"]) == list(range(len(kept))), "the chain from block 0 on"
    merged = committed.merge(kept, on="block_number", how="left", suffixes=("", "_kept"), validate="one_to_one")
    missing = merged[merged["tx_count_kept"].isna()]
    assert missing.empty, f"blocks of blocks.csv not in the kept block files: {list(missing['block_number'])}"
    assert (merged["tx_count_kept"] == merged["tx_count"]).all(), merged
    assert (merged["valid_count_kept"] == merged["valid_count"]).all(), merged
    # The set-up before the measured blocks is there too: 2 accounts per transfer, 10 per transaction.
    setup = kept[kept["block_number"] < committed["block_number"].min()]
    assert setup["tx_count"].sum() >= 1 + 2 * TRANSFERS // 10  # genesis block's config transaction + the set-up

    # Every block reached each server once: no MVCC conflict on a repeated block.
    for name in ("fastfabric_storage.log", "fastfabric_endorser.log"):
        text = (logs / name).read_text()
        assert "Ledger constructed" in text, name
        assert "MVCC_READ_CONFLICT" not in text, f"{name}: {text.count('MVCC_READ_CONFLICT')} MVCC conflicts"
