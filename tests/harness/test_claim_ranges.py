"""A claim's parameter may give a range (issue 23, item 6): ``{min: A, max: B}`` matches every swept
value in it, ends included (a list, every value it names), and the claim must hold at each.

FastFabric's Fig. 3 claim ``network-not-bottleneck`` (block sizes 10-250 sustain more than 40,000 tx/s)
is judged here on TEST DOUBLES of pooled measurements (groups written directly), at the paper's
hardware and scale so that an absolute value is comparable.
"""

import pytest

from harness.claims import param_matches
from harness.judge import evaluate_claim
from tests.harness.test_claims import _claim, _experiment, _group


def test_a_range_matches_every_value_inside_it_a_list_its_members_and_equality_still_holds():
    assert param_matches(10, {"min": 10, "max": 250})
    assert param_matches(250, {"min": 10, "max": 250})
    assert not param_matches(500, {"min": 10, "max": 250})
    assert not param_matches(None, {"min": 10, "max": 250})
    assert param_matches(1000, {"min": 10})
    assert param_matches(32, [16, 32]) and not param_matches(8, [16, 32])
    assert param_matches(100, 100) and not param_matches(100, 250)


def _fig3(tps_by_block_size: dict) -> dict:
    experiment = _experiment("fastfabric", "fig3-grpc-block-transfer")
    groups = [_group("fabric-1.2", {"delivery_throughput_tps": tps}, block_size=size)
              for size, tps in tps_by_block_size.items()]
    context = {"cores": 24, "scale": "paper", "paper_hardware": {"cores": 24}, "not_runnable": {}, "other_runs": {}}
    return evaluate_claim(_claim(experiment, "network-not-bottleneck"), experiment, groups, context)


@pytest.mark.parametrize("tps, verdict", [
    ({10: 45_000, 100: 50_000, 250: 42_000, 500: 1_000}, "reproduced"),       # 500 lies outside the range
    ({10: 45_000, 100: 50_000, 250: 20_000, 500: 90_000}, "not reproduced"),  # 250 is inside it
])
def test_network_not_bottleneck_is_judged_at_every_block_size_of_its_range(tps, verdict):
    result = _fig3(tps)
    assert result["verdict"] == verdict, result["reason"]
    assert len(result["measured"]) == 3  # block sizes 10, 100 and 250, each judged on its own
