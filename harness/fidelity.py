"""The reference build's fidelity: the same experiment measured with both builds, side by side.

The reference build (this repository's Go implementation of Fabric 1.2's
pipeline) stands in for Fabric 1.2 only as far as it performs like it. For
every experiment with a complete run of each build, this compares the
baseline variant's throughput, block latency and commit phases: ``reference
÷ upstream`` per metric. Two runs are comparable only on the same host (CPU
model, cores) and scale; the table says when they are not.
"""

from __future__ import annotations

from . import cpus
from .analyze import all_metrics, analyze_run
from .metrics import PHASES
from .rundir import Run, latest_complete_run

#: Metrics compared, in the order shown.
COMPARED = ("throughput_tps", "block_latency_ms", *(f"{p}_ms" for p in PHASES))


def _baseline_group(summary: dict, variant: str) -> dict | None:
    groups = [g for g in summary["groups"] if g["variant"] == variant]
    return groups[0] if groups else None


def not_comparable(reference: Run, upstream: Run) -> str | None:
    """Why two runs' numbers are not comparable (None if they are)."""
    ra, ua = reference.metadata, upstream.metadata
    hosts = [{"cpu_model": (m.get("host") or {}).get("cpu_model"), "cores": cpus.host_usable(m.get("host") or {})}
             for m in (ra, ua)]
    for key in ("cpu_model", "cores"):
        if hosts[0][key] != hosts[1][key]:
            return f"different hosts ({key}: {hosts[0][key]} vs {hosts[1][key]})"
    if ra.get("scale") != ua.get("scale"):
        return f"different scales ({ra.get('scale')} vs {ua.get('scale')})"
    if ra.get("provider") != ua.get("provider"):
        return f"different providers ({ra.get('provider')} vs {ua.get('provider')})"
    return None


def compare(reference: Run, upstream: Run, variant: str) -> dict:
    """Per metric: the reference's and upstream's mean and their ratio, for ``variant``."""
    ref = _baseline_group(analyze_run(reference), variant)
    up = _baseline_group(analyze_run(upstream), variant)
    rows = []
    for metric in COMPARED:
        r = ((ref or {}).get("metrics") or {}).get(metric) or {}
        u = ((up or {}).get("metrics") or {}).get(metric) or {}
        if r.get("mean") is None and u.get("mean") is None:
            continue
        ratio = r["mean"] / u["mean"] if r.get("mean") is not None and u.get("mean") else None
        rows.append({"metric": metric, "unit": all_metrics()[metric].unit, "reference": r.get("mean"),
                     "reference_n": r.get("n", 0), "upstream": u.get("mean"), "upstream_n": u.get("n", 0),
                     "ratio": ratio})
    return {"variant": variant, "reference_run": reference.path.name, "upstream_run": upstream.path.name,
            "drivers": {kind: sorted({d.get("playbook") for d in ((run.metadata.get("build") or {}).get("drivers")
                                                                   or {}).values()})
                        for kind, run in (("reference", reference), ("upstream", upstream))},
            "not_comparable": not_comparable(reference, upstream), "rows": rows}


def fidelity(results, paper: str, experiments: list[dict], baseline_system: str) -> list[dict]:
    """One comparison per experiment that has a complete run of both builds, of its ``baseline_system`` variant."""
    out = []
    for experiment in experiments:
        variant = next((v["id"] for v in experiment.get("variants") or [] if v.get("system") == baseline_system), None)
        ref = latest_complete_run(results, paper, experiment["id"], "reference")
        up = latest_complete_run(results, paper, experiment["id"], "upstream")
        if variant and ref and up:
            out.append({"experiment": experiment["id"], "title": experiment["title"], **compare(ref, up, variant)})
    return out


def blocks(comparisons: list[dict], fmt) -> list[tuple]:
    """Report blocks of the fidelity section (``fmt`` formats a number)."""
    if not comparisons:
        return []
    out = [("h2", "Fidelity of the reference build"),
           ("p", "The same experiment run with the upstream build (the published Fabric 1.2) and with this "
                 "repository's reference build, baseline configuration only; ratio = reference ÷ upstream "
                 "(above 1: the reference is faster for throughput, slower for times).")]
    for c in comparisons:
        note = f" **Not comparable:** {c['not_comparable']}." if c["not_comparable"] else ""
        drivers = "; ".join(f"{kind}: {', '.join(f'`{p}`' for p in books)}"
                            for kind, books in sorted((c.get("drivers") or {}).items()) if books)
        out.append(("p", f"`{c['experiment']}` ({c['title']}), variant `{c['variant']}`: reference run "
                         f"`{c['reference_run']}`, upstream run `{c['upstream_run']}`"
                         + (f" (playbooks: {drivers})" if drivers else "") + f".{note}"))
        out.append(("table", ["metric", "reference", "upstream", "reference ÷ upstream"],
                    [[f"{r['metric']} ({r['unit']})", f"{fmt(r['reference'])} (n={r['reference_n']})",
                      f"{fmt(r['upstream'])} (n={r['upstream_n']})", fmt(r["ratio"])] for r in c["rows"]]))
    return out
