"""Render a paper's report (Markdown and self-contained HTML) from stored runs only.

For every experiment of the paper's catalogue the report pools the repetitions
of every complete run of one configuration (``rundir.select_runs``: the newest
complete run's scale, build, provider, cores and parameters), or of the runs
named with ``--run`` / started ``--since`` a date, and lists every run it saw
with why it is not pooled (incomplete, restricted to some variants, another
configuration). It shows a figure drawn like the paper's (same axes and series)
with the measured means and their 95% intervals and the published values beside
them, a table of the same numbers, and a verdict per claim with its interval
(harness/stats.py). Experiments that cannot run yet are listed with their reason. Rendering the same stored runs twice gives byte-identical
files: nothing depends on the time of rendering, dictionaries are sorted and
PNGs are written without software or time metadata.
"""

from __future__ import annotations

import base64
import html
import json
import math
import re
import textwrap
from pathlib import Path

from .figure_png import FIGURE_RC, png_bytes  # first: it selects matplotlib's Agg backend

import matplotlib.pyplot as plt  # noqa: E402

from . import cpus, fidelity, systems  # noqa: E402
from .analyze import EXTRAPOLATION_CAVEAT, analyze_pool, claim_band  # noqa: E402
from .catalogue import load_paper  # noqa: E402
from .metrics import all_metrics  # noqa: E402
from .providers import THIS_MACHINE  # noqa: E402
from .stats import TREND_MODEL  # noqa: E402
from .errors import HarnessError  # noqa: E402
from .rundir import Run, Selection, select_runs  # noqa: E402


def fmt(value) -> str:
    """A number for a table: thousands without decimals, small values to 3 significant digits."""
    if value is None:
        return "–"
    if isinstance(value, (int, float)) and abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def mean_sd_text(stats: dict, with_n: bool = True) -> str:
    """``mean ± sd (n=N), 95% CI [low, high]``; one repetition has no spread to show, so
    ``mean (n=1, no spread)``."""
    n = stats.get("n") or 0
    if stats.get("mean") is None:
        return f"– (n={n})" if with_n else "–"
    if n == 1 or stats.get("std") is None:
        return f"{fmt(stats['mean'])} (n={n}, no spread)" if n == 1 else f"{fmt(stats['mean'])} (n={n})"
    ci = stats.get("ci95")
    return (f"{fmt(stats['mean'])} ± {fmt(stats.get('std'))}" + (f" (n={n})" if with_n else "")
            + (f", 95% CI [{fmt(ci[0])}, {fmt(ci[1])}]" if ci else ""))


def _ci_errors(rows: list[dict]) -> list[list[float]] | None:
    """Matplotlib's asymmetric ``yerr`` of the 95% intervals of ``rows`` (metric statistics), 0 where
    a value has none (one repetition); None when none has one."""
    if not any(r.get("ci95") for r in rows):
        return None
    return [[r["mean"] - r["ci95"][0] if r.get("ci95") else 0 for r in rows],
            [r["ci95"][1] - r["mean"] if r.get("ci95") else 0 for r in rows]]


def _params_text(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted((params or {}).items()))


def _published_for(experiment: dict, metric: str | None) -> list[dict]:
    """Published values of the experiment's metric (entries naming no metric count as the experiment's)."""
    return [p for p in experiment.get("published") or []
            if p.get("value") is not None and p.get("metric") in (None, metric)]


def _matches(params: dict | None, sweep: dict) -> bool:
    return all(sweep.get(k) == v for k, v in (params or {}).items() if k in sweep)


def draw_figure(experiment: dict, summary: dict | None, build: str = "") -> bytes | None:
    """The experiment's figure as PNG bytes, or None when there is nothing to draw.

    ``build`` (upstream or reference) is named in the legend of every measured series.
    """
    metric = experiment.get("metric")
    groups = (summary or {}).get("groups") or []
    published = _published_for(experiment, metric)
    # A value published as a difference from another configuration ("adds
    # about 2,000 tx/s") is not a level on the figure's axis: table only.
    levels = [p for p in published if not p.get("relative_to")]
    if not any((g["metrics"].get(metric) or {}).get("n") for g in groups) and not published:
        return None
    axes = experiment.get("axes") or {}
    x = axes.get("x") or "variant"
    variants = [v["id"] for v in experiment.get("variants") or []]
    labels = {v["id"]: v.get("label", v["id"]) for v in experiment.get("variants") or []}
    known = all_metrics().get(metric)
    unit = known.unit if known else ""
    with plt.rc_context(FIGURE_RC):
        fig, ax = plt.subplots(figsize=(6.4, 4.0))
        if x == "variant":
            plotted = _draw_bars(ax, variants, labels, groups, levels, metric, build)
        else:
            plotted = _draw_lines(ax, x, variants, labels, groups, levels, metric, build, axes.get("series"))
            if axes.get("x_scale") == "log":
                ax.set_xscale("log")
        log_y = _log_y(ax, plotted)
        ax.set_xlabel(axes.get("x_label") or x)
        ax.set_ylabel((axes.get("y_label") or f"{metric} ({unit})") + (", log scale" if log_y else ""))
        # wrapped: a long title would run past the figure's edge
        ax.set_title(textwrap.fill(f"{experiment.get('ref', experiment['id'])}: {experiment['title']}", 72),
                     fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        return png_bytes(fig)


#: Largest / smallest plotted value above which a figure's y axis is logarithmic (the measured
#: 296 tx/s would be a sliver beside the published 19,112 on a linear axis).
LOG_Y_RATIO = 20


def _log_y(ax, values) -> bool:
    """Make the y axis logarithmic when the positive plotted values span more than ``LOG_Y_RATIO``."""
    positive = [v for v in values if v is not None and v > 0]
    if len(positive) < 2 or max(positive) / min(positive) <= LOG_Y_RATIO:
        return False
    ax.set_yscale("log")
    ax.set_ylim(min(positive) / 3, max(positive) * 3)  # every bar a visible height, room for its label
    return True


def _draw_bars(ax, variants, labels, groups, published, metric, build=""):
    """One bar per configuration (measured mean ± sd, its value written on it) and a hollow diamond per
    published value. Returns the plotted values (for the choice of a log axis)."""
    ticks, names, plotted = [], [], []
    measured_label, published_label = (f"measured, {build} build (mean, 95% CI)" if build
                                       else "measured (mean, 95% CI)"), "published"
    for i, vid in enumerate(variants):
        stats = next(((g["metrics"].get(metric) or {}) for g in groups if g["variant"] == vid), {})
        if stats.get("mean") is not None:
            ax.bar(i, stats["mean"], yerr=_ci_errors([stats]), width=0.5, color="C0", alpha=0.8,
                   capsize=4, label=measured_label)
            # above the error bar's cap, so that the two do not overlap
            top = stats["ci95"][1] if stats.get("ci95") else stats["mean"]
            ax.annotate(fmt(stats["mean"]), (i, top), xytext=(0, 2),
                        textcoords="offset points",
                        ha="center", va="bottom", fontsize=8, color="C0")
            plotted.append(stats["mean"])
            measured_label = None
        for p in (p for p in published if p.get("variant") == vid):
            ax.errorbar(i + 0.3, p["value"], yerr=p.get("uncertainty"), fmt="D", mfc="none", color="black",
                        capsize=3, label=published_label)
            plotted.append(p["value"])
            published_label = None
        ticks.append(i)
        names.append(labels[vid])
    # wrapped: a long label (Opt P-II's) ran into its neighbours
    ax.set_xticks(ticks, [textwrap.fill(n, 20) for n in names], rotation=15 if len(names) > 3 else 0)
    ax.margins(y=0.12)  # room above the tallest bar for its value
    return plotted


def _draw_lines(ax, x, variants, labels, groups, published, metric, build="", series=()):
    """One measured series per variant over the swept ``x``, with published values as hollow diamonds.

    Other parameters named in ``axes.series`` split a variant's series (Fujitsu Fig. 4: one line per
    variant and node count), so points of different configurations are never joined.
    """
    extra = [k for k in ([series] if isinstance(series, str) else series or []) if k != "variant"]
    line, plotted = 0, []
    for vid in variants:
        mine = [g for g in groups if g["variant"] == vid and x in g["sweep"]]
        for key in sorted({tuple(g["sweep"].get(k) for k in extra) for g in mine}, key=str) or [()]:
            split = dict(zip(extra, key))
            name = labels[vid] + "".join(f", {k}={v}" for k, v in split.items())
            rows = sorted(((g["sweep"].get(x), g["metrics"].get(metric) or {}) for g in mine
                           if all(g["sweep"].get(k) == v for k, v in split.items())), key=lambda r: r[0])
            rows = [(xv, s) for xv, s in rows if s.get("mean") is not None]
            if rows:
                ax.errorbar([r[0] for r in rows], [r[1]["mean"] for r in rows], yerr=_ci_errors([r[1] for r in rows]),
                            marker="o", color=f"C{line}", capsize=3,
                            label=f"{name} (measured{', ' + build + ' build' if build else ''})")
                plotted += [r[1]["mean"] for r in rows]
            # a published value stated for a range of x ({min, max}: BFT-SMaRt's "1 to 2 receivers") has no one place
            pub = sorted((((p.get("params") or {}).get(x), p) for p in published if p.get("variant") == vid
                          and isinstance((p.get("params") or {}).get(x), (int, float))
                          and all((p.get("params") or {}).get(k) == v for k, v in split.items())),
                         key=lambda r: r[0])
            if pub:
                ax.errorbar([r[0] for r in pub], [r[1]["value"] for r in pub],
                            yerr=[r[1].get("uncertainty") or 0 for r in pub], fmt="D", mfc="none",
                            color=f"C{line}", capsize=3, label=f"{name} (published)")
                plotted += [r[1]["value"] for r in pub]
            line += 1
    return plotted


def caption(run_meta: dict, summary: dict, resolved: dict, cores=None) -> str:
    """Build, provider, cores, scale and repetitions of the runs behind a figure (``run_meta``: the newest;
    ``cores``: those the pooled runs' points ran on, ``rundir.run_cores``; else the host's)."""
    host = run_meta.get("host") or {}
    pts = summary["points"]
    notes = sorted({d["note"] for d in ((run_meta.get("build") or {}).get("drivers") or {}).values() if d.get("note")})
    runs = summary.get("runs") or [run_meta["run_id"]]
    pooled = len(runs) > 1
    which = (f"{len(runs)} runs pooled ({', '.join(runs)}; newest {run_meta['status']})" if pooled
             else f"run {run_meta['run_id']} ({run_meta['status']})")
    return (f"Build: {build_text(run_meta)}; provider: {run_meta.get('provider')}; "
            f"{cores_text(cpus.host_usable(host) if cores is None else cores)} ({host.get('cpu_model')}); "
            f"scale: {run_meta.get('scale')}; "
            f"{which}, {pts['complete']} of {pts['total']} points complete, "
            + ("their repetitions pooled per configuration (n in the table). " if pooled
               else f"{resolved.get('repetitions')} repetition(s) per configuration. ")
            + ("Measured values: one repetition each, so no spread (no error bars); "
               if resolved.get("repetitions") == 1 and not pooled
               else "Measured values: mean with its 95% interval (Student t) over repetitions; ")
            + "hollow diamonds: published values."
            + "".join(f" {n}" for n in notes))


def build_text(run_meta: dict) -> str:
    """The build of a run in words: upstream systems with commit and patches, or the reference build's commit."""
    build = run_meta.get("build") or {}
    if build.get("kind") == "upstream":
        parts = []
        for system, b in sorted((build.get("systems") or {}).items()):
            patches = ", ".join(p["name"] for p in b.get("patches") or []) or "none"
            parts.append(f"{system} {b.get('repository')} @ {str(b.get('built_commit'))[:12]} "
                         f"({(b.get('source') or {}).get('kind')}), patches: {patches}")
        for variant, v in sorted((build.get("variants") or {}).items()):
            if v.get("flavours"):
                extra = [p["name"] for p in v.get("patches") or []
                         if p["name"] not in {q["name"] for q in (build["systems"].get(v["system"]) or {}).get("patches") or []}]
                parts.append(f"variant {variant}: flavour {', '.join(v['flavours'])}"
                             + (f" on {v['base']}" if v.get("base") else "")
                             + (f", grafted from {', '.join(g['from'] + ' ' + g['commit'][:12] for g in v['grafts'])}"
                                if v.get("grafts") else "")
                             + (f", patches: {', '.join(extra)}" if extra else ""))
        companions = {(name, c.get("key")): c for v in (build.get("variants") or {}).values()
                      for name, c in (v.get("companions") or {}).items()}
        for (name, key), c in sorted(companions.items()):  # other systems' builds the driver's roles run
            if (build.get("systems") or {}).get(name, {}).get("key") == key:
                continue  # already named as a system of the run
            parts.append(f"companion {name} build {key}, patches: "
                         + (", ".join(p["name"] for p in c.get("patches") or []) or "none"))
        return "upstream — " + "; ".join(parts)
    text = f"reference ({str(build.get('source'))[:7]})"
    if build.get("fallback_reason"):
        text += f", upstream not available: {build['fallback_reason']}"
    if build.get("note"):
        text += f"; on this build: {build['note']}"
    return text


#: A metric measured over one window, and the same quantity over another window shown beside it
#: (the whole run of pre-made blocks vs the time between committed blocks, which leaves out a pipeline's fill).
OTHER_WINDOW = {"run_throughput_tps": "throughput_tps"}


def _measured_table(experiment: dict, summary: dict, build: str = "") -> tuple[list[str], list[list[str]]]:
    metric = experiment.get("metric")
    other = OTHER_WINDOW.get(metric)
    labels = {v["id"]: v.get("label", v["id"]) for v in experiment.get("variants") or []}
    published = _published_for(experiment, metric)
    rows, used = [], set()
    for g in summary["groups"]:
        s = g["metrics"].get(metric) or {}
        pubs = [(i, p) for i, p in enumerate(published) if p.get("variant") == g["variant"]
                and _matches(p.get("params"), g["sweep"])]
        used.update(i for i, _ in pubs)
        pub_text = "; ".join(_published_text(p) for _, p in pubs) or "–"
        o = g["metrics"].get(other) or {} if other else {}
        rows.append([labels.get(g["variant"], g["variant"]), build or "–", _params_text(g["sweep"]) or "–",
                     mean_sd_text(s), pub_text]
                    + ([mean_sd_text(o, with_n=o.get("n") == 1)] if other else []))
    for i, p in enumerate(published):
        if i not in used:
            rows.append([labels.get(p.get("variant"), str(p.get("variant"))), "–",
                         _params_text(p.get("params")) or "–", "not measured", _published_text(p)]
                        + (["–"] if other else []))
    return (["configuration", "build", "parameters", f"{metric} measured", "published"]
            + ([f"{other} (other window)"] if other else [])), rows


def citation_text(citation) -> str:
    """Where a catalogue value stands in the paper, e.g. ``Sec. IV-D, Table I, seed line 267``."""
    if not isinstance(citation, dict):
        return str(citation or "no citation")
    parts = [f"Sec. {citation['section']}" if citation.get("section") else None, citation.get("location"),
             f"seed line {citation['seed_line']}" if citation.get("seed_line") else None]
    return ", ".join(p for p in parts if p)


def _published_text(p: dict) -> str:
    bound = {"lower": "> ", "upper": "< ", "approx": "≈ "}.get(p.get("bound"), "")
    unc = f" ± {fmt(p['uncertainty'])}" if p.get("uncertainty") is not None else ""
    unit = f" {p['unit']}" if p.get("unit") else ""
    rel = p.get("relative_to") or {}
    prefix, suffix = ("+", f" over {rel.get('variant')}") if rel else ("", "")
    return f"{prefix}{bound}{fmt(p['value'])}{unc}{unit}{suffix} ({citation_text(p.get('citation'))})"


def _reason_text(claim: dict) -> str:
    """The verdict's reason without the ``comparable on`` text analyze appends (it has its own column)."""
    reason = claim.get("reason") or ""
    caveat = claim.get("comparable_on")
    return reason.replace(f"; comparable on: {caveat}", "") if caveat else reason


def measured_text(claim: dict) -> str:
    """A claim's measured value with its 95% interval and repetitions (one per configuration where it
    holds at each), e.g. ``1.02 [0.95, 1.1] (n=3)``; ``(n=1, no interval)`` for a single repetition."""
    measured = claim.get("measured")
    if measured is None:
        return "–"
    n = claim.get("repetitions")
    values = measured if isinstance(measured, list) else [measured]
    intervals = claim.get("interval") if isinstance(measured, list) else [claim.get("interval")]
    intervals = intervals or [None] * len(values)
    texts = [fmt(v) + (f" [{fmt(ci[0])}, {fmt(ci[1])}]" if ci else (" (no interval)" if n is not None else ""))
             for v, ci in zip(values, intervals)]
    return "; ".join(texts) + (f" (n={n})" if n is not None else "")


def cores_text(cores) -> str:
    """The cores of a configuration: ``2 cores``, or ``1, 2 cores (swept)``."""
    if isinstance(cores, list):
        return ", ".join(map(str, cores)) + " cores (swept)"
    return f"{cores} cores"


def verdict_text(claim: dict) -> str:
    """The claim's verdict as measured and, where the paper states its cores and they differ from those
    measured, the verdict at the paper's cores (analyze.cores_section)."""
    text = f"**{claim['verdict']}**"
    cores = claim.get("cores") or {}
    at = [m["cores"] for m in cores.get("measured") or []]
    if cores.get("verdict") and at and cores.get("paper") not in at:  # the verdict shown is at the most cores
        text += f" at {max(at)} cores; at the paper's {cores['paper']}: **{cores['verdict']}**"
    return text


def _claims_rows(claims: list[dict], experiment_id: str | None = None) -> list[list[str]]:
    return [([experiment_id] if experiment_id else []) +
            [c.get("statement") or c["id"], f"{c['compare']} {fmt(c['expected'])}", measured_text(c),
             verdict_text(c), _reason_text(c), c.get("comparable_on") or "–",
             c.get("evidence") or "–"] for c in claims]


def _interval_cell(value, interval, n) -> str:
    return (fmt(value) + (f" [{fmt(interval[0])}, {fmt(interval[1])}]" if interval else " (no interval)")
            + (f" (n={n})" if n is not None else ""))


def draw_cores_figure(claim: dict, catalogue_claim: dict) -> bytes | None:
    """A claim's statistic against cores (log2 axis): each core count measured with its 95% interval, the
    fitted trend extended to the paper's cores with its interval there, the claim's band shaded and the
    paper's hardware threads marked. None when fewer than two core counts have a value."""
    cores = claim.get("cores") or {}
    points = [m for m in cores.get("measured") or [] if isinstance(m.get("measured"), (int, float))]
    if len(points) < 2:
        return None
    paper, trend = cores.get("paper"), cores.get("trend")
    low, high, band = claim_band(catalogue_claim)
    with plt.rc_context(FIGURE_RC):
        fig, ax = plt.subplots(figsize=(6.4, 4.0))
        xs, ys = [m["cores"] for m in points], [m["measured"] for m in points]
        err = [[y - m["interval"][0] if m.get("interval") else 0 for y, m in zip(ys, points)],
               [m["interval"][1] - y if m.get("interval") else 0 for y, m in zip(ys, points)]]
        ax.errorbar(xs, ys, yerr=err, fmt="o", capsize=4, color="C0", label="measured, 95% CI")
        plotted = ys + [v for m in points for v in (m.get("interval") or [])]
        if trend:
            right = max(xs + [paper or 0])
            line = [min(xs) * (right / min(xs)) ** (i / 50) for i in range(51)]
            ax.plot(line, [math.exp(trend["intercept"] + trend["slope_per_doubling"] * math.log2(x)) for x in line],
                    "--", color="C1", label=f"trend (x{math.exp(trend['slope_per_doubling']):.3g} per doubling)")
            ci = trend.get("interval")
            ax.errorbar([paper], [trend["estimate"]],
                        yerr=[[trend["estimate"] - ci[0]], [ci[1] - trend["estimate"]]] if ci else None,
                        fmt="s", capsize=4, color="C1", label=f"trend at {paper} cores, 95% CI")
            plotted += [trend["estimate"], *(ci or [])]
        top = max(plotted + [v for v in (low, high) if math.isfinite(v)]) * 1.5
        bottom = min([v for v in plotted + [low, high] if math.isfinite(v) and v > 0]) / 1.5
        ax.axhspan(max(low, bottom), min(high, top), color="C2", alpha=0.15, label=f"claim's band {band}")
        if paper:
            ax.axvline(paper, ls=":", color="0.4", label=f"paper: {paper} hardware threads")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_ylim(bottom, top)
        ticks = sorted(set(xs + ([paper] if paper else [])))
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.set_xlabel("cores (CPUs each component may run on)")
        ax.set_ylabel(f"{claim['compare']} of {claim.get('metric')}, log scale")
        ax.set_title(textwrap.fill(claim.get("statement") or claim["id"], 72), fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        return png_bytes(fig)


def cores_blocks(experiment: dict, claims: list[dict], figure_prefix: str) -> list[tuple]:
    """Each claim measured at several core counts against cores: a figure, a table with the verdict at each
    core count and at the paper's, the model and, where it extrapolates, its caveat."""
    catalogue = {c["id"]: c for c in experiment.get("claims") or [] if c.get("id")}
    blocks, rows, extrapolated = [], [], False
    for claim in claims:
        cores = claim.get("cores") or {}
        if len(cores.get("measured") or []) < 2:
            continue
        png = draw_cores_figure(claim, catalogue[claim["id"]]) if claim["id"] in catalogue else None
        if png:
            blocks.append(("img", f"{figure_prefix}-cores-{claim['id']}.png", png,
                           f"{claim.get('statement') or claim['id']}: measured at each core count and the trend "
                           f"at the paper's {cores.get('paper')} hardware threads."))
        for m in cores["measured"]:
            rows.append([claim["id"], f"{m['cores']} ({m['known']})", _interval_cell(m["measured"], m["interval"],
                         m["repetitions"]) if isinstance(m.get("measured"), (int, float)) else "–",
                         f"**{m['verdict']}**"])
        trend = cores.get("trend")
        rows.append([claim["id"], f"{cores.get('paper')} (the paper's" + (", trend)" if trend else ")"),
                     _interval_cell(trend["estimate"], trend["interval"], trend["repetitions"]) if trend else "–",
                     # the caveat is said once, under the table
                     f"**{cores['verdict']}**: {cores['why'].replace('; ' + EXTRAPOLATION_CAVEAT, '')}"
                     if cores.get("verdict") else cores.get("why") or "–"])
        extrapolated = extrapolated or bool(trend and trend.get("extrapolated"))
    if not rows:
        return []
    text = (f"Claims against cores (the `cpus` parameter: every component on that many CPUs, read back from "
            f"each process). Trend model: {TREND_MODEL}.")
    if extrapolated:
        text += f" Caveat: {EXTRAPOLATION_CAVEAT}."
    return [("table", ["claim", "cores", "measured [95% CI] (n)", "verdict"], rows), ("p", text)] + blocks


#: ``caveat``: the claim's ``comparable_on`` (what a comparison with the paper needs), beside any verdict;
#: ``evidence``: what the counts rest on (harness/validity.py's classes), the build, the host's cores and the
#: runs whose repetitions were pooled.
CLAIM_HEADERS = ["claim", "expected", "measured [95% CI] (n)", "verdict", "reason", "caveat (comparable on)",
                 "evidence (counts, build, cores, runs pooled)"]

#: How the claims table says what a claim's counts rest on (the weakest of its pooled points).
EVIDENCE_TEXT = {
    "ledger-proven": "ledger-proven (every count held against the ledger's codes)",
    "independent check": "counts not ledger-proven: an independent check passed",
    "driver only": "counts not ledger-proven: the driver's own count, no independent check",
    "no transactions counted": "no transactions counted",
    None: "no complete point",
}


def evidence_class_text(evidence_class: str | None) -> str:
    return EVIDENCE_TEXT.get(evidence_class, str(evidence_class))


def with_caveats(claims: list[dict], experiment: dict) -> list[dict]:
    """The verdicts with each claim's ``comparable_on`` from the catalogue (analyze keeps it for
    "not comparable" verdicts only, inside the reason)."""
    caveats = {c["id"]: c.get("comparable_on") for c in experiment.get("claims") or [] if c.get("id")}
    return [{**c, "comparable_on": c.get("comparable_on") or caveats.get(c.get("id"))} for c in claims]


#: Per-host resource figures drawn per run (the table covers every point; the data is in each point's metrics/).
MAX_RESOURCE_FIGURES = 4


def _links_text(run_meta: dict) -> str:
    """The run's links in one sentence per distinct shaping and outcome (a reason shared by 30 links is said once)."""
    links = (run_meta.get("cluster") or {}).get("links") or []
    if not links:
        return "Links: not shaped (the experiment sets no network delay or bandwidth)."
    groups: dict[tuple[str, str], list[str]] = {}
    for l in links:
        shape = ", ".join(x for x in (f"+{l['delay_ms']} ms each way" if l.get("delay_ms") else "",
                                      f"{l['rate_mbit']} Mbit/s" if l.get("rate_mbit") else "") if x)
        how = ("via " + " and ".join(m for m in (l.get("delay_method"), l.get("rate_method")) if m)
               if l.get("applied", True) else f"not applied: {l.get('reason')}")
        groups.setdefault((shape, how), []).append(f"{l['from']}→{l['to']}")
    parts = []
    for (shape, how), pairs in groups.items():
        if len(pairs) > 3:
            ends = sorted({e for p in pairs for e in p.split("→")})
            which = f"{len(pairs)} links among {', '.join(ends)}"
        else:
            which = ", ".join(pairs)
        parts.append(which + (f" {shape}" if shape else "") + (f" {how}" if how != "via " else ""))  # 0 ms: no shape
    return "Links: " + "; ".join(parts) + "."


def _point_delays(run) -> str:
    """The delay each point set on the links (``points/<point>/links.json``, a list; Fujitsu Fig. 5), if any,
    one entry per distinct delay with the number of points that set it."""
    delays: dict[str, list[str]] = {}
    for path in sorted((run.path / "points").glob("*/links.json")):
        values = {link.get("delay_ms") for link in json.loads(path.read_text())
                  if link.get("proxies") or link.get("delay_method") or link.get("delay_ms")}
        if values:
            delays.setdefault(", ".join(f"{v or 0:g}" for v in sorted(values, key=lambda v: v or 0)),
                              []).append(path.parent.name)
    if not delays:
        return ""
    return (" Each point sets its own delay on these links (the run's metadata keeps the first point's): "
            + "; ".join(f"+{d} ms on {len(ps)} point(s) ({', '.join(ps)})" if len(ps) > 1 else f"{ps[0]} +{d} ms"
                        for d, ps in delays.items()) + ".")


def measured_window(point_dir: Path) -> tuple[int, int] | None:
    """The UTC-ns window of a point's measured blocks: first block received to last block committed
    (``blocks.parquet``, from ``measured.json``'s ``first_block`` on where the point has one), or None."""
    import pandas as pd

    blocks = point_dir / "blocks.parquet"
    if not blocks.is_file():
        return None
    df = pd.read_parquet(blocks)
    measured = point_dir / "measured.json"
    if measured.is_file() and "block_number" in df:
        first = json.loads(measured.read_text()).get("first_block")
        if first is not None:
            df = df[df["block_number"] >= first]
    start = [c for c in ("received_ns", "committed_ns") if c in df]
    if not len(df) or not start:
        return None
    times = df[start].where(df[start] > 0)
    lo, hi = times.min().min(), times.max().max()
    if pd.isna(lo) or pd.isna(hi) or hi <= lo:
        return None
    return int(lo), int(hi)


def resource_blocks(run, figure_prefix: str) -> list[tuple]:
    """Per-host CPU, memory, network and disk of each point (node-exporter via the run's Prometheus)."""
    from .resources import plot_resources, read_resources, summarize
    from .rundir import read_json

    rows, figures, measured = [], [], 0
    for point_dir in sorted((run.path / "points").iterdir()):
        rjson = point_dir / "metrics" / "resources.json"
        if not rjson.is_file():
            continue
        measured += 1
        doc = read_json(rjson)
        parquet = point_dir / "metrics" / "resources.parquet"
        df = read_resources(parquet) if parquet.is_file() else None
        if df is not None and len(df):
            # from the samples, one per host, metric and time (resources.json of older runs counted
            # a stale second memory series); the roles and devices stay the JSON's
            fresh = summarize(df, doc.get("start_ns", 0), doc.get("end_ns", 0))["hosts"]
            doc = {**doc, "hosts": {h: {**v, **doc["hosts"].get(h, {}), "metrics": v["metrics"]}
                                    for h, v in fresh.items()}}
        for host, h in sorted(doc["hosts"].items()):
            m = h.get("metrics", {})

            def stat(name, key="mean", scale=1.0, digits=1):
                v = (m.get(name) or {}).get(key)
                return "–" if v is None else f"{v * scale:.{digits}f}"
            rows.append([point_dir.name, host, ",".join(h.get("roles", [])),
                         f"{stat('cpu_util_ratio', scale=100)} / {stat('cpu_util_ratio', 'max', 100)}",
                         f"{stat('net_rx_bytes_per_s', scale=1e-6, digits=2)} / {stat('net_rx_bytes_per_s', 'max', 1e-6, 2)}",
                         f"{stat('net_tx_bytes_per_s', scale=1e-6, digits=2)} / {stat('net_tx_bytes_per_s', 'max', 1e-6, 2)}",
                         stat("mem_used_bytes", "max", 1e-9, 2), stat("disk_write_bytes_per_s", scale=1e-6, digits=2)])
        if len(figures) < MAX_RESOURCE_FIGURES and df is not None and len(df):
            window = measured_window(point_dir)
            figures.append(("img", f"{figure_prefix}-{point_dir.name}-resources.png",
                            plot_resources(df, None, window_ns=window),
                            f"Per-host resources of point {point_dir.name}, one line per host"
                            + ("; shaded: the measured window (first measured block received to last committed)."
                               if window else "; the measured window is not recorded for this point "
                                              "(no blocks.parquet with block times): not shaded.")))
    if not rows:
        return []
    provider = run.metadata.get("provider")
    shared = ("CPU and memory are this machine's, shared by every host of the run; network is each host's own "
              "interface. " if provider in THIS_MACHINE else "")
    hosts = (run.metadata.get("cluster") or {}).get("hosts") or {}
    blocks = [("p", f"**Per-host resources** (provider {provider}, {len(hosts) or 1} host(s); node-exporter scraped "
                    f"every second by the run's Prometheus; mean / max over each point). {shared}"
                    + _links_text(run.metadata) + _point_delays(run)),
              ("table", ["point", "host", "roles", "CPU % mean / max", "net rx MB/s mean / max",
                         "net tx MB/s mean / max", "memory GB max", "disk write MB/s mean"], rows)]
    not_deployed = run.metadata.get("topology_not_deployed") or {}
    if not_deployed:
        blocks.append(("p", "Roles of the paper's topology this build does not deploy yet: "
                            + ", ".join(f"{r} ×{n}" for r, n in sorted(not_deployed.items())) + "."))
    if len(figures) < measured:
        blocks.append(("p", f"Figures for the first {len(figures)} points; every point's samples are in "
                            "`points/<point>/metrics/resources.parquet`."))
    return blocks + figures


def load_text(load: dict | None) -> str:
    """A point's load average at its start and end (``load_average_1min`` of its summary), "–" before the record."""
    if not load:
        return "–"
    return f"{fmt(load.get('start'))} → {fmt(load.get('end'))}"


def point_summaries(runs: list) -> list[tuple[str, dict]]:
    """``(run id, summary.json)`` of every point of ``runs``, in run and point order."""
    from .rundir import read_json

    return [(run.path.name, read_json(p)) for run in runs for p in sorted((run.path / "points").glob("*/summary.json"))]


def control_blocks(summary: dict) -> list[tuple]:
    """One sentence on the run's control points beside the verdicts: what each planted and whether the
    ledger's codes and our verifier found exactly that (harness/plan.py add_controls)."""
    controls = summary.get("controls") or []
    if not controls:
        return [("p", "**Control:** none in these runs (the driver cannot corrupt transactions, or the runs "
                      "were made with --no-control): nothing here shows that the checks would catch a bad count.")]
    parts = []
    for c in controls:
        planted = ", ".join(f"{n} {k}" for k, n in (c.get("corrupted") or {}).items()) or "nothing"
        found = (f"the ledger marked {c['ledger_invalid']} invalid" if c.get("ledger_invalid") is not None
                 else "no ledger codes")
        if c.get("refused_at_broadcast"):
            found = f"the orderer refused {c['refused_at_broadcast']} at broadcast; " + found
        outcome = ("passed" if c["point_status"] == "complete" and c.get("status") == "passed"
                   else f"**failed** ({c.get('reason') or c['point_status']})")
        parts.append(f"`{c['point']}` planted {planted}; {found}; {outcome}")
    return [("p", "**Control** (a point that corrupts 1% of its transactions of each kind its driver supports; "
                  "its ledger codes and our verifier must mark exactly those invalid): " + "; ".join(parts) + ".")]


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


def conditions_blocks(experiment: dict, resolved: dict, deviations: bool = True) -> list[tuple]:
    """Under the figure: the experiment's fixed parameters (the run's values) and the catalogue's
    ``deviations`` that apply at the run's scale (what, and why)."""
    scale = resolved.get("scale")
    fixed = (experiment.get("parameters") or {}).get("fixed") or {}
    run_params = resolved.get("parameters") or {}

    def value(k):  # the value the run resolved (a --set may change it), else the catalogue's
        v = run_params.get(k)
        return v.get("value") if isinstance(v, dict) and "value" in v else fixed[k]

    text = []
    if fixed:
        text.append("Fixed parameters of this experiment: " + ", ".join(f"{k}={value(k)}" for k in sorted(fixed)) + ".")
    devs = [d for d in experiment.get("deviations") or [] if scale in (d.get("scales") or [])] if deviations else []
    if devs:
        text.append(f"How this run differs from the paper (scale {scale}): "
                    + " ".join(f"{i}. {d['what']} (why: {d['why']})." if len(devs) > 1 else f"{d['what']} (why: {d['why']})."
                               for i, d in enumerate(devs, 1)))
    return [("p", " ".join(text))] if text else []


def runs_blocks(selection: Selection) -> list[tuple]:
    """Which runs a section pools, and every other run of the experiment with why it is not pooled."""
    runs = selection.pooled
    config = selection.configuration
    if selection.complete:
        text = (f"Pooled: {len(runs)} complete run(s) of one configuration (scale {config['scale']}, "
                f"{config['build']['kind']} build, provider {config['provider']}, {cores_text(config['cores'])}): "
                + ", ".join(f"`{r.id}`" for r in runs) + ".")
    else:
        text = (f"No complete run of this experiment: shown is the newest run, `{runs[0].id}` "
                f"({selection.listed[0]['why']}), with only the points it completed.")
    blocks = [("p", text)]
    others = [r for r in selection.listed if not r["pooled"]]
    if others:
        blocks.append(("p", "Other runs of this experiment, not pooled (a run of another configuration is "
                            "never pooled with these; an incomplete one never shown instead of a complete one):"))
        blocks.append(("table", ["run", "status", "started (UTC)", "why not pooled"],
                       [[f"`{r['run_id']}`", r["status"], r["started_utc"] or "–", r["why"]] for r in others]))
    return blocks


def experiment_blocks(experiment: dict, selection: Selection, figure_name: str) -> tuple[list[tuple], list[dict]]:
    """The report blocks (figures inline as PNG bytes) of one experiment's selected runs (pooled), and its
    claim verdicts. Figures of resources and system report parts are the newest pooled run's."""
    run = selection.shown
    summary = analyze_pool(selection.pooled)
    stored = run.stored("experiment")["experiment"]
    resolved = run.stored("resolved")
    blocks = [("h2", f"{stored.get('ref', stored['id'])}: {stored['title']}"),
              ("p", f"Experiment `{stored['id']}`, driver `{stored.get('driver')}`.")]
    blocks += runs_blocks(selection)
    kind = (run.metadata.get("build") or {}).get("kind", "")
    png = draw_figure(stored, summary, kind)
    cap = caption(run.metadata, summary, resolved, selection.configuration["cores"])
    if png:
        blocks.append(("img", figure_name, png, cap))
    else:
        blocks.append(("p", f"No measured data to draw. {cap}"))
    extra = (stored.get("axes") or {}).get("figure")
    hooked = []
    if extra:
        # a system's report part (harness/systems.py): its own figures beside the main one; it may judge
        # the summary's qualitative claims
        parts = systems.report_parts()
        if extra not in parts:
            raise ValueError(f"{stored['id']}: axes.figure {extra!r} is not one of {sorted(parts)}")
        hooked = parts[extra](stored, summary, figure_name.removesuffix(".png"), kind, run)
    # a report part may render the deviations itself, as a table (validation-opt's phase breakdown): then not twice
    own_table = any(b[0] == "table" and list(b[1]) == ["deviation", "why"] for b in hooked)
    blocks += conditions_blocks(stored, resolved, deviations=not own_table) + hooked
    headers, rows = _measured_table(stored, summary, kind)
    if rows:
        blocks.append(("table", headers, rows))
    evidence = (f"{kind or 'reference'}, {cores_text(selection.configuration['cores'])}, "
                f"{len(selection.pooled)} run(s): " + ", ".join(r.id for r in selection.pooled))
    claims = [{**c, "evidence": f"{evidence_class_text(c.get('evidence_class'))}; {evidence}"}
              for c in with_caveats(summary["claims"], stored)]
    if claims:
        blocks.append(("table", CLAIM_HEADERS, _claims_rows(claims)))
        blocks += control_blocks(summary)
        blocks.append(("p", VERDICT_METHOD))
    blocks += cores_blocks(stored, claims, figure_name.removesuffix(".png"))
    blocks += validity_blocks(selection.pooled)
    blocks += timing_blocks(selection.pooled)
    blocks += resource_blocks(run, figure_name.removesuffix(".png"))
    return blocks, claims


#: How a verdict is reached, said once under each claims table (harness/stats.py, docs/catalogue.md).
VERDICT_METHOD = ("Verdicts: **reproduced** when the measured value's 95% interval lies inside the claim's band, "
                  "**not reproduced** when it lies wholly outside, **inconclusive** otherwise (with the repetitions "
                  "that would decide it at the observed spread) and always at one repetition, which has no spread; "
                  "**not comparable** when it cannot be measured here. Ratios pair the repetitions of one run "
                  "(same run, same repetition index): Student t on the log ratios; sides from different runs: "
                  "Welch t on the log values. Where the cores measured differ from the paper's hardware threads, "
                  "the verdict at the paper's cores follows: from the trend over a `cpus` sweep, else "
                  "**inconclusive** (docs/catalogue.md, \"How a claim is judged\", \"Cores\").")


def _claims_once(blocks: list[tuple], experiment_id: str) -> list[tuple]:
    """A section of the paper's report: its claims table is the paper's Claims table at the top, so
    the section points there instead of repeating it (a run's own report.md keeps its table)."""
    out = []
    for b in blocks:
        if b == ("p", VERDICT_METHOD):  # said once, under the Claims table
            continue
        if b[0] == "table" and list(b[1]) == CLAIM_HEADERS:
            out.append(("p", f"Verdicts of this experiment's {len(b[2])} claim(s): rows `{experiment_id}` of the "
                             "Claims table at the top."))
        else:
            out.append(b)
    return out


def render_paper(paper_id: str, results: Path, reports: Path, papers_dir: Path | None = None,
                 runs: list[Path] | None = None, since: str | None = None) -> Path:
    """Render ``reports/<paper>/report.md`` and ``report.html`` (and each experiment's section as
    ``report.md`` of its newest pooled run); return the dir.

    Each experiment pools its complete runs of one configuration (``rundir.select_runs``); ``runs``
    (run directories of this paper) or ``since`` (a UTC date or time) restrict the runs considered.
    """
    paper = load_paper(paper_id, papers_dir)
    info = paper.doc["paper"]
    for path in runs or []:
        named = Run.open(path)  # refuses a directory that is not a run
        if named.metadata["paper"] != paper_id:
            raise HarnessError(f"--run {path}: a run of paper {named.metadata['paper']!r}, not {paper_id!r}")
    out = Path(reports) / paper_id
    (out / "figures").mkdir(parents=True, exist_ok=True)
    body, all_claims, not_runnable, not_run = [], [], [], []
    for experiment in paper.experiments:
        selection = select_runs(results, paper_id, experiment["id"], named=runs, since=since)
        if selection is None:
            if experiment.get("runnable"):
                not_run.append([experiment["id"], experiment["title"]])
            else:
                not_runnable.append([experiment["id"], experiment["title"],
                                     experiment.get("not_runnable_reason") or "not runnable"])
            continue
        figure = f"figures/{experiment['id']}.png"
        blocks, claims = experiment_blocks(experiment, selection, figure)
        run = selection.shown
        body += _claims_once(blocks, experiment["id"])
        all_claims += [[experiment["id"]] + r for r in _claims_rows(claims)]
        for _, name, png, _caption in (b for b in blocks if b[0] == "img"):
            (out / name).write_bytes(png)
            (run.path / "figures").mkdir(exist_ok=True)
            (run.path / name).write_bytes(png)
        (run.path / "report.md").write_text(to_markdown(blocks), encoding="utf-8")

    head = [("h1", f"{info['title']}"),
            ("p", ", ".join(info.get("authors") or []) + (f". {info['venue']}." if info.get("venue") else "")),
            ("p", "Measured by this repository's harness from the stored runs named in each section "
                  "(every complete run of one configuration, pooled); published values are quoted from the paper "
                  "with their place in it.")]
    if runs is not None or since:
        head.append(("p", "Runs considered: " + (f"those named with --run ({len(runs)})" if runs is not None else "all")
                          + (f", started since {since}" if since else "") + "."))
    if all_claims:
        head += [("h2", "Claims"), ("table", ["experiment"] + CLAIM_HEADERS, all_claims), ("p", VERDICT_METHOD)]
    tail = []
    if not_run:
        title = "Not run yet" if runs is None and not since else "No run selected"
        tail += [("h2", title), ("table", ["experiment", "title"], not_run)]
    if not_runnable:
        tail += [("h2", "Not runnable yet"), ("table", ["experiment", "title", "reason"], not_runnable)]
    body += fidelity.blocks(fidelity.fidelity(results, paper_id, paper.experiments, info.get("baseline_system")), fmt)
    blocks = head + body + tail
    (out / "report.md").write_text(to_markdown(blocks), encoding="utf-8")
    (out / "report.html").write_text(to_html(blocks, info["title"]), encoding="utf-8")
    return out


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(blocks: list[tuple]) -> str:
    """Render report blocks as Markdown (figures referenced by relative path)."""
    lines = []
    for block in blocks:
        kind = block[0]
        if kind == "h1":
            lines += [f"# {block[1]}", ""]
        elif kind == "h2":
            lines += [f"## {block[1]}", ""]
        elif kind == "p":
            lines += [block[1], ""]
        elif kind == "img":
            lines += [f"![{block[1]}]({block[1]})", "", f"*{block[3]}*", ""]
        elif kind == "table":
            headers, rows = block[1], block[2]
            lines.append("| " + " | ".join(_cell(h) for h in headers) + " |")
            lines.append("|" + "---|" * len(headers))
            lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
            lines.append("")
    return "\n".join(lines)


def _inline(text: str) -> str:
    """HTML of a text with Markdown's ``code`` and **bold** spans."""
    out = html.escape(str(text))
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", out)


def to_html(blocks: list[tuple], title: str) -> str:
    """Render report blocks as one self-contained HTML page (figures inlined as base64 PNG)."""
    parts = ["<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
             f"<title>{html.escape(title)}</title>",
             "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em}"
             "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;"
             "text-align:left}figure{margin:1em 0}figcaption{font-size:.9em;color:#444}</style>",
             "</head><body>"]
    for block in blocks:
        kind = block[0]
        if kind in ("h1", "h2"):
            parts.append(f"<{kind}>{_inline(block[1])}</{kind}>")
        elif kind == "p":
            parts.append(f"<p>{_inline(block[1])}</p>")
        elif kind == "img":
            data = base64.b64encode(block[2]).decode()
            parts.append(f"<figure><img alt=\"{html.escape(block[1])}\" src=\"data:image/png;base64,{data}\">"
                         f"<figcaption>{_inline(block[3])}</figcaption></figure>")
        elif kind == "table":
            parts.append("<table><tr>" + "".join(f"<th>{_inline(h)}</th>" for h in block[1]) + "</tr>")
            parts += ["<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>" for row in block[2]]
            parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
