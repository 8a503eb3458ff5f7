"""The published BFT-SMaRt ordering service (systems/bftsmart-orderer, release-1.2)
ordering envelopes end to end on netns hosts: 4 ordering nodes on one host, a
frontend (its Java half and the fork's orderer), a receiver and the fork's
broadcast client on another, deployed by its playbooks/bftsmart-ordering.yml and
stopped by teardown.yml, as harness/runner.py runs a point.

Builds the upstream recipe from the snapshots in ../shared/upstream (cached in
build/upstream/; skipped with the reason when they are absent). Needs root
(network namespaces), ansible-playbook, java and ant.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fabricrepro_systems.bftsmart_orderer import logs
from harness import upstream
from harness.deploy import run_playbook
from harness.providers import netns as N
from tests.upstream import needs

ROLES = ["bftsmart_config", "bftsmart_node", "bftsmart_frontend", "bftsmart_receiver", "bftsmart_broadcast"]
ENVELOPES, GOROUTINES, BLOCK_SIZE = 400, 4, 10


pytestmark = [needs.skip_unless_ready(("ansible-playbook", "java", "ant", "go", "ip", "unshare", "ssh"),
                                     "bftsmart-orderer", "BFT-SMaRt ordering service",
                                     also=["network namespaces need root" if os.geteuid() != 0 else None]),
              pytest.mark.network]


@pytest.fixture(scope="module")
def build() -> Path:
    return upstream.build("bftsmart-orderer", "snapshot").path


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_four_nodes_and_a_frontend_order_envelopes_into_signed_blocks(tmp_path, build):
    roles = {"nodes": ["bftsmart_node"], "frontend": ["bftsmart_frontend", "bftsmart_receiver", "bftsmart_broadcast"]}
    point_dir = tmp_path / "run" / "points" / "p000"
    work = "test/bftsmart-ordering/p000"
    variables = {"fabricrepro_point": "p000", "fabricrepro_point_path": work, "fabricrepro_point_dir": str(point_dir),
                 "fabricrepro_controller_dir": str(tmp_path / "controller" / work), "fabricrepro_switches": {},
                 "fabricrepro_stop_order": list(reversed(ROLES)), "fabricrepro_upstream_dir": str(build),
                 "bftsmart_config_nodes": 4, "bftsmart_config_frontends": 1, "bftsmart_config_block_size": BLOCK_SIZE,
                 "bftsmart_broadcast_messages": ENVELOPES, "bftsmart_broadcast_goroutines": GOROUTINES}
    pids: set[int] = set()
    with N.NetnsCluster(tmp_path / "netns", list(roles), roles=roles) as cluster:
        cluster.write_inventory()
        prefix = cluster.prefix
        try:
            run_playbook("bftsmart-ordering.yml", cluster.inventory_path, variables, point_dir / "logs" / "run.log",
                         timeout=600)
        finally:
            pids = {int(p.read_text()) for p in (tmp_path / "netns").rglob("*.pid")
                    if p.read_text().strip().isdigit() and "sshd" not in p.name}
            run_playbook("teardown.yml", cluster.inventory_path, variables, point_dir / "logs" / "teardown.log",
                         timeout=300)
        # teardown stopped every instance (4 nodes, the frontend's two halves, the receiver) by its PID file
        assert len(pids) >= 7, pids
        left = sorted(p for p in pids if _alive(p))
        assert not left, f"teardown left processes running: {left}"
    assert not [ns for ns in N.netns_list() if ns.startswith(prefix)], "namespaces left after the cluster closed"

    fetched = point_dir / "logs" / "frontend"
    blocks = logs.receiver_blocks((fetched / "bftsmart_receiver.log").read_text(errors="replace"))
    # block 0 is the genesis block; then ENVELOPES / BLOCK_SIZE full blocks, in order, none missing or extra
    assert [b["block"] for b in blocks] == list(range(ENVELOPES // BLOCK_SIZE + 1)), [b["block"] for b in blocks]
    for b in blocks[1:]:
        # at least 2f+1 = 3 node signatures per block; both the block and its last-config signatures verify as a quorum
        assert b["signatures"] >= 3 and b["quorum"] == 2, b
    sent = logs.broadcast_summary((fetched / "bftsmart_broadcast.out").read_text(errors="replace"))
    assert sent == {"sent": ENVELOPES, "total": ENVELOPES}
