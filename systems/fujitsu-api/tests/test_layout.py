"""The Fujitsu paper's Fig. 5 network without running it: one host per PBFT peer
(driver chaincode-api-hosts of systems/fujitsu-api) and the point's delay on every
link between the peers (harness.reproduce.network_links with the points'
network_latency_ms). Fast: no build, no network."""

from __future__ import annotations

import pytest

from harness.builds import Choice, upstream_driver
from harness.catalogue import load_paper
from harness.plan import make_plan
from harness.providers.local import LocalProvider
from harness.reproduce import _not_deployed, network_links, point_latency
from harness.errors import HarnessError


def _fig5():
    paper = load_paper("fujitsu-api")
    return paper, paper.experiment("fig5-network-latency")


def test_one_host_per_peer_and_a_client():
    spec = upstream_driver("fujitsu-api", "chaincode-api-hosts")
    hosts = Choice("upstream", {"fujitsu-api": spec}).layout()
    assert hosts == {**{f"peer{i}": ["fujitsu_api_peer", "fujitsu_api_chaincode"] for i in range(4)},
                     "client": ["fujitsu_api_client"]}
    _, experiment = _fig5()
    assert _not_deployed(experiment, hosts) == {}  # peer0..peer3 are the topology's 4 peers
    assert _not_deployed({"topology": {"peer": 4, "kafka": 3}}, hosts) == {"kafka": 3}


@pytest.mark.parametrize("delay", [0.0, 32.0])
def test_every_link_between_peers_gets_the_points_delay_on_the_pbft_port(delay):
    _, experiment = _fig5()
    hosts = Choice("upstream", {"fujitsu-api": upstream_driver("fujitsu-api", "chaincode-api-hosts")}).layout()
    links = network_links(experiment, hosts, delay)
    assert {(l["from"], l["to"]) for l in links} == {(f"peer{i}", f"peer{j}") for i in range(4) for j in range(4)
                                                       if i != j}
    # 0 ms is kept (the proxies must exist so a later point can set its delay); only the gRPC port is delayed
    assert all(l["delay_ms"] == delay and l["ports"] == [7051] for l in links)
    # the client dials the peers' REST API directly: no link from or to it
    assert not [l for l in links if "client" in (l["from"], l["to"])]


def test_the_plan_starts_the_links_at_the_first_points_delay():
    paper, experiment = _fig5()
    plan = make_plan(paper, experiment, "smoke")
    assert sorted({p.parameters["network_latency_ms"] for p in plan.points}) == [0, 32, 64]
    assert point_latency(plan) == plan.points[0].parameters["network_latency_ms"]
    assert {p.parameters["nodes"] for p in plan.points} == {4}


def test_local_provider_records_the_delay_as_not_applied():
    p = LocalProvider()
    p.apply_links([{"from": "peer0", "to": "peer1", "delay_ms": 0.0, "ports": [7051]}])
    out = p.set_link_delay(32.0)
    assert out[0]["delay_ms"] == 32.0 and out[0]["applied"] is False


def test_a_provider_that_cannot_change_the_delay_says_so():
    p = LocalProvider()
    with pytest.raises(HarnessError, match="cannot change the links' delay"):
        p.set_link_delay(4.0)  # no links recorded: apply_links never ran
