"""Compute every summary from the raw tables only, so a stored run can be re-analysed.

* ``points/<point>/summary.json``: the point's status and every metric of
  ``metrics.METRICS`` its tables allow, plus whether the load generator kept
  to its schedule (a point whose generator lagged is kept but marked invalid
  and left out of the aggregates).
* ``summary.json`` of the run: per configuration (variant and swept values) the
  count, mean, standard deviation, minimum and maximum of each metric over the
  valid repetitions, and a verdict per claim of the experiment.

Re-analysing the same stored run gives byte-identical files.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path

from . import SCHEMA_VERSION, validity
from .collect import load_measured, load_point
from .errors import HarnessError
from .metrics import all_metrics, compute_all
from .rundir import Run, latest_complete_run, read_json, write_json

VERDICTS = ("reproduced", "not reproduced", "not comparable")


def _clean(value):
    """JSON-safe number: NaN and infinities become None, floats are rounded to 6 significant digits."""
    if isinstance(value, float):
        return None if not math.isfinite(value) else float(f"{value:.6g}")
    return value


def point_summary(point_dir: Path, point: dict, status: str, reason: str | None = None,
                  extra: dict | None = None) -> dict:
    """Build (and write) ``summary.json`` of one point from its parquet tables.

    Only the measured window counts: an end-to-end point's blocks before the
    ``first_block`` of its ``measured.json`` (loadgen's setup) are left out.
    A point whose final status is not ``complete`` gets empty ``metrics``: what
    its tables allow is in ``partial_metrics``, with ``partial: true``.
    """
    tables = load_measured(point_dir)
    metrics = {k: _clean(v) for k, v in sorted(compute_all(tables).items())}
    # Validity (harness/validity.py): counts from the ledger, logs, mutations, work. A point
    # that ran to its end with a problem there is failed: its numbers are not evidence.
    try:
        validity_section, problems = validity.check_point(point_dir, point, load_point(point_dir))
    except HarnessError as e:
        validity_section, problems = {"problems": [str(e)]}, [f"validity check: {e}"]
    if status == "complete" and problems:
        status, reason = "failed", "validity: " + "; ".join(problems)
    valid, invalid_reason = True, None
    limit = point["parameters"].get("max_lag_ms")
    lag = metrics.get("loadgen_max_lag_ms")
    if point["parameters"].get("rate_tps") and lag is not None and limit is not None and lag > limit:
        valid, invalid_reason = False, f"load generator lagged {lag} ms behind its schedule (limit {limit} ms)"
    # A point that did not complete carries no measurement: what its tables allow is kept apart, flagged partial.
    extra = {k: v for k, v in (extra or {}).items() if k not in ("partial", "partial_metrics")}
    partial = {} if status == "complete" else {"partial": True, "partial_metrics": metrics}
    if partial:
        metrics = {}
    summary = {
        "schema_version": SCHEMA_VERSION,
        "point": point["id"],
        "variant": point["variant"],
        "sweep": point["sweep"],
        "repetition": point["repetition"],
        "status": status,
        "reason": reason,
        "valid": valid,
        "invalid_reason": invalid_reason,
        "metrics": metrics,
        **extra,
        **partial,
        "validity": validity_section,
    }
    write_json(Path(point_dir) / "summary.json", summary)
    return summary


def _stats(values: list[float]) -> dict:
    values = [v for v in values if v is not None]
    if not values:
        return {"n": 0, "mean": None, "std": None, "min": None, "max": None}
    return {"n": len(values), "mean": _clean(statistics.fmean(values)),
            "std": _clean(statistics.stdev(values)) if len(values) > 1 else 0.0,
            "min": _clean(min(values)), "max": _clean(max(values))}


def aggregate(summaries: list[dict]) -> list[dict]:
    """Group complete, valid point summaries by variant and swept values; statistics per metric."""
    groups: dict[tuple, list[dict]] = {}
    for s in summaries:
        if s["status"] == "complete" and s["valid"]:
            key = (s["variant"], tuple(sorted(s["sweep"].items())))
            groups.setdefault(key, []).append(s)
    out = []
    for (variant, sweep), members in sorted(groups.items(), key=lambda kv: repr(kv[0])):
        names = sorted({m for s in members for m in s["metrics"]})
        out.append({"variant": variant, "sweep": dict(sweep),
                    "metrics": {n: _stats([s["metrics"].get(n) for s in members]) for n in names}})
    return out


def _matches(group: dict, variant: str, params: dict | None) -> bool:
    if group["variant"] != variant:
        return False
    return all(group["sweep"].get(k) == v for k, v in (params or {}).items() if k in group["sweep"])


def better_direction(metric: str) -> str | None:
    """Which side of ``metric`` is the better system: ``higher`` (rates), ``lower`` (latencies) or None.

    None for a difference, a share or a parameter value. A one-sided bound
    pointing to the worse side is met by a broken system (an upper bound on
    throughput passes at zero), so the catalogue may not use one.
    """
    if metric.endswith(("_tps", "_per_s")):
        return "higher"
    if metric.endswith("_ms") and metric != "latency_difference_ms":
        return "lower"
    return None


def trivial_bound_problems(doc: dict) -> list[str]:
    """Claims and published values whose one-sided bound a worse system satisfies trivially.

    An ``upper`` bound on a throughput (or a ratio of throughputs) is met by no
    throughput at all; a ``lower`` bound on a latency by an arbitrarily slow
    system. Such a statement is an approximate value to reach (``approx``), a
    comparison with another measurement, or qualitative.
    """
    out = []
    for exp in doc.get("experiments") or []:
        for kind in ("published", "claims"):
            for item in exp.get(kind) or []:
                if item.get("compare") == "qualitative" or item.get("bound") not in ("upper", "lower"):
                    continue
                metric = item.get("metric") or exp.get("metric")
                better = better_direction(metric or "")
                if better is None or "relative_to" in item:
                    continue
                if (item["bound"] == "upper") == (better == "higher"):
                    out.append(f"{exp['id']}/{kind}/{item['id']}: a{'n' if item['bound'] == 'upper' else ''} "
                               f"{item['bound']} bound on {metric} ({better} is better) cannot fail for a worse "
                               "system; use bound approx, a ratio with a measured value, or compare qualitative")
    return out


def _band(claim: dict) -> tuple[float, float, str]:
    expected = claim["expected"]
    tolerance = claim.get("tolerance") or {}
    margin = max(abs(expected) * tolerance.get("relative", 0), tolerance.get("absolute", 0))
    bound = claim.get("bound")
    low, high = expected - margin, expected + margin
    if bound == "lower":
        return low, math.inf, f"≥ {low:.4g}"
    if bound == "upper":
        return -math.inf, high, f"≤ {high:.4g}"
    return low, high, f"[{low:.4g}, {high:.4g}]"


def _side(claim: dict, side: str, experiment: dict, groups: list[dict], context: dict):
    """The matching groups' means of one side of a claim: ({sweep key: mean}, why-not, run note)."""
    ref = claim.get(side) or {"variant": claim.get("variant"), "params": claim.get("params")}
    other = {"numerator": "denominator", "denominator": "numerator"}.get(side)
    # A parameter pinned on one side of a ratio only holds for the other side too.
    params = {**((claim.get(other) or {}).get("params") or {}), **(ref.get("params") or {})} if other \
        else dict(ref.get("params") or {})
    exp_id = ref.get("experiment", experiment["id"])
    note = None
    pool, not_runnable = groups, context.get("not_runnable") or {}
    if exp_id != experiment["id"]:
        found_run = (context.get("other_runs") or {}).get(exp_id)
        if not found_run:
            return None, f"compares with experiment {exp_id!r}, which has no complete run of this build yet", None
        pool, not_runnable = found_run["groups"], found_run.get("not_runnable") or {}
        note = f"{exp_id} from run {found_run['run_id']}"
    variant = ref.get("variant")
    if variant in not_runnable:
        return None, f"{variant!r} is not runnable: {not_runnable[variant]}", None
    name = ref.get("metric") or claim.get("metric") or experiment.get("metric")
    values = {}
    for g in pool:
        if _matches(g, variant, params):
            mean = (g["metrics"].get(name) or {}).get("mean")
            if mean is not None:
                values[tuple(sorted((k, v) for k, v in g["sweep"].items() if k not in params))] = mean
    if not values:
        return None, f"no {name} measured for {variant!r}" + (f" at {params}" if params else ""), None
    return values, None, note


def _measure(claim: dict, experiment: dict, groups: list[dict], context: dict):
    """(measured value, every per-configuration value, why-not, notes) of a ratio or absolute claim.

    Without ``aggregate`` a claim names one configuration (or a ratio pairs
    configurations at equal swept values, and must hold at each). With it:
    ``mean_over_sweep`` / ``min_over_sweep`` take the mean / smallest of the
    per-configuration values (ratios paired at equal swept values), and
    ``max_over_sweep`` each side's peak over the sweep (peaks reached at
    different points, as Fujitsu's), then their ratio.
    """
    aggregate = claim.get("aggregate")
    num, why, note_n = _side(claim, "numerator" if claim["compare"] == "ratio" else None, experiment, groups,
                             context)
    if why:
        return None, None, why, None
    notes = [n for n in [note_n] if n]
    if claim["compare"] == "ratio":
        den, why, note_d = _side(claim, "denominator", experiment, groups, context)
        if why:
            return None, None, why, None
        notes += [n for n in [note_d] if n and n not in notes]  # both sides from one other run: say it once
        if aggregate == "max_over_sweep":
            top = max(den.values())
            if not top:
                return None, None, "the denominator measured zero", None
            return max(num.values()) / top, None, None, notes
        if 0 in den.values():
            return None, None, "the denominator measured zero", None
        if len(num) == 1 and len(den) == 1:
            per_point = {(): next(iter(num.values())) / next(iter(den.values()))}
        else:
            per_point = {}
            for key, value in num.items():
                # pair on the swept values both sides have (another experiment may sweep other parameters)
                matching = [d for k, d in den.items() if all(dict(key).get(n, v) == v for n, v in k)]
                if len(matching) == 1:
                    per_point[key] = value / matching[0]
            if not per_point:
                return None, None, "no configuration of the numerator pairs with one of the denominator", None
    else:
        per_point = num
        if aggregate == "max_over_sweep":
            return max(per_point.values()), list(per_point.values()), None, notes
    values = list(per_point.values())
    if aggregate == "mean_over_sweep":
        return statistics.fmean(values), values, None, notes
    if aggregate == "min_over_sweep":
        return min(values), values, None, notes
    if len(values) == 1:
        return values[0], values, None, notes
    return None, values, None, notes  # no aggregate: each configuration is judged on its own


def evaluate_claim(claim: dict, experiment: dict, groups: list[dict], context: dict) -> dict:
    """Verdict on one claim from the aggregated measurements.

    ``context`` carries ``cores`` (this machine), ``paper_hardware``, ``scale``,
    ``not_runnable`` (variant -> reason) and ``other_runs`` (experiment id ->
    ``{run_id, groups, not_runnable}`` of its newest complete run of the same
    build, for claims comparing with another experiment). An absolute claim is
    only comparable on the paper's hardware at the paper's scale; a ratio claim
    compares two configurations measured in the same run (or, across
    experiments, in the named runs); a qualitative claim is never compared
    numerically. ``every_point`` requires each per-configuration value on one
    side of a value (WHEAT's latency below BFT-SMaRt's at every frontend).
    """
    metric = claim.get("metric") or experiment.get("metric")
    tolerance = claim.get("tolerance") or {}
    result = {"id": claim["id"], "statement": claim.get("statement"), "compare": claim["compare"],
              "expected": claim.get("expected"), "metric": metric, "measured": None,
              "tolerance": tolerance, "citation": claim.get("citation")}

    def verdict(v, reason=None):
        if v == "not comparable" and claim.get("comparable_on"):  # what would make it comparable
            reason = f"{reason}; comparable on: {claim['comparable_on']}"
        return {**result, "verdict": v, "reason": reason}

    if claim["compare"] == "qualitative":
        return verdict("not comparable", "a qualitative statement: judge it from the figure")
    sides = [claim.get(s) or {} for s in ("numerator", "denominator")] if claim["compare"] == "ratio" else [claim]
    missing = sorted({s.get("metric") or metric for s in sides} - set(all_metrics()))
    if missing:
        return verdict("not comparable", f"metric {missing[0]!r} is not computed by the harness yet")
    if claim.get("expected") is None or not tolerance:
        return verdict("not comparable", "the claim gives no expected value or no tolerance")
    if claim["compare"] == "absolute":
        cores = (context.get("paper_hardware") or {}).get("cores") if isinstance(
            context.get("paper_hardware"), dict) else None
        if cores is None or cores != context.get("cores") or context.get("scale") != "paper":
            return verdict("not comparable",
                           f"an absolute value needs the paper's hardware and scale (paper: {cores or 'unknown'} "
                           f"cores, scale paper; here: {context.get('cores')} cores, scale {context.get('scale')})")

    measured, per_point, why, notes = _measure(claim, experiment, groups, context)
    if why:
        return verdict("not comparable", why)
    low, high, band = _band(claim)
    where = f" (scale {context.get('scale')}" + "".join(f"; {n}" for n in notes) + ")"
    if measured is None:  # several configurations, no aggregate: the claim holds at each
        result["measured"] = [_clean(v) for v in per_point]
        bad = [v for v in per_point if not low <= v <= high]
        return verdict("not reproduced" if bad else "reproduced",
                       f"measured {', '.join(f'{v:.4g}' for v in per_point)} at {len(per_point)} configurations, "
                       f"expected each {band}{where}")
    result["measured"] = _clean(measured)
    reason = f"measured {measured:.4g}, expected {band}{where}"
    ok = low <= measured <= high
    each = claim.get("every_point")
    if each and per_point:
        limit_low, limit_high = each.get("lower", -math.inf), each.get("upper", math.inf)
        off = [v for v in per_point if not limit_low <= v <= limit_high]
        reason += (f"; every configuration {'≤ ' + format(limit_high, '.4g') if 'upper' in each else '≥ ' + format(limit_low, '.4g')}: "
                   + ("yes" if not off else f"no ({', '.join(f'{v:.4g}' for v in off)})"))
        ok = ok and not off
    return verdict("reproduced" if ok else "not reproduced", reason)


def _other_runs(run: Run, experiment: dict) -> dict:
    """The newest complete run, of this run's build, of each other experiment a claim compares with."""
    wanted = {side.get("experiment") for c in experiment.get("claims") or []
              for side in (c.get("numerator") or {}, c.get("denominator") or {})} - {None, experiment["id"]}
    results, paper = run.path.parent.parent.parent, run.metadata["paper"]
    build = (run.metadata.get("build") or {}).get("kind", "reference")
    out = {}
    for exp_id in sorted(wanted):
        other = latest_complete_run(results, paper, exp_id, build)
        summary = other.path / "summary.json" if other else None
        if summary and summary.exists():
            doc = read_json(summary)
            out[exp_id] = {"run_id": other.metadata["run_id"], "groups": doc.get("groups") or [],
                           "not_runnable": other.stored("resolved").get("not_runnable_variants") or {}}
    return out


def analyze_run(run: Run) -> dict:
    """Re-compute every point summary from its parquet tables, then the run's ``summary.json``."""
    summaries = []
    for point_json in sorted((run.path / "points").glob("*/point.json")):
        point = read_json(point_json)
        summary_path = point_json.parent / "summary.json"
        if summary_path.exists():
            old = read_json(summary_path)
            keep = {k: v for k, v in old.items() if k not in
                    ("schema_version", "point", "variant", "sweep", "repetition", "status", "reason",
                     "valid", "invalid_reason", "metrics", "validity")}
            summaries.append(point_summary(point_json.parent, point, old["status"], old["reason"], keep))
    stored = run.stored("experiment")
    experiment = stored["experiment"]
    groups = aggregate(summaries)
    resolved = run.stored("resolved")
    context = {"cores": run.metadata["host"]["cores"], "scale": run.metadata.get("scale"),
               "paper_hardware": (stored.get("paper") or {}).get("hardware"),
               "not_runnable": resolved.get("not_runnable_variants") or {},
               "other_runs": _other_runs(run, experiment)}
    claims = [evaluate_claim(c, experiment, groups, context) for c in experiment.get("claims") or []]
    summary = {
        "schema_version": SCHEMA_VERSION,
        "paper": run.metadata["paper"],
        "experiment": run.metadata["experiment"],
        "run_id": run.metadata["run_id"],
        "metric": experiment.get("metric"),
        "points": {"total": len(resolved.get("points") or []), "complete": sum(s["status"] == "complete" for s in summaries),
                   "failed": sum(s["status"] == "failed" for s in summaries),
                   "invalid": sum(not s["valid"] for s in summaries)},
        "groups": groups,
        "claims": claims,
    }
    write_json(run.path / "summary.json", summary)
    return summary

