"""No verdict where the scale cannot show the effect: an experiment's ``judged_when`` (papers/schema.json)
states what a run must reach for its claims to be judged (e.g. blocks enough to fill a pipeline); where the
pooled runs fall short, each claim it covers reads "not comparable at this scale", with the scale that would
judge it, never a verdict. Used by the report and the export alike."""

from __future__ import annotations

from ..selection import SCALES, unmet_conditions
from .text import fmt

__all__ = ["SCALES", "apply", "unmet"]


def unmet(experiment: dict, parameters: dict) -> list[dict]:
    """The ``judged_when`` conditions of ``experiment`` that ``parameters`` (a configuration's resolved
    parameters) do not meet, each with the ``value`` measured; a condition whose parameters are unknown is
    left out (nothing to say it fails). The same test ranks the stored configurations (``selection.select_runs``)."""
    return unmet_conditions(experiment.get("judged_when"), parameters)


def apply(claims: list[dict], experiment: dict, parameters: dict, scale: str | None = None) -> list[dict]:
    """``claims`` with every claim an unmet condition covers made "not comparable" (its measured value kept,
    its verdict at the paper's cores dropped), the reason naming the condition and ``judged_at_scale``."""
    failed = unmet(experiment, parameters)
    if not failed:
        return claims
    out = []
    for claim in claims:
        mine = [c for c in failed if not c.get("claims") or claim.get("id") in c["claims"]]
        if not mine or claim.get("verdict") == "not comparable" and claim.get("method") is None:
            out.append(claim)
            continue
        needed = max((c["scale"] for c in mine), key=SCALES.index)
        # said as one sentence (no "; ", which the claims table splits into sentences it may say once)
        why = " and ".join(f"{c['what']} {fmt(c['value'])} here, at least {fmt(c['min'])} needed "
                           f"({c['why'].replace('; ', ', ')})" for c in mine)
        cores = {**claim["cores"], "verdict": None} if isinstance(claim.get("cores"), dict) else claim.get("cores")
        out.append({**claim, "verdict": "not comparable", "cores": cores, "judged_at_scale": needed,
                    "verdict_here": claim.get("verdict"),
                    "reason": f"not comparable at this scale{f' ({scale})' if scale else ''}: {why}; "
                              f"scale {needed} would judge it; at this scale, {claim.get('reason') or 'nothing measured'}"})
    return out
