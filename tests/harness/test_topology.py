"""The paper's topology laid out host by host (harness/topology.py), its placement and its links."""

import pytest

from harness.errors import HarnessError
from harness.providers.local import LocalProvider
from harness.providers.netns import NetnsProvider
from harness.reproduce import lay_out_run, network_links
from harness.topology import as_layout, lay_out, placement_deviations, placement_table

# FastFabric's Table I (seed 000, line 259) and the roles its two columns' upstream drivers place components on
TABLE1 = {"orderer": 1, "kafka": 3, "zookeeper": 3, "peer": 1, "storage": 1, "endorser": 5, "client": 1}
TABLE1_ROLES = {"zookeeper": ["zookeeper"], "kafka": ["kafka"], "orderer": ["fabric_orderer", "fastfabric_orderer"],
                "peer": ["fabric_peer", "fastfabric_deliver"], "client": ["loadgen", "fastfabric_broadcast"],
                "storage": ["fastfabric_storage"]}


def test_table1_is_fifteen_hosts_each_instance_its_own():
    layout = lay_out(TABLE1, TABLE1_ROLES)
    names = [h.name for h in layout.hosts]
    assert len(names) == 15 == len(set(names))
    # ZooKeeper's and Kafka's roles deal their instances over their group's hosts (meta/preflight.yml)
    assert [n for n in names if n.startswith(("kafka", "zookeeper"))] == \
        ["zookeeper-0", "zookeeper-1", "zookeeper-2", "kafka-0", "kafka-1", "kafka-2"]
    assert layout.counts() == TABLE1
    # the endorsers: laid out (the paper had the servers), idle, and said so
    assert [h.components for h in layout.hosts if h.role == "endorser"] == [()] * 5
    assert layout.deviations == ["endorser: the paper's 5 hosts are laid out idle: this build places no "
                                 "component there"]
    groups = layout.groups({h.name: h.name for h in layout.hosts})
    assert groups["kafka"] == ["kafka-0", "kafka-1", "kafka-2"] and groups["fabric_peer"] == ["peer"]


def test_a_component_that_runs_every_instance_on_one_host_keeps_one_host_and_says_so():
    layout = lay_out({"peer": 4, "client": 1}, {"peer": ["fabric_peer"], "client": ["loadgen"]})
    assert [h.name for h in layout.hosts] == ["peer", "client"]
    assert layout.deviations == ["peer: the paper's 4 hosts are 1 here: fabric_peer runs every instance on one host"]


def test_roles_split_per_instance_cover_the_topology_role():
    # Fujitsu's Fig. 5 driver places one PBFT peer per role peer0..peer3 for the topology's peer: 4
    roles = {f"peer{i}": ["fujitsu_api_peer"] for i in range(4)} | {"client": ["fujitsu_api_client"]}
    layout = lay_out({"peer": 4, "client": 1}, roles)
    assert [h.name for h in layout.hosts] == ["peer0", "peer1", "peer2", "peer3", "client"]
    assert layout.deviations == []


def test_a_plain_dict_is_one_host_per_role():
    layout = as_layout({"orderer": ["orderer"], "client": ["loadgen", "blockwatch"]})
    assert layout.by_name() == {"orderer": ["orderer"], "client": ["loadgen", "blockwatch"]}


def test_placement_says_which_hosts_share_one():
    layout = lay_out(TABLE1, TABLE1_ROLES)
    everything_here = {h.name: "localhost" for h in layout.hosts}
    assert placement_deviations(layout, everything_here, "local") == [
        "the local provider puts all 15 hosts of the topology on one machine (localhost)"]
    kafka_on_one = {h.name: ("k" if h.role == "kafka" else h.name) for h in layout.hosts}
    assert placement_deviations(layout, kafka_on_one, "ssh") == ["kafka-0, kafka-1, kafka-2 share k (ssh provider)"]
    assert placement_deviations(layout, {h.name: h.name for h in layout.hosts}, "netns") == []
    table = placement_table(layout, kafka_on_one)
    assert "  kafka-1     -> k  [kafka]" in table and "  endorser-4  -> endorser-4  [idle]" in table


def test_links_of_the_switch_join_every_pair_of_hosts_not_sharing_one():
    layout = lay_out(TABLE1, TABLE1_ROLES)
    experiment = {"id": "table1", "network": {"rate_mbit": 1000}}
    links = network_links(experiment, layout)
    assert len(links) == 15 * 14 and all(link["rate_mbit"] == 1000 for link in links)
    kafka_on_one = {h.name: ("k" if h.role == "kafka" else h.name) for h in layout.hosts}
    assert len(network_links(experiment, layout, placed=kafka_on_one)) == 15 * 14 - 6


class _Choice:
    def __init__(self, roles):
        self.roles = roles

    def layout(self):
        return self.roles


def test_the_run_records_its_placement_and_strict_topology_refuses_one_machine():
    experiment = {"id": "table1-end-to-end", "topology": TABLE1}
    said = []
    layout, placed, record = lay_out_run(experiment, _Choice(TABLE1_ROLES), LocalProvider(), said.append)
    assert said[0] == "table1-end-to-end: 15 hosts of the topology on 1 local host(s):"
    assert record["placement"] == placed and set(placed.values()) == {"localhost"}
    assert record["published"] == TABLE1 and record["laid_out"] == TABLE1
    assert "the local provider puts all 15 hosts of the topology on one machine (localhost)" in record["deviations"]
    strict = LocalProvider()
    strict.strict_topology = True
    with pytest.raises(HarnessError, match="--strict-topology: table1-end-to-end lays out 15 hosts"):
        lay_out_run(experiment, _Choice(TABLE1_ROLES), strict)
    # netns gives every host of the layout a namespace of its own: nothing to refuse
    netns = NetnsProvider()
    netns.strict_topology = True
    _, placed, record = lay_out_run(experiment, _Choice(TABLE1_ROLES), netns)
    assert len(set(placed.values())) == 15 and record["deviations"] == layout.deviations


def test_a_role_the_paper_does_not_count_gets_a_host_and_a_deviation():
    # FastFabric's Fig. 6: a single committer (topology {peer: 1}); the published benchmark offloads to its storage server
    layout = lay_out({"peer": 1}, {"peer": ["fastfabric_peerbench"], "storage": ["fastfabric_storage"]})
    assert [h.name for h in layout.hosts] == ["peer", "storage"]
    assert layout.deviations == ["storage: not a server of the paper's topology; this build's driver places "
                                 "fastfabric_storage on a host of its own"]
