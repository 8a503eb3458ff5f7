"""The independent check of the Fujitsu paper's counts (harness/systems.py ``IndependentCheck``).

Fabric v0.6.1 keeps no per-transaction validation code (security off, as in the paper, seed 003
line 126; a block does not record whether its chaincode succeeded). The driver,
``workloads/chaincode_example02/client.py blocks``, counts the transactions of the blocks after the
deploy read from vp0 (``blocks.csv``, table ``blocks``) and marks them valid when every peer's
state agrees. ``peers_check`` does not take that word for it:

* every peer's height and both balances are read again after the client has finished, by a program
  that shares no code with the client (``roles/fujitsu_api_client/files/peer_states.py`` →
  ``fujitsu_peer_states.csv``, table ``fujitsu_peer_states``);
* from the blocks table alone it recomputes what each peer must hold: height = the last block's
  number + 1, balances = the initial balance moved by ``amount`` × the transactions the table
  counts valid (chaincode_example02's ``invoke a b amount``);
* every peer the point started must match, else the point fails naming the peer; the client's own
  summary line (``fujitsu_api_client-blocks.out``) must agree with the table.

What it cannot see: which transaction failed when a balance is off (only how many moved), a
transfer that failed and another that moved twice in its place, and anything the chaincode
stored besides the two balances.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from harness.plugin_api import IndependentCheck, point_role_settings, started_components

#: The client's summary line: {"blocks": ..., "transactions": ..., "height": ..., "peers": {...}, "valid": ...}.
SUMMARY_LOG = "fujitsu_api_client-blocks.out"
STATES_TABLE = "fujitsu_peer_states"




def started_peers(point_dir: Path) -> dict[int, str]:
    """{index: host} of the PBFT peers the process role started (``raw/<host>/affinity_fujitsu_api_peer-vp<i>*.csv``)."""
    out = {}
    for name, hosts in started_components(point_dir, "fujitsu_api_peer-vp*").items():
        m = re.match(r"fujitsu_api_peer-vp(\d+)(?:_|$)", name)
        if m:
            out[int(m.group(1))] = min(hosts)
    return out


def client_summary(point_dir: Path) -> tuple[dict | None, str | None]:
    """The last JSON line of ``client.py blocks`` (its stdout, logs/<host>/fujitsu_api_client-blocks.out) and its
    host, or (None, None)."""
    for path in sorted(Path(point_dir).glob(f"logs/*/{SUMMARY_LOG}")):
        for line in reversed(path.read_text(errors="replace").splitlines()):
            line = line.strip()
            if line.startswith("{"):
                try:
                    doc = json.loads(line)
                except ValueError:
                    continue
                if isinstance(doc, dict) and "peers" in doc:
                    return doc, path.parent.name
    return None, None


def peers_check(point_dir: Path, tables: dict[str, pd.DataFrame]) -> tuple[dict, list[str]]:
    """Every peer's height and balances, read apart from the client, against the blocks table (module doc)."""
    point_dir = Path(point_dir)
    problems: list[str] = []
    values = point_role_settings(point_dir)
    params = {}
    for name in ("fujitsu_api_client_balance", "fujitsu_api_client_amount"):
        try:
            params[name] = int(values[name])
        except (KeyError, TypeError, ValueError):
            problems.append(f"the point records no usable {name} (the run's metadata.json role_settings, "
                            "logs/ansible-run.vars.json)")
    peers = started_peers(point_dir)
    if not peers:
        problems.append("no record that a peer was started (raw/<host>/affinity_fujitsu_api_peer-vp*.csv)")
    blocks = tables.get("blocks")
    if blocks is None or not len(blocks):
        problems.append("the point has no blocks table (raw/<client host>/blocks.csv missing or empty)")
    states = tables.get(STATES_TABLE)
    if states is None or not len(states):
        problems.append(f"no peer's state was read after the run (raw/<client host>/{STATES_TABLE}.csv missing or "
                        "empty: roles/fujitsu_api_client/files/peer_states.py)")
    summary, summary_host = client_summary(point_dir)
    if summary is None:
        problems.append(f"the client's summary line is missing (logs/<client host>/{SUMMARY_LOG}: client.py blocks "
                        "did not finish)")
    if problems:
        return {"peers_started": len(peers)}, problems

    balance, amount = params["fujitsu_api_client_balance"], params["fujitsu_api_client_amount"]
    numbers = sorted(int(b) for b in blocks["block_number"])
    gaps = [b for a, b in zip(numbers, numbers[1:]) if b != a + 1]
    if gaps or len(set(numbers)) != len(numbers):
        problems.append(f"the blocks table is not one run of consecutive blocks ({numbers[0]}..{numbers[-1]}, "
                        f"{len(numbers)} rows): blocks are missing or counted twice")
    valid = int(blocks["valid_count"].sum())
    transactions = int(blocks["tx_count"].sum())
    height = numbers[-1] + 1
    moved = valid * amount
    expected = (balance - moved, balance + moved)

    # The client's own claim must be the table's.
    if int(summary.get("transactions", -1)) != transactions or int(summary.get("height", -1)) != height:
        problems.append(f"the client's summary (logs/{summary_host}/{SUMMARY_LOG}: {summary.get('transactions')} "
                        f"transactions, height {summary.get('height')}) is not the blocks table's ({transactions} "
                        f"transactions, height {height})")

    read = {str(r.peer): {"height": int(r.height), "balances": [int(r.balance_a), int(r.balance_b)]}
            for r in states.itertuples()}
    if len(read) < len(peers):
        problems.append(f"{len(peers)} peers were started but the state of only {len(read)} was read "
                        f"({', '.join(sorted(read)) or 'none'})")
    heights = {s["height"] for s in read.values()}
    if len(heights) > 1:
        problems.append("the peers' heights differ: " + ", ".join(f"{p} {s['height']}" for p, s in sorted(read.items())))
    for peer, s in sorted(read.items()):
        if s["height"] != height:
            problems.append(f"peer {peer} is at height {s['height']}, the blocks table ends at block {height - 1} "
                            f"(height {height})")
        if tuple(s["balances"]) != expected:
            off = (s["balances"][1] - balance) - moved
            problems.append(f"peer {peer} holds balances {tuple(s['balances'])}, not {expected} ({valid} valid "
                            f"transfers of {amount} from {balance} each; off by {off / amount:+g} transfer(s))"
                            if amount else f"peer {peer} holds balances {tuple(s['balances'])}, not {expected}")
        claimed = (summary.get("peers") or {}).get(peer)
        if claimed is not None and (int(claimed.get("height", -1)) != s["height"]
                                    or [int(x) for x in claimed.get("balances", [])] != s["balances"]):
            problems.append(f"peer {peer}: the client saw height {claimed.get('height')} and balances "
                            f"{claimed.get('balances')}, the second read {s['height']} and {s['balances']}")

    section = {"blocks": len(numbers), "transactions": transactions, "valid": valid, "height": height,
               "initial_balance": balance, "amount": amount, "expected_balances": list(expected),
               "peers_started": len(peers), "peers": read, "client_valid": summary.get("valid")}
    return section, problems


CHECKS = [
    IndependentCheck(
        "fujitsu-peer-states",
        "every peer's height and two balances, read after the run by peer_states.py (not the client), against "
        "those the blocks table implies: the last block + 1, and the initial balance moved by amount x its valid "
        "transactions",
        peers_check),
]
