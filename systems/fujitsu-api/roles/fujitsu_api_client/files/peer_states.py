#!/usr/bin/env python3
"""Read every PBFT peer's height and the two accounts' balances after the run, apart from the client.

    peer_states.py --peers URL,URL,... --chaincode NAME --accounts A,B --out fujitsu_peer_states.csv

The fujitsu_api_client role runs it after ``client.py blocks`` has finished; it shares no code with
client.py, so the point's independent check (systems/fujitsu-api/evidence.py) compares the blocks
table the client wrote with the peers' state read by another program: GET /chain (height) and the
chaincode's query of each account (POST /chaincode, JSON-RPC "query") on every peer's REST API.
Writes one row per peer it could read (peer, height, balance_a, balance_b) and exits 1 naming each
peer it could not read. Standard library only: it runs on any client host.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import urllib.request

TIMEOUT_S = 30


def _call(url: str, body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
        return json.load(resp)


def state(peer: str, chaincode: str, accounts: list[str]) -> dict:
    """A peer's height and each account's balance, as its REST API answers."""
    base = peer.rstrip("/")
    out = {"peer": peer, "height": int(_call(base + "/chain")["height"])}
    for key, account in zip(("balance_a", "balance_b"), accounts):
        reply = _call(base + "/chaincode", {"jsonrpc": "2.0", "method": "query", "id": 1,
                                            "params": {"type": 1, "chaincodeID": {"name": chaincode},
                                                       "ctorMsg": {"args": ["query", account]}}})
        if "result" not in reply:
            raise ValueError(f"query {account}: {reply.get('error')}")
        out[key] = int(reply["result"]["message"])
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peers", required=True)
    parser.add_argument("--chaincode", required=True)
    parser.add_argument("--accounts", default="a,b")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    accounts = args.accounts.split(",")
    if len(accounts) != 2:
        parser.error("--accounts must name two accounts")
    rows, failed = [], []
    for peer in args.peers.split(","):
        try:
            rows.append(state(peer, args.chaincode, accounts))
        except (OSError, ValueError, KeyError) as err:
            failed.append(f"{peer}: {type(err).__name__}: {err}")
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["peer", "height", "balance_a", "balance_b"])
        w.writeheader()
        w.writerows(rows)
    print(json.dumps({"peers": rows}))
    for line in failed:
        print(f"peer state not read: {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
