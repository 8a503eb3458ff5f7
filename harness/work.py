"""The work check of a point (docs/validity.md, "Work"): did the validating component spend the CPU that the
signature verifications owed for the ledger's transactions cost on this machine? A driver that skipped
the work (the negative control: its validator with the signature checks off) stayed below the margin where it was
calibrated, not on every machine since (docs/validity.md, "Work").

The cost of one verification is the harness's own, measured on the same machine at the run's start
(``metadata.json`` ``primitives.before_points``, ``bin/committerbench --ecdsa-verify-rate``). A validator's
own report of it (its ``verify_cost`` line) may only confirm that measurement: it must lie within
``VERIFY_COST_TOLERANCE`` of it, else the point fails; inside it, it may raise the cost (its build's
cryptography may be slower) but never lower it. The margin ``min_covered`` is the system's own
declaration (validity.yaml ``work``); none defaults.
Part of harness/validity.py's checks; here because it reads CPU records and cost lines, not ledgers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from . import ledger

#: The line a pre-made-block driver prints after its timed section (our patches to the peer benchmarks,
#: cmd/committerbench).
TIMED_SECTION = re.compile(r"^fabricrepro timed_section txs (\d+) wall_ns (\d+) user_ns (\d+) system_ns (\d+)\s*$",
                            re.M)
#: The line the upstream peer benchmarks (fabric-1.2 patch 0005, fastfabric patch 0008) print after their untimed
#: floor section: the same work as the timed section's, in the same process just before it, with every ECDSA
#: verification answered valid without being computed.
FLOOR_SECTION = re.compile(r"^fabricrepro floor_section blocks (\d+) txs (\d+) wall_ns (\d+) user_ns (\d+) "
                           r"system_ns (\d+)\s*$", re.M)
#: What a build's patch says (its description, in the run's metadata.json) when its driver prints the floor line:
#: a point of such a build without the line fails (fail closed).
FLOOR_MARK = "fabricrepro floor_section"
#: The share of the owed verifications' cost by which the timed section's CPU per transaction must exceed the
#: floor's (systems/fabric-1.2/README.md, "Negative control of the work check"). The difference is the signature
#: work alone (ideally x1.0 of the owed cost), measured within one process at one moment so the machine's load
#: cancels out; the negative control's is about x0 (signature checks off in both sections). The system's
#: ``min_covered`` is a margin on the whole CPU (the work around the verifications included) and does not apply
#: to the difference; a system may declare its own ``min_over_floor`` (validity.yaml ``work``).
FLOOR_MIN_OVER = 0.6
#: The CPU cost of one verification the same drivers measure just before and after their timed section.
VERIFY_COST = re.compile(r"^fabricrepro verify_cost verifies \d+ before_cpu_ns_per_verify (\d+) "
                          r"after_cpu_ns_per_verify (\d+)\s*$", re.M)
#: How far (a factor either way) a validator's own cost of one verification may lie from the harness's, measured
#: at the run's start, and still confirm it. The same process's cost before and after its timed section differed
#: by up to x1.8 on a loaded machine of 2 vCPUs (systems/fabric-1.2/README.md, "Negative control of the work
#: check"; lab 01 on 2026-12-07: 42.5 and 74.7 us beside the harness's 65 us); a line claiming 1 us is x65 off.
VERIFY_COST_TOLERANCE = 3.0


def timed_sections(point_dir: Path, components: list[str]) -> list[dict]:
    """The timed-section CPU lines the components printed (``fabricrepro timed_section ...``)."""
    out = []
    for c in components:
        for log in sorted(Path(point_dir).glob(f"logs/*/{c}.*")):
            for txs, wall, user, system in TIMED_SECTION.findall(log.read_text(encoding="utf-8", errors="replace")):
                out.append({"component": c, "host": log.parent.name, "txs": int(txs), "wall_s": int(wall) / 1e9,
                            "cpu_s": (int(user) + int(system)) / 1e9})
    return out


def floor_sections(point_dir: Path, components: list[str]) -> list[dict]:
    """The floor-section CPU lines the components printed (``fabricrepro floor_section ...``)."""
    out = []
    for c in components:
        for log in sorted(Path(point_dir).glob(f"logs/*/{c}.*")):
            for blocks, txs, wall, user, system in FLOOR_SECTION.findall(
                    log.read_text(encoding="utf-8", errors="replace")):
                out.append({"component": c, "host": log.parent.name, "blocks": int(blocks), "txs": int(txs),
                            "wall_s": int(wall) / 1e9, "cpu_s": (int(user) + int(system)) / 1e9})
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


def harness_cost_ns(primitives: dict | None) -> tuple[float | None, str]:
    """The CPU cost (ns) of one verification the harness measured on this machine at the run's start
    (``primitives.before_points``: per CPU-second; in runs that measured no CPU time, per core by the wall
    clock, which only overstates it), and where it comes from; None when the run measured none."""
    before = (primitives or {}).get("before_points")
    before = before if isinstance(before, dict) else {}
    for key in ("verifies_per_cpu_s", "per_core_verifies_per_s"):
        rate = before.get(key)
        if isinstance(rate, (int, float)) and not isinstance(rate, bool) and rate > 0:
            return 1e9 / rate, f"primitives.before_points.{key}"
    return None, ""


def floor_owed(build: dict | None) -> bool:
    """Whether the run's build (``metadata.json`` ``build``) carries a patch whose driver prints the floor line
    (its description names ``FLOOR_MARK``): then a point without that line fails. Runs made before the floor
    section (fabric-1.2 patch 0005 and fastfabric 0008 of 2026-12-07) are checked without it, labelled so."""
    def patches(node):
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "patches" and isinstance(v, list):
                    yield from (p for p in v if isinstance(p, dict))
                else:
                    yield from patches(v)
        elif isinstance(node, list):
            for v in node:
                yield from patches(v)
    return any(FLOOR_MARK in str(p.get("description") or "") for p in patches(build or {}))


def work_check(point_dir: Path, work: dict, components: list[str], primitives: dict | None,
               codes: pd.DataFrame | None, timed_blocks: list[int] | None = None,
               floor_required: bool = False) -> tuple[dict, list[str]]:
    """CPU spent against ``verifies_per_tx`` verifications per transaction the ledger holds.

    The CPU is the timed section's where the validating component printed one (the pre-made-block
    drivers; its transactions are the ledger's in ``timed_blocks``, the blocks the driver timed), else
    the components' whole life (set-up included, so a weaker bound) held against every transaction the
    ledger says was validated. The cost of one verification is the harness's, measured at the run's start
    (``harness_cost_ns``); the component's own ``verify_cost`` lines must each confirm it within
    ``VERIFY_COST_TOLERANCE`` and may raise it, never lower it. The CPU must exceed the owed verifications'
    ``min_covered`` times (the system's declared margin; none defaults): the system's negative control, its
    validator with the signature checks off, stays below that.
    Where the driver printed a floor section (``FLOOR_SECTION``: the same work just before the timed section
    in the same process, signature checks off), the timed section's CPU per transaction must also exceed the
    floor's by ``min_over_floor`` (``FLOOR_MIN_OVER`` unless the system declares it) times the owed
    verifications' cost: a difference within one process, which the machine's load does not move. A build
    whose driver prints it (``floor_required``) fails without it.
    Anything missing (no CPU record, no ledger count, no measured cost, no margin) fails: "not measured" is
    no pass.
    """
    result = {"verifies_per_tx": work["verifies_per_tx"], "why": work.get("why"), "components": components,
              "min_covered": work.get("min_covered")}

    def unmeasured(reason: str) -> tuple[dict, list[str]]:
        return {**result, "status": "not measured", "reason": reason}, [f"work check: not measured: {reason}"]

    if not isinstance(result["min_covered"], (int, float)) or isinstance(result["min_covered"], bool):
        return unmeasured("the system declares no margin min_covered over the owed verifications (validity.yaml "
                          "work); none defaults")
    result["min_covered"] = float(result["min_covered"])
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
    cost_ns, why_not = _verification_cost(point_dir, components, primitives, bool(sections), result)
    if cost_ns is None:
        return (result, [why_not]) if result.get("status") == "failed" else unmeasured(why_not)
    needed = txs * work["verifies_per_tx"] * cost_ns / 1e9
    result.update({"txs": txs, "cpu_s": round(cpu, 4), "verify_us": round(cost_ns / 1e3, 2),
                   "needed_cpu_s": round(needed, 4), "cpu_us_per_tx": round(cpu / txs * 1e6, 1),
                   "covered": round(cpu / needed, 3)})
    problems = _floor_comparison(point_dir, components, work, bool(sections), floor_required, cpu, txs, cost_ns, result)
    if result.get("status") == "failed":
        return result, problems
    if cpu < needed * result["min_covered"]:
        problems.append(f"work check: {txs} transactions need at least {needed:.3f} CPU-s of signature "
                        f"verification ({work['verifies_per_tx']} x {cost_ns / 1e3:.1f} us) x {result['min_covered']} "
                        f"(the margin above the negative control), {result['basis']} spent {cpu:.3f} CPU-s "
                        f"(x{cpu / needed:.2f})")
    result["status"] = "failed" if problems else "passed"
    return result, problems


def _verification_cost(point_dir: Path, components: list[str], primitives: dict | None, timed: bool,
                       result: dict) -> tuple[float | None, str]:
    """The cost of one verification the work check holds the CPU against, in ns, recorded in ``result``: the
    harness's, measured at the run's start, raised (never lowered) to the cheaper of the validator's own
    ``verify_cost`` lines (read with a timed section), each of which must confirm the harness's within
    ``VERIFY_COST_TOLERANCE``. (None, why) when there is none to use; ``result`` gets status "failed" where a
    validator's line contradicts the harness's."""
    own_ns, measured_from = harness_cost_ns(primitives)
    if own_ns is None:
        return None, ("the harness measured no ECDSA verification cost at this run's start (metadata.json "
                      "primitives.before_points)")
    result["harness_verify_us"] = round(own_ns / 1e3, 2)
    cost_ns, result["cost_from"] = own_ns, f"the harness at the run's start ({measured_from})"
    reported = verify_costs_ns(point_dir, components) if timed else []
    if reported:
        result["validator_verify_us"] = [round(min(reported) / 1e3, 2), round(max(reported) / 1e3, 2)]
        off = [ns for ns in reported if not own_ns / VERIFY_COST_TOLERANCE <= ns <= own_ns * VERIFY_COST_TOLERANCE]
        if off:
            worst = max(off, key=lambda ns: max(ns / own_ns, own_ns / ns))
            result["status"] = "failed"
            return None, (f"work check: the validator's verify_cost line says {worst / 1e3:.2f} us per verification, "
                          f"the harness measured {own_ns / 1e3:.2f} us on this machine at the run's start: more than "
                          f"x{VERIFY_COST_TOLERANCE:g} apart, so the line cannot confirm it")
        # the cheaper of the validator's own measurements, where it is dearer than the harness's
        if min(reported) > own_ns:
            cost_ns, result["cost_from"] = min(reported), "the validator's verify_cost (dearer than the harness's)"
    return cost_ns, ""


def _floor_comparison(point_dir: Path, components: list[str], work: dict, timed: bool, floor_required: bool,
                      cpu: float, txs: int, cost_ns: float, result: dict) -> list[str]:
    """The timed section's CPU per transaction against its floor section's (``FLOOR_SECTION``), recorded in
    ``result``: the difference must exceed ``min_over_floor`` times the owed verifications' cost. Without a
    floor line: a problem where the build prints one (``floor_required``), else a note in the basis. A floor of
    0 transactions sets ``result`` status "failed"."""
    floors = floor_sections(point_dir, components) if timed else []
    if not floors:
        if timed:
            result["floor"] = None
        if timed and floor_required:
            return ["work check: no floor-section line (fabricrepro floor_section ...), which this run's build "
                    "prints before its timed section: its signature work cannot be told from the load"]
        if timed:
            result["basis"] += (" (no floor section: a driver that prints none, or a run made before it; held "
                                "against min_covered alone)")
        return []
    min_over = work.get("min_over_floor", FLOOR_MIN_OVER)
    floor_txs, floor_cpu = sum(f["txs"] for f in floors), sum(f["cpu_s"] for f in floors)
    owed_us = work["verifies_per_tx"] * cost_ns / 1e3
    if not floor_txs:
        result["status"] = "failed"
        return ["work check: the floor section says 0 transactions"]
    over_us = cpu / txs * 1e6 - floor_cpu / floor_txs * 1e6
    result.update({"floor": {"txs": floor_txs, "blocks": sum(f["blocks"] for f in floors),
                             "cpu_s": round(floor_cpu, 4), "wall_s": round(sum(f["wall_s"] for f in floors), 4),
                             "cpu_us_per_tx": round(floor_cpu / floor_txs * 1e6, 1)},
                   "over_floor_us_per_tx": round(over_us, 1), "covered_over_floor": round(over_us / owed_us, 3),
                   "min_over_floor": float(min_over)})
    if over_us < owed_us * float(min_over):
        return [f"work check: the timed section spent {cpu / txs * 1e6:.1f} CPU-us per transaction, its floor "
                f"(the same work with the signature checks off, same process) {floor_cpu / floor_txs * 1e6:.1f}: "
                f"{over_us:.1f} us more, below {float(min_over)} x the {owed_us:.1f} us of the "
                f"{work['verifies_per_tx']} verifications owed (x{over_us / owed_us:.2f})"]
    return []


def run_primitives(run_dir: Path) -> dict:
    """The ECDSA verification rates measured in the run (``metadata.json`` ``primitives``)."""
    path = Path(run_dir) / "metadata.json"
    if not path.is_file():
        return {}
    return json.loads(path.read_text()).get("primitives") or {}
