"""Compute every summary from the raw tables only, so a stored run can be re-analysed.

* ``points/<point>/summary.json``: the point's status and every metric of
  ``metrics.METRICS`` its tables allow, plus whether the load generator kept
  to its schedule (a point whose generator lagged is kept but marked invalid
  and left out of the aggregates).
* ``summary.json`` of the run: the point summaries pooled per configuration
  and a verdict per claim of the experiment with its interval, its trend over
  cores and the evidence it rests on, all judged by harness/judge.py.
* the same over several runs of one configuration pooled (``analyze_pool``),
  which the report shows (selection.select_runs chooses the runs).
* cores: each point records the CPUs its processes were allowed (``cpus``,
  read back from the hosts), which judge.py's trend over cores reads.

Re-analysing the same stored run gives byte-identical files.
"""

from __future__ import annotations

from pathlib import Path

from . import SCHEMA_VERSION, capacity, cpus, measure, timing, validity
from .collect import load_measured, load_point, raw_tables, tables_differ
from .errors import HarnessError
from .judge import aggregate, all_metrics, clean, evaluate_claim, with_capacity, with_evidence
from .questions import answer_question
from .rundir import Run, read_json, write_json
from .selection import select_runs


def compute_all(tables: dict[str, pd.DataFrame]) -> dict[str, float]:
    """Every metric of ``all_metrics()`` whose tables are present and non-empty, by name."""
    out = {}
    for m in all_metrics().values():
        if all(t in tables and len(tables[t]) for t in m.tables):
            out[m.name] = m.compute(*(tables[t] for t in m.tables),
                                    **{t: tables[t] for t in m.optional if t in tables and len(tables[t])})
    return out


def point_summary(point_dir: Path, point: dict, status: str, reason: str | None = None,
                  extra: dict | None = None) -> dict:
    """Build (and write) ``summary.json`` of one point from its parquet tables.

    Only the measured window counts: an end-to-end point's blocks before the
    ``first_block`` of its ``measured.json`` (loadgen's setup) are left out.
    A point whose final status is not ``complete`` gets empty ``metrics``: what
    its tables allow is in ``partial_metrics``, with ``partial: true``.
    """
    tables = load_measured(point_dir)
    metrics = {k: clean(v) for k, v in sorted(compute_all(tables).items())}
    # Validity (harness/validity.py): counts from the ledger, logs, mutations, work, checked on the
    # tables made anew from the raw files, which must equal the stored ones the metrics come from. A
    # point that ran to its end with a problem there is failed: its numbers are not evidence.
    try:
        stored = load_point(point_dir)
        raw = raw_tables(point_dir) if (Path(point_dir) / "raw").is_dir() else stored
        validity_section, problems = validity.check_point(point_dir, point, raw)
        problems = tables_differ(raw, stored) + problems
    except HarnessError as e:
        validity_section, problems = {"problems": [str(e)]}, [f"validity check: {e}"]
    # A problem the system declares a limit of the machine's cores (harness/capacity.py) is a verdict on the
    # machine, not on the count: the point is kept, complete but not valid, with its counts and reasons.
    limited = capacity.classify(capacity.limits_for(point_dir, point["system"]), problems) \
        if status == "complete" else None
    if status == "complete" and problems and not limited:
        status, reason = "failed", "validity: " + "; ".join(problems)
    valid, invalid_reason, invalid_kind = True, None, None
    if limited:
        validity_section["capacity"] = limited
        valid, invalid_kind = False, capacity.CAPACITY
        invalid_reason = f"the machine could not carry it ({', '.join(limited['limits'])}): " + "; ".join(problems)
    limit = point["parameters"].get("max_lag_ms")
    lag = metrics.get("loadgen_max_lag_ms")
    if point["parameters"].get("rate_tps") and lag is not None and limit is not None and lag > limit:
        valid, invalid_kind = False, capacity.CAPACITY
        invalid_reason = "; ".join([r for r in [invalid_reason] if r]
                                   + [f"load generator lagged {lag} ms behind its schedule (limit {limit} ms)"])
    # A point that did not complete carries no measurement: what its tables allow is kept apart, flagged partial.
    extra = {k: v for k, v in (extra or {}).items() if k not in ("partial", "partial_metrics")}
    if "timing" in extra:
        extra["timing"] = timing.with_window(extra["timing"], timing.measured_window_s(tables))
    partial = {} if status == "complete" else {"partial": True, "partial_metrics": metrics}
    if partial:
        metrics = {}
    summary = {
        "schema_version": SCHEMA_VERSION,
        "point": point["id"],
        "variant": point["variant"],
        "sweep": point["sweep"],
        "repetition": point["repetition"],
        "control": bool(point.get("control")),
        "status": status,
        "reason": reason,
        "valid": valid,
        "invalid_reason": invalid_reason,
        **({"invalid_kind": invalid_kind} if invalid_kind else {}),
        "metrics": metrics,
        **extra,
        **partial,
        # what the point ran on, read back once when it ended (harness/cpus.py)
        "cpus": extra["cpus"] if "cpus" in extra else cpus.read_back(point_dir),
        "validity": validity_section,
    }
    write_json(Path(point_dir) / "summary.json", summary)
    return summary


def point_summaries(run: Run) -> list[dict]:
    """Every point summary of a run, re-computed from its parquet tables and its measurement (and written)."""
    summaries = []
    for point_json in sorted((run.path / "points").glob("*/point.json")):
        point = read_json(point_json)
        summary_path = point_json.parent / "summary.json"
        if summary_path.exists():
            old = read_json(summary_path)
            keep = {k: v for k, v in old.items() if k not in
                    ("schema_version", "point", "variant", "sweep", "repetition", "control", "status", "reason",
                     "valid", "invalid_reason", "invalid_kind", "metrics", "validity", "controlled")}
            status, reason = measure.measured_status(point_json.parent, old)
            summaries.append(point_summary(point_json.parent, point, status, reason, keep))
    paths = (run.stored("resolved").get("control") or {}).get("paths") or []
    for s in summaries:
        if not s["control"] and (s.get("validity") or {}).get("controllable"):
            s["controlled"] = control_status(s, summaries, paths)
            write_json(run.path / "points" / s["point"] / "summary.json", s)
    return summaries


def control_status(point: dict, summaries: list[dict], paths: list[str]) -> str:
    """Whether a control proved a measured point's checks: ``passed`` (its variant's control on the same
    transaction path, ``paths`` being the parameters that change it, completed), ``failed``, or ``not run``
    (the run was made with ``--no-control``, or before controls covered its path)."""
    mine = [c for c in summaries if c["control"] and c["variant"] == point["variant"]
            and all(c["sweep"].get(n) == point["sweep"].get(n) for n in paths)]
    if not mine:
        return "not run"
    return "passed" if all(c["status"] == "complete" for c in mine) else "failed"


def fail_on_control(run: Run, summaries: list[dict]) -> None:
    """A complete run whose control point fails when re-analysed is failed: its checks are no longer proven."""
    failed = [s["point"] for s in summaries if s["control"] and s["status"] != "complete"]
    if run.metadata.get("status") == "complete" and failed:
        run.metadata.update(status="failed", reason="a control point failed on re-analysis: " + ", ".join(failed))
        run.save()


def _other_runs(run: Run, experiment: dict) -> dict:
    """The pooled complete runs, of this run's build, of each other experiment a claim compares with."""
    wanted = {side.get("experiment") for c in experiment.get("claims") or []
              for side in (c.get("numerator") or {}, c.get("denominator") or {})} - {None, experiment["id"]}
    results, paper = run.path.parent.parent.parent, run.metadata["paper"]
    build = (run.metadata.get("build") or {}).get("kind", "reference")
    out = {}
    for exp_id in sorted(wanted):
        chosen = select_runs(results, paper, exp_id, build_kind=build)
        if chosen and chosen.complete:
            out[exp_id] = {"runs": [r.metadata["run_id"] for r in chosen.pooled],
                           "groups": aggregate({r.metadata["run_id"]: point_summaries(r) for r in chosen.pooled}),
                           "not_runnable": chosen.shown.stored("resolved").get("not_runnable_variants") or {}}
    return out


def _summary(runs: list[Run], by_run: dict[str, list[dict]], other_runs: dict) -> dict:
    """The summary of runs of one configuration (one run, or several pooled), oldest first."""
    newest = runs[-1]
    stored = newest.stored("experiment")
    experiment = stored["experiment"]
    groups = aggregate(by_run)
    resolved = newest.stored("resolved")
    context = {"cores": cpus.host_usable(newest.metadata["host"]), "scale": newest.metadata.get("scale"),
               "paper_hardware": (stored.get("paper") or {}).get("hardware"),
               "not_runnable": resolved.get("not_runnable_variants") or {},
               "other_runs": other_runs}
    every = [s for summaries in by_run.values() for s in summaries]
    where = {**context, "paper": newest.metadata["paper"], "experiment": experiment["id"]}

    def judge(claim: dict) -> dict:
        return with_capacity(with_evidence(evaluate_claim(claim, experiment, groups, context), every, compared=claim),
                             claim, every, where)

    claims = [judge(c) for c in experiment.get("claims") or []]
    questions = [answer_question(q, judge) for q in experiment.get("questions") or []]
    return {
        "schema_version": SCHEMA_VERSION,
        "paper": newest.metadata["paper"],
        "experiment": newest.metadata["experiment"],
        "run_id": newest.metadata["run_id"],
        "runs": [r.metadata["run_id"] for r in runs],
        "metric": experiment.get("metric"),
        "points": {"total": sum(len(r.stored("resolved").get("points") or []) for r in runs),
                   "complete": sum(s["status"] == "complete" for s in every),
                   "failed": sum(s["status"] == "failed" for s in every),
                   "invalid": sum(not s["valid"] for s in every),
                   # complete points this machine could not carry (harness/capacity.py): their claims not comparable
                   **({"capacity_limited": n} if (n := sum(capacity.limited(s) for s in every)) else {})},
        "groups": groups,
        "claims": claims,
        **({"questions": questions} if questions else {}),
        # the control points (plan.add_controls): what they planted and whether the checks found exactly that
        "controls": [{**((s.get("validity") or {}).get("control") or {}), "point": s["point"],
                      "point_status": s["status"], "reason": s.get("reason")} for s in every if s.get("control")],
    }


def analyze_run(run: Run) -> dict:
    """Re-compute every point summary from its parquet tables, then the run's ``summary.json``."""
    mine = point_summaries(run)
    fail_on_control(run, mine)
    summary = _summary([run], {run.metadata["run_id"]: mine}, _other_runs(run, run.stored("experiment")["experiment"]))
    write_json(run.path / "summary.json", summary)
    return summary


def analyze_pool(runs: list[Run]) -> dict:
    """Each run's own ``summary.json`` (as ``analyze_run``), then the summary of all of them pooled
    (runs of one configuration, oldest first; selection.select_runs chooses them). Not written: the report
    shows it."""
    by_run, other = {}, _other_runs(runs[-1], runs[-1].stored("experiment")["experiment"])
    for run in runs:
        mine = by_run[run.metadata["run_id"]] = point_summaries(run)
        fail_on_control(run, mine)
        own = _summary([run], {run.metadata["run_id"]: mine}, other)
        write_json(run.path / "summary.json", own)
    return _summary(runs, by_run, other) if len(runs) > 1 else own
