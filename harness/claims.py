"""What a catalogue claim asks for (docs/catalogue.md): the band its measurement may take, and which
points' parameters it names. Pure functions of the claim's specification, shared by the analysis,
the export and the systems' report parts (harness.plugin_api)."""

from __future__ import annotations

import math


def is_range(wanted) -> bool:
    """Whether a claim's parameter value is a range (``{min: A, max: B}``, either end optional)."""
    return isinstance(wanted, dict) and bool(wanted) and set(wanted) <= {"min", "max"}


def names_several(wanted) -> bool:
    """Whether a claim's parameter value stands for several values: a range or a list (docs/catalogue.md)."""
    return is_range(wanted) or isinstance(wanted, list)


def param_matches(value, wanted) -> bool:
    """Whether a point's parameter ``value`` is what a claim asks for: inside a range (ends included), one
    of a list, else equal."""
    if is_range(wanted):
        return value is not None and wanted.get("min", value) <= value <= wanted.get("max", value)
    if isinstance(wanted, list):
        return value in wanted
    return value == wanted


def claim_band(claim: dict) -> tuple[float, float, str]:
    """The values a claim's measurement may take to reproduce it (its expected value, tolerance and bound) and its text."""
    expected = claim["expected"]
    tolerance = claim.get("tolerance") or {}
    margin = max(abs(expected) * tolerance.get("relative", 0), tolerance.get("absolute", 0))
    bound = claim.get("bound")
    low, high = expected - margin, expected + margin
    if bound == "lower":
        return low, math.inf, f"≥ {low:.4g}"
    if bound == "upper":
        return -math.inf, high, f"≤ {high:.4g}"
    return low, high, f"[{low:.4g}, {high:.4g}]"
