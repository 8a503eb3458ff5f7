"""Claims measured at several core counts (a ``cpus`` sweep) against cores: a figure and a table per
claim, with the verdict at the paper's hardware threads from the fitted trend."""

from __future__ import annotations

import math
import textwrap

from ..figure_png import FIGURE_RC, png_bytes  # first: it selects matplotlib's Agg backend

import matplotlib.pyplot as plt  # noqa: E402

from ..judge import EXTRAPOLATION_CAVEAT  # noqa: E402
from ..claims import claim_band  # noqa: E402
from ..stats import TREND_MODEL  # noqa: E402
from .text import fmt  # noqa: E402


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
