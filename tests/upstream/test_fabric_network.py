"""A real Fabric v1.2.0 network deployed by the Ansible roles, driven by our load
generator and block watcher: systems/fabric-1.2/playbooks/fabric-end-to-end.yml, then teardown.yml,
run the way harness/runner.py runs a point (the same extra variables, a local
provider's inventory with the components' groups of systems/fabric-1.2/upstream.yaml).

Runs the upstream build of Fabric 1.2 that harness/upstream.py makes from the
v1.2.0 snapshot in ../shared/upstream (built once and cached; skipped with the
reason when no snapshot is at hand), or the build directory named by
FABRICREPRO_FABRIC_BUILD (bin/{peer,orderer,cryptogen,configtxgen,money-transfer},
gopath/, tools/go). Builds bin/loadgen and bin/blockwatch of this tree into a
temporary directory.

    FABRICREPRO_FABRIC_BUILD=build/upstream/fabric-1.2/<key> pytest tests/upstream/test_fabric_network.py -s

FABRICREPRO_FABRIC_TRANSFERS (default 300) sets the transfers of the run.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import signal
import sys
import subprocess
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml

from harness import upstream
from harness.deploy import run_playbook
from harness.providers.base import groups_of
from harness.providers.local import LocalProvider
from harness.runner import role_variables

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "infra"))
from config_keys import check_rendered  # noqa: E402  (infra/ is not a package)

BUILD = os.environ.get("FABRICREPRO_FABRIC_BUILD", "")
TRANSFERS = int(os.environ.get("FABRICREPRO_FABRIC_TRANSFERS", "300"))
BLOCK_SIZE = 100


def fabric_skip_reason() -> str | None:
    for tool in ("ansible-playbook", "go", "ss"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if not BUILD:
        why = upstream.source_available(upstream.load_recipe("fabric-1.2"), "snapshot")
        return f"no upstream Fabric 1.2 to build ({why}) and FABRICREPRO_FABRIC_BUILD is not set" if why else None
    missing = [f for f in ("bin/peer", "bin/orderer", "bin/cryptogen", "bin/configtxgen", "bin/money-transfer",
                           "tools/go") if not (Path(BUILD) / f).exists()]
    if missing:
        return f"FABRICREPRO_FABRIC_BUILD={BUILD} lacks {', '.join(missing)}"
    return None


pytestmark = [pytest.mark.skipif(fabric_skip_reason() is not None, reason=fabric_skip_reason() or ""), pytest.mark.network]


@pytest.fixture(scope="module")
def fabric_build() -> Path:
    """The upstream Fabric 1.2 build: FABRICREPRO_FABRIC_BUILD, or harness/upstream.py's from the snapshot."""
    if BUILD:
        return Path(BUILD).resolve()
    return upstream.build("fabric-1.2", "snapshot").path


def _driver(name: str = "end-to-end", system: str = "fabric-1.2") -> dict:
    """A driver of an upstream build (its playbook, roles and placement)."""
    recipe = yaml.safe_load((REPO / "systems" / system / "upstream.yaml").read_text(encoding="utf-8"))
    return recipe["drivers"][name]


def point_setup(tmp_path: Path, driver: str, clients: Path, fabric_build: Path, system: str = "fabric-1.2",
                switches: dict | None = None, **parameters):
    """Inventory and extra variables of one point of ``system``'s ``driver`` on the local provider, as
    harness/runner.py makes them.

    Returns ``(spec, inventory, variables, point_dir)``; ``parameters`` override the point's.
    """
    spec = _driver(driver, system)
    layout: dict[str, list[str]] = {}
    for component, role in spec["placement"].items():
        layout.setdefault(role, []).append(component)
    provider = LocalProvider(work_root=tmp_path / "work", bin_dir=clients)
    inventory = provider.inventory(tmp_path / "inventory.yml", groups_of(layout, {r: "localhost" for r in layout}))
    point = SimpleNamespace(id="p000", system=system, parameters={
        "transactions": TRANSFERS, "block_size": BLOCK_SIZE, "point_timeout_s": 600, "payload_bytes": 2900,
        "seed": 1, "batch_timeout_ms": 2000, "rate_tps": 0, "loadgen_streams": 4, **parameters})
    point_dir = tmp_path / "run" / "points" / point.id
    work = f"test/{driver}/run/{point.id}"
    variables = {  # as harness/runner.py run_point passes them
        "fabricrepro_point": point.id, "fabricrepro_point_path": work, "fabricrepro_point_dir": str(point_dir),
        "fabricrepro_controller_dir": str(tmp_path / "controller" / work),
        "fabricrepro_controller_bin_dir": str(clients), "fabricrepro_switches": switches or {},
        "fabricrepro_stop_order": list(reversed(spec["roles"])), "fabricrepro_upstream_dir": str(fabric_build),
        **role_variables(point, spec.get("companions", []))}
    return spec, inventory, variables, point_dir


def run_watched(tmp_path: Path, spec: dict, inventory, variables: dict, point_dir: Path, timeout: float,
                configs: list[Path]):
    """Run a point's playbook while watching its listeners, then always teardown.yml; every process must be gone.

    ``configs`` (globs under tmp_path, e.g. ``work/**/core.yaml``) are read before teardown removes them.
    Returns ``(watch, rendered {name: text}, elapsed seconds)``; kills what teardown left, then fails.
    """
    logs = point_dir / "logs"
    watch = ListenWatch(tmp_path / "work")
    watch.start()
    started = time.monotonic()
    try:
        try:
            run_playbook(spec["playbook"], inventory, variables, logs / "ansible-run.log", timeout=timeout)
        finally:
            elapsed = time.monotonic() - started
            watch.stop.set()
            watch.join()
            watch.pids.update(pid_files(tmp_path / "work"))
            rendered = {f.name: f.read_text() for pattern in configs for f in tmp_path.glob(str(pattern))
                        if "fabric_channel" not in f.parts}  # the CLI's is Fabric's own sample
            run_playbook("teardown.yml", inventory, variables, logs / "ansible-teardown.log", timeout=300)
        left = {pid: f for pid, f in watch.pids.items() if _alive(pid)}
        assert not left, f"teardown left processes running: {left}"
    finally:
        for pid in (p for p in list(watch.pids) if _alive(p)):
            os.kill(pid, signal.SIGKILL)
    return watch, rendered, elapsed


def assert_every_transfer_valid(point_dir: Path, transfers: int):
    """Every transfer acknowledged by the orderer and committed valid, in blocks after the setup blocks.

    Reads the loadgen's txs.csv, the block watcher's deliveries.csv (every block from 1 on: the
    instantiation, the creates, then the transfers) and measured.json; returns them and the transfer blocks.
    """
    raw = point_dir / "raw" / "localhost"
    txs = pd.read_csv(raw / "txs.csv")
    assert len(txs) == transfers and (txs["status"] == "SUCCESS").all(), txs["status"].value_counts()
    deliveries = pd.read_csv(raw / "deliveries.csv")
    measured = yaml.safe_load((point_dir / "measured.json").read_text())
    assert deliveries["block_number"].tolist() == list(range(1, len(deliveries) + 1))
    assert (deliveries["valid_count"] == deliveries["tx_count"]).all(), deliveries
    transfer_blocks = deliveries[deliveries["block_number"] >= measured["first_block"]]
    assert transfer_blocks["valid_count"].sum() == transfers == measured["transfer_valid"], measured
    return txs, deliveries, measured, transfer_blocks


def pid_files(root: Path) -> dict[int, str]:
    """``{pid: pid file}`` of every PID file under ``root``."""
    out = {}
    for f in root.rglob("*.pid"):
        try:
            out[int(f.read_text().strip())] = str(f)
        except (OSError, ValueError):
            pass
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie is not running
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


class ListenWatch(threading.Thread):
    """While the playbook runs: the TCP listeners of the processes whose PID files are under ``root``."""

    def __init__(self, root: Path):
        super().__init__(daemon=True)
        self.root, self.stop, self.listeners, self.pids = root, threading.Event(), set(), {}

    def run(self):
        while not self.stop.wait(0.5):
            self.pids.update(pid_files(self.root))
            out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
            for line in out.splitlines():
                for pid in map(int, re.findall(r"pid=(\d+)", line)):
                    if pid in self.pids:
                        self.listeners.add((Path(self.pids[pid]).stem, line.split()[3]))


@pytest.fixture(scope="module")
def clients(tmp_path_factory) -> Path:
    """This tree's loadgen and blockwatch, built for the test."""
    bin_dir = tmp_path_factory.mktemp("bin")
    subprocess.run(["go", "build", "-o", str(bin_dir) + "/", "./cmd/loadgen", "./cmd/blockwatch", "./cmd/blockfile"], cwd=REPO,
                   check=True, timeout=600)
    return bin_dir


def test_chaincode_against_fabric_shim(tmp_path, fabric_build):
    """workloads/money-transfer/fabric-1.2's own test, against the build's Fabric 1.2 shim (GOPATH mode)."""
    src = tmp_path / "gopath" / "src" / "fabricrepro" / "chaincode" / "money-transfer"
    shutil.copytree(REPO / "workloads" / "money-transfer" / "fabric-1.2", src)
    env = {**os.environ, "GOPATH": f"{tmp_path / 'gopath'}:{fabric_build / 'gopath'}",
           "GO111MODULE": "off", "GOFLAGS": ""}
    out = subprocess.run(["go", "test", "-count=1", "."], cwd=src, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr


def test_fabric_network_commits_every_transfer(tmp_path, clients, fabric_build):
    spec, inventory, variables, point_dir = point_setup(tmp_path, "end-to-end", clients, fabric_build)
    logs = point_dir / "logs"
    watch, rendered, elapsed = run_watched(tmp_path, spec, inventory, variables, point_dir, 900,
                                           ["work/**/core.yaml", "work/**/orderer.yaml", "controller/**/configtx.yaml",
                                            "controller/**/crypto-config.yaml"])

    # The configuration files the roles wrote hold only keys Fabric 1.2 reads
    # (infra/upstream_keys/fabric-1.2/, derived from the v1.2.0 snapshot).
    assert sorted(rendered) == ["configtx.yaml", "core.yaml", "crypto-config.yaml", "orderer.yaml"], sorted(rendered)
    for name, text in rendered.items():
        assert check_rendered(name, text, ["fabric-1.2"]) == [], name

    # Every server bound the host's own address (127.0.0.1 here), never every interface.
    bound = {name: sorted(a for n, a in watch.listeners if n == name) for name, _ in watch.listeners}
    print(f"listeners: {bound}")
    assert all(addr.startswith("127.0.0.1:") for _, addr in watch.listeners), bound
    assert {"127.0.0.1:7050"} <= set(bound.get("fabric_orderer", [])), bound
    assert {"127.0.0.1:7051", "127.0.0.1:7052", "127.0.0.1:7053"} <= set(bound.get("fabric_peer", [])), bound

    raw = point_dir / "raw" / "localhost"
    txs, deliveries, measured, transfer_blocks = assert_every_transfer_valid(point_dir, TRANSFERS)
    assert measured["setup_transactions"] == 1 + 2 * TRANSFERS

    # The peer's own log: one commit line per block, with the same transaction counts.
    peer_log = (logs / "localhost" / "fabric_peer.log").read_text(errors="replace")
    committed = {int(n): int(m) for n, m in
                 re.findall(r"Channel \[mychannel\]: Committed block \[(\d+)\] with (\d+) transaction\(s\)", peer_log)}
    assert committed.get(0) == 1
    for row in deliveries.itertuples():
        assert committed.get(row.block_number) == row.tx_count, (row, committed)
    assert sum(committed[b] for b in transfer_blocks["block_number"]) == TRANSFERS

    # With our instrumentation patch (0002) the peer wrote the per-block CSV of docs/interfaces.md.
    if (raw / "blocks.csv").exists():
        blocks = pd.read_csv(raw / "blocks.csv").set_index("block_number")
        for row in deliveries.itertuples():
            assert blocks.loc[row.block_number, "valid_count"] == row.tx_count, (row, blocks)
        assert (blocks["committed_ns"] >= blocks["received_ns"]).all()

    # The ledgers' block files were fetched.
    blockfile = raw / "blocks" / "fabric_peer" / "mychannel" / "blockfile_000000"
    assert blockfile.is_file() and blockfile.stat().st_size > 0, sorted(p.relative_to(raw) for p in raw.rglob("*"))
    # ... and they decode into a consistent chain that holds every delivered block with its validation codes.
    decoded = subprocess.run([str(clients / "blockfile"), *sorted(map(str, blockfile.parent.glob("blockfile_*")))],
                             capture_output=True, text=True, check=True).stdout
    ledger = pd.read_csv(io.StringIO(decoded)).set_index("block_number")
    assert ledger.index.min() == 0 and ledger.loc[0, "tx_count"] == 1  # the channel's config block
    for row in deliveries.itertuples():
        assert (ledger.loc[row.block_number, "tx_count"], ledger.loc[row.block_number, "valid_count"]) == \
            (row.tx_count, row.valid_count), row

    span_s = (transfer_blocks["arrival_ns"].max() - txs["submitted_ns"].min()) / 1e9
    load = os.getloadavg()
    print(f"{TRANSFERS} transfers valid in {len(transfer_blocks)} blocks, {span_s:.2f} s from the first send to the "
          f"last block's delivery: {TRANSFERS / span_s:.0f} tx/s; playbook {elapsed:.0f} s; "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


def test_v12_peer_benchmark_commits_every_block(tmp_path, fabric_build):
    """Our v1.2.0 peer benchmark (patch 0003, driver committer-bench; Figs. 5-8): a few
    pre-made blocks through v1.2.0's validator and ledger, every transfer valid, patch
    0002's per-block row for each timed block with the commit phases, no process left."""
    blocks_n, size = 5, 100
    spec, inventory, variables, point_dir = point_setup(tmp_path, "committer-bench", tmp_path, fabric_build,
                                                        transactions=blocks_n * size, block_size=size,
                                                        payload_bytes=0, vscc_threads=2)
    watch, _, elapsed = run_watched(tmp_path, spec, inventory, variables, point_dir, 600, [])
    print(f"v1.2.0 peer benchmark point: {elapsed:.1f} s")
    assert not watch.listeners, "the benchmark runs in one process and listens on nothing"
    blocks = pd.read_csv(point_dir / "raw" / "localhost" / "blocks.csv")
    # Only the timed blocks have rows: after the definition (1) and the accounts (2).
    assert blocks["block_number"].tolist() == list(range(3, 3 + blocks_n))
    assert (blocks["tx_count"] == size).all() and (blocks["valid_count"] == size).all(), blocks
    assert (blocks[["vscc_ns", "mvcc_ns", "block_commit_ns", "state_commit_ns"]] > 0).all().all()
    assert (blocks["received_ns"] < blocks["validated_ns"]).all() and (blocks["validated_ns"] < blocks["committed_ns"]).all()
    out = (point_dir / "logs" / "localhost" / "fabric_peerbench.out").read_text()
    assert f"Commit: {blocks_n} blocks of {size} transactions" in out and "(validatorPoolSize 2)" in out
    assert "All transactions successfully committed" in out
