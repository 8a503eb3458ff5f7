#!/usr/bin/env python3
"""Client processes of the Fujitsu paper's workload on Fabric v0.6.1's REST API.

    client.py deploy --peer URL --chaincode NAME --accounts A,B --balance N
    client.py send   --peers URL,URL,... --chaincode NAME --processes P --transactions T
                     --rate-per-process R --out txs.csv
    client.py blocks --peers URL,... --chaincode NAME --from-height H --transactions T --amount X
                     --accounts A,B --balance N --timeout S --out blocks.csv

``send`` runs P client processes, spread evenly over the peers (the paper
"distribut[es] and level[s] the concurrent client processes among the four
nodes", seed 003 line 136), each invoking ``invoke A B X`` (chaincode_example02's
transfer) one request after another on its peer's REST API. Each process is
paced to at most R requests per second (R = 0: unpaced): v0.6.1's REST answers
an invoke once it is queued, so unpaced clients get no back-pressure from PBFT
and overload it (../shared/upstream/README.md). Writes the txs table
(docs/interfaces.md): tx_id, scheduled_ns, submitted_ns, acked_ns, status.

``blocks`` waits until the chain holds every transfer, then writes the blocks
table from the first peer's blocks (GET /chain/blocks/N): the commit time is the
block's ``localLedgerCommitTimestamp`` (the paper's rate is "from the
frequency of block generation", line 130). A v0.6 block does not record
whether a transaction's chaincode succeeded, so the transfers are checked
through the state: on every peer (once it has the same height) the accounts'
balances must equal the initial ones moved by X per transfer in the chain;
only then are the block's transactions counted valid (otherwise valid_count
is 0 and the command fails).

Standard library only: it runs on any client host.
"""

from __future__ import annotations

import argparse
import csv
import json
import multiprocessing
import sys
import time
import urllib.error
import urllib.request

HTTP_TIMEOUT_S = 60


def rpc(peer: str, method: str, chaincode: str, args: list[str], request_id: int = 1) -> dict:
    """One JSON-RPC call of v0.6's REST API (POST /chaincode)."""
    body = {"jsonrpc": "2.0", "method": method, "id": request_id,
            "params": {"type": 1, "chaincodeID": {"name": chaincode}, "ctorMsg": {"args": args}}}
    req = urllib.request.Request(peer.rstrip("/") + "/chaincode", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT_S) as resp:
        return json.load(resp)


def get(peer: str, path: str) -> dict:
    with urllib.request.urlopen(peer.rstrip("/") + path, timeout=HTTP_TIMEOUT_S) as resp:
        return json.load(resp)


def height(peer: str) -> int:
    return int(get(peer, "/chain")["height"])


def query_balance(peer: str, chaincode: str, account: str) -> int:
    reply = rpc(peer, "query", chaincode, ["query", account])
    if "result" not in reply:
        raise SystemExit(f"query {account} on {peer} failed: {reply.get('error')}")
    return int(reply["result"]["message"])


def deploy(args) -> None:
    a, b = args.accounts.split(",")
    before = height(args.peer)
    reply = rpc(args.peer, "deploy", args.chaincode, ["init", a, str(args.balance), b, str(args.balance)])
    if reply.get("result", {}).get("status") != "OK":
        raise SystemExit(f"deploy of {args.chaincode} failed: {reply}")
    # The deploy commits in its own block; wait for it so the transfers find the accounts. No query
    # before that block: v0.6.1's shim cannot handle a QUERY while the chaincode runs its INIT and
    # the chaincode process exits (seen with four peers).
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        try:
            if height(args.peer) > before and query_balance(args.peer, args.chaincode, a) == args.balance:
                print(json.dumps({"deployed": args.chaincode, "height": height(args.peer)}))
                return
        except (SystemExit, urllib.error.URLError, KeyError, ValueError):
            pass
        time.sleep(0.5)
    raise SystemExit(f"{args.chaincode}: the accounts did not appear within {args.timeout} s")


def _client(index: int, peer: str, chaincode: str, transfer: list[str], count: int, interval_s: float,
            start_ns: int, out: multiprocessing.Queue) -> None:
    rows = []
    next_ns = start_ns
    for i in range(count):
        scheduled = next_ns
        delay = (scheduled - time.time_ns()) / 1e9
        if delay > 0:
            time.sleep(delay)
        submitted = time.time_ns()
        try:
            reply = rpc(peer, "invoke", chaincode, ["invoke", *transfer], request_id=i)
            status = "OK" if reply.get("result", {}).get("status") == "OK" else "ERROR"
            tx_id = reply.get("result", {}).get("message", f"p{index}-{i}")
        except (urllib.error.URLError, OSError) as err:
            status, tx_id = f"ERROR {type(err).__name__}", f"p{index}-{i}"
        rows.append((tx_id, scheduled, submitted, time.time_ns(), status))
        next_ns = scheduled + int(interval_s * 1e9) if interval_s else time.time_ns()
    out.put(rows)


def wait_connected(peers: list[str], timeout_s: float) -> None:
    """Every peer lists all of them (GET /network/peers): one that never joined would leave a quarter
    of the requests uncommitted and the run waiting until its timeout."""
    deadline = time.monotonic() + timeout_s
    for peer in peers:
        while len(get(peer, "/network/peers").get("peers") or []) < len(peers):
            if time.monotonic() > deadline:
                raise SystemExit(f"{peer} sees {get(peer, '/network/peers')} after {timeout_s} s, "
                                 f"not all {len(peers)} peers")
            time.sleep(0.5)


def send(args) -> None:
    peers = args.peers.split(",")
    a, b = args.accounts.split(",")
    wait_connected(peers, 60)
    per = [args.transactions // args.processes + (1 if i < args.transactions % args.processes else 0)
           for i in range(args.processes)]
    interval = 1.0 / args.rate_per_process if args.rate_per_process > 0 else 0.0
    queue: multiprocessing.Queue = multiprocessing.Queue()
    start_ns = time.time_ns() + 200_000_000
    procs = [multiprocessing.Process(target=_client, args=(i, peers[i % len(peers)], args.chaincode,
                                                           [a, b, str(args.amount)], n, interval, start_ns, queue))
             for i, n in enumerate(per)]
    for p in procs:
        p.start()
    rows = [row for _ in procs for row in queue.get()]
    for p in procs:
        p.join()
    with open(args.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["tx_id", "scheduled_ns", "submitted_ns", "acked_ns", "status"])
        w.writerows(sorted(rows, key=lambda r: r[2]))
    failed = sum(1 for r in rows if r[4] != "OK")
    print(json.dumps({"sent": len(rows), "failed": failed}))
    if failed:
        raise SystemExit(f"{failed} of {len(rows)} invokes were refused by the REST API")


def blocks(args) -> None:
    a, b = args.accounts.split(",")
    peers = args.peers.split(",")
    deadline = time.monotonic() + args.timeout
    rows, count, h = [], 0, args.from_height
    while count < args.transactions:
        if time.monotonic() > deadline:
            raise SystemExit(f"only {count} of {args.transactions} transfers committed within {args.timeout} s")
        if height(peers[0]) <= h:
            time.sleep(0.2)
            continue
        block = get(peers[0], f"/chain/blocks/{h}")
        txs = len(block.get("transactions") or [])
        ts = block["nonHashData"]["localLedgerCommitTimestamp"]
        committed = int(ts.get("seconds", 0)) * 1_000_000_000 + int(ts.get("nanos", 0))
        # v0.6 records one time per block, its commit: it stands for the block's arrival, validation and
        # commit; the phase durations (vscc_ns ... history_commit_ns) were not measured and are 0.
        rows.append([h, txs, txs, len(json.dumps(block))] + [committed] * 3 + [0] * 5)
        count += txs
        h += 1
    moved = count * args.amount
    expected = (args.balance - moved, args.balance + moved)
    states = {}
    for peer in peers:  # PBFT replicas commit at their own pace: wait for each to reach the height
        while height(peer) < h and time.monotonic() < deadline:
            time.sleep(0.2)
        states[peer] = {"height": height(peer), "balances": (query_balance(peer, args.chaincode, a),
                                                             query_balance(peer, args.chaincode, b))}
    valid = all(s == {"height": h, "balances": expected} for s in states.values())
    with open(args.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["block_number", "tx_count", "valid_count", "bytes", "received_ns", "validated_ns",
                    "committed_ns", "vscc_ns", "mvcc_ns", "block_commit_ns", "state_commit_ns",
                    "history_commit_ns"])
        for row in rows:
            w.writerow(row if valid else row[:2] + [0] + row[3:])
    print(json.dumps({"blocks": len(rows), "transactions": count, "height": h, "peers": states, "valid": valid}))
    if not valid:
        raise SystemExit(f"after {count} transfers of {args.amount} (height {h}) the peers hold {states}: "
                         f"expected balances {expected} on every peer")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("deploy", "send", "blocks"):
        p = sub.add_parser(name)
        p.add_argument("--chaincode", required=True)
        p.add_argument("--accounts", default="a,b")
        p.add_argument("--balance", type=int, default=1_000_000_000)
        p.add_argument("--amount", type=int, default=1)
        p.add_argument("--timeout", type=float, default=600)
        if name in ("send", "blocks"):
            p.add_argument("--peers", required=True)
        if name == "send":
            p.add_argument("--processes", type=int, required=True)
            p.add_argument("--transactions", type=int, required=True)
            p.add_argument("--rate-per-process", type=float, default=0)
            p.add_argument("--out", required=True)
        if name == "deploy":
            p.add_argument("--peer", required=True)
        if name == "blocks":
            p.add_argument("--from-height", type=int, required=True)
            p.add_argument("--transactions", type=int, required=True)
            p.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if getattr(args, "processes", 1) < 1 or getattr(args, "transactions", 1) < 1:
        parser.error("--processes and --transactions must be at least 1")
    {"deploy": deploy, "send": send, "blocks": blocks}[args.command](args)


if __name__ == "__main__":
    main()
