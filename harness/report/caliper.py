"""Caliper beside our numbers (issue 46 item 8; README "Caliper beside our numbers", labs/07-*): a point of
Fabric v2.5/v3.1's end-to-end driver with ``caliper_transactions`` > 0 ran one round of Hyperledger Caliper 0.6
(binding fabric:2.4, the peer's Gateway service) after our load generator's measured transfers, on the same
network (systems/fabric-3.1/roles/fabric3_caliper). Per such point this puts side by side:

* **our load generator**: the point's metric (only what the ledger marks valid, in the blocks our block watcher
  received: ``measured.json``'s window) and its valid transfers;
* **Caliper, as Caliper reports it** (its summary table in its log, ``logs/<host>/fabric3_caliper.out``; the same table
  as its kept ``caliper/report.html``): successes, failures, send rate, average latency, throughput;
* **the ledger's count of Caliper's round**: the kept block files (``bin/blockfile --txs``, the codes the
  validity check reads), every block after ``measured.json``'s ``last_block``: nothing but Caliper's round
  sent transactions after it.

How Caliper 0.6 counts (verified in its source, build/caliper-0.6.0*/node_modules/@hyperledger/):
caliper-core ``lib/manager/report/report.js`` ``getResultValues``: Throughput (TPS) = (Succ + Fail) / (last
finish - first create), failures included; Send Rate = (Succ + Fail) / (last create - first create); the
latencies (max, min, avg) are of successful transactions only (``latency.successful`` of
``lib/common/core/transaction-statistics-collector.js``), each from before its endorsement to its commit
status. caliper-fabric ``lib/connector-versions/peer-gateway/PeerGateway.js``: a submit is a success only
when the peer's commit status says VALID; an endorsement, ordering or commit-status error, a timeout or an
invalid commit is a failure.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from .. import REPO_ROOT, ledger
from ..errors import HarnessError
from ..rundir import read_json
from .text import fmt

#: Caliper's summary table's columns (caliper-core report.js getResultColumnMap), in its order.
COLUMNS = ("Name", "Succ", "Fail", "Send Rate (TPS)", "Max Latency (s)", "Min Latency (s)", "Avg Latency (s)",
           "Throughput (TPS)")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def caliper_table(text: str) -> list[dict]:
    """Caliper's summary rows (one per round) from its log: each ``| Name | Succ | ...`` table's rows after its
    header, as ``{column: number or text}``; the last table's rows where it printed several (its per-round
    tables, then "All test results")."""
    rows: list[dict] = []
    header = None
    for line in _ANSI.sub("", text).splitlines():
        line = line.strip()
        if not line.startswith("|"):
            header = header if line.startswith("+") else None
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[:3] == list(COLUMNS[:3]):
            header = cells
            continue
        if header and len(cells) == len(header) and not set(cells[0]) <= {"-"}:
            row = {}
            for k, v in zip(header, cells):
                try:
                    row[k] = float(v) if k != "Name" else v
                except ValueError:
                    row[k] = None if v in ("-", "N/A") else v
            rows = [r for r in rows if r["Name"] != row["Name"]] + [row]
    return rows


def caliper_log(point_dir: Path) -> str:
    """Caliper's stdout and stderr as the point kept them (the process role's fabric3_caliper.out and .log;
    caliper.out and .log in the first runs)."""
    return "".join(p.read_text(errors="replace") for name in ("fabric3_caliper.out", "fabric3_caliper.log", "caliper.out", "caliper.log")
                   for p in sorted((point_dir / "logs").glob(f"*/{name}")))


def ledger_of_round(point_dir: Path, blockfile_bin: Path | None = None) -> dict:
    """The kept ledger's codes of every block after ``measured.json``'s ``last_block``: Caliper's round."""
    window = read_json(point_dir / "measured.json") if (point_dir / "measured.json").exists() else None
    if not window or not window.get("last_block"):
        return {"error": "no measured.json with last_block"}
    try:
        codes, source = ledger.agreed_codes(ledger.kept_ledgers(point_dir, blockfile_bin or REPO_ROOT / "bin" / "blockfile"))
    except HarnessError as e:
        return {"error": str(e)}
    if codes is None:
        return {"error": "no kept ledger"}
    after = codes[codes["block_number"] > int(window["last_block"])]
    valid = after["validation_code"] == "VALID"
    return {"source": source, "after_block": int(window["last_block"]),
            "blocks": [int(after["block_number"].min()), int(after["block_number"].max())] if len(after) else None,
            "transactions": int(len(after)), "valid": int(valid.sum()),
            "invalid": {k: int(n) for k, n in sorted(after.loc[~valid, "validation_code"].value_counts().items())}}


def caliper_point(point_dir: Path, blockfile_bin: Path | None = None) -> dict | None:
    """Caliper's round of a point beside its ledger's count and our load generator's; None where the point ran
    no Caliper round (no ``caliper/report.html``)."""
    point_dir = Path(point_dir)
    if not (point_dir / "caliper" / "report.html").exists():
        return None
    rows = caliper_table(caliper_log(point_dir))
    out = {"caliper": rows[-1] if rows else None, "ledger": ledger_of_round(point_dir, blockfile_bin)}
    c, lg = out["caliper"], out["ledger"]
    if c and c.get("Throughput (TPS)") and "valid" in lg:
        # Caliper's own window, from its numbers: (Succ + Fail) / Throughput
        window = ((c.get("Succ") or 0) + (c.get("Fail") or 0)) / c["Throughput (TPS)"]
        out["caliper_window_s"] = window
        out["ledger_valid_tps"] = lg["valid"] / window if window > 0 else None
    return out


def caliper_blocks(runs: list, metric: str | None = None) -> list[tuple]:
    """The report's "Caliper beside our numbers" table for the points of ``runs`` that ran a Caliper round;
    nothing where none did."""
    rows = []
    several = len(runs) > 1
    for run in runs:
        for point_dir in sorted((run.path / "points").iterdir()) if (run.path / "points").is_dir() else []:
            found = caliper_point(point_dir)
            if found is None:
                continue
            s = read_json(point_dir / "summary.json") if (point_dir / "summary.json").exists() else {}
            window = read_json(point_dir / "measured.json") if (point_dir / "measured.json").exists() else {}
            metrics = s.get("metrics") or {}
            ours = metrics.get(metric) if metric else None
            c, lg = found["caliper"] or {}, found["ledger"]
            rows.append(([run.path.name] if several else []) + [
                point_dir.name,
                f"{fmt(ours)} ({metric})" if ours is not None else "–",
                fmt(window.get("transfer_valid")),
                fmt(c.get("Throughput (TPS)")), fmt(c.get("Succ")), fmt(c.get("Fail")),
                fmt(c.get("Avg Latency (s)")), fmt(c.get("Send Rate (TPS)")),
                (f"{fmt(lg['valid'])} of {fmt(lg['transactions'])}"
                 + (" (" + ", ".join(f"{k} {n}" for k, n in lg["invalid"].items()) + ")" if lg["invalid"] else "")
                 if "valid" in lg else lg.get("error", "–")),
                fmt(found.get("ledger_valid_tps"))])
    if not rows:
        return []
    return [("p", "**Caliper beside our numbers** (README \"Caliper beside our numbers\", labs/07-caliper-vs-ledger.md): "
                  "after our load generator's measured transfers, Hyperledger Caliper 0.6 (binding fabric:2.4, the "
                  "peer's Gateway service) sent the same transfers on the same network in the same point. Our "
                  "throughput counts only what the ledger marks valid, block to block as our watcher received them. "
                  "Caliper's columns are Caliper's own, as it reports them: its throughput is (successes + failures) "
                  "÷ (last finish − first create), failures included; its latency is of successes only, from before "
                  "endorsement to the commit status; a success is a transaction whose commit status was VALID. The "
                  "ledger column counts the kept block files' codes of every block after our measured window "
                  "(Caliper's round alone); the last column is those valid transactions over Caliper's own window. "
                  "Caliper's round is closed-loop (a fixed number in flight), ours open-loop (pre-endorsed, as fast "
                  "as the orderers accept): the two throughputs measure different clients, not the same quantity."),
            ("table", (["run"] if several else []) + [
                "point", "our load generator: tx/s (valid, ledger-checked)", "our valid transfers",
                "Caliper: throughput (TPS, as reported)", "Caliper: succ", "Caliper: fail",
                "Caliper: avg latency (s, successes)", "Caliper: send rate (TPS)",
                "ledger: Caliper's round valid", "ledger valid ÷ Caliper's window (tx/s)"], rows)]
