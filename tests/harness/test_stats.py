"""Intervals and the three verdicts (issue 23, item 2): harness/stats.py and how judge uses it.

Boundaries of a verdict (interval inside, wholly outside, straddling the band), the number of
repetitions that would decide an inconclusive one, and the refusal at one repetition.
"""

import math
import statistics

import pytest

from harness import judge, stats
from harness.stats import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED


@pytest.mark.parametrize("df,expected", [(1, 12.7062), (2, 4.3027), (4, 2.7764), (10, 2.2281), (30, 2.0423)])
def test_t_quantiles_match_the_tables(df, expected):
    assert stats.t_quantile(0.975, df) == pytest.approx(expected, abs=1e-4)
    assert stats.t_quantile(0.025, df) == pytest.approx(-expected, abs=1e-4)


def test_mean_interval_is_student_t_and_none_for_one_value():
    values = [10.0, 12.0, 14.0]
    low, high = stats.mean_interval(values)
    half = 4.3027 * 2.0 / math.sqrt(3)
    assert (low, high) == (pytest.approx(12 - half, abs=1e-3), pytest.approx(12 + half, abs=1e-3))
    assert stats.mean_interval([5.0]) is None


def test_paired_ratio_is_the_geometric_mean_with_a_t_interval_on_logs():
    est = stats.paired_ratio([2.0, 2.0 * math.e ** 0.1, 2.0 * math.e ** -0.1])
    assert est.value == pytest.approx(2.0) and est.log and est.n == 3
    half = 4.3027 * 0.1 / math.sqrt(3)
    assert est.interval == (pytest.approx(2 * math.exp(-half), rel=1e-4), pytest.approx(2 * math.exp(half), rel=1e-4))


def test_unpaired_ratio_uses_welch_on_logs():
    num, den = [4.0, 4.4, 3.6, 4.1], [2.0, 2.1, 1.9]
    est = stats.unpaired_ratio(num, den)
    a, b = [math.log(v) for v in num], [math.log(v) for v in den]
    va, vb = statistics.variance(a) / 4, statistics.variance(b) / 3
    df = (va + vb) ** 2 / (va ** 2 / 3 + vb ** 2 / 2)
    half = stats.t_quantile(0.975, df) * math.sqrt(va + vb)
    centre = statistics.fmean(a) - statistics.fmean(b)
    assert est.interval == (pytest.approx(math.exp(centre - half)), pytest.approx(math.exp(centre + half)))
    assert est.sizes == (4, 3) and est.n == 3


# ---------------------------------------------------------------- verdict boundaries

def _est(value, low, high, spread=0.01, n=3):
    return stats.Estimate(value, (low, high), True, (spread,), (n,), "test")


@pytest.mark.parametrize("interval,verdict", [
    ((0.9, 1.1), REPRODUCED),          # inside the band [0.8, 1.2]
    ((0.8, 1.2), REPRODUCED),          # on its edges: inside
    ((1.21, 1.5), NOT_REPRODUCED),     # wholly above
    ((0.5, 0.79), NOT_REPRODUCED),     # wholly below
    ((1.1, 1.3), INCONCLUSIVE),        # straddles the upper edge
    ((0.7, 0.9), INCONCLUSIVE),        # straddles the lower edge
    ((0.7, 1.3), INCONCLUSIVE),        # wider than the band
])
def test_verdict_from_where_the_interval_lies(interval, verdict):
    centre = math.sqrt(interval[0] * interval[1])
    assert stats.judge(_est(centre, *interval), 0.8, 1.2).verdict == verdict


def test_one_sided_band_is_judged_on_its_finite_edge():
    assert stats.judge(_est(2.5, 2.1, 3.0), 2.0, math.inf).verdict == REPRODUCED
    assert stats.judge(_est(1.5, 1.2, 1.9), 2.0, math.inf).verdict == NOT_REPRODUCED
    assert stats.judge(_est(2.0, 1.8, 2.3), 2.0, math.inf).verdict == INCONCLUSIVE


def test_one_repetition_is_refused_inconclusive():
    est = stats.paired_ratio([1.0])
    assert est.interval is None
    judged = stats.judge(est, 0.8, 1.2)
    assert judged.verdict == INCONCLUSIVE and judged.needed is None
    assert "no test is possible at this sample size" in judged.why
    one_side = stats.unpaired_ratio([1.0], [1.0, 1.1, 0.9])
    assert one_side.interval is None and stats.judge(one_side, 0.8, 1.2).verdict == INCONCLUSIVE


# ---------------------------------------------------------------- repetitions needed

def test_repetitions_needed_is_the_smallest_that_decides_at_the_observed_spread():
    logs = [0.0, 0.15, -0.15]                   # estimate 1.0, sd 0.15 on the log scale
    est = stats.paired_ratio([math.exp(x) for x in logs])
    judged = stats.judge(est, 0.9, 1.25)        # the interval crosses 0.9: inconclusive
    assert judged.verdict == INCONCLUSIVE
    n = judged.needed
    distance = -math.log(0.9)                   # the nearest edge, on the log scale
    assert est.half_width(n) < distance <= est.half_width(n - 1)
    assert f"about {n} repetitions" in judged.why
    # the same spread with that many repetitions decides it
    wider = [math.exp(0.15 * z) for z in (-1, 0, 1) * (n // 3 + 1)][:n]
    assert stats.judge(stats.paired_ratio(wider), 0.9, 1.25).verdict == REPRODUCED


def test_an_estimate_outside_the_band_needs_repetitions_to_exclude_it():
    est = stats.paired_ratio([math.exp(x) for x in (0.35, 0.2, 0.05)])   # estimate e^0.2 = 1.22
    judged = stats.judge(est, 0.8, 1.2)
    assert judged.verdict == INCONCLUSIVE and judged.needed > 3
    assert est.half_width(judged.needed) < math.log(est.value / 1.2)


def test_an_estimate_on_the_edge_can_never_be_decided():
    est = stats.paired_ratio([1.2 * math.exp(x) for x in (0.1, 0.0, -0.1)])
    judged = stats.judge(est, 0.8, 1.2)
    assert judged.verdict == INCONCLUSIVE and judged.needed is None and "no number of repetitions" in judged.why


def test_combined_verdicts_need_every_part():
    yes, no = stats.Judgement(REPRODUCED, None, ""), stats.Judgement(NOT_REPRODUCED, None, "")
    maybe = [stats.Judgement(INCONCLUSIVE, n, "w") for n in (5, 9)]
    assert stats.combine([yes, yes]).verdict == REPRODUCED
    assert stats.combine([yes, no, maybe[0]]).verdict == NOT_REPRODUCED
    both = stats.combine([yes, *maybe])
    assert both.verdict == INCONCLUSIVE and both.needed == 9 and "2 configurations undecided" in both.why


# ---------------------------------------------------------------- claims judged with intervals

EXPERIMENT = {"id": "e", "metric": "throughput_tps", "claims": []}
CLAIM = {"id": "c", "compare": "ratio", "numerator": {"variant": "fast"}, "denominator": {"variant": "slow"},
         "metric": "throughput_tps", "expected": 2.0, "tolerance": {"relative": 0.2}, "bound": "approx"}


def _groups(fast, slow, run="r"):
    def group(variant, values):
        return {"variant": variant, "sweep": {}, "metrics": {"throughput_tps": {
            "mean": statistics.fmean(values), "repetitions": [[run, i, v] for i, v in enumerate(values)]}}}
    return [group("fast", fast), group("slow", slow)]


def _claim(groups):
    return judge.evaluate_claim(CLAIM, EXPERIMENT, groups, {"scale": "smoke", "cores": 2})


def test_a_claim_from_paired_repetitions_inside_outside_and_straddling():
    out = _claim(_groups([2000, 2040, 1960], [1000, 1020, 980]))   # every paired ratio exactly 2
    assert out["verdict"] == "reproduced" and out["interval"] == [2.0, 2.0] and out["repetitions"] == 3
    out = _claim(_groups([1000, 1100, 900], [1000, 1000, 1000]))
    assert out["verdict"] == "not reproduced"
    out = _claim(_groups([2300, 1500, 2000], [1000, 1000, 1000]))   # ratios 2.3, 1.5, 2.0 around the edge 1.6
    assert out["verdict"] == "inconclusive" and out["repetitions_needed"] > 3
    assert f"about {out['repetitions_needed']} repetitions" in out["reason"]


def test_pairing_uses_the_same_run_and_repetition_index():
    # the slow side's first repetition ran at half speed with the fast side's: pairing cancels it
    out = _claim(_groups([1000, 2000, 2000], [500, 1000, 1000]))
    assert out["verdict"] == "reproduced" and out["measured"] == 2.0
    # sides from different runs cannot be paired: the unpaired interval is wide
    fast = _groups([1000, 2000, 2000], [500, 1000, 1000])[0]
    slow = _groups([1, 1, 1], [500, 1000, 1000], run="other")[1]
    out = _claim([fast, slow])
    assert out["verdict"] == "inconclusive" and "Welch" in out["method"]


def test_a_single_repetition_claim_is_inconclusive_not_reproduced():
    out = _claim(_groups([2000], [1000]))
    assert out["verdict"] == "inconclusive" and out["measured"] == 2.0 and out["interval"] is None
    assert "no test is possible at this sample size" in out["reason"]
