"""The driver's release differences, v2.2 to v3.1 (systems/fabric-3.1/README.md, "Releases"), without a build:

- before v2.3 (no channel participation API) the orderers bootstrap from a system channel's genesis block
  (configtxgen profile ``SystemChannel`` with a consortium, orderer.yaml ``BootstrapMethod: file``) and the
  channel comes from a creation transaction (profile ``Channel`` with ``Consortium``); from v2.3 the orderers
  join configtxgen's channel block through the participation API (``BootstrapMethod: none`` on v2.x);
- every release runs the chaincode through our external builder (``files/ccaas_builder``: the built-in
  ``ccaas`` builder came with v2.4.1), and the builder passes connection.json through;
- v2.2-v2.4 get CA certificates with low-S signatures only (their MSP's sanitation bug with Go >= 1.19);
- the recipes' lines are those the driver was run on.

Fast (under 2 s): network.py on hand-made samples, network_files.write with the binaries stubbed; the real
v2.2.15 / v2.3.0 samples where a clone of hyperledger/fabric is at hand (invoke regress's, or a mirror named
by FABRICREPRO_FABRIC_GIT), skipped otherwise."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from harness import systems, upstream

systems.plugin("fabric-3.1")  # registers the package fabricrepro_systems.fabric_3_1
from fabricrepro_systems.fabric_3_1 import network, network_files  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
BUILDER = REPO / "systems" / "fabric-3.1" / "files" / "ccaas_builder" / "bin"
#: What the recipes build and the driver configures (each line run end to end: README, "Releases").
LINES = {"fabric-3.1": ["3.0", "3.1"], "fabric-2.5": ["2.2", "2.3", "2.4", "2.5"]}


def _sample_orderer(participation: bool) -> dict:
    """The keys orderer_yaml sets, as a release's sample has them (Admin and ChannelParticipation from v2.3)."""
    doc = {"General": {"ListenAddress": "", "ListenPort": 0, "TLS": {k: None for k in (
               "Enabled", "PrivateKey", "Certificate", "RootCAs", "ClientAuthRequired")},
               "Cluster": {k: None for k in ("ListenAddress", "ListenPort", "ServerCertificate", "ServerPrivateKey",
                                             "ClientCertificate", "ClientPrivateKey")},
               "BootstrapMethod": "file", "BootstrapFile": "", "LocalMSPDir": "", "LocalMSPID": ""},
           "FileLedger": {"Location": ""}, "Operations": {"ListenAddress": ""},
           "Consensus": {"WALDir": "", "SnapDir": ""}}
    if participation:
        doc["Admin"] = {"ListenAddress": "", "TLS": {k: None for k in (
            "Enabled", "Certificate", "PrivateKey", "ClientAuthRequired", "ClientRootCAs")}}
        doc["ChannelParticipation"] = {"Enabled": False}
    return doc


def _sample_core() -> dict:
    peer = {k: "" for k in ("id", "listenAddress", "address", "mspConfigPath", "localMspId", "fileSystemPath")}
    peer["gossip"] = {"bootstrap": "", "endpoint": "", "externalEndpoint": ""}
    peer["tls"] = {"enabled": False, "cert": {}, "key": {}, "rootcert": {}}
    return {"peer": peer, "operations": {"listenAddress": ""}, "vm": {"endpoint": "unix:///var/run/docker.sock"},
            "chaincode": {"externalBuilders": []}}


def test_the_recipes_lines_are_the_releases_the_driver_configures():
    for system, lines in LINES.items():
        recipe = upstream.load_recipe(system)
        assert upstream.release_lines(recipe["toolchain"]["release"]) == lines
        assert all(line in network.RELEASES for line in lines)
    assert "osnadmin" not in upstream.load_recipe("fabric-2.5")["targets"]  # v2.2 has no cmd/osnadmin
    assert [r for r in network.RELEASES if network.system_channel(r)] == ["2.2"]
    assert [r for r in network.RELEASES if "BFT" in network.CONSENSUS[r]] == ["3.0", "3.1"]
    with pytest.raises(ValueError, match="etcdraft, not 'BFT'"):
        network.layout("2.4", "BFT")
    with pytest.raises(ValueError, match="one of"):
        network.layout("2.1", "etcdraft")


def test_before_v23_the_orderers_bootstrap_from_a_system_channel():
    net = network.layout("2.2", "etcdraft")
    tx = network.configtx(net, "/c")
    system, channel = tx["Profiles"]["SystemChannel"], tx["Profiles"]["Channel"]
    assert system["Orderer"]["OrdererType"] == "etcdraft" and len(system["Orderer"]["EtcdRaft"]["Consenters"]) == 3
    assert system["Orderer"]["Addresses"] == [o.address for o in net.orderers]
    members = system["Consortiums"][network.CONSORTIUM]["Organizations"]
    assert [m["ID"] for m in members] == [network.PEER_MSP]
    assert channel["Consortium"] == network.CONSORTIUM and "Orderer" not in channel
    assert channel["Application"]["Capabilities"] == {"V2_0": True} and channel["Capabilities"] == {"V2_0": True}
    doc = network.orderer_yaml(_sample_orderer(False), net, net.orderers[0], "/c", "/d", bootstrap_file="/o/system.block")
    assert doc["General"]["BootstrapMethod"] == "file" and doc["General"]["BootstrapFile"] == "/o/system.block"
    assert "Admin" not in doc and "ChannelParticipation" not in doc
    with pytest.raises(ValueError, match="bootstraps from a system channel"):
        network.orderer_yaml(_sample_orderer(False), net, net.orderers[0], "/c", "/d")


@pytest.mark.parametrize("release,method,app", [("2.3", "none", "V2_0"), ("2.4", "none", "V2_0"), ("2.5", "none", "V2_5"),
                                                ("3.0", None, "V2_5")])
def test_from_v23_the_orderers_join_by_channel_participation(release, method, app):
    net = network.layout(release, "etcdraft")
    tx = network.configtx(net, "/c")
    assert list(tx["Profiles"]) == ["Channel"] and "Consortium" not in tx["Profiles"]["Channel"]
    assert tx["Profiles"]["Channel"]["Application"]["Capabilities"] == {app: True}
    assert tx["Profiles"]["Channel"]["Capabilities"] == ({"V3_0": True} if release == "3.0" else {"V2_0": True})
    assert ("Addresses" in tx["Profiles"]["Channel"]["Orderer"]) == (release != "3.0")
    sample = _sample_orderer(True)
    if method is None:  # v3 has no BootstrapMethod
        del sample["General"]["BootstrapMethod"], sample["General"]["BootstrapFile"]
    doc = network.orderer_yaml(sample, net, net.orderers[0], "/c", "/d")
    assert doc["General"].get("BootstrapMethod") == method
    assert doc["ChannelParticipation"]["Enabled"] and doc["Admin"]["TLS"]["ClientAuthRequired"]


@pytest.mark.parametrize("release", ["2.2", "2.3", "2.4"])
def test_releases_before_the_builtin_ccaas_builder_run_ours(release):
    net = network.layout(release, "etcdraft")
    doc = network.core_yaml(_sample_core(), net, net.peer, "/c", "/d", "/p/ccaas_builder")
    assert doc["chaincode"]["externalBuilders"] == [{"name": "ccaas", "path": "/p/ccaas_builder"}]
    assert doc["vm"]["endpoint"] == ""


@pytest.mark.skipif(not shutil.which("sh"), reason="needs sh")
def test_our_external_builder_passes_connection_json_through(tmp_path):
    src, meta, build, release = (tmp_path / d for d in ("src", "meta", "build", "release"))
    for d in (src, meta, build, release):
        d.mkdir()
    connection = {"address": "127.0.0.1:7055", "dial_timeout": "10s", "tls_required": False}
    (src / "connection.json").write_text(json.dumps(connection))
    (meta / "metadata.json").write_text(json.dumps({"type": "ccaas", "label": "money-transfer_1.0"}))

    def step(name, *args):
        return subprocess.run(["sh", str(BUILDER / name), *map(str, args)], capture_output=True, text=True).returncode

    assert step("detect", src, meta) == 0
    assert step("build", src, meta, build) == 0
    assert step("release", build, release) == 0
    assert json.loads((release / "chaincode" / "server" / "connection.json").read_text()) == connection
    (meta / "metadata.json").write_text(json.dumps({"type": "golang", "label": "other_1.0"}))
    assert step("detect", src, meta) != 0  # another type is the peer's other builders'
    (src / "connection.json").unlink()
    assert step("build", src, meta, build) != 0


def _stub_binaries(monkeypatch, calls):
    """cryptogen and configtxgen stubbed: what network_files.write copies out of their output, and a record."""
    def run(argv):
        argv = [str(a) for a in argv]
        calls.append(argv)
        out = Path(argv[argv.index("--output") + 1]) if "--output" in argv else None
        if out:  # cryptogen
            user = out / f"peerOrganizations/{network.PEER_DOMAIN}/users/User1@{network.PEER_DOMAIN}/msp"
            user.mkdir(parents=True)
            for d in ("peerOrganizations/org1.example.com/peers/peer0.org1.example.com",
                      "ordererOrganizations/example.com/orderers/orderer0.example.com"):
                (out / d / "tls").mkdir(parents=True)
                (out / d / "tls" / "ca.crt").write_text("ca")
        for flag in ("-outputBlock", "-outputCreateChannelTx"):
            if flag in argv:
                Path(argv[argv.index(flag) + 1]).write_bytes(b"block")
    monkeypatch.setattr(network_files, "_run", run)


def _spec(tmp_path, release):
    build = tmp_path / "build"
    samples = network_files.sample_tree(build)
    samples.mkdir(parents=True)
    (samples / "orderer.yaml").write_text(yaml.safe_dump(_sample_orderer(not network.system_channel(release))))
    (samples / "core.yaml").write_text(yaml.safe_dump(_sample_core()))
    dirs = {f"orderer{i}": f"/h/o{i}" for i in range(3)} | {"peer0": "/h/p"}
    return {"release": release, "ordering": "etcdraft", "build": str(build), "out": str(tmp_path / "out"),
            "orderer_hosts": ["127.0.0.1"], "peer_host": "127.0.0.1", "node_dirs": dirs}


def test_network_files_before_v23_make_a_system_channel_and_a_creation_transaction(tmp_path, monkeypatch):
    calls = []
    _stub_binaries(monkeypatch, calls)
    doc = network_files.write(_spec(tmp_path, "2.2"))
    out = tmp_path / "out"
    configtxgen = [c for c in calls if c[0].endswith("configtxgen")]
    assert [c[c.index("-profile") + 1] for c in configtxgen] == ["SystemChannel", "Channel"]
    assert configtxgen[0][configtxgen[0].index("-channelID") + 1] == network.SYSTEM_CHANNEL
    assert "-outputCreateChannelTx" in configtxgen[1] and (out / "channel.tx").is_file()
    assert not (out / "channel.block").exists() and not (out / "crypto-client" / "genesis.block").exists()
    assert (doc["bootstrap"], doc["orderer_block"], doc["peer_channel_file"]) == \
        ("system_channel", "system.block", "channel.tx")
    orderer = yaml.safe_load((out / "nodes" / "orderer1" / "orderer.yaml").read_text())
    assert orderer["General"]["BootstrapFile"] == "/h/o1/system.block"
    core = yaml.safe_load((out / "nodes" / "peer0" / "core.yaml").read_text())
    assert core["chaincode"]["externalBuilders"] == [{"name": "ccaas", "path": "/h/p/ccaas_builder"}]


def test_network_files_from_v23_make_the_channel_block(tmp_path, monkeypatch):
    calls = []
    _stub_binaries(monkeypatch, calls)
    doc = network_files.write(_spec(tmp_path, "2.3"))
    configtxgen = [c for c in calls if c[0].endswith("configtxgen")]
    assert len(configtxgen) == 1 and "-outputBlock" in configtxgen[0]
    assert (doc["bootstrap"], doc["orderer_block"], doc["peer_channel_file"]) == \
        ("participation", "channel.block", "channel.block")
    assert (tmp_path / "out" / "crypto-client" / "genesis.block").read_bytes() == b"block"


def test_v22_to_v24_draw_crypto_until_every_ca_signature_has_a_low_s(tmp_path, monkeypatch):
    runs = []
    monkeypatch.setattr(network_files, "_run", lambda argv: runs.append(argv))
    high = iter([["ca"], ["tlsca"], []])
    monkeypatch.setattr(network_files, "high_s_cas", lambda crypto: next(high))
    assert network_files.generate_crypto(Path("cryptogen"), Path("c.yaml"), tmp_path / "crypto", "2.4") == 3
    monkeypatch.setattr(network_files, "high_s_cas", lambda crypto: ["ca"])  # never asked on v2.5
    assert network_files.generate_crypto(Path("cryptogen"), Path("c.yaml"), tmp_path / "crypto", "2.5") == 1
    assert [network.needs_low_s_cas(r) for r in network.RELEASES] == [True, True, True, False, False, False]


def test_the_signature_s_of_a_certificate():
    ec = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.ec")
    from datetime import datetime, timedelta, timezone

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ca.example.com")])
    now = datetime.now(timezone.utc)
    for _ in range(4):
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                .serial_number(x509.random_serial_number()).not_valid_before(now)
                .not_valid_after(now + timedelta(days=1)).sign(key, hashes.SHA256()))
        pem = cert.public_bytes(serialization.Encoding.PEM).decode()
        assert network_files.signature_s(pem) == decode_dss_signature(cert.signature)[1]


def _fabric_git() -> Path | None:
    for path in (os.environ.get("FABRICREPRO_FABRIC_GIT"), REPO / "build" / "regress" / "repos" / "hyperledger+fabric.git"):
        if path and Path(path).is_dir():
            return Path(path)
    return None


@pytest.mark.parametrize("tag,release", [("v2.2.15", "2.2"), ("v2.3.0", "2.3")])
def test_the_real_samples_have_every_key_written(tag, release):
    git = _fabric_git()
    if git is None or not shutil.which("git"):
        pytest.skip("no clone of hyperledger/fabric (invoke regress's, or FABRICREPRO_FABRIC_GIT)")

    def sample(name):
        r = subprocess.run(["git", "-C", str(git), "show", f"{tag}:sampleconfig/{name}"], capture_output=True, text=True)
        if r.returncode:
            pytest.skip(f"{tag} not in {git}: {r.stderr.strip()}")
        return yaml.safe_load(r.stdout)

    net = network.layout(release, "etcdraft")
    boot = "/o/system.block" if network.system_channel(release) else ""
    orderer = network.orderer_yaml(sample("orderer.yaml"), net, net.orderers[0], "/c", "/d", bootstrap_file=boot)
    assert ("Admin" in orderer) == (release != "2.2")  # the participation API came with v2.3
    network.core_yaml(sample("core.yaml"), net, net.peer, "/c", "/d", "/b")  # a KeyError names an unread key


def test_a_build_whose_tree_is_of_another_line_is_refused(tmp_path, monkeypatch):
    """network-files (and the smoke) check the build's tree's Makefile (BASE_VERSION before v2.5.0, FABRIC_VER
    after) against the release the build recorded: a build of another line's tree is refused."""
    _stub_binaries(monkeypatch, [])
    spec = _spec(tmp_path, "2.5")
    makefile = network_files.sample_tree(Path(spec["build"])).parent / "Makefile"
    makefile.write_text("FABRIC_VER ?= 3.1.2\nPROJECT_VERSION=$(FABRIC_VER)-snapshot\n")
    with pytest.raises(network_files.HarnessError, match=r"made as release 2\.5\.x, but its tree's Makefile says 3\.1\.2"):
        network_files.write(spec)
    makefile.write_text("BASE_VERSION = 2.5.16\n")  # not how v2.5 states it, but the line is right
    assert network_files.write(spec)["release"] == "2.5"
    makefile.write_text("BASE_VERSION = 2.2.15\n")
    assert network_files.tree_release(Path(spec["build"])) == "2.2.15"


def test_the_peer_log_of_v220_and_v221_names_the_channel_before_received_block():
    """gossip/privdata/coordinator.go logs "[<c>] Received block [n] from buffer" in v2.2.0 and v2.2.1, and
    "Received block [n] from buffer channel=<c>" (a logger field) from v2.2.2 on: both give the receive time."""
    from fabricrepro_systems.fabric_3_1 import logs

    tail = ("2026-11-28 20:05:30.296 UTC [committer.txvalidator] Validate -> INFO 031 [mychannel] Validated block [1] "
            "in 1ms\n2026-11-28 20:05:30.298 UTC [kvledger] CommitLegacy -> INFO 033 [mychannel] Committed block [1] "
            "with 1 transaction(s) in 2ms (state_validation=0ms block_and_pvtdata_commit=1ms state_commit=0ms) "
            "commitHash=[0a74]")
    for received in ("2026-11-28 20:05:30.295 UTC [gossip.privdata] StoreBlock -> INFO 030 [mychannel] Received "
                     "block [1] from buffer",
                     "2026-11-28 20:05:30.295 UTC [gossip.privdata] StoreBlock -> INFO 030 Received block [1] from "
                     "buffer channel=mychannel"):
        row = logs.parse_peer_log(received + "\n" + tail).iloc[0]
        assert (row["channel"], row["block_number"], row["validate_ms"], row["commit_ms"]) == ("mychannel", 1, 1, 2)
        assert row["committed_at_ns"] - row["received_at_ns"] == 3_000_000
    with pytest.raises(network_files.HarnessError, match="Received block"):
        logs.parse_peer_log("2026-11-28 20:05:30.295 UTC [gossip.privdata] StoreBlock -> INFO 030 Received block "
                            "[1] from buffer\n" + tail)


def test_the_hook_before_the_playbook_places_the_nodes_and_writes_the_network_once(tmp_path, monkeypatch):
    """prepare.py (the plugin's before_playbook, which the core's point loop calls once the inventory is
    written): orderer i on the i-th orderer host by name (netns: one each, dialled by name, bound to every
    address), the peer on the first peer host, each in <work root>/<point path>/<role>; network.json made once
    per point directory; the catch-up peer's files where its role is in the driver."""
    from fabricrepro_systems.fabric_3_1 import prepare

    calls = []
    _stub_binaries(monkeypatch, calls)
    build = Path(_spec(tmp_path, "3.1")["build"])
    (build / "build.json").write_text(json.dumps({"release": "3.1.5"}))
    core = _sample_core()  # with the keys the catch-up peer's core.yaml sets (catchup.py core_yaml)
    core["peer"].update({"chaincodeListenAddress": "", "chaincodeAddress": ""})
    core["peer"]["gossip"].update({"useLeaderElection": True, "orgLeader": False,
                                   "pvtData": {"pullRetryThreshold": "60s", "reconciliationEnabled": True}})
    (network_files.sample_tree(build) / "core.yaml").write_text(yaml.safe_dump(core))
    netns = {"groups": {"fabric3_orderer": ["o3", "o1", "o2", "o0"], "fabric3_peer": ["p"], "loadgen": ["p"]},
             "vars": {}, "hosts": {h: {"fabricrepro_address": h, "fabricrepro_netns": f"ns-{h}",
                                       "ansible_host": "10.0.0.9", "fabricrepro_work_root": f"/w/{h}"}
                                   for h in ("o0", "o1", "o2", "o3", "p")}}
    variables = {"fabricrepro_point_path": "pa/ex/run/pt", "fabricrepro_controller_dir": str(tmp_path / "ctl"),
                 "fabricrepro_upstream_dir": str(build), "fabric3_network_consensus": "BFT",
                 "fabric3_network_base_port": 17050, "fabric3_network_block_size": 37,
                 "fabric3_network_batch_timeout_ms": 250}
    placed = prepare.placement("BFT", variables, netns)
    assert [(o["inventory_host"], o["address"], o["bind"], o["dir"]) for o in placed["orderers"]] == [
        (f"o{i}", f"o{i}", "0.0.0.0", f"/w/o{i}/pa/ex/run/pt/fabric3_orderer/orderer{i}") for i in range(4)]
    assert placed["peer"] == {"name": "peer0", "inventory_host": "p", "address": "p", "bind": "0.0.0.0",
                              "dir": "/w/p/pa/ex/run/pt/fabric3_peer"}
    local = {"groups": {"fabric3_orderer": ["localhost"], "fabric3_chaincode": ["localhost"]}, "vars": {},
             "hosts": {"localhost": {"ansible_host": "127.0.0.1", "fabricrepro_address": "127.0.0.1",
                                     "fabricrepro_work_root": "/w"}}}
    raft = prepare.placement("etcdraft", variables, local)
    assert [(o["inventory_host"], o["bind"]) for o in raft["orderers"]] == [("localhost", "127.0.0.1")] * 3

    spec = {"playbook": "fabric3-committer-catchup.yml", "roles": ["fabric3_network", "fabric3_catchup_peer"]}
    added = prepare.before_playbook(spec, variables, netns)
    out = tmp_path / "ctl" / "fabric3"
    assert added == {"fabric3_network_dir": str(out)}
    assert json.loads((out / "placement.json").read_text()) == placed
    network_doc = json.loads((out / "network.json").read_text())
    assert network_doc["block_size"] == 37 and network_doc["batch_timeout"] == "250ms"
    assert [o["host"] for o in network_doc["orderers"]] == ["o0", "o1", "o2", "o3"]
    assert json.loads((out / "catchup.json").read_text())["dir"] == "/w/p/pa/ex/run/pt/fabric3_catchup_peer"
    made = len(calls)
    prepare.before_playbook(spec, variables, netns)  # a re-attempt of the point keeps its network
    assert len(calls) == made
    # a driver without the network role gets nothing; a build that records no release is refused by name
    assert prepare.before_playbook({"playbook": "x.yml", "roles": ["loadgen"]}, variables, netns) == {}
    (build / "build.json").write_text("{}")
    with pytest.raises(network_files.HarnessError, match="no release in"):
        prepare.before_playbook(spec, {**variables, "fabricrepro_controller_dir": str(tmp_path / "other")}, netns)
