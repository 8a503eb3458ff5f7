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

from . import SCHEMA_VERSION
from .collect import load_measured
from .metrics import METRICS, compute_all
from .rundir import Run, read_json, write_json

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
    """
    metrics = {k: _clean(v) for k, v in sorted(compute_all(load_measured(point_dir)).items())}
    valid, invalid_reason = True, None
    limit = point["parameters"].get("max_lag_ms")
    lag = metrics.get("loadgen_max_lag_ms")
    if point["parameters"].get("rate_tps") and lag is not None and limit is not None and lag > limit:
        valid, invalid_reason = False, f"load generator lagged {lag} ms behind its schedule (limit {limit} ms)"
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
        **(extra or {}),
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


def evaluate_claim(claim: dict, experiment: dict, groups: list[dict], context: dict) -> dict:
    """Verdict on one claim from the aggregated measurements.

    ``context`` carries ``cores`` (this machine), ``paper_hardware``, ``scale``
    and ``not_runnable`` (variant -> reason). An absolute claim is only
    comparable on the paper's hardware at the paper's scale; a ratio claim
    compares two configurations measured in the same run; a qualitative claim
    is never compared numerically.
    """
    metric = claim.get("metric") or experiment.get("metric")
    tolerance = claim.get("tolerance") or {}
    result = {"id": claim["id"], "statement": claim.get("statement"), "compare": claim["compare"],
              "expected": claim.get("expected"), "metric": metric, "measured": None,
              "tolerance": tolerance, "citation": claim.get("citation")}

    def verdict(v, reason=None):
        return {**result, "verdict": v, "reason": reason}

    if claim["compare"] == "qualitative":
        return verdict("not comparable", "a qualitative statement: judge it from the figure")
    if metric not in METRICS:
        return verdict("not comparable", f"metric {metric!r} is not computed by the harness yet")
    if claim.get("expected") is None or not tolerance:
        return verdict("not comparable", "the claim gives no expected value or no tolerance")
    if claim["compare"] == "absolute":
        cores = (context.get("paper_hardware") or {}).get("cores") if isinstance(
            context.get("paper_hardware"), dict) else None
        if cores is None or cores != context.get("cores") or context.get("scale") != "paper":
            return verdict("not comparable",
                           f"an absolute value needs the paper's hardware and scale (paper: {cores or 'unknown'} "
                           f"cores, scale paper; here: {context.get('cores')} cores, scale {context.get('scale')})")

    def mean_of(side: str):
        ref = claim.get(side) or {"variant": claim.get("variant"), "params": claim.get("params")}
        if ref.get("experiment", experiment["id"]) != experiment["id"]:
            return None, f"compares with experiment {ref['experiment']!r}; cross-experiment claims are not evaluated yet"
        if ref.get("variant") in context.get("not_runnable", {}):
            return None, f"{ref['variant']!r} is not runnable: {context['not_runnable'][ref['variant']]}"
        found = [g for g in groups if _matches(g, ref.get("variant"), ref.get("params"))]
        if len(found) != 1:
            return None, (f"no measurement of {ref.get('variant')!r}" if not found else
                          f"{len(found)} configurations of {ref.get('variant')!r} match; the claim names no parameters")
        name = ref.get("metric") or metric
        stats = found[0]["metrics"].get(name) or {}
        return stats.get("mean"), None if stats.get("mean") is not None else f"no {name} for {ref.get('variant')!r}"

    num, why = mean_of("numerator")
    if why:
        return verdict("not comparable", why)
    measured = num
    if claim["compare"] == "ratio":
        den, why = mean_of("denominator")
        if why:
            return verdict("not comparable", why)
        if not den:
            return verdict("not comparable", "the denominator measured zero")
        measured = num / den
    result["measured"] = _clean(measured)
    expected = claim["expected"]
    margin = max(abs(expected) * tolerance.get("relative", 0), tolerance.get("absolute", 0))
    bound = claim.get("bound")
    low, high = expected - margin, expected + margin
    ok = measured >= low if bound == "lower" else measured <= high if bound == "upper" else low <= measured <= high
    band = f"≥ {low:.4g}" if bound == "lower" else f"≤ {high:.4g}" if bound == "upper" else f"[{low:.4g}, {high:.4g}]"
    return verdict("reproduced" if ok else "not reproduced",
                   f"measured {measured:.4g}, expected {band} (scale {context.get('scale')})")


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
                     "valid", "invalid_reason", "metrics")}
            summaries.append(point_summary(point_json.parent, point, old["status"], old["reason"], keep))
    stored = run.stored("experiment")
    experiment = stored["experiment"]
    groups = aggregate(summaries)
    resolved = run.stored("resolved")
    context = {"cores": run.metadata["host"]["cores"], "scale": run.metadata.get("scale"),
               "paper_hardware": (stored.get("paper") or {}).get("hardware"),
               "not_runnable": resolved.get("not_runnable_variants") or {}}
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

