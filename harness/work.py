"""The work check of a point (docs/validity.md, "Work"): did the validating component spend the CPU that the
signature verifications owed for the ledger's transactions cost on this machine? A driver that skipped
the work (the negative control: its validator with the signature checks off) stayed below the margin where it was
calibrated, not on every machine since (docs/validity.md, "Work").
Part of harness/validity.py's checks; here because it reads CPU records and cost lines, not ledgers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from . import ledger
from .measure import measure_primitives  # noqa: F401  (measured where the points run: harness/measure.py)

#: The line a pre-made-block driver prints after its timed section (our patches to the peer benchmarks,
#: cmd/committerbench).
TIMED_SECTION = re.compile(r"^fabricrepro timed_section txs (\d+) wall_ns (\d+) user_ns (\d+) system_ns (\d+)\s*$",
                            re.M)
#: The CPU cost of one verification the same drivers measure just before and after their timed section.
VERIFY_COST = re.compile(r"^fabricrepro verify_cost verifies \d+ before_cpu_ns_per_verify (\d+) "
                          r"after_cpu_ns_per_verify (\d+)\s*$", re.M)


def timed_sections(point_dir: Path, components: list[str]) -> list[dict]:
    """The timed-section CPU lines the components printed (``fabricrepro timed_section ...``)."""
    out = []
    for c in components:
        for log in sorted(Path(point_dir).glob(f"logs/*/{c}.*")):
            for txs, wall, user, system in TIMED_SECTION.findall(log.read_text(encoding="utf-8", errors="replace")):
                out.append({"component": c, "host": log.parent.name, "txs": int(txs), "wall_s": int(wall) / 1e9,
                            "cpu_s": (int(user) + int(system)) / 1e9})
    return out


def verify_costs_ns(point_dir: Path, components: list[str]) -> list[int]:
    """The per-verification CPU costs (ns) the components measured beside their timed section."""
    return [int(ns) for c in components for log in sorted(Path(point_dir).glob(f"logs/*/{c}.*"))
            for pair in VERIFY_COST.findall(log.read_text(encoding="utf-8", errors="replace"))
            for ns in pair if int(ns) > 0]


def process_cpu(point_dir: Path, components: list[str]) -> list[dict]:
    """The life-time CPU of each stopped component process (``cpu_<name>.csv``, playbooks/roles/process stop)."""
    out = []
    for f in sorted(Path(point_dir).glob("raw/*/cpu_*.csv")):
        name = f.stem.removeprefix("cpu_")
        if any(name == c or name.startswith(c + "_") for c in components):
            for row in pd.read_csv(f).itertuples():
                out.append({"component": name, "host": f.parent.name, "cpu_s": float(row.user_s + row.system_s)})
    return out


def work_check(point_dir: Path, work: dict, components: list[str], primitives: dict | None,
               codes: pd.DataFrame | None, timed_blocks: list[int] | None = None) -> tuple[dict, list[str]]:
    """CPU spent against ``verifies_per_tx`` verifications per transaction the ledger holds.

    The CPU is the timed section's where the validating component printed one (the pre-made-block
    drivers; its transactions are the ledger's in ``timed_blocks``, the blocks the driver timed), else
    the components' whole life (set-up included, so a weaker bound) held against every transaction the
    ledger says was validated. The bound uses the cost of one verification the component measured just
    before and after its timed section (the cheaper), else the fastest rate measured in the run (per
    CPU-second where measured, else per core by the wall clock), and must be exceeded ``min_covered`` times: the
    system's negative control, its validator with the signature checks off, stays below that.
    Anything missing (no CPU record, no ledger count, no measured rate) fails: "not measured" is no pass.
    """
    result = {"verifies_per_tx": work["verifies_per_tx"], "why": work.get("why"), "components": components,
              "min_covered": float(work.get("min_covered", 1.0))}

    def unmeasured(reason: str) -> tuple[dict, list[str]]:
        return {**result, "status": "not measured", "reason": reason}, [f"work check: not measured: {reason}"]

    if codes is None:
        return unmeasured("no ledger count of the transactions to hold the CPU against")
    sections = timed_sections(point_dir, components)
    if sections:
        txs = ledger.owed_transactions(codes, timed_blocks)
        cpu = sum(s["cpu_s"] for s in sections)
        said = sum(s["txs"] for s in sections)
        result.update({"basis": "timed section", "wall_s": round(sum(s["wall_s"] for s in sections), 4),
                       "driver_txs": said})
        if said != txs:
            return {**result, "status": "failed"}, [
                f"work check: the timed section says {said} transactions, the ledger holds {txs} in the blocks the "
                "driver timed"]
    else:
        procs = process_cpu(point_dir, components)
        if not procs:
            return unmeasured(f"no timed-section line and no stopped component's CPU record of "
                              f"{', '.join(components)}")
        txs, cpu = ledger.owed_transactions(codes), sum(p["cpu_s"] for p in procs)
        result["basis"] = "whole life of " + ", ".join(sorted({p["component"] for p in procs})) + " (set-up included)"
    if not txs:
        return unmeasured("the ledger holds no validated transaction")
    # The cost the timed section paid: the cheaper of the two the component measured beside it. Else the
    # run's: per CPU-second where measured (a loaded machine's wall clock overstates it), else per core.
    costs = verify_costs_ns(point_dir, components) if sections else []
    rates = [1e9 / min(costs)] if costs else \
        [r for p in (primitives or {}).values() if isinstance(p, dict)
         for r in (p.get("verifies_per_cpu_s"), p.get("per_core_verifies_per_s")) if r]
    result["cost_from"] = "the component's own verify_cost" if costs else "the run's primitives"
    if not rates:
        return unmeasured("this run has no measured ECDSA verification rate (metadata.json primitives)")
    rate = max(rates)
    needed = txs * work["verifies_per_tx"] / rate
    result.update({"txs": txs, "cpu_s": round(cpu, 4), "verify_us": round(1e6 / rate, 2),
                   "needed_cpu_s": round(needed, 4), "cpu_us_per_tx": round(cpu / txs * 1e6, 1),
                   "covered": round(cpu / needed, 3)})
    if cpu < needed * result["min_covered"]:
        result["status"] = "failed"
        return result, [f"work check: {txs} transactions need at least {needed:.3f} CPU-s of signature "
                        f"verification ({work['verifies_per_tx']} x {1e6 / rate:.1f} us) x {result['min_covered']} "
                        f"(the margin above the negative control), {result['basis']} spent {cpu:.3f} CPU-s "
                        f"(x{cpu / needed:.2f})"]
    result["status"] = "passed"
    return result, []


def run_primitives(run_dir: Path) -> dict:
    """The ECDSA verification rates measured in the run (``metadata.json`` ``primitives``)."""
    path = Path(run_dir) / "metadata.json"
    if not path.is_file():
        return {}
    return json.loads(path.read_text()).get("primitives") or {}
