"""The first screen of a paper's report: how many claims held, on what they were judged, and what to run
next to decide the inconclusive ones (the command, the repetitions it needs, an estimate of its wall time
from this machine's measured point costs)."""

from __future__ import annotations

from datetime import datetime

from .. import cpus, validity
from ..rundir import read_json
from .conditions import SCALES
from .text import cores_text, fmt

#: The verdicts in the order the counts name them.
VERDICTS = ("reproduced", "not reproduced", "inconclusive", "not comparable")

#: The fewest repetitions that give an interval the harness tests with (stats.judge: "--repeat 3 or more").
MIN_REPEAT = 3


def _evidence(claim: dict) -> str:
    if claim.get("judged_at_scale"):
        return f"scale too small: {claim['judged_at_scale']} would judge"
    cls = claim.get("evidence_class")
    if cls is None:
        return "no complete point"
    return cls if cls in (validity.LEDGER_PROVEN, validity.NO_COUNT) else "not ledger-proven"


def counts(claims: list[dict]) -> dict:
    """``{verdict: {"n": count, "evidence": {class: count}}}`` over ``claims`` (every verdict named, 0 too)."""
    out = {v: {"n": 0, "evidence": {}} for v in VERDICTS}
    for c in claims:
        entry = out.setdefault(c["verdict"], {"n": 0, "evidence": {}})
        entry["n"] += 1
        cls = _evidence(c)
        entry["evidence"][cls] = entry["evidence"].get(cls, 0) + 1
    return out


def counts_text(tally: dict) -> str:
    """``0 **reproduced** · 4 **inconclusive** (4 ledger-proven) · ...``."""
    parts = []
    for verdict, entry in tally.items():
        ev = ", ".join(f"{n} {cls}" for cls, n in sorted(entry["evidence"].items()))
        parts.append(f"{entry['n']} **{verdict}**" + (f" ({ev})" if ev else ""))
    return " · ".join(parts)


def _sweep_cpus(usable: int | None) -> list[int]:
    """A ``cpus`` sweep this host can run: the powers of two below its usable CPUs, and those."""
    if not usable or usable < 2:
        return []
    out, n = [], 1
    while n < usable:
        out.append(n)
        n *= 2
    return out + [usable]


def _point_costs(runs: list, window_factor: float = 1.0) -> tuple[dict, list[float], int]:
    """Mean wall seconds per configuration (variant, sweep) of ``runs``' measured points, the control points'
    wall seconds, and the number of runs (``duration_s`` of each point's summary.json); with ``window_factor``,
    each point's measured window (``timing.measured_window_s``) counted that many times (a larger scale)."""
    per: dict[tuple, list[float]] = {}
    controls: list[float] = []
    for run in runs:
        for path in sorted((run.path / "points").glob("*/summary.json")):
            s = read_json(path)
            wall = s.get("duration_s") or (s.get("timing") or {}).get("wall_s")
            if not isinstance(wall, (int, float)):
                continue
            window = (s.get("timing") or {}).get("measured_window_s")
            if isinstance(window, (int, float)) and 0 < window <= wall:
                wall = wall + window * (window_factor - 1)
            if s.get("control"):
                controls.append(float(wall))
            else:
                key = (s.get("variant"), tuple(sorted((s.get("sweep") or {}).items())))
                per.setdefault(key, []).append(float(wall))
    return {k: sum(v) / len(v) for k, v in per.items()}, controls, len(runs)


def _run_overhead(runs: list) -> float | None:
    """Mean wall seconds a run spent outside its points (hosts up and down, the work check's primitives,
    the analysis), plus what its command spent before it (``prepared_s``: planning, preflight, builds
    reused) and after it (``report_s``: the report), as recorded; None where no run recorded its times.
    Resumed runs are left out: their wall time spans the pause."""
    spent = []
    for run in runs:
        meta = run.metadata
        if meta.get("resumed_utc") or not meta.get("started_utc") or not meta.get("ended_utc"):
            continue
        wall = (datetime.fromisoformat(meta["ended_utc"].replace("Z", "+00:00"))
                - datetime.fromisoformat(meta["started_utc"].replace("Z", "+00:00"))).total_seconds()
        points = sum(float(read_json(p).get("duration_s") or 0) for p in (run.path / "points").glob("*/summary.json"))
        timing = meta.get("command_timing") or {}
        spent.append(max(wall - points, 0.0) + float(timing.get("prepared_s") or 0) + float(timing.get("report_s") or 0))
    return sum(spent) / len(spent) if spent else None


def minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


def _scale_factor(experiment: dict | None, here: str | None, there: str | None) -> float | None:
    """How many times the transactions of scale ``there`` are those of ``here`` (the catalogue's ``scales``);
    None when either is not stated."""
    scales = (experiment or {}).get("scales") or {}
    a, b = (scales.get(here) or {}).get("transactions"), (scales.get(there) or {}).get("transactions")
    return b / a if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a else None


def _stored_alike(selection, scale: str | None, cores: list, kind: str | None, repeat: int) -> dict | None:
    """The stored complete configuration (``Selection.configurations``) that the command ``next_run`` would
    propose makes again (its scale, build kind and cores) with ``repeat`` repetitions or more; None if none."""
    want = sorted({c for c in cores if isinstance(c, int)})
    for c in getattr(selection, "configurations", None) or []:
        config = c["configuration"]
        have = config.get("cores")
        have = sorted(set(have)) if isinstance(have, list) else [have]
        if config.get("scale") == scale and (config.get("build") or {}).get("kind") == kind and have == want \
                and c["repetitions"] >= repeat:
            return c
    return None


def next_run(paper_id: str, experiment_id: str, claims: list[dict], selection, experiment: dict | None = None
             ) -> dict | None:
    """What to run to decide ``claims``' inconclusive verdicts: ``{command, repeat, why, estimate_s, how}``;
    None when none is inconclusive, or when the command would make a configuration stored complete with as many
    repetitions already and repetitions cannot decide the open claims (``_stored_alike``)."""
    open_claims = [c for c in claims if c["verdict"] == "inconclusive" or c.get("judged_at_scale")
                   or (c.get("cores") or {}).get("verdict") == "inconclusive"]
    if not open_claims:
        return None
    config = getattr(selection, "configuration", None) or {}
    scales = [c["judged_at_scale"] for c in open_claims if c.get("judged_at_scale")]
    scale = max(scales + ([config["scale"]] if config.get("scale") in SCALES else []), key=SCALES.index) \
        if scales else config.get("scale")
    needed = [c.get("repetitions_needed") for c in open_claims]
    known = [n for n in needed if isinstance(n, int)]
    repeat = max(known + [MIN_REPEAT])
    if known:
        why = f"about {max(known)} repetitions decide {len(known)} of them at the observed spread"
        if len(known) < len(needed):
            why += f"; {MIN_REPEAT} or more give the others an interval"
    else:
        why = (f"{MIN_REPEAT} repetitions: one has no spread, so no interval; the spread they show says "
               "how many more would decide")
    kind = (config.get("build") or {}).get("kind")
    # the cores: a claim whose paper's cores were not measured is decided by the trend over a cpus sweep
    shown = getattr(selection, "shown", None)
    host = ((getattr(shown, "metadata", None) or {}).get("host") or {})
    sweep = []
    wants_cores = [c for c in open_claims if (c.get("cores") or {}).get("paper")
                   and (c["cores"]["paper"] not in [m.get("cores") for m in c["cores"].get("measured") or []])]
    if wants_cores:
        sweep = _sweep_cpus(cpus.host_usable(host))
        if sweep:
            why += f"; a cpus sweep ({','.join(map(str, sweep))}) gives the trend to the paper's cores"
        else:
            why += "; this host has one CPU: no cpus sweep, the verdict at the paper's cores stays open"
    if scale != config.get("scale"):
        why += f"; scale {scale}: the claims' conditions are not met at {config.get('scale')}"
    # never a configuration already stored complete with as many repetitions: more of them where repetitions can
    # decide a claim, else nothing to run here
    stored = _stored_alike(selection, scale, sweep or [cpus.host_usable(host)], kind, repeat)
    if stored:
        if not any(c["verdict"] == "inconclusive" and not c.get("judged_at_scale") for c in open_claims):
            return None
        repeat = max(repeat, 2 * stored["repetitions"])
        why += (f"; {stored['strength']} is stored already (" + ", ".join(stored["runs"])
                + f"): twice its repetitions, {repeat}, pooled with it where the build is the same")
    command = f"invoke reproduce --paper {paper_id} --experiment {experiment_id}"
    if scale:
        command += f" --scale {scale}"
    if kind in ("upstream", "reference"):
        command += f" --build {kind}"
    command += f" --repeat {repeat}" + (f" --set cpus={','.join(map(str, sweep))}" if sweep else "")
    factor_tx = 1.0 if scale == config.get("scale") else _scale_factor(experiment, config.get("scale"), scale)
    per, controls, nruns = _point_costs(getattr(selection, "pooled", None) or [], factor_tx or 1.0)
    estimate, how = None, "no point of these runs recorded its wall time"
    if per and factor_tx is None:
        how = (f"no estimate: no point at scale {scale} was measured here (those at {config.get('scale')} were), "
               "and the catalogue states no transactions to scale them by")
    elif per:
        factor = max(len(sweep), 1)
        points = len(per) * repeat * factor
        control = (sum(controls) / nruns) if controls and nruns else 0.0
        overhead = _run_overhead(getattr(selection, "pooled", None) or [])
        estimate = sum(per.values()) * repeat * factor + control + (overhead or 0.0)
        how = (f"{points} points ({len(per)} configuration(s) × {repeat} repetitions"
               + (f" × {factor} cpus values" if factor > 1 else "") + f") at {fmt(sum(per.values()) / len(per))} s "
               "a point as measured here" + (f", + {len(controls) // max(nruns, 1)} control point(s)" if controls else "")
               + (f", + {fmt(overhead)} s of start-up, analysis and report as a stored run spent them"
                  if overhead is not None else "; start-up, analysis and report not counted (no run recorded them)")
               + "; builds from source not counted"
               + (f"; each point's measured window × {fmt(factor_tx)} for scale {scale}'s transactions, the rest "
                  f"of its wall time as at {config.get('scale')}" if factor_tx != 1.0 else ""))
    return {"experiment": experiment_id, "command": command, "repeat": repeat, "cpus": sweep, "why": why,
            "claims": len(open_claims), "estimate_s": round(estimate, 1) if estimate is not None else None,
            "how": how}


def judged_on(entries: list[dict], paper_hardware) -> str:
    """The hardware and scale the verdicts were judged on (one phrase per distinct configuration), beside
    the paper's hardware."""
    seen: dict[str, list[str]] = {}
    for e in entries:
        config = getattr(e["selection"], "configuration", None) or {}
        if not config:
            continue
        text = (f"{cores_text(config.get('cores'))} ({config.get('cpu_model') or 'CPU unknown'}), scale "
                f"{config.get('scale')}, {(config.get('build') or {}).get('kind', 'reference')} build, provider "
                f"{config.get('provider')}")
        seen.setdefault(text, []).append(e["id"])
    if not seen:
        return ""
    parts = [t if len(seen) == 1 else f"{t} ({', '.join(ids)})" for t, ids in seen.items()]
    paper = ""
    if isinstance(paper_hardware, dict) and paper_hardware.get("cores"):
        paper = (f"; the paper's: {paper_hardware['cores']} hardware threads"
                 + (f" per server, {paper_hardware['servers']} servers" if paper_hardware.get("servers") else ""))
    return "Judged on " + "; ".join(parts) + paper + "."


def glance_blocks(paper_id: str, entries: list[dict], paper_hardware=None, not_run: list | None = None
                  ) -> tuple[list[tuple], dict]:
    """The blocks of the report's first screen and the facts the site's index shows (``glance.json``).
    ``entries``: per experiment with runs, ``{id, claims, selection}``."""
    claims = [c for e in entries for c in e["claims"]]
    tally = counts(claims)
    blocks = [("h2", "At a glance"),
              ("p", f"{len(claims)} claim(s): " + counts_text(tally) + "." if claims else
               "No claim judged yet: no experiment of this paper has a stored run.")]
    on = judged_on(entries, paper_hardware)
    if on:
        blocks.append(("p", on))
    nexts = [n for e in entries if (n := next_run(paper_id, e["id"], e["claims"], e["selection"], e.get("experiment")))]
    if nexts:
        total = [n["estimate_s"] for n in nexts]
        est = (f", about {minutes(sum(total))} of points on this machine" if None not in total else "")
        blocks.append(("p", f"**Run next** to decide the {sum(n['claims'] for n in nexts)} open claim(s)"
                            f"{est}:"))
        blocks.append(("pre", "\n".join(
            f"{n['command']}\n  # {n['why']}\n  # "
            + (f"about {minutes(n['estimate_s'])}: {n['how']}" if n["estimate_s"] is not None else n["how"])
            for n in nexts)))
    if not_run:
        blocks.append(("p", "Not run yet: " + ", ".join(f"`{e}`" for e, *_ in not_run)
                            + f" (`invoke reproduce --paper {paper_id} --experiment <id>`)."))
    ours = _ours(paper_id)
    if ours:
        blocks.append(("p", f"`invoke reproduce --paper {paper_id}` runs the paper's own experiments; the "
                            f"{len(ours)} of ours, not the paper's ({', '.join(f'`{e}`' for e in ours)}), run with "
                            "`--ours` (all of them) or by name (`--experiment <id>`)."))
    runs = [r for e in entries for r in (getattr(e["selection"], "pooled", None) or [])]
    facts = {"paper": paper_id, "claims": len(claims), "counts": tally, "next": nexts,
             "runs": sorted({(r.metadata.get("started_utc") or "", r.id, _build_short(r.metadata)) for r in runs
                             if getattr(r, "metadata", None)})}
    facts["runs"] = [{"started_utc": s, "run_id": i, "build": b} for s, i, b in facts["runs"]]
    return blocks, facts


def _ours(paper_id: str) -> list[str]:
    """The catalogue's experiments of ours in the paper's file (they state questions: reproduce.is_ours),
    which `invoke reproduce --paper P` leaves out unless named or given --ours."""
    from ..catalogue import load_paper
    from ..errors import HarnessError
    try:
        return [e["id"] for e in load_paper(paper_id).experiments if e.get("questions")]
    except (HarnessError, OSError):
        return []


def _build_short(meta: dict) -> str:
    """A run's build in a few words: its kind and the harness commit it ran from."""
    build = meta.get("build") or {}
    git = meta.get("git") or {}
    return f"{build.get('kind', 'reference')} build, harness {git.get('short') or str(build.get('source'))[:7]}" \
           + (" (dirty)" if git.get("dirty") else "")
