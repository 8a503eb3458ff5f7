"""The network's configuration by release (systems/fabric-3.1/network.py): crypto-config.yaml,
configtx.yaml (3-node Raft on v2.5 and v3.1, 4-node BFT on v3.1), orderer.yaml and core.yaml, each
checked against that release's keys (infra/upstream_keys/fabric-<release>/, infra/config_keys.py).

Fast: the samples come out of the snapshots (one read per release; skipped with the reason without
../shared/upstream), nothing is built or started."""

import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from harness import systems, upstream

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "infra"))
from config_keys import check_rendered  # noqa: E402  (infra/ is not a package)

systems.plugin("fabric-3.1")  # registers the package fabricrepro_systems.fabric_3_1
from fabricrepro_systems.fabric_3_1 import network  # noqa: E402

CASES = [("2.5", "etcdraft"), ("3.1", "etcdraft"), ("3.1", "BFT")]
_SAMPLES: dict = {}


def samples(release):
    if release not in _SAMPLES:
        recipe = upstream.load_recipe(f"fabric-{release}")
        why = upstream.source_available(recipe, "snapshot")
        if why:
            pytest.skip(f"no snapshot of fabric-{release}: {why}")
        archive, _ = upstream.snapshot_archive(recipe)
        out = {}
        with tarfile.open(archive) as tar:
            for member in tar:
                rel = member.name.split("/", 1)[-1]
                if rel in ("sampleconfig/orderer.yaml", "sampleconfig/core.yaml"):
                    out[rel.split("/")[1]] = yaml.safe_load(tar.extractfile(member).read())
                    if len(out) == 2:
                        break
        _SAMPLES[release] = out
    return _SAMPLES[release]


def rendered(release, consensus):
    net = network.layout(release, consensus)
    s = samples(release)
    return net, {"crypto-config.yaml": network.crypto_config(net),
                 "configtx.yaml": network.configtx(net, "/c"),
                 "orderer.yaml": network.orderer_yaml(s["orderer.yaml"], net, net.orderers[0], "/c", "/d"),
                 "core.yaml": network.core_yaml(s["core.yaml"], net, net.peer, "/c", "/d", "/b")}


@pytest.mark.parametrize("release,consensus", CASES)
def test_every_file_has_only_keys_the_release_reads_and_those_it_requires(release, consensus):
    _, files = rendered(release, consensus)
    for name, doc in files.items():
        assert check_rendered(name, yaml.safe_dump(doc), [f"fabric-{release}"]) == [], (release, consensus, name)


def test_raft_is_three_consenters_with_cluster_tls_and_bft_four_with_v3_capability():
    for release in ("2.5", "3.1"):
        net, files = rendered(release, "etcdraft")
        orderer = files["configtx.yaml"]["Profiles"]["Channel"]["Orderer"]
        consenters = orderer["EtcdRaft"]["Consenters"]
        assert len(consenters) == 3 and all(c["ClientTLSCert"].endswith("tls/server.crt") for c in consenters)
        assert [c["Port"] for c in consenters] == [o.cluster_port for o in net.orderers]
        assert "ConsenterMapping" not in orderer
        o = files["orderer.yaml"]
        assert o["General"]["TLS"]["Enabled"] and o["Admin"]["TLS"]["ClientAuthRequired"]
        assert o["General"]["Cluster"]["ListenPort"] == net.orderers[0].cluster_port
    net, files = rendered("3.1", "BFT")
    profile = files["configtx.yaml"]["Profiles"]["Channel"]
    assert profile["Capabilities"] == {"V3_0": True}
    assert [m["ID"] for m in profile["Orderer"]["ConsenterMapping"]] == [1, 2, 3, 4]
    assert "Addresses" not in profile["Orderer"] and "EtcdRaft" not in profile["Orderer"]
    assert files["configtx.yaml"]["Profiles"]["Channel"]["Orderer"]["Organizations"][0]["OrdererEndpoints"] == \
        [o.address for o in net.orderers]


def test_release_differences():
    _, v25 = rendered("2.5", "etcdraft")
    _, v31 = rendered("3.1", "etcdraft")
    assert v25["orderer.yaml"]["General"]["BootstrapMethod"] == "none"  # no system channel
    assert "BootstrapMethod" not in v31["orderer.yaml"]["General"]  # v3 has none to choose
    assert v25["configtx.yaml"]["Profiles"]["Channel"]["Capabilities"] == {"V2_0": True}
    crypto = {**v25["crypto-config.yaml"]}
    crypto["PeerOrgs"][0]["Template"]["PublicKeyAlgorithm"] = "ed25519"  # cryptogen's since v3.0 only
    assert check_rendered("crypto-config.yaml", yaml.safe_dump(crypto), ["fabric-2.5"])
    assert check_rendered("crypto-config.yaml", yaml.safe_dump(crypto), ["fabric-3.1"]) == []
    with pytest.raises(ValueError, match="etcdraft, not 'BFT'"):
        network.layout("2.5", "BFT")


def test_a_key_the_release_does_not_read_is_refused():
    net, files = rendered("3.1", "etcdraft")
    files["configtx.yaml"]["Profiles"]["Channel"]["Orderer"]["Kafka"] = {"Brokers": ["x:9092"]}
    assert check_rendered("configtx.yaml", yaml.safe_dump(files["configtx.yaml"]), ["fabric-3.1"])
    with pytest.raises(KeyError, match="not in the release's sample"):
        network._set(files["orderer.yaml"], "General.BootstrapMethod", "none")
