"""One experiment's section: the runs it pools, its figure, conditions and table of measured and
published values, its claims, and the sections of its points and hosts."""

from __future__ import annotations

from .. import systems
from ..analyze import analyze_pool
from ..plan import metric_of
from ..selection import Selection
from . import conditions
from .cores import cores_blocks
from .figures import draw_figure, published_for
from .hosts import resource_blocks, topology_blocks
from .caliper import caliper_blocks
from .points import timing_blocks, validity_blocks
from .text import caption, cores_text, mean_sd_text, published_text
from .verdicts import (CLAIM_HEADERS, VERDICT_METHOD, claims_rows, control_blocks, evidence_class_text,
                       question_blocks, with_caveats)


def _params_text(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted((params or {}).items()))


def _matches(params: dict | None, sweep: dict) -> bool:
    return all(sweep.get(k) == v for k, v in (params or {}).items() if k in sweep)


#: A metric measured over one window, and the same quantity over another window shown beside it
#: (the whole run of pre-made blocks vs the time between committed blocks, which leaves out a pipeline's fill).
OTHER_WINDOW = {"run_throughput_tps": "throughput_tps"}


def _measured_table(experiment: dict, summary: dict, build: str = "") -> tuple[list[str], list[list[str]]]:
    """The table under the figure: each measured configuration with the published values for it, then the
    published values of configurations not measured."""
    metric = experiment.get("metric")
    other = OTHER_WINDOW.get(metric)
    labels = {v["id"]: v.get("label", v["id"]) for v in experiment.get("variants") or []}
    published = published_for(experiment, metric)
    rows, used = [], set()
    for g in summary["groups"]:
        own = metric_of(experiment, g["variant"])
        s = g["metrics"].get(own) or {}
        pubs = [(i, p) for i, p in enumerate(published) if p.get("variant") == g["variant"]
                and _matches(p.get("params"), g["sweep"])]
        used.update(i for i, _ in pubs)
        pub_text = "; ".join(published_text(p) for _, p in pubs) or "–"
        o = g["metrics"].get(other) or {} if other else {}
        rows.append([labels.get(g["variant"], g["variant"]), build or "–", _params_text(g["sweep"]) or "–",
                     mean_sd_text(s) + (f" ({own})" if own != metric else ""), pub_text]
                    + ([mean_sd_text(o, with_n=o.get("n") == 1)] if other else []))
    for i, p in enumerate(published):
        if i not in used:
            rows.append([labels.get(p.get("variant"), str(p.get("variant"))), "–",
                         _params_text(p.get("params")) or "–", "not measured", published_text(p)]
                        + (["–"] if other else []))
    return (["configuration", "build", "parameters", f"{metric} measured", "published"]
            + ([f"{other} (other window)"] if other else [])), rows


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
    configs = getattr(selection, "configurations", None) or []
    if len(configs) > 1:
        blocks.append(("p", f"Its claims are judged from this configuration ({configs[0]['strength']}): the "
                            "strongest of the complete configurations stored (the one whose scale and cores can "
                            "judge the claims, then the most repetitions; the newest among equals), whatever ran "
                            "last. The complete configurations stored, strongest first:"))
        blocks.append(("table", ["configuration", "runs", "judged from it"],
                       [[c["strength"], ", ".join(f"`{r}`" for r in c["runs"]), "yes" if c["pooled"] else "no"]
                        for c in configs]))
    others = [r for r in selection.listed if not r["pooled"]]
    if others:
        blocks.append(("p", "Other runs of this experiment, not pooled (a run of another configuration is "
                            "never pooled with these; an incomplete one never shown instead of a complete one):"))
        blocks.append(("table", ["run", "status", "started (UTC)", "why not pooled"],
                       [[f"`{r['run_id']}`", r["status"], r["started_utc"] or "–", r["why"]] for r in others]))
    return blocks


def experiment_blocks(experiment: dict, selection: Selection,
                      figure_name: str) -> tuple[list[tuple], list[dict], list[dict]]:
    """The report blocks (figures inline as PNG bytes) of one experiment's selected runs (pooled), its
    claim verdicts and its questions' answers. Figures of resources and system report parts are the newest
    pooled run's."""
    run = selection.shown
    summary = analyze_pool(selection.pooled)
    stored = run.stored("experiment")["experiment"]
    # which of its measured metrics a variant is shown by is the report's choice, not the run's: a variant's own
    # metric (plan.metric_of) that the catalogue names since the run was made applies to it too
    shown_as = {v["id"]: v["metric"] for v in experiment.get("variants") or [] if v.get("metric")}
    stored = {**stored, "variants": [{**v, "metric": v.get("metric") or shown_as.get(v["id"])}
                                     for v in stored.get("variants") or []]}
    resolved = run.stored("resolved")
    blocks = [("h2", f"{stored.get('ref', stored['id'])}: {stored['title']}"),
              ("p", f"Experiment `{stored['id']}`, driver `{stored.get('driver')}`"
                    + "".join(f"; variant `{v['id']}` runs driver `{v['driver']}`"
                              for v in stored.get("variants") or [] if v.get("driver")) + ".")]
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
    evidence = (f"{kind or 'reference'}, scale {selection.configuration.get('scale')}, "
                f"{cores_text(selection.configuration['cores'])}, "
                f"{len(selection.pooled)} run(s): " + ", ".join(r.id for r in selection.pooled))
    claims = [{**c, "evidence": f"{evidence_class_text(c.get('evidence_class'), c.get('control'))}; {evidence}"}
              for c in with_caveats(summary["claims"], stored)]
    # the catalogue's conditions for judging (a stored run's experiment.yaml may predate them)
    claims = conditions.apply(claims, {**stored, "judged_when": experiment.get("judged_when") or stored.get("judged_when")},
                              selection.configuration.get("parameters") or {}, selection.configuration.get("scale"))
    if claims:
        blocks.append(("table", CLAIM_HEADERS, claims_rows(claims)))
        blocks += control_blocks(summary)
        blocks.append(("p", VERDICT_METHOD))
    blocks += question_blocks(summary)
    if summary.get("questions") and not claims:
        blocks += control_blocks(summary)
    blocks += cores_blocks(stored, claims, figure_name.removesuffix(".png"))
    # Caliper's round beside our numbers, where a point ran one (harness/report/caliper.py)
    blocks += caliper_blocks(selection.pooled, stored.get("metric"))
    blocks += validity_blocks(selection.pooled)
    blocks += timing_blocks(selection.pooled)
    blocks += topology_blocks(run)
    blocks += resource_blocks(run, figure_name.removesuffix(".png"))
    return blocks, claims, summary.get("questions") or []
