#!/usr/bin/env python3
"""TEST DOUBLE, used only by tests/harness: stands in for the Go commands of bin/.

Invoked through symlinks named like the real commands; writes files with the
headers of docs/interfaces.md and made-up but well-formed timings, so that the
harness spine (Ansible roles, teardown, collect, analyze, report) can be tested
without the Go build. Never used by `invoke reproduce`.
"""
import argparse
import os
import signal
import socket
import sys
import time

import yaml

name = os.path.basename(sys.argv[0])
ap = argparse.ArgumentParser()
for flag in ("config", "out", "crypto", "channel", "timeout", "batch-size", "batch-timeout",
             "preferred-max-bytes", "absolute-max-bytes", "orderer-orgs", "peer-orgs", "peers", "clients", "phase", "txs-out"):
    ap.add_argument("--" + flag)
args = ap.parse_args()
cfg = yaml.safe_load(open(args.config)) or {} if args.config else {}
cfg = cfg.get(name, cfg)  # orderer and peer nest their keys under their name
BLOCK_HEADER = ("block_number,tx_count,valid_count,bytes,received_ns,validated_ns,committed_ns,vscc_ns,mvcc_ns,"
                "block_commit_ns,state_commit_ns,history_commit_ns\n")

if name == "cryptogen":
    os.makedirs(os.path.join(args.out, "peerOrganizations"), exist_ok=True)
elif name == "configtxgen":
    open(args.out, "wb").write(b"genesis")
elif name == "committerbench":
    if os.environ.get("FAKE_FAIL"):
        sys.exit("committerbench: simulated failure")
    t = 1_000_000_000
    with open(args.out, "w") as f:
        f.write(BLOCK_HEADER)
        for b in range(1, int(cfg["blocks"]) + 1):
            n = int(cfg["blockSize"])
            f.write(f"{b},{n},{n},{n * 3000},{t},{t + 20_000_000},{t + 30_000_000},"
                    f"1,1,1,1,1\n")
            t += 31_250_000  # 100 tx every 31.25 ms: 3200 tx/s
    time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
elif name in ("orderer", "peer"):
    if name == "peer":
        # As the end-to-end playbook's smoke point would commit them: the deploy
        # (block 1), 4000 account creations, then 2000 transfers, 100 per block.
        # Written before the port opens (which the playbook takes as ready), so
        # a teardown under load can never cut the file short.
        with open(cfg["blockLog"], "w") as f:
            f.write(BLOCK_HEADER)
            t = 1_000_000_000
            for b, n in enumerate([1] + [100] * 60, start=1):
                f.write(f"{b},{n},{n},300000,{t},{t + 1},{t + 2},1,1,1,1,1\n")
                t += 50_000_000
    host, port = cfg["listenAddress"].rsplit(":", 1)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, int(port)))
    s.listen()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        time.sleep(1)
elif name == "blockwatch":
    # stopAfter bounds setup (deploy + creates) plus the transfers: deliver that
    # many transactions, the deploy alone in block 1, then 100 per block.
    total = int(cfg["stopAfter"])
    sizes = [1] + [100] * ((total - 1) // 100) + ([(total - 1) % 100] if (total - 1) % 100 else [])
    with open(args.out, "w") as f:
        f.write("block_number,arrival_ns,tx_count,valid_count,bytes\n")
        for b, n in enumerate(sizes, start=cfg.get("startBlock", 1)):
            f.write(f"{b},{1_000_000_000 + b * 50_000_000},{n},{n},300000\n")
    if args.txs_out:  # the IDs of the fake load generator's transactions are not known here: header only
        with open(args.txs_out, "w") as f:
            f.write("block_number,tx_index,tx_id,validation_code\n")
elif name == "loadgen":
    # --phase setup: the deploy and the account creations; transfer: the workload.
    setup = (args.phase or cfg.get("phase")) == "setup"
    n = 1 + int(cfg.get("accounts") or 2 * int(cfg["transfer"]["transactions"])) if setup \
        else int(cfg["transfer"]["transactions"])
    with open(args.out, "w") as f:
        f.write("tx_id,scheduled_ns,submitted_ns,acked_ns,status\n")
        for i in range(n):
            t = 1_000_000_000 + i * 500_000
            f.write(f"tx{i},{t},{t + 1000},{t + 2_000_000},SUCCESS\n")
    print('{"sent":%d,"acked":%d,"failed":0}' % (n, n))
