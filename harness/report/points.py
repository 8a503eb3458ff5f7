"""Per point of the pooled runs: where its valid count comes from and what the checks found, and where its
wall time went."""

from __future__ import annotations

from ..rundir import read_json
from .text import fmt


def point_summaries(runs: list) -> list[tuple[str, dict]]:
    """``(run id, summary.json)`` of every point of ``runs``, in run and point order."""
    return [(run.path.name, read_json(p)) for run in runs for p in sorted((run.path / "points").glob("*/summary.json"))]


def load_text(load: dict | None) -> str:
    """A point's load average at its start and end (``load_average_1min`` of its summary), "–" before the record."""
    if not load:
        return "–"
    return f"{fmt(load.get('start'))} → {fmt(load.get('end'))}"


def validity_blocks(runs: list) -> list[tuple]:
    """Per point of each run: where its valid count comes from and what that says, the log patterns it
    matched, and the work check (harness/validity.py, docs/validity.md). A ``run`` column where several
    runs are pooled."""
    rows = []
    several = len(runs) > 1
    for run_id, s in point_summaries(runs):
        v = s.get("validity") or {}
        invalid = v.get("ledger_invalid") or {}
        logs = {k: n for k, n in (v.get("log_counts") or {}).items() if n}
        work = v.get("work") or {}
        if work.get("status") in ("passed", "failed"):
            work_text = (f"{work['status']}: {fmt(work.get('cpu_us_per_tx'))} CPU-µs/tx spent, "
                         f"≥ {fmt(work['verifies_per_tx'] * work['verify_us'])} owed "
                         f"({work['verifies_per_tx']} verifies × {fmt(work['verify_us'])} µs; ×{fmt(work.get('covered'))})")
        else:
            work_text = work.get("status", "no work stated") + (f" ({work['reason']})" if work.get("reason") else "")
        mutations = v.get("mutations")
        rows.append(([run_id] if several else []) + [s["point"], s["status"], v.get("counts_from", "–"),
                     fmt(v.get("ledger_valid")) if "ledger_valid" in v else "–",
                     ", ".join(f"{k} {n}" for k, n in invalid.items()) or "none",
                     ", ".join(f"{k} {n}" for k, n in sorted(logs.items())) or "none",
                     work_text + (f"; mutations {mutations['invalid_as_planned']} invalid as planned"
                                  if mutations else ""),
                     load_text(s.get("load_average_1min"))])
    if not rows:
        return []
    return [("p", "**Validity** (docs/validity.md): each point's valid count is checked against the ledger's own "
                  "codes (the kept block files, else the per-transaction codes the point recorded), its logs "
                  "against its system's patterns (`systems/<system>/validity.yaml`), and the CPU of its timed "
                  "section against the signature verifications the paper says each transaction needs, at this "
                  "run's measured cost of one verification. A point failing any of them is failed and left out. "
                  "The load column is the controller's 1-minute load average when the point started and ended "
                  "(on local and netns hosts, the hosts' too): a load above the machine's cores means the "
                  "point shared its CPUs with other work."),
            ("table", (["run"] if several else []) + ["point", "status", "valid count from", "valid (ledger)", "invalid (ledger codes)",
                       "log patterns matched", "work check", "load (1 min): start → end"], rows)]


def timing_blocks(runs: list) -> list[tuple]:
    """Per point of each run: where its wall time went (``timing`` of its summary, harness/timing.py), beside
    the measured window. A ``run`` column where several runs are pooled; nothing when no point has timing."""
    rows = []
    several = len(runs) > 1
    for run_id, s in point_summaries(runs):
        t = s.get("timing")
        if not t:
            continue
        run_pb, teardown = t.get("run") or {}, t.get("teardown") or {}
        slowest = ", ".join(f"{role} {fmt(sec)}" for role, sec in
                            sorted((run_pb.get("roles") or {}).items(), key=lambda kv: -kv[1])[:4])
        rows.append(([run_id] if several else [])
                    + [s["point"], fmt(t.get("wall_s")), fmt(t.get("measured_window_s")),
                       fmt(t.get("wall_over_window")), fmt(run_pb.get("startup_s")), fmt(run_pb.get("wall_s")),
                       fmt(teardown.get("wall_s")), fmt(t.get("collect_s")), slowest or "–"])
    if not rows:
        return []
    return [("p", "**Where the time went** (seconds; `timing` in each point's summary.json, docs/results-format.md): "
                  "the point's wall time from its first playbook to its conversion, the measured window its metric "
                  "covers (first measured block's arrival to the last one's commit), Ansible's start-up, the "
                  "deployment and workload playbook, the teardown (stop by PID, fetch logs and raw data), the "
                  "conversion to tables, and the roles that took longest (deployment, set-up and workload)."),
            ("table", (["run"] if several else []) + ["point", "wall", "measured window", "wall ÷ window",
                                                      "Ansible start-up", "deploy + workload", "teardown", "collect",
                                                      "slowest roles"], rows)]
