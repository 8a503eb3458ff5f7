"""``--provider auto`` (the default): local, or netns for an experiment whose result needs delayed links."""

import pytest

from harness import reproduce as reproduce_mod
from harness.catalogue import load_paper
from harness.errors import HarnessError
from harness.plan import make_plan
from harness.providers.netns import NetnsProvider


def _plan(paper_id: str, experiment_id: str):
    paper = load_paper(paper_id)
    experiment = paper.experiment(experiment_id)
    return experiment, make_plan(paper, experiment, "smoke")


def test_an_experiment_without_delays_runs_locally():
    experiment, plan = _plan("fastfabric", "fig6-peer-throughput")
    assert reproduce_mod.auto_provider(experiment, plan) == ("local", "no delayed links")


def test_fixed_link_delays_need_separate_hosts():
    experiment, plan = _plan("bftsmart-orderer", "fig7-geo-latency")
    where, why = reproduce_mod.auto_provider(experiment, plan)
    assert where == "netns" and "fixed delays" in why


def test_a_latency_sweep_needs_separate_hosts():
    experiment, plan = _plan("fujitsu-api", "fig5-network-latency")
    assert not reproduce_mod.has_fixed_delays(experiment), "Fig. 5's delay comes from its points, not fixed links"
    where, why = reproduce_mod.auto_provider(experiment, plan)
    assert where == "netns" and "network_latency_ms" in why


def test_explicit_local_still_refuses_fixed_delays_but_auto_does_not_skip_them():
    experiment, _ = _plan("bftsmart-orderer", "fig7-geo-latency")
    assert "local provider cannot apply" in reproduce_mod.skip_reason(experiment, provider="local")
    assert reproduce_mod.skip_reason(experiment, provider="auto") is None


def test_where_netns_cannot_work_the_error_names_the_experiments_need(monkeypatch):
    """One experiment asked for: the error says why it needed netns and why netns cannot work (no run made)."""
    def refuse(self):
        raise HarnessError("the netns provider needs root (it creates network namespaces)", hint="run as root")
    monkeypatch.setattr(NetnsProvider, "check", refuse)
    monkeypatch.setattr(reproduce_mod, "require_tool", lambda name: None)
    made = []
    monkeypatch.setattr(reproduce_mod.Run, "create", lambda *a, **k: made.append(a) or pytest.fail("no run dir"))
    with pytest.raises(HarnessError) as caught:
        reproduce_mod.reproduce("fujitsu-api", "fig5-network-latency", build="reference")
    text = str(caught.value)
    assert "needs the netns provider (it sweeps network_latency_ms" in text
    assert "needs root" in text and "hint: run as root" in text
    assert not made

