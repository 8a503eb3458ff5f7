"""The configuration of a Fabric v2.2-v3.1 network, by release: cryptogen's crypto-config.yaml,
configtxgen's configtx.yaml (one application channel: Raft with cluster TLS, or SmartBFT on v3.x;
from v2.3 no system channel, the orderers join by channel participation; before v2.3 they bootstrap
from a system channel's genesis block and the channel is created by a transaction), and each node's
orderer.yaml / core.yaml as the release's own sample with our values set (so that every key written is
one the release reads; infra/upstream_keys/fabric-<release>/ for the releases with a key set).

Plain data in, plain data out (no I/O but reading a sample): the smoke driver (smoke.py) and the
tests use it; the keys are checked with infra/config_keys.py.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

ORDERER_DOMAIN = "example.com"
PEER_DOMAIN = "org1.example.com"
ORDERER_MSP = "OrdererMSP"
PEER_MSP = "Org1MSP"
#: The release lines this module configures (major.minor; the recipes' toolchain.release.lines).
RELEASES = ("2.2", "2.3", "2.4", "2.5", "3.0", "3.1")
#: Ordering by release: SmartBFT came with v3.0.
CONSENSUS = {r: ("etcdraft", "BFT") if r.startswith("3.") else ("etcdraft",) for r in RELEASES}
#: Before v2.3 (no channel participation API): the system channel and consortium the orderers bootstrap
#: from, whose members may create channels.
SYSTEM_CHANNEL = "systemchannel"
CONSORTIUM = "SampleConsortium"


def _line(release: str) -> tuple[int, int]:
    major, minor = release.split(".")[:2]
    return int(major), int(minor)


def needs_low_s_cas(release: str) -> bool:
    """True where the release's MSP rejects a CA certificate whose ECDSA signature has a high S when built
    with Go >= 1.19: msp/cert.go ``sanitizeECDSASignedCert`` re-encodes such a certificate to low S and
    the re-encoded one no longer verifies ("sanitizeCert failed the supplied identity is not valid: x509:
    certificate signed by unknown authority"). Fixed upstream by "Fix cert sanitation after moving to go
    v1.19" (#3774): in v2.5.0, backported to v2.2.11; every v2.3.x and v2.4.x has the old code. cryptogen
    signs its self-signed CA certificates with the bare key (high S half the time) and everything else
    with a low-S signer, so only the CA certificates matter (network_files.generate_crypto)."""
    return _line(release) in ((2, 2), (2, 3), (2, 4))


def system_channel(release: str) -> bool:
    """True where the orderers bootstrap from a system channel: before v2.3, whose orderer has no channel
    participation API (``ChannelParticipation``, ``Admin`` and cmd/osnadmin arrived in v2.3.0)."""
    return _line(release) < (2, 3)


@dataclass
class Node:
    """One orderer or peer: its name and ports on ``host`` (the name or address others dial; a loopback
    address on the local provider), listening on ``bind`` (the host's own address; ``host`` if not given:
    a netns host resolves its own name to 127.0.1.1, which no other host reaches)."""
    name: str
    host: str
    port: int
    cluster_port: int = 0
    admin_port: int = 0
    operations_port: int = 0
    chaincode_port: int = 0
    bind: str = ""

    def __post_init__(self):
        self.bind = self.bind or self.host

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass
class Layout:
    """The network: orderers (3 for Raft, 4 for BFT f=1), one peer, the chaincode server's address."""
    release: str
    consensus: str
    orderers: list[Node]
    peer: Node
    chaincode_address: str
    channel: str = "mychannel"
    batch_timeout: str = "250ms"
    block_size: int = 100
    extra: dict = field(default_factory=dict)


def orderer_count(consensus: str) -> int:
    """3 Raft nodes (one may fail), or 3f+1 = 4 SmartBFT nodes for f = 1."""
    return 4 if consensus == "BFT" else 3


def layout(release: str, consensus: str, host: str = "127.0.0.1", base_port: int = 27050,
           orderer_hosts: list[str] | None = None, peer_host: str | None = None,
           orderer_binds: list[str] | None = None, peer_bind: str | None = None) -> Layout:
    """Each node's ports in a block of 10 from ``base_port`` (distinct even where nodes share a host, as
    on the local provider); every node on ``host`` unless ``orderer_hosts`` (orderer i on
    ``orderer_hosts[i % len]``) or ``peer_host`` (the peer and its chaincode server) say otherwise;
    ``orderer_binds`` / ``peer_bind`` the addresses they listen on, in the same order (default: the host)."""
    if release not in RELEASES:
        raise ValueError(f"release {release!r}: one of {', '.join(RELEASES)}")
    if consensus not in CONSENSUS[release]:
        raise ValueError(f"Fabric v{release} orders with {', '.join(CONSENSUS[release])}, not {consensus!r}")
    count = orderer_count(consensus)
    hosts = orderer_hosts or [host]
    binds = orderer_binds or hosts
    orderers = [Node(f"orderer{i}", hosts[i % len(hosts)], base_port + 10 * i, base_port + 10 * i + 1,
                     base_port + 10 * i + 2, base_port + 10 * i + 3, bind=binds[i % len(binds)]) for i in range(count)]
    p = base_port + 10 * count
    peer_host = peer_host or host
    peer = Node("peer0", peer_host, p, operations_port=p + 3, chaincode_port=p + 2, bind=peer_bind or peer_host)
    return Layout(release, consensus, orderers, peer, f"{peer_host}:{p + 5}")


# ------------------------------------------------------------------ paths in cryptogen's output

def orderer_dir(node: Node) -> str:
    return f"ordererOrganizations/{ORDERER_DOMAIN}/orderers/{node.name}.{ORDERER_DOMAIN}"


def peer_dir(node: Node) -> str:
    return f"peerOrganizations/{PEER_DOMAIN}/peers/{node.name}.{PEER_DOMAIN}"


def orderer_admin_dir() -> str:
    return f"ordererOrganizations/{ORDERER_DOMAIN}/users/Admin@{ORDERER_DOMAIN}"


def peer_admin_dir() -> str:
    return f"peerOrganizations/{PEER_DOMAIN}/users/Admin@{PEER_DOMAIN}"


# ------------------------------------------------------------------ cryptogen

def crypto_config(net: Layout) -> dict:
    """cryptogen's input: one orderer organization with a node per orderer, one peer organization;
    node OUs on (v2+ policies name admin/peer/client roles); every node's TLS certificate valid for its
    host address (cryptogen always makes TLS material)."""
    sans = sorted({net.peer.host, "localhost"})
    return {"OrdererOrgs": [{"Name": "Orderer", "Domain": ORDERER_DOMAIN, "EnableNodeOUs": True,
                             "Specs": [{"Hostname": o.name, "SANS": sorted({o.host, "localhost"})}
                                       for o in net.orderers]}],
            "PeerOrgs": [{"Name": "Org1", "Domain": PEER_DOMAIN, "EnableNodeOUs": True,
                          "Template": {"Count": 1, "SANS": sans}, "Users": {"Count": 1}}]}


# ------------------------------------------------------------------ configtxgen

def _sig(rule: str) -> dict:
    return {"Type": "Signature", "Rule": rule}


def _meta(rule: str) -> dict:
    return {"Type": "ImplicitMeta", "Rule": rule}


def configtx(net: Layout, crypto: str) -> dict:
    """configtxgen's input, profile ``Channel``: from v2.3 the application channel's genesis block, which
    the orderers join by channel participation and the peer with ``peer channel join``; before v2.3 the
    channel's creation transaction (``Consortium``, no orderer section), with profile ``SystemChannel``
    (orderer, consortium of the peer organization) the genesis block the orderers bootstrap from.

    v3.x: channel capability V3_0 (BFT needs it), the orderer organization's OrdererEndpoints only
    (v3 drops the global Orderer.Addresses). v2.x: channel capability V2_0 and Orderer.Addresses too.
    Application capability V2_5 from v2.5 (the highest the release knows), V2_0 before; orderer V2_0;
    the v2 lifecycle's policies."""
    om, pm = ORDERER_MSP, PEER_MSP
    orderer_org = {"Name": "OrdererOrg", "ID": om, "MSPDir": f"{crypto}/ordererOrganizations/{ORDERER_DOMAIN}/msp",
                   "Policies": {"Readers": _sig(f"OR('{om}.member')"), "Writers": _sig(f"OR('{om}.member')"),
                                "Admins": _sig(f"OR('{om}.admin')")},
                   "OrdererEndpoints": [o.address for o in net.orderers]}
    peer_org = {"Name": pm, "ID": pm, "MSPDir": f"{crypto}/peerOrganizations/{PEER_DOMAIN}/msp",
                "Policies": {"Readers": _sig(f"OR('{pm}.admin', '{pm}.peer', '{pm}.client')"),
                             "Writers": _sig(f"OR('{pm}.admin', '{pm}.client')"),
                             "Admins": _sig(f"OR('{pm}.admin')"),
                             "Endorsement": _sig(f"OR('{pm}.peer')")}}
    orderer = {"OrdererType": net.consensus, "BatchTimeout": net.batch_timeout,
               "BatchSize": {"MaxMessageCount": net.block_size, "AbsoluteMaxBytes": "10 MB",
                             "PreferredMaxBytes": "2 MB"},
               "Organizations": [orderer_org],
               "Policies": {"Readers": _meta("ANY Readers"), "Writers": _meta("ANY Writers"),
                            "Admins": _meta("MAJORITY Admins"), "BlockValidation": _meta("ANY Writers")},
               "Capabilities": {"V2_0": True}}
    tls = lambda o: f"{crypto}/{orderer_dir(o)}/tls/server.crt"  # noqa: E731
    if net.consensus == "etcdraft":
        if _line(net.release) < (3, 0):
            orderer["Addresses"] = [o.address for o in net.orderers]
        orderer["EtcdRaft"] = {"Consenters": [{"Host": o.host, "Port": o.cluster_port, "ClientTLSCert": tls(o),
                                               "ServerTLSCert": tls(o)} for o in net.orderers],
                               "Options": {"TickInterval": "500ms", "ElectionTick": 10, "HeartbeatTick": 1,
                                           "MaxInflightBlocks": 5, "SnapshotIntervalSize": "16 MB"}}
    else:  # SmartBFT: 3f+1 consenters, each with its identity. BlockValidation must be stated, but v3.1's
        # configtxgen replaces it with the consenters' signature policy (encoder.go,
        # policies.EncodeBFTBlockVerificationPolicy); it knows no "ImplicitOrderer" type.
        orderer["ConsenterMapping"] = [
            {"ID": i + 1, "Host": o.host, "Port": o.cluster_port, "MSPID": om,
             "Identity": f"{crypto}/{orderer_dir(o)}/msp/signcerts/{o.name}.{ORDERER_DOMAIN}-cert.pem",
             "ClientTLSCert": tls(o), "ServerTLSCert": tls(o)} for i, o in enumerate(net.orderers)]
        orderer["SmartBFT"] = {"RequestBatchMaxInterval": net.batch_timeout, "RequestForwardTimeout": "5s",
                               "RequestComplainTimeout": "20s", "RequestAutoRemoveTimeout": "3m0s",
                               "ViewChangeResendInterval": "5s", "ViewChangeTimeout": "20s",
                               "LeaderHeartbeatTimeout": "1m0s", "CollectTimeout": "1s",
                               "IncomingMessageBufferSize": 200, "RequestPoolSize": 100000,
                               "LeaderHeartbeatCount": 10}
    application = {"Organizations": [peer_org],
                   "Policies": {"Readers": _meta("ANY Readers"), "Writers": _meta("ANY Writers"),
                                "Admins": _meta("MAJORITY Admins"),
                                "LifecycleEndorsement": _meta("MAJORITY Endorsement"),
                                "Endorsement": _meta("MAJORITY Endorsement")},
                   "Capabilities": {"V2_5": True} if _line(net.release) >= (2, 5) else {"V2_0": True}}
    channel_cap = {"V3_0": True} if _line(net.release) >= (3, 0) else {"V2_0": True}
    policies = {"Readers": _meta("ANY Readers"), "Writers": _meta("ANY Writers"), "Admins": _meta("MAJORITY Admins")}
    orgs = [copy.deepcopy(orderer_org), copy.deepcopy(peer_org)]
    if system_channel(net.release):
        return {"Organizations": orgs, "Profiles": {
            "SystemChannel": {"Policies": copy.deepcopy(policies), "Capabilities": dict(channel_cap), "Orderer": orderer,
                              "Consortiums": {CONSORTIUM: {"Organizations": [copy.deepcopy(peer_org)]}}},
            "Channel": {"Consortium": CONSORTIUM, "Policies": policies, "Capabilities": channel_cap,
                        "Application": application}}}
    profile = {"Policies": policies, "Capabilities": channel_cap, "Orderer": orderer, "Application": application}
    return {"Organizations": orgs, "Profiles": {"Channel": profile}}


# ------------------------------------------------------------------ node configuration

#: Keys the release reads that its sample only shows commented out (core/peer/config.go reads both).
READ_NOT_IN_SAMPLE = ("peer.chaincodeListenAddress", "peer.chaincodeAddress")


def _set(doc: dict, dotted: str, value) -> None:
    """Set a key the sample already has (a KeyError names a key the release does not read)."""
    *parents, last = dotted.split(".")
    node = doc
    for key in parents:
        node = node[key]
    if last not in node and dotted not in READ_NOT_IN_SAMPLE:
        raise KeyError(f"{dotted}: not in the release's sample")
    node[last] = value


def orderer_yaml(sample: dict, net: Layout, node: Node, crypto: str, data: str, bootstrap_file: str = "") -> dict:
    """The release's sampleconfig/orderer.yaml with one orderer's values: TLS on every listener (the
    cluster on its own port with mutual TLS; from v2.3 the admin endpoint with client authentication, as
    channel participation needs). v2.3-v2.5: channel participation, no system channel (BootstrapMethod
    none; v3 has no such key). Before v2.3: BootstrapMethod file, the system channel's genesis block at
    ``bootstrap_file`` (no Admin or ChannelParticipation section: the release reads none)."""
    doc = copy.deepcopy(sample)
    tls = f"{crypto}/{orderer_dir(node)}/tls"
    ca = f"{tls}/ca.crt"
    admin_ca = f"{crypto}/{orderer_admin_dir()}/tls/ca.crt"
    for key, value in {
            "General.ListenAddress": node.bind, "General.ListenPort": node.port,
            "General.TLS.Enabled": True, "General.TLS.PrivateKey": f"{tls}/server.key",
            "General.TLS.Certificate": f"{tls}/server.crt", "General.TLS.RootCAs": [ca],
            "General.TLS.ClientAuthRequired": False,
            "General.Cluster.ListenAddress": node.bind, "General.Cluster.ListenPort": node.cluster_port,
            "General.Cluster.ServerCertificate": f"{tls}/server.crt",
            "General.Cluster.ServerPrivateKey": f"{tls}/server.key",
            "General.Cluster.ClientCertificate": f"{tls}/server.crt",
            "General.Cluster.ClientPrivateKey": f"{tls}/server.key",
            "General.LocalMSPDir": f"{crypto}/{orderer_dir(node)}/msp", "General.LocalMSPID": ORDERER_MSP,
            "FileLedger.Location": f"{data}/ledger",
            "Operations.ListenAddress": f"{node.bind}:{node.operations_port}",
            "Consensus.WALDir": f"{data}/etcdraft/wal", "Consensus.SnapDir": f"{data}/etcdraft/snapshot"}.items():
        _set(doc, key, value)
    if system_channel(net.release):
        if not bootstrap_file:
            raise ValueError(f"Fabric v{net.release}'s orderer bootstraps from a system channel's block: no bootstrap_file")
        _set(doc, "General.BootstrapMethod", "file")
        _set(doc, "General.BootstrapFile", bootstrap_file)
        return doc
    for key, value in {
            "Admin.ListenAddress": f"{node.bind}:{node.admin_port}", "Admin.TLS.Enabled": True,
            "Admin.TLS.Certificate": f"{tls}/server.crt", "Admin.TLS.PrivateKey": f"{tls}/server.key",
            "Admin.TLS.ClientAuthRequired": True, "Admin.TLS.ClientRootCAs": [admin_ca],
            "ChannelParticipation.Enabled": True}.items():
        _set(doc, key, value)
    if _line(net.release) < (3, 0):
        _set(doc, "General.BootstrapMethod", "none")
    return doc


def core_yaml(sample: dict, net: Layout, node: Node, crypto: str, data: str, builders: str) -> dict:
    """The release's sampleconfig/core.yaml with the peer's values: TLS on, LevelDB under ``data``, no
    Docker (``vm.endpoint`` empty), our external builder for chaincode as a service, the block log
    at INFO (it times every commit)."""
    doc = copy.deepcopy(sample)
    d = f"{crypto}/{peer_dir(node)}"
    for key, value in {
            "peer.id": f"{node.name}.{PEER_DOMAIN}", "peer.listenAddress": f"{node.bind}:{node.port}",
            "peer.address": node.address, "peer.chaincodeListenAddress": f"{node.bind}:{node.chaincode_port}",
            "peer.chaincodeAddress": f"{node.host}:{node.chaincode_port}",
            "peer.gossip.bootstrap": node.address, "peer.gossip.endpoint": node.address,
            "peer.gossip.externalEndpoint": node.address,
            "peer.tls.enabled": True, "peer.tls.cert": {"file": f"{d}/tls/server.crt"},
            "peer.tls.key": {"file": f"{d}/tls/server.key"}, "peer.tls.rootcert": {"file": f"{d}/tls/ca.crt"},
            "peer.mspConfigPath": f"{d}/msp", "peer.localMspId": PEER_MSP,
            "peer.fileSystemPath": f"{data}/production",
            "operations.listenAddress": f"{node.bind}:{node.operations_port}",
            "vm.endpoint": "",
            "chaincode.externalBuilders": [{"name": "ccaas", "path": builders}]}.items():
        _set(doc, key, value)
    return doc
