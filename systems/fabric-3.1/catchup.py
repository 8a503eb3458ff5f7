"""FastFabric's Fig. 6 on v3.1's committer: the driver ``committer-catchup`` (playbooks/fabric3-committer-catchup.yml).

The end-to-end network runs as the driver ``end-to-end`` runs it (orderers, peer0 with the chaincode, the
accounts, every transfer endorsed before the timed section and ordered into blocks of 100). Only then does a
second peer of the organization (role ``fabric3_catchup_peer``, process ``fabric3_catchup_peer``) start and
join the channel: an org leader without leader election, so it pulls every block from the orderers' deliver
service and commits them one after another, the blocks already made. Its log's per-block lines (logs.py,
``parse_peer_log``) time the commit of the pre-made transfer blocks, as FastFabric's peer benchmark times its
pre-computed blocks.

Here:

* ``core_yaml``: the catch-up peer's core.yaml from peer0's (network_files.py wrote it): its own ports,
  directory and peer ID; peer0's identity and TLS material (cryptogen made one peer; the committing peer's own
  identity signs nothing a block's validation checks); no gossip with peer0 (its bootstrap is itself), so every
  block comes from the orderers; private-data pulls give up after ``PVT_PULL_RETRY`` (the lifecycle approval's
  implicit collection, before the transfer blocks: peer0 holds it, no peer is asked) and no reconciler runs.
  ``write_files`` writes it on the controller before the playbook (prepare.py, the plugin's hook).
* ``phases_table``: table ``fabric3_catchup_phases``, the catch-up peer's log as logs.py parses peer0's.
* ``catchup_problems`` / ``catchup_throughput_tps``: the metric ``run_throughput_tps`` of these points (Fig. 6's,
  ``harness.metrics.run_throughput_tps``: valid transactions over the time from the first block's entry to
  the last block's commit) over the transfer blocks, and the rules it rests on: NaN unless every one holds.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pandas as pd
import yaml

from harness.plugin_api import NS_PER_S, Metric, Table

from . import logs
from . import network as net_config

TABLE = "fabric3_catchup_phases"
#: The catch-up peer's process name (process role), so its log is logs/<host>/fabric3_catchup_peer.log.
PEER_LOG = "fabric3_catchup_peer.log"
#: Offset of the catch-up peer's ports from fabric3_network_base_port: after the last node of any layout
#: (BFT's peer: +40..+45): listen +60, chaincode +62, operations +63.
PORT_OFFSET = 60
#: How long the catch-up peer waits for a block's private data before committing without it (the sample: 60s).
PVT_PULL_RETRY = "1s"
CATCHUP_PEER_ID = f"peer1.{net_config.PEER_DOMAIN}"


def _replace_prefix(value, old: str, new: str):
    if isinstance(value, dict):
        return {k: _replace_prefix(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_prefix(v, old, new) for v in value]
    if isinstance(value, str) and (value == old or value.startswith(old + "/")):
        return new + value[len(old):]
    return value


def core_yaml(peer0_core: dict, peer0_dir: str, node_dir: str, host: str, bind: str, port: int) -> dict:
    """The catch-up peer's core.yaml: peer0's (``peer0_core``, whose paths lie under ``peer0_dir``) with every
    path under ``node_dir`` instead, listening on ``bind:port`` (chaincode ``port + 2``, operations
    ``port + 3``), dialled at ``host:port``, gossiping with no one, an org leader without election, private
    data pulled for ``PVT_PULL_RETRY`` at most, no reconciliation."""
    if not peer0_dir or not node_dir or peer0_dir == node_dir:
        raise ValueError(f"the catch-up peer needs a directory of its own (peer0: {peer0_dir!r}, its: {node_dir!r})")
    doc = _replace_prefix(copy.deepcopy(peer0_core), peer0_dir.rstrip("/"), node_dir.rstrip("/"))
    address = f"{host}:{port}"
    for key, value in {
            "peer.id": CATCHUP_PEER_ID, "peer.listenAddress": f"{bind}:{port}", "peer.address": address,
            "peer.chaincodeListenAddress": f"{bind}:{port + 2}", "peer.chaincodeAddress": f"{host}:{port + 2}",
            "peer.gossip.bootstrap": address, "peer.gossip.endpoint": address,
            "peer.gossip.externalEndpoint": address,
            "peer.gossip.useLeaderElection": False, "peer.gossip.orgLeader": True,
            "peer.gossip.pvtData.pullRetryThreshold": PVT_PULL_RETRY,
            "peer.gossip.pvtData.reconciliationEnabled": False,
            "operations.listenAddress": f"{bind}:{port + 3}"}.items():
        _set(doc, key, value)
    return doc


def _set(doc: dict, dotted: str, value) -> None:
    # as network.py sets a node's keys: one peer0's core.yaml (the release's sample) lacks is refused
    *parents, last = dotted.split(".")
    node = doc
    for key in parents:
        node = node[key]
    if last not in node and dotted not in net_config.READ_NOT_IN_SAMPLE:
        raise KeyError(f"{dotted}: not in the release's sample")
    node[last] = value


def write_files(spec: dict) -> dict:
    """On the controller: ``<network_dir>/nodes/catchup/core.yaml`` and ``catchup.json`` (its address)."""
    out = Path(spec["network_dir"])
    peer0 = yaml.safe_load((out / "nodes" / "peer0" / "core.yaml").read_text())
    port = int(spec["base_port"]) + PORT_OFFSET
    doc = core_yaml(peer0, spec["peer0_dir"], spec["node_dir"], spec["host"], spec["bind"], port)
    path = out / "nodes" / "catchup" / "core.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    info = {"id": CATCHUP_PEER_ID, "address": f"{spec['host']}:{port}", "bind": spec["bind"], "port": port,
            "operations_port": port + 3, "dir": spec["node_dir"]}
    (out / "catchup.json").write_text(json.dumps(info, indent=2, sort_keys=True))
    return info


def phases_table(point_dir: Path) -> pd.DataFrame | None:
    """Table ``fabric3_catchup_phases``: logs.py's phase table of the catch-up peer's log (None without one)."""
    return logs.phases_table(point_dir, log_name=PEER_LOG)


def _transfer_blocks(phases: pd.DataFrame) -> pd.DataFrame:
    b = phases[(phases["tx_count"] > 0) & (phases["measured"] == 1)]
    return b.sort_values("block_number").reset_index(drop=True)


def catchup_problems(catchup: pd.DataFrame | None, block_txs: pd.DataFrame | None,
                     peer0: pd.DataFrame | None) -> list[str]:
    """Why the catch-up peer's transfer blocks do not measure a commit of pre-made blocks ([] when they do):

    * it committed transfer blocks (the measured window's data blocks), numbered without a gap, each with the
      timestamps of its receive and commit lines;
    * the delivered codes (``block_txs``, held against every kept ledger by the validity checks, the catch-up
      peer's among them) cover exactly those blocks, each with the transaction count the catch-up peer logged;
    * the blocks were made before it began: peer0 (table ``fabric3_block_phases``) committed the last transfer
      block before the catch-up peer received its first, on the same host clock (so every transfer block had
      been ordered and delivered once; the catch-up peer never waited for the orderers to cut one)."""
    if catchup is None or catchup.empty:
        return ["the catch-up peer's log has no committed block (fabric3_catchup_peer.log)"]
    b = _transfer_blocks(catchup)
    if b.empty:
        return ["the catch-up peer committed no transfer block (none in the measured window)"]
    problems = []
    numbers = b["block_number"].tolist()
    if numbers != list(range(numbers[0], numbers[0] + len(numbers))):
        problems.append(f"the catch-up peer's transfer blocks have gaps: {numbers}")
    if (b["received_at_ns"] < 0).any() or (b["committed_at_ns"] < 0).any():
        problems.append("a transfer block of the catch-up peer lacks the timestamp of its receive or commit line")
    if block_txs is None or block_txs.empty:
        problems.append("no delivered codes (block_txs) to count the catch-up peer's valid transactions")
    else:
        codes = block_txs.drop_duplicates(["block_number", "tx_index"])
        per_block = codes.groupby("block_number").size()
        # the window's first block: the measured window's (block_txs is cut to it where analyzed), else the
        # first either peer logged in it, so that a transfer block missing at the catch-up peer's start shows
        firsts = [numbers[0]] + ([int(_transfer_blocks(peer0)["block_number"].min())]
                                 if peer0 is not None and not _transfer_blocks(peer0).empty else [])
        delivered = sorted(int(n) for n in per_block.index if int(n) >= min(firsts))
        if delivered != numbers:
            problems.append(f"the delivered transfer blocks {delivered} are not the catch-up peer's {numbers}")
        else:
            logged = dict(zip(b["block_number"].astype(int), b["tx_count"].astype(int)))
            wrong = [n for n in numbers if int(per_block[n]) != logged[n]]
            if wrong:
                problems.append(f"block(s) {wrong}: the catch-up peer logged other transaction counts than were delivered")
    if peer0 is None or peer0.empty:
        problems.append("no commit times of peer0 (fabric3_block_phases) to show the blocks were made before")
    else:
        last = peer0[(peer0["block_number"] == numbers[-1]) & (peer0["committed_at_ns"] >= 0)]
        if last.empty:
            problems.append(f"peer0 did not log the commit of the last transfer block {numbers[-1]}")
        elif b["received_at_ns"].min() >= 0 and int(b["received_at_ns"].min()) <= int(last["committed_at_ns"].max()):
            problems.append(f"the catch-up peer received block {numbers[0]} before peer0 had committed block "
                            f"{numbers[-1]}: the blocks were not all made before it began")
    return problems


def catchup_throughput_tps(catchup: pd.DataFrame, block_txs: pd.DataFrame, peer0: pd.DataFrame) -> float:
    """Fig. 6's ``run_throughput_tps`` of the catch-up peer: the valid transactions of its transfer blocks (the
    delivered codes) over the time from its receive line of the first transfer block (the start of
    ``StoreBlock``, where Fabric 1.2's patch takes ``received_ns``) to its commit line of the last; NaN unless
    every rule of ``catchup_problems`` holds. The log's times are whole milliseconds."""
    if catchup_problems(catchup, block_txs, peer0):
        return math.nan
    b = _transfer_blocks(catchup)
    codes = block_txs.drop_duplicates(["block_number", "tx_index"])
    valid = int(((codes["block_number"].isin(b["block_number"])) & (codes["validation_code"] == "VALID")).sum())
    span_ns = int(b["committed_at_ns"].max()) - int(b["received_at_ns"].min())
    return valid / (span_ns / NS_PER_S) if span_ns > 0 else math.nan


def _mean(column: str):
    return lambda fabric3_catchup_phases: logs.mean_ms(fabric3_catchup_phases, column)


_AS_LOGGED = "(the catch-up peer's log: whole ms, truncated)"

#: The catch-up peer's metrics. ``run_throughput_tps`` here replaces the core's (which needs table ``blocks``,
#: which these points do not have) under the same name, so that Fig. 6's variants compare on one metric.
METRICS = (
    Metric("run_throughput_tps", "tx/s", (TABLE, "block_txs", logs.TABLE),
           lambda fabric3_catchup_phases, block_txs, fabric3_block_phases:
               catchup_throughput_tps(fabric3_catchup_phases, block_txs, fabric3_block_phases),
           "valid tx per second the catch-up peer committed of pre-made transfer blocks, its first transfer block's "
           "receive line to its last one's commit line (FastFabric Fig. 6 on v3.1; NaN unless the blocks were "
           "made before it began and every one was delivered with the same count)"),
    Metric("catchup_validate_ms", "ms", (TABLE,), _mean("validate_ms"),
           f"mean per-block TxValidator.Validate of the catch-up peer {_AS_LOGGED}"),
    Metric("catchup_commit_ms", "ms", (TABLE,), _mean("commit_ms"),
           f"mean per-block kvledger commit of the catch-up peer {_AS_LOGGED}"),
)

CATCHUP_TABLE = Table(TABLE, parse=phases_table)
