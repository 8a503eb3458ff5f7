"""The upstream Fabric v1.2.0 network with its Kafka ordering service: the driver
end-to-end-kafka of systems/fabric-1.2/upstream.yaml (systems/fabric-1.2/playbooks/fabric-end-to-end.yml
with the zookeeper and kafka roles), then teardown.yml, run the way
harness/runner.py runs a point with ``orderer_type=kafka``.

Kept cheap for CI: one ZooKeeper server and one broker (replication factor 1)
instead of FastFabric's 3 + 3 with replication 3, and 200 transfers. The Kafka
1.0.2 jars come from Maven Central into build/kafka-1.0.2 (fetched once by the
roles). The Fabric build, the clients and the helpers are
tests/upstream/test_fabric_network.py's.

    pytest systems/fabric-1.2/tests/test_kafka.py -s
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
import yaml

from harness.deploy import run_playbook
from harness.errors import HarnessError
from tests.upstream.test_fabric_network import (  # noqa: F401  (fabric_build, clients: fixtures)
    assert_every_transfer_valid, check_rendered, clients, fabric_build, fabric_skip_reason, pid_files, point_setup,
    run_watched)

TRANSFERS = 200
# One server, one broker: replication 1 (the paper's 3 + 3, replication 3, is a benchmark, not a test).
SMALL_CLUSTER = {"zookeeper_servers": 1, "kafka_brokers": 1, "kafka_replication_factor": 1}
# Keys the roles write that the stock-sample key lists (infra/upstream_keys/{kafka-1.0,zookeeper-3.4})
# lack: Kafka 1.0 reads controlled.shutdown.enable (the broker's own log below names any key it
# does not know); ZooKeeper 3.4.10 takes admin.enableServer as a system property and ignores it.
UNLISTED_KEYS = {"server.properties": {"controlled.shutdown.enable"}, "zoo.cfg": {"admin.enableServer"}}


def _kafka_skip_reason() -> str | None:
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (Kafka and ZooKeeper run on Java; Maven fetches their jars)"
    return fabric_skip_reason()


pytestmark = [pytest.mark.skipif(_kafka_skip_reason() is not None, reason=_kafka_skip_reason() or ""), pytest.mark.network]


def test_kafka_orderer_type_needs_the_kafka_driver(tmp_path, clients, fabric_build):
    """orderer_type=kafka with the solo driver's hosts stops before anything starts, naming the driver."""
    spec, inventory, variables, point_dir = point_setup(tmp_path, "end-to-end", clients, fabric_build, orderer_type="kafka")
    with pytest.raises(HarnessError) as failure:
        run_playbook(spec["playbook"], inventory, variables, point_dir / "logs" / "ansible-run.log", timeout=300)
    assert "end-to-end-kafka" in str(failure.value) + (point_dir / "logs" / "ansible-run.log").read_text()
    assert not pid_files(tmp_path / "work"), "nothing should have started"


def test_fabric_network_on_kafka_commits_every_transfer(tmp_path, clients, fabric_build):
    spec, inventory, variables, point_dir = point_setup(tmp_path, "end-to-end-kafka", clients, fabric_build,
                                                        transactions=TRANSFERS, orderer_type="kafka")
    assert spec["roles"].index("zookeeper") < spec["roles"].index("kafka") < spec["roles"].index("fabric_orderer")
    variables.update(SMALL_CLUSTER)
    logs = point_dir / "logs"
    watch, rendered, elapsed = run_watched(tmp_path, spec, inventory, variables, point_dir, 600,
                                           ["work/**/orderer.yaml", "work/**/server.properties", "work/**/zoo.cfg",
                                            "controller/**/configtx.yaml"])
    names = {Path(f).name for f in watch.pids.values()}
    assert {"zookeeper.pid", "zookeeper-0.pid", "kafka.pid", "kafka-0.pid", "fabric_orderer.pid"} <= names, names

    # The configuration: Kafka in the genesis block, the sample's Kafka section for the
    # orderer, and only keys the versions read.
    assert sorted(rendered) == ["configtx.yaml", "orderer.yaml", "server.properties", "zoo.cfg"], sorted(rendered)
    configtx = yaml.safe_load(rendered["configtx.yaml"])
    assert configtx["Orderer"]["OrdererType"] == "kafka"
    assert configtx["Orderer"]["Kafka"]["Brokers"] == ["127.0.0.1:9092"]
    assert yaml.safe_load(rendered["orderer.yaml"])["Kafka"]["Version"] == "1.0.0"
    for name, text in rendered.items():
        problems = [p for p in check_rendered(name, text, ["fabric-1.2", "kafka-1.0", "zookeeper-3.4"])
                    if not any(p.startswith(f"{name}: unknown key {key} ") for key in UNLISTED_KEYS.get(name, ()))]
        assert problems == [], (name, problems)
    props = dict(line.split("=", 1) for line in rendered["server.properties"].splitlines()
                 if line and not line.startswith("#"))
    assert props["unclean.leader.election.enable"] == "false" and props["default.replication.factor"] == "1"
    assert int(props["message.max.bytes"]) > configtx["Orderer"]["BatchSize"]["AbsoluteMaxBytes"]

    # Every server bound the host's own address, ZooKeeper and the broker included.
    bound = {name: sorted(a for n, a in watch.listeners if n == name) for name, _ in watch.listeners}
    print(f"listeners: {bound}")
    assert all(addr.startswith("127.0.0.1:") for _, addr in watch.listeners), bound
    assert bound.get("zookeeper-0") == ["127.0.0.1:2181"], bound
    assert bound.get("kafka-0") == ["127.0.0.1:9092"], bound

    # The broker knew every key it was given; the orderer ran both channels on Kafka.
    host_logs = logs / "localhost"
    broker_log = (host_logs / "kafka-0.log").read_text(errors="replace")
    assert "started (kafka.server.KafkaServer)" in broker_log
    assert "isn't a known config" not in broker_log, re.findall(r".*isn't a known config.*", broker_log)
    orderer_log = (host_logs / "fabric_orderer.log").read_text(errors="replace")
    for channel in ("fabricrepro-sys", "mychannel"):
        assert f"[channel: {channel}] Start phase completed successfully" in orderer_log, channel
    # Kafka's segment files (<offset>.log) were removed before teardown fetched the logs.
    assert not [p.name for p in host_logs.iterdir() if re.fullmatch(r"\d{20}\.log", p.name)]

    # Every transfer acknowledged, committed and valid (the block watcher's deliveries.csv).
    txs, _, _, transfer_blocks = assert_every_transfer_valid(point_dir, TRANSFERS)

    span_s = (transfer_blocks["arrival_ns"].max() - txs["submitted_ns"].min()) / 1e9
    load = os.getloadavg()
    print(f"kafka (1 ZooKeeper, 1 broker): {TRANSFERS} transfers valid in {len(transfer_blocks)} blocks, "
          f"{TRANSFERS / span_s:.0f} tx/s; playbook {elapsed:.0f} s; "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
