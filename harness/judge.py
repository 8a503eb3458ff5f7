"""Judge the point summaries: pool them, estimate each claim, give its verdict, its trend over cores
and the evidence it rests on. ``analyze`` builds the point summaries and writes the run's
``summary.json`` with what this module computes from them.

* pooling (``aggregate``): per configuration (variant and swept values) the count, mean, standard
  deviation, minimum, maximum and 95% interval of each metric over the complete, valid repetitions,
  each repetition's value kept with its run and index (ratios pair on them);
* estimates and verdicts (``evaluate_claim``): each claim of an experiment with its interval
  (harness/stats.py: reproduced, not reproduced or inconclusive; not comparable when it cannot be
  measured here); the band a claim's measurement may take is ``claims.claim_band``;
* cores (``cores_section``): a claim measured at several core counts (the ``cpus`` parameter swept)
  is judged at each and its trend extrapolated to the paper's hardware threads (docs/catalogue.md,
  "Cores");
* evidence (``with_evidence``): the weakest evidence class among a claim's points, and no
  "reproduced" on driver-only counts.
"""

from __future__ import annotations

import math
import statistics

from . import capacity, stats, systems, validity
from .claims import claim_band, names_several, param_matches
from .metrics import METRICS, Metric

VERDICTS = (stats.REPRODUCED, stats.NOT_REPRODUCED, stats.INCONCLUSIVE, "not comparable")


def clean(value):
    """JSON-safe number: NaN and infinities become None, floats are rounded to 6 significant digits."""
    if isinstance(value, float):
        return None if not math.isfinite(value) else float(f"{value:.6g}")
    return value


def all_metrics() -> dict[str, Metric]:
    """The core's ``METRICS`` and every system's (``harness.systems``), by key: the name, or
    ``name@first table`` where a system measures a metric the core also has from its own tables
    (BFT-SMaRt's orderer throughput from its logs); ``compute_all`` reports either by its name."""
    out = dict(METRICS)
    for m in systems.metrics():
        out[m.name if m.name not in out else f"{m.name}@{m.tables[0]}"] = m
    return out


def _stats(samples: list[tuple[str, int, float]]) -> dict:
    """Count, mean, sample standard deviation, extremes and 95% interval of the mean (None for fewer than
    two values) of one metric, with every repetition's value as ``[run, repetition, value]``."""
    samples = sorted((run, rep, v) for run, rep, v in samples if v is not None)
    values = [v for _, _, v in samples]
    if not values:
        return {"n": 0, "mean": None, "std": None, "min": None, "max": None, "ci95": None, "repetitions": []}
    interval = stats.mean_interval(values)
    return {"n": len(values), "mean": clean(statistics.fmean(values)),
            "std": clean(statistics.stdev(values)) if len(values) > 1 else 0.0,
            "min": clean(min(values)), "max": clean(max(values)),
            "ci95": [clean(x) for x in interval] if interval else None,
            "repetitions": [[run, rep, clean(v)] for run, rep, v in samples]}


def aggregate(runs: dict[str, list[dict]]) -> list[dict]:
    """Pool the complete, valid point summaries of ``{run id: summaries}`` by variant and swept values;
    statistics per metric, each repetition kept with its run and index (ratios pair on them), and the
    effective CPUs its points recorded (``effective_cpus``, distinct values; empty when none did)."""
    groups: dict[tuple, list[tuple[str, dict]]] = {}
    for run_id, summaries in runs.items():
        for s in summaries:
            if s["status"] == "complete" and s["valid"] and not s.get("control"):
                key = (s["variant"], tuple(sorted(s["sweep"].items())))
                groups.setdefault(key, []).append((run_id, s))
    out = []
    for (variant, sweep), members in sorted(groups.items(), key=lambda kv: repr(kv[0])):
        names = sorted({m for _, s in members for m in s["metrics"]})
        out.append({"variant": variant, "sweep": dict(sweep),
                    "effective_cpus": sorted({s["cpus"]["effective"] for _, s in members if s.get("cpus")}),
                    "metrics": {n: _stats([(run, s["repetition"], s["metrics"].get(n)) for run, s in members])
                                for n in names}})
    return out


def _matches(group: dict, variant: str, params: dict | None) -> bool:
    if group["variant"] != variant:
        return False
    return all(param_matches(group["sweep"].get(k), v) for k, v in (params or {}).items() if k in group["sweep"])


def _side(claim: dict, side: str | None, experiment: dict, groups: list[dict], context: dict):
    """The repetitions of one side of a claim: ({sweep key: {(run, repetition): value}}, why-not, run note)."""
    ref = claim.get(side) or {"variant": claim.get("variant"), "params": claim.get("params")}
    other = {"numerator": "denominator", "denominator": "numerator"}.get(side)
    # A parameter pinned on one side of a ratio only holds for the other side too.
    params = {**((claim.get(other) or {}).get("params") or {}), **(ref.get("params") or {})} if other \
        else dict(ref.get("params") or {})
    exp_id = ref.get("experiment", experiment["id"])
    note = None
    pool, not_runnable = groups, context.get("not_runnable") or {}
    if exp_id != experiment["id"]:
        found = (context.get("other_runs") or {}).get(exp_id)
        if not found:
            return None, f"compares with experiment {exp_id!r}, which has no complete run of this build yet", None
        pool, not_runnable = found["groups"], found.get("not_runnable") or {}
        runs = found["runs"]
        note = f"{exp_id} from run{'s' if len(runs) > 1 else ''} {', '.join(runs)}"
    variant = ref.get("variant")
    if variant in not_runnable:
        return None, f"{variant!r} is not runnable: {not_runnable[variant]}", None
    name = ref.get("metric") or claim.get("metric") or experiment.get("metric")
    values = {}
    for g in pool:
        if _matches(g, variant, params):
            reps = {(run, rep): v for run, rep, v in (g["metrics"].get(name) or {}).get("repetitions") or []
                    if v is not None}
            if reps:
                # a parameter given as a range or list keeps its values apart: the claim must hold at each
                values[tuple(sorted((k, v) for k, v in g["sweep"].items()
                                    if k not in params or names_several(params[k])))] = reps
    if not values:
        return None, f"no {name} measured for {variant!r}" + (f" at {params}" if params else ""), None
    return values, None, note


def _in_every(configurations: list[dict]) -> list[tuple]:
    """The repetition keys (run, index) measured at every one of ``configurations``."""
    keys = set(configurations[0])
    for c in configurations[1:]:
        keys &= set(c)
    return sorted(keys)


def _pairs(num: dict, den: dict) -> dict:
    """Numerator configurations with the one denominator configuration each pairs with, on the swept
    values both sides have (another experiment may sweep other parameters)."""
    if len(num) == 1 and len(den) == 1:
        return {(): (next(iter(num)), next(iter(den)))}
    out = {}
    for key in num:
        matching = [k for k in den if all(dict(key).get(n, v) == v for n, v in k)]
        if len(matching) == 1:
            out[key] = (key, matching[0])
    return out


#: How an aggregate reduces one repetition's per-configuration values.
REDUCE = {"mean_over_sweep": statistics.fmean, "min_over_sweep": min, "max_over_sweep": max}


def _estimates(claim: dict, num: dict, den: dict | None):
    """(one estimate of the claim or None, {configuration: estimate}, why-not, samples) from the sides'
    repetitions; ``samples`` are the claim's statistic per paired repetition ``{(run, repetition): value}``
    when it reduces to one value from paired sides (what a trend over cores fits), else None.

    A claim reduced to one value (one configuration, or an ``aggregate``) gives one estimate; without an
    aggregate over several configurations each configuration gets its own (and must hold at each); the
    per-configuration estimates also serve ``every_point``. A ratio's sides from the same runs are paired
    on (run, repetition): the claim's statistic is computed per repetition (harness/stats.py).
    """
    aggregate = claim.get("aggregate")
    if den is None:  # an absolute value
        parts = {k: stats.mean_value(list(v.values())) for k, v in num.items()}
        if aggregate in REDUCE:
            keys = _in_every(list(num.values()))
            if not keys:
                return None, None, "no repetition was measured at every configuration of the sweep", None
            return stats.mean_value([REDUCE[aggregate]([c[k] for c in num.values()]) for k in keys]), parts, None, None
        return (next(iter(parts.values())) if len(parts) == 1 else None), parts, None, None
    if any(v <= 0 for side in (num, den) for c in side.values() for v in c.values()):
        return None, None, "a side measured zero (a ratio needs positive values on both sides)", None
    paired = bool(set().union(*num.values()) & set().union(*den.values()))
    if aggregate == "max_over_sweep":  # each side's peak over the sweep, then their ratio
        if paired:
            keys = _in_every(list(num.values()) + list(den.values()))
            if not keys:
                return None, None, "no repetition was measured at every configuration of both sides", None
            samples = {k: max(c[k] for c in num.values()) / max(c[k] for c in den.values()) for k in keys}
            return stats.paired_ratio(list(samples.values())), None, None, samples
        peaks = []
        for side in (num, den):
            keys = _in_every(list(side.values()))
            if not keys:
                return None, None, "no repetition was measured at every configuration of a side", None
            peaks.append([max(c[k] for c in side.values()) for k in keys])
        return stats.unpaired_ratio(*peaks), None, None, None
    pairs = _pairs(num, den)
    if not pairs:
        return None, None, "no configuration of the numerator pairs with one of the denominator", None
    ratios = {}  # per configuration: {(run, repetition): ratio}, paired sides only
    parts = {}
    for key, (n, d) in pairs.items():
        if paired:
            ratios[key] = {k: num[n][k] / den[d][k] for k in _in_every([num[n], den[d]])}
            if not ratios[key]:
                return (None, None, f"no repetition pairs the numerator and denominator at {dict(key) or 'the claim'}",
                        None)
            parts[key] = stats.paired_ratio(list(ratios[key].values()))
        else:
            parts[key] = stats.unpaired_ratio(list(num[n].values()), list(den[d].values()))
    if aggregate in REDUCE:
        if not paired:
            return None, None, f"{aggregate} needs both sides measured in the same runs (paired repetitions)", None
        keys = _in_every(list(ratios.values()))
        if not keys:
            return None, None, "no repetition was measured at every configuration of the sweep", None
        samples = {k: REDUCE[aggregate]([r[k] for r in ratios.values()]) for k in keys}
        return stats.paired_ratio(list(samples.values())), parts, None, samples
    if len(parts) == 1:
        return next(iter(parts.values())), parts, None, next(iter(ratios.values())) if paired else None
    return None, parts, None, None


def _interval_text(est: stats.Estimate) -> str:
    if est.interval is None:
        return f"{est.value:.4g} (n={est.n}, no interval)"
    return f"{est.value:.4g} [{est.interval[0]:.4g}, {est.interval[1]:.4g}] (n={est.n})"


def evaluate_claim(claim: dict, experiment: dict, groups: list[dict], context: dict) -> dict:
    """Verdict on one claim from the pooled measurements (harness/stats.py states the method), and its
    ``cores`` section: where the points swept the ``cpus`` parameter the claim is judged at each core
    count (the verdict shown is at the most cores measured) and its trend extrapolated to the paper's
    hardware threads (``cores_section``).
    """
    swept = sorted({g["sweep"]["cpus"] for g in groups if "cpus" in g["sweep"]})
    pinned = any("cpus" in ((side or {}).get("params") or {})
                 for side in (claim, claim.get("numerator"), claim.get("denominator")))
    if len(swept) < 2 or pinned:
        result = _judge(claim, experiment, groups, context)
        samples = result.pop("samples")
        return {**result, "cores": cores_section(claim, experiment, context,
                                                 [(_cores_of(groups, context), result, samples)])}
    per = []
    for asked in swept:
        at = [{**g, "sweep": {k: v for k, v in g["sweep"].items() if k != "cpus"}}
              for g in groups if g["sweep"].get("cpus") == asked]
        result = _judge(claim, experiment, at, context)
        samples = result.pop("samples")
        per.append((_cores_of(at, context, asked), result, samples))
    (cores, _), main, _ = per[-1]
    reason = f"at {cores:g} cores, the most measured: {main['reason']}" if main.get("reason") else main.get("reason")
    return {**main, "reason": reason, "cores": cores_section(claim, experiment, context, per)}


def _cores_of(groups: list[dict], context: dict, asked: int | None = None) -> tuple[int, str]:
    """The cores the points of ``groups`` ran on, and how that is known: the CPUs their processes were
    allowed, read back (``read back``); else the ``cpus`` asked for (``asked, not read back``); else the
    host's cores (``host``, a run from before the record)."""
    effective = sorted({c for g in groups for c in g.get("effective_cpus") or []})
    if effective:
        return max(effective), "read back" if len(effective) == 1 else f"read back, points differ: {effective}"
    if asked is not None:
        return int(asked), "asked, not read back"
    return int(context.get("cores") or 0), "host"


def paper_cores(experiment: dict, context: dict) -> int | None:
    """The hardware threads (``hardware.cores``) of the paper's servers for ``experiment``: the experiment's
    own ``hardware`` where it states one, else the paper's; None when neither states cores."""
    for hardware in (experiment.get("hardware"), context.get("paper_hardware")):
        if isinstance(hardware, dict) and hardware.get("cores"):
            return int(hardware["cores"])
    return None


#: What a verdict extrapolated over cores rests on, said wherever it is shown.
EXTRAPOLATION_CAVEAT = ("an extrapolation beyond the measured core counts assumes the statistic keeps changing by "
                        "the same factor per doubling of cores; contention that appears only at more cores (memory "
                        "bandwidth, locks, the network, Amdahl's serial share) would bend the curve, so the "
                        "interval holds under the model only")


def cores_section(claim: dict, experiment: dict, context: dict, per: list[tuple]) -> dict:
    """A claim against cores: ``measured`` (per core count measured: cores, how known, value, interval,
    repetitions, verdict), the paper's cores, the ``trend`` (harness/stats.py ``log_linear_trend``) and the
    ``verdict`` at the paper's cores with ``why``. At the paper's cores it is that measurement's verdict;
    measured elsewhere it is the trend's interval at the paper's cores judged against the claim's band, and
    *inconclusive* without a trend (one core count, or no repetition measured at every core count). None
    (with why) when the paper states no cores or the claim is not comparable at any core count."""
    paper = paper_cores(experiment, context)
    measured = [{"cores": cores, "known": known, "measured": r["measured"], "interval": r["interval"],
                 "repetitions": r["repetitions"], "verdict": r["verdict"]} for (cores, known), r, _ in per]
    section = {"paper": paper, "measured": measured, "trend": None, "verdict": None, "why": None}
    judged = [(cores, r, samples) for (cores, _), r, samples in per if r["verdict"] != "not comparable"]
    if paper is None:
        return {**section, "why": "the paper states no core count (hardware.cores)"}
    if not judged:
        return {**section, "why": "not comparable at any core count measured"}
    at_paper = [r for cores, r, _ in judged if cores == paper]
    if at_paper:
        return {**section, "verdict": at_paper[0]["verdict"], "why": f"measured at the paper's {paper} cores"}
    where = ", ".join(f"{cores:g}" for cores, _, _ in judged)
    samples = {cores: s for cores, _, s in judged if s}
    if len(judged) < 2:
        return {**section, "verdict": stats.INCONCLUSIVE,
                "why": f"measured only at {where} cores, the paper's hardware had {paper}: no trend to decide it "
                       "(sweep the cores: --set cpus=1,2,...)"}
    trend = stats.log_linear_trend(samples, paper) if len(samples) == len(judged) else None
    if trend is None:
        return {**section, "verdict": stats.INCONCLUSIVE,
                "why": f"measured at {where} cores, the paper's hardware had {paper}: no trend, since the claim's "
                       "statistic is not one paired value per repetition at every core count"}
    low, high, band = claim_band(claim)
    judgement = stats.judge(trend.estimate, low, high)
    est = trend.estimate
    section["trend"] = {"model": stats.TREND_MODEL, "cores": list(trend.cores), "intercept": clean(trend.intercept),
                        "slope_per_doubling": clean(trend.slope), "at": paper, "estimate": clean(est.value),
                        "interval": [clean(x) for x in est.interval] if est.interval else None,
                        "repetitions": est.n, "extrapolated": trend.extrapolated}
    why = (f"trend over {where} cores at the paper's {paper}: {_interval_text(est)}, expected {band}"
           + (f"; {judgement.why}" if judgement.verdict == stats.INCONCLUSIVE else "")
           + (f"; {EXTRAPOLATION_CAVEAT}" if trend.extrapolated else ""))
    return {**section, "verdict": judgement.verdict, "why": why}


def _judge(claim: dict, experiment: dict, groups: list[dict], context: dict) -> dict:
    """The verdict on a claim from ``groups`` (measured at one core count), with the per-repetition
    statistic it rests on as ``samples`` (``_estimates``; None where it is not one paired value).

    ``context`` carries ``cores`` (this machine), ``paper_hardware``, ``scale``,
    ``not_runnable`` (variant -> reason) and ``other_runs`` (experiment id ->
    ``{runs, groups, not_runnable}`` of its pooled complete runs of the same
    build, for claims comparing with another experiment). An absolute claim is
    only comparable on the paper's hardware at the paper's scale; a ratio claim
    compares two configurations measured in the same runs (or, across
    experiments, in the named runs); a qualitative claim is never compared
    numerically. ``every_point`` requires each per-configuration value on one
    side of a value (WHEAT's latency below BFT-SMaRt's at every frontend).
    A measured claim is *reproduced* when its 95% interval lies inside the
    band, *not reproduced* when wholly outside, *inconclusive* otherwise (then
    ``repetitions_needed`` says how many would decide it at the observed spread).
    """
    metric = claim.get("metric") or experiment.get("metric")
    tolerance = claim.get("tolerance") or {}
    result = {"id": claim["id"], "statement": claim.get("statement"), "compare": claim["compare"],
              "expected": claim.get("expected"), "metric": metric, "measured": None, "interval": None,
              "repetitions": None, "repetitions_needed": None, "method": None,
              "tolerance": tolerance, "citation": claim.get("citation")}

    samples = None

    def verdict(v, reason=None):
        if v == "not comparable" and claim.get("comparable_on"):  # what would make it comparable
            reason = f"{reason}; comparable on: {claim['comparable_on']}"
        return {**result, "verdict": v, "reason": reason, "samples": samples}

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
        here, _ = _cores_of(groups, context)  # the cores the points ran on, not merely the host's
        if cores is None or cores != here or context.get("scale") != "paper":
            return verdict("not comparable",
                           f"an absolute value needs the paper's hardware and scale (paper: {cores or 'unknown'} "
                           f"cores, scale paper; here: {here} cores, scale {context.get('scale')})")

    ratio = claim["compare"] == "ratio"
    num, why, note_n = _side(claim, "numerator" if ratio else None, experiment, groups, context)
    if why:
        return verdict("not comparable", why)
    notes = [n for n in [note_n] if n]
    den = None
    if ratio:
        den, why, note_d = _side(claim, "denominator", experiment, groups, context)
        if why:
            return verdict("not comparable", why)
        notes += [n for n in [note_d] if n and n not in notes]  # both sides from one other run: say it once
    main, parts, why, samples = _estimates(claim, num, den)
    if why:
        return verdict("not comparable", why)
    low, high, band = claim_band(claim)
    where = f" (scale {context.get('scale')}" + "".join(f"; {n}" for n in notes) + ")"
    used = [main] if main else list(parts.values())
    result.update(method=used[0].method, repetitions=min(e.n for e in used))
    if main:
        result.update(measured=clean(main.value), interval=[clean(x) for x in main.interval] if main.interval else None)
        judgements = [stats.judge(main, low, high)]
        reason = f"measured {_interval_text(main)}, expected {band}{where}"
    else:  # several configurations, no aggregate: the claim holds at each
        result.update(measured=[clean(e.value) for e in parts.values()],
                      interval=[[clean(x) for x in e.interval] if e.interval else None for e in parts.values()],
                      configurations=[", ".join(f"{k}={v}" for k, v in key) or "–" for key in parts])
        judgements = [stats.judge(e, low, high) for e in parts.values()]
        reason = (f"measured {', '.join(f'{c}: {_interval_text(e)}' for c, e in zip(result['configurations'], parts.values()))}"
                  f" at {len(parts)} configurations, expected each {band}{where}")
    each = claim.get("every_point")
    if each and parts:
        limit_low, limit_high = each.get("lower", -math.inf), each.get("upper", math.inf)
        limits = [stats.judge(e, limit_low, limit_high) for e in parts.values()]
        off = [e for e, j in zip(parts.values(), limits) if j.verdict != stats.REPRODUCED]
        reason += (f"; every configuration {'≤ ' + format(limit_high, '.4g') if 'upper' in each else '≥ ' + format(limit_low, '.4g')}: "
                   + ("yes" if not off else f"not shown at {', '.join(_interval_text(e) for e in off)}"))
        judgements += limits
    overall = stats.combine(judgements)
    result["repetitions_needed"] = overall.needed
    if overall.verdict == stats.INCONCLUSIVE:
        reason += f"; inconclusive: {overall.why}"
    return verdict(overall.verdict, reason)


#: Evidence classes from the weakest (harness/validity.py): a claim rests on its weakest pooled point.
_WEAKEST_FIRST = tuple(reversed(validity.EVIDENCE_CLASSES))
#: Why a class of ``validity.SELF_VOUCHED`` cannot make a claim "reproduced".
_SELF_VOUCHED_WHY = {
    validity.DRIVER_ONLY: "counts not ledger-proven: the driver's own count, with no ledger codes and no independent "
                          "check passing, cannot make a claim reproduced",
    validity.VALIDATOR_CODES: "counts not ledger-proven: the ledger's codes were derived only by the validator "
                              "that wrote them (our verifier did not re-derive them), so they cannot make a "
                              "claim reproduced",
}
#: A measured point's control (analyze.control_status), from the weakest.
_CONTROL_WEAKEST_FIRST = ("failed", "not run", "passed")


def weakest_evidence(points: list[dict]) -> tuple[str | None, str | None]:
    """The weakest evidence class of ``points`` (measured point summaries) and the weakest control among those a
    control could prove (``controlled``); None for either where no point states one."""
    classes = [c for c in _WEAKEST_FIRST if c in {(s.get("validity") or {}).get("evidence") for s in points}]
    controls = [c for c in _CONTROL_WEAKEST_FIRST if c in {s.get("controlled") for s in points}]
    return (classes[0] if classes else None), (controls[0] if controls else None)


def with_evidence(claim: dict, summaries: list[dict], compared: dict | None = None) -> dict:
    """The claim with ``evidence_class``, what its counts rest on: the weakest class among the complete,
    valid points of its runs (of the variants it compares, where it names them), and ``control``, the weakest
    control of those points that a control could prove. A claim whose counts only one source vouches for
    (``validity.SELF_VOUCHED``), or whose points no passed control proved, cannot be "reproduced": that
    verdict becomes "inconclusive", saying why."""
    # the points of the variants the claim compares (a question on v3.1's two chaincode APIs rests on their
    # points, not on another variant's in the same run); where none is named or none matches, every point
    spec = compared or claim  # the catalogue's claim (its operands), where ``claim`` is its evaluation
    variants = {op.get("variant") for op in (spec.get("numerator"), spec.get("denominator"), spec)
                if isinstance(op, dict) and op.get("variant") and not op.get("experiment")}
    own = [s for s in summaries if s.get("variant") in variants]
    pooled = [s for s in (own or summaries) if s["status"] == "complete" and s["valid"] and not s.get("control")]
    weakest, control = weakest_evidence(pooled)
    if weakest is None:
        return {**claim, "evidence_class": None}
    out = {**claim, "evidence_class": weakest}
    if control:
        out["control"] = control
    measured_alone = " (the measurement alone would say reproduced)"
    if weakest in validity.SELF_VOUCHED and claim.get("verdict") == stats.REPRODUCED:
        out.update(verdict=stats.INCONCLUSIVE, reason=_SELF_VOUCHED_WHY[weakest] + measured_alone)
    elif control and control != "passed" and claim.get("verdict") == stats.REPRODUCED:
        why = ("a control point of its run failed" if control == "failed" else
               "no control point ran beside its points (--no-control, or a run made before controls covered "
               "their ordering or validation path)")
        out.update(verdict=stats.INCONCLUSIVE, reason=f"checks not proven: {why}{measured_alone}")
    return out


def _claim_points(claim: dict, experiment_id: str | None, summaries: list[dict]) -> list[dict]:
    """The measured (not control) point summaries of this experiment that a claim's sides compare: of the
    variant each side names, at the parameters it asks for (a parameter pinned on one side of a ratio holds
    for the other too, as in ``_side``)."""
    sides = ([claim.get("numerator") or {}, claim.get("denominator") or {}] if claim.get("compare") == "ratio"
             else [{"variant": claim.get("variant"), "params": claim.get("params")}])
    pinned = {k: v for side in sides for k, v in (side.get("params") or {}).items()}
    out = []
    for side in sides:
        if side.get("experiment") not in (None, experiment_id):
            continue
        params = {**pinned, **(side.get("params") or {})}
        out += [s for s in summaries if not s.get("control") and s not in out
                and (side.get("variant") is None or s.get("variant") == side.get("variant"))
                and all(param_matches((s.get("sweep") or {}).get(k), v) for k, v in params.items()
                        if k in (s.get("sweep") or {}))]
    return out


def with_capacity(result: dict, claim: dict, summaries: list[dict], context: dict) -> dict:
    """A claim resting on points this machine could not carry (harness/capacity.py: a declared capacity limit,
    a load generator behind its schedule) is "not comparable on N cores", naming each point's reason (its
    counts) and the command that would judge it on a bigger host; ``capacity`` says which points. A qualitative
    claim is left as it is (it is judged from the figure)."""
    if claim.get("compare") == "qualitative":
        return result
    points = _claim_points(claim, context.get("experiment"), summaries)
    reason = capacity.claim_reason(points, context.get("cores"), context.get("paper"), context.get("experiment"))
    if reason is None:
        return result
    hit = [s for s in points if capacity.limited(s)]
    cores = sorted({c for c in (capacity.point_cores(s, context.get("cores")) for s in hit) if c})
    out = {**result, "verdict": "not comparable", "reason": reason,
           "capacity": {"cores": cores, "points": [s["point"] for s in hit], "of_points": len(points),
                        "judge_with": capacity.judge_command(context.get("paper"), context.get("experiment"))}}
    if isinstance(out.get("cores"), dict):
        out["cores"] = {**out["cores"], "verdict": None, "why": reason.split(":")[0]}
    return out
