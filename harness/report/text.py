"""Numbers, published values, builds and the runs behind a figure, in the words the report uses."""

from __future__ import annotations

from .. import cpus


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


def cores_text(cores) -> str:
    """The cores of a configuration: ``2 cores``, or ``1, 2 cores (swept)``."""
    if isinstance(cores, list):
        return ", ".join(map(str, cores)) + " cores (swept)"
    return f"{cores} cores"


def citation_text(citation) -> str:
    """Where a catalogue value stands in the paper, e.g. ``Sec. IV-D, Table I, seed line 267`` (or, for a paper
    of source texts, ``..., fabric-x-committer-v1.0.4-docs-index.md line 37``)."""
    if not isinstance(citation, dict):
        return str(citation or "no citation")
    parts = [f"Sec. {citation['section']}" if citation.get("section") else None, citation.get("location"),
             f"seed line {citation['seed_line']}" if citation.get("seed_line") else None,
             f"{citation['file']} line {citation['line']}" if citation.get("file") else None]
    return ", ".join(p for p in parts if p)


def published_text(p: dict) -> str:
    bound = {"lower": "> ", "upper": "< ", "approx": "≈ "}.get(p.get("bound"), "")
    unc = f" ± {fmt(p['uncertainty'])}" if p.get("uncertainty") is not None else ""
    unit = f" {p['unit']}" if p.get("unit") else ""
    rel = p.get("relative_to") or {}
    prefix, suffix = ("+", f" over {rel.get('variant')}") if rel else ("", "")
    return f"{prefix}{bound}{fmt(p['value'])}{unc}{unit}{suffix} ({citation_text(p.get('citation'))})"


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


def caption(run_meta: dict, summary: dict, resolved: dict, cores=None) -> str:
    """Build, provider, cores, scale and repetitions of the runs behind a figure (``run_meta``: the newest;
    ``cores``: those the pooled runs' points ran on, ``selection.run_cores``; else the host's)."""
    host = run_meta.get("host") or {}
    pts = summary["points"]
    notes = sorted({d["note"] for d in ((run_meta.get("build") or {}).get("drivers") or {}).values() if d.get("note")})
    runs = summary.get("runs") or [run_meta["run_id"]]
    pooled = len(runs) > 1
    which = (f"{len(runs)} runs pooled ({', '.join(runs)}; newest {run_meta['status']})" if pooled
             else f"run {run_meta['run_id']} ({run_meta['status']})")
    return (f"Build: {build_text(run_meta)}; provider: {run_meta.get('provider')}; "
            f"{cores_text(cpus.host_usable(host) if cores is None else cores)} ({host.get('cpu_model')}"
            + (f", host {host.get('hostname')}, measured through a kit" if run_meta.get("kit") else "") + "); "
            f"scale: {run_meta.get('scale')}; "
            f"{which}, {pts['complete']} of {pts['total']} points complete, "
            + ("their repetitions pooled per configuration (n in the table). " if pooled
               else f"{resolved.get('repetitions')} repetition(s) per configuration. ")
            + ("Measured values: one repetition each, so no spread (no error bars); "
               if resolved.get("repetitions") == 1 and not pooled
               else "Measured values: mean with its 95% interval (Student t) over repetitions; ")
            + "hollow diamonds: published values."
            + "".join(f" {n}" for n in notes))
