"""No claim the harness cannot judge (issue 36, item 6): every numeric claim of every catalogue names metrics
the harness computes (the core's or its system's plugin), and reaches each verdict - reproduced, not
reproduced, inconclusive - from synthetic repetitions of its sides (harness/judge.py ``_judge``; the
groups are TEST DOUBLES of a pooled summary's, nothing is run)."""

import math

import pytest

from harness import judge
from harness.judge import all_metrics
from harness.catalogue import list_papers, load_paper
from harness.claims import claim_band, is_range

CLAIMS = [(paper, experiment, claim) for paper in list_papers() for experiment in load_paper(paper).experiments
          for claim in experiment.get("claims") or [] if claim["compare"] != "qualitative"]


def _id(case) -> str:
    return f"{case[0]}:{case[1]['id']}:{case[2]['id']}"


def _sides(claim: dict) -> list[dict]:
    return [claim["numerator"], claim["denominator"]] if claim["compare"] == "ratio" else [claim]


def _one(value):
    """One value a claim's parameter stands for (the first of a list, a range's lower end)."""
    if is_range(value):
        return value.get("min", value.get("max"))
    return value[0] if isinstance(value, list) else value


def _inside(low: float, high: float) -> float:
    if math.isfinite(low) and math.isfinite(high):
        return (low + high) / 2
    if math.isfinite(low):
        return low * 1.5 if low > 0 else low + abs(low) + 1
    return high / 1.5 if high > 0 else high - abs(high) - 1


def _outside(low: float, high: float) -> float:
    if math.isfinite(low) and low > 0:
        return low / 3
    if math.isfinite(high):
        return high * 3 if high > 0 else high - abs(high) - 10
    return low - abs(low) - 10


def _judge(paper, experiment, claim, statistic: float, reps: int) -> dict:
    """The verdict on ``claim`` when each of its ``reps`` repetitions measures about ``statistic`` (a ratio's
    numerator ``statistic`` times its denominator's 100)."""
    metric = claim.get("metric") or experiment.get("metric")
    groups, others = [], {}
    for i, side in enumerate(_sides(claim)):
        other = _sides(claim)[1 - i] if claim["compare"] == "ratio" else {}
        params = {**(other.get("params") or {}), **(side.get("params") or {})}
        base = (statistic * 100 if i == 0 else 100.0) if claim["compare"] == "ratio" else statistic
        spread = [base * (1 + 0.001 * (k - (reps - 1) / 2)) for k in range(reps)]
        group = {"variant": side.get("variant"), "sweep": {k: _one(v) for k, v in params.items()},
                 "metrics": {side.get("metric") or metric: {"repetitions": [("r", k, v) for k, v in enumerate(spread)]}}}
        exp_id = side.get("experiment", experiment["id"])
        if exp_id == experiment["id"]:
            groups.append(group)
        else:
            others.setdefault(exp_id, {"runs": ["r"], "groups": []})["groups"].append(group)
    cores = judge.paper_cores(experiment, {"paper_hardware": paper.doc["paper"].get("hardware")})
    context = {"cores": cores or 2, "paper_hardware": {"cores": cores}, "scale": "paper", "not_runnable": {},
               "other_runs": others}
    return judge._judge(claim, experiment, groups, context)


def test_every_claim_names_metrics_the_harness_computes():
    computed = set(all_metrics())
    missing = [f"{_id(c)}: {m}" for c in CLAIMS for m in {s.get("metric") or c[2].get("metric") or c[1].get("metric")
                                                          for s in _sides(c[2])} if m not in computed]
    assert missing == [], "claims naming a metric the harness does not compute: " + "; ".join(missing)


@pytest.mark.parametrize("case", CLAIMS, ids=_id)
def test_every_claim_can_reach_each_verdict(case):
    paper_id, experiment, claim = case
    paper = load_paper(paper_id)
    if claim.get("expected") is None or not claim.get("tolerance"):
        pytest.skip("the claim gives no expected value or no tolerance: not comparable by design")
    low, high, _ = claim_band(claim)
    seen = {}
    for name, statistic, reps in (("reproduced", _inside(low, high), 5), ("not reproduced", _outside(low, high), 5),
                                  ("inconclusive", _inside(low, high), 1)):
        result = _judge(paper, experiment, claim, statistic, reps)
        seen[name] = (result["verdict"], result["reason"])
    assert {k: v[0] for k, v in seen.items()} == {k: k for k in seen}, seen
