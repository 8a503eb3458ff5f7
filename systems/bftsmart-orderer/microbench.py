"""BFT-SMaRt's own throughput-latency demo on the built v1.2 library, before any figure (issue 11).

Usage (root, under the network lock; about 3 minutes); the plugin's ``microbench`` command:

    flock -o /tmp/fabricrepro-network.lock invoke system-command --system bftsmart-orderer \
        --name microbench --args "OUT_DIR [--clients 16] [--ops 2000]"

Two netns hosts: ``nodes`` runs the 4 replicas (bftsmart.demo.microbenchmarks.
ThroughputLatencyServer, ids 0-3, the layout of its playbooks/bftsmart-microbench.yml),
``client`` runs ThroughputLatencyClient with ``--clients`` closed-loop clients of
1 KB requests, ``--ops`` operations each. Then teardown. Prints each replica's
steady-state rate (the median of its interval reports, logs.microbench_server)
and writes OUT_DIR/summary.json; the logs stay in OUT_DIR/logs/.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import time
from pathlib import Path

from harness.plugin_api import Command, CommandTools

from . import logs

ROLES = {"nodes": ["bftsmart_node"], "client": ["bftsmart_frontend", "bftsmart_microbench_client"]}


def main(argv: list, tools: CommandTools) -> int:
    ap = argparse.ArgumentParser(prog="microbench", description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--ops", type=int, default=2000, help="operations per client (half are warm-up)")
    args = ap.parse_args(argv)
    out = args.out.resolve()
    shutil.rmtree(out, ignore_errors=True)
    build = tools.build_upstream("bftsmart-orderer")   # release-1.2 generation: the v1.2 library built from source
    variables = {"fabricrepro_point": "microbench", "fabricrepro_point_path": "microbench",
                 "fabricrepro_point_dir": str(out), "fabricrepro_controller_dir": str(out / "controller"),
                 "fabricrepro_switches": {}, "fabricrepro_stop_order": ["bftsmart_microbench"],
                 "fabricrepro_upstream_dir": str(build.path),
                 # the layout's envelopes per block (bftsmart_config has no default: a point's is its block_size);
                 # the demo's clients send requests, not blocks, so it is the layout's record only
                 "bftsmart_config_block_size": 10,
                 "bftsmart_microbench_clients": args.clients, "bftsmart_microbench_ops_per_client": args.ops}
    started = time.time()
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    with tools.netns_cluster(out / "netns", list(ROLES), roles=ROLES) as cluster:
        cluster.write_inventory()
        try:
            tools.run_playbook("bftsmart-microbench.yml", cluster.inventory_path, variables, out / "logs" / "run.log",
                         timeout=900)
        finally:
            tools.run_playbook("teardown.yml", cluster.inventory_path, variables, out / "logs" / "teardown.log",
                         timeout=300)
    rates = {}
    for log in sorted(out.glob("logs/*/bftsmart_microbench-[0-9].log")):
        reports = logs.microbench_server(log.read_text(errors="replace"))
        rates[log.stem] = {"reports": len(reports), "median_ops_per_s": statistics.median(r["ops_per_s"] for r in reports),
                           "median_latency_us": statistics.median(r["latency_us"] for r in reports)}
    summary = {"build": build.info.get("key", build.path.name), "clients": args.clients, "ops_per_client": args.ops, "request_bytes": 1024,
               "seconds": round(time.time() - started), "uptime_at_start": load, "replicas": rates}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    return 0 if rates else 1



COMMAND = Command("microbench", "BFT-SMaRt's throughput-latency demo on the built v1.2 library (root; netns hosts)", main)
