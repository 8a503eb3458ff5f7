"""An experiment's figure drawn like the paper's: the measured means with their 95% intervals beside the
published values, as bars per configuration or lines over the swept parameter."""

from __future__ import annotations

import textwrap

from ..figure_png import FIGURE_RC, png_bytes  # first: it selects matplotlib's Agg backend

import matplotlib.pyplot as plt  # noqa: E402

from ..analyze import all_metrics  # noqa: E402
from ..plan import metric_of  # noqa: E402
from .text import fmt  # noqa: E402


def published_for(experiment: dict, metric: str | None) -> list[dict]:
    """Published values of the experiment's metric (entries naming no metric count as the experiment's)."""
    return [p for p in experiment.get("published") or []
            if p.get("value") is not None and p.get("metric") in (None, metric)]


def _ci_errors(rows: list[dict]) -> list[list[float]] | None:
    """Matplotlib's asymmetric ``yerr`` of the 95% intervals of ``rows`` (metric statistics), 0 where
    a value has none (one repetition); None when none has one."""
    if not any(r.get("ci95") for r in rows):
        return None
    return [[r["mean"] - r["ci95"][0] if r.get("ci95") else 0 for r in rows],
            [r["ci95"][1] - r["mean"] if r.get("ci95") else 0 for r in rows]]


def draw_figure(experiment: dict, summary: dict | None, build: str = "") -> bytes | None:
    """The experiment's figure as PNG bytes, or None when there is nothing to draw.

    ``build`` (upstream or reference) is named in the legend of every measured series.
    """
    metric = experiment.get("metric")
    groups = (summary or {}).get("groups") or []
    published = published_for(experiment, metric)
    # A value published as a difference from another configuration ("adds
    # about 2,000 tx/s") is not a level on the figure's axis: table only.
    levels = [p for p in published if not p.get("relative_to")]
    shown = {v["id"]: metric_of(experiment, v["id"]) for v in experiment.get("variants") or []}
    if not any((g["metrics"].get(shown.get(g["variant"], metric)) or {}).get("n") for g in groups) and not published:
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
            plotted = _draw_bars(ax, variants, labels, groups, levels, shown, build)
        else:
            plotted = _draw_lines(ax, x, variants, labels, groups, levels, shown, build, axes.get("series"))
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


def _draw_bars(ax, variants, labels, groups, published, shown, build=""):
    """One bar per configuration (measured mean ± sd of the metric ``shown`` for its variant, its value written on
    it) and a hollow diamond per published value. Returns the plotted values (for the choice of a log axis)."""
    ticks, names, plotted = [], [], []
    measured_label, published_label = (f"measured, {build} build (mean, 95% CI)" if build
                                       else "measured (mean, 95% CI)"), "published"
    for i, vid in enumerate(variants):
        stats = next(((g["metrics"].get(shown[vid]) or {}) for g in groups if g["variant"] == vid), {})
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


def _draw_lines(ax, x, variants, labels, groups, published, shown, build="", series=()):
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
            rows = sorted(((g["sweep"].get(x), g["metrics"].get(shown[vid]) or {}) for g in mine
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
