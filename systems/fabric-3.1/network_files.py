"""Every file a Fabric v2.2-v3.1 network of an experiment needs, made on the controller before the driver's
playbook (``write``, which prepare.py, the plugin's ``before_playbook`` hook, calls). Its spec names the
release, the ordering (``etcdraft`` or ``BFT``), the build, the hosts of the orderers and of the peer, each
node's working directory on its host, the block cutting and ``out``.
Into ``out`` it writes:

- ``crypto/``: cryptogen's identities and TLS material (``crypto-config.yaml`` beside it);
- ``channel.block``: configtxgen's genesis block of the application channel (``configtx/``), which the
  orderers join by channel participation and the peer with ``peer channel join``; before v2.3 instead
  ``system.block``, the system channel's genesis block each orderer bootstraps from, and ``channel.tx``,
  the channel's creation transaction (``peer channel create`` on the peer's host makes its block);
- ``nodes/<name>/orderer.yaml`` or ``core.yaml``: each node's configuration from the release's sample
  (network.py), its paths on its own host (``<node dir>/crypto``, ``<node dir>/data``);
- ``money-transfer.tar.gz``: the chaincode-as-a-service package, whose ID the peer derives from its bytes;
- ``crypto-client/``: what the load generator and the block watcher copy: the client user's MSP,
  ``genesis.block`` (the channel's block 0; before v2.3 the peer's role writes it once the channel is
  created) and the TLS CAs ``tls/peer-ca.crt``, ``tls/orderer-ca.crt``;
- ``network.json``: the addresses, ports and names the roles use (and the chaincode's package ID).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import yaml

from harness.plugin_api import HarnessError

from . import network as net_config

CC_NAME, CC_VERSION = "money-transfer", "1.0"


def sample_tree(build: Path) -> Path:
    """The release's ``sampleconfig/`` in the build's source tree."""
    return build / "gopath" / "src" / "github.com" / "hyperledger" / "fabric" / "sampleconfig"


def tree_release(build: Path) -> str | None:
    """The release the build's tree states in its Makefile: ``FABRIC_VER ?= x`` (v2.5.0 on) or ``BASE_VERSION
    = x`` (before); None without either."""
    makefile = sample_tree(build).parent / "Makefile"
    text = makefile.read_text(errors="replace") if makefile.is_file() else ""
    found = re.findall(r"^(?:FABRIC_VER\s*\?=|BASE_VERSION\s*=)\s*(\d+\.\d+\.\S+)\s*$", text, flags=re.MULTILINE)
    return found[0] if len(found) == 1 else None


def check_release(build: Path, release: str) -> None:
    """Refuse a build whose tree is of another line than ``release`` (major.minor, from build.json). The
    check behind the recipe's own (which reads the same Makefile variables): a build made before that
    check, or by hand, of another line's tree is refused here, before anything starts."""
    stated = tree_release(build)
    if stated and ".".join(stated.split(".")[:2]) != release:
        raise HarnessError(f"the build {build} was made as release {release}.x, but its tree's Makefile says "
                           f"{stated}: build that commit with the system whose lines hold {stated}")


def chaincode_package(chaincode_address: str) -> bytes:
    """A ``ccaas`` package: metadata.json and code.tar.gz holding connection.json (the server's address,
    plain text: the chaincode server and the peer share a host)."""
    connection = json.dumps({"address": chaincode_address, "dial_timeout": "10s", "tls_required": False}).encode()
    metadata = json.dumps({"type": "ccaas", "label": f"{CC_NAME}_{CC_VERSION}"}).encode()
    code = io.BytesIO()
    with tarfile.open(fileobj=code, mode="w:gz") as tar:
        _add(tar, "connection.json", connection)
    pkg = io.BytesIO()
    with tarfile.open(fileobj=pkg, mode="w:gz") as tar:
        _add(tar, "metadata.json", metadata)
        _add(tar, "code.tar.gz", code.getvalue())
    return pkg.getvalue()


def package_id(package: bytes) -> str:
    """The ID the v2 lifecycle gives an installed package: its label and the SHA-256 of its bytes."""
    return f"{CC_NAME}_{CC_VERSION}:{hashlib.sha256(package).hexdigest()}"


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def _write_yaml(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


def _run(argv: list) -> None:
    r = subprocess.run([str(a) for a in argv], capture_output=True, text=True)
    if r.returncode != 0:
        raise HarnessError(f"{Path(str(argv[0])).name} failed ({r.returncode}): {(r.stderr or r.stdout).strip()[-2000:]}")


#: The order of P-256, the curve of cryptogen's keys (a low-S signature has S <= N / 2).
P256_N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
#: How often cryptogen is run at most for CA certificates that all have low-S signatures (4 CA
#: certificates, each high-S with probability 1/2: 16 runs on average, 0.05-0.2 s each).
CRYPTOGEN_ATTEMPTS = 200


def _der(data: bytes, at: int) -> tuple[int, int, int]:
    """The DER element at ``at``: (tag, start of its content, end of its content)."""
    tag, length, at = data[at], data[at + 1], at + 2
    if length & 0x80:
        count = length & 0x7F
        length, at = int.from_bytes(data[at:at + count], "big"), at + count
    return tag, at, at + length


def signature_s(pem: str) -> int:
    """S of an ECDSA-signed certificate's signature (Certificate: tbsCertificate, signatureAlgorithm,
    signatureValue BIT STRING holding ECDSA-Sig-Value: SEQUENCE of INTEGER r, INTEGER s)."""
    body = "".join(line for line in pem.strip().splitlines() if not line.startswith("-----"))
    cert = base64.b64decode(body)
    _, at, end = _der(cert, 0)
    _, _, at = _der(cert, at)  # tbsCertificate
    _, _, at = _der(cert, at)  # signatureAlgorithm
    tag, start, _ = _der(cert, at)
    if tag != 0x03:
        raise ValueError("no signature BIT STRING where a certificate has it")
    sig = cert[start + 1:]  # past the BIT STRING's unused-bits byte
    _, at, _ = _der(sig, 0)
    _, _, at = _der(sig, at)  # r
    _, start, stop = _der(sig, at)
    return int.from_bytes(sig[start:stop], "big")


def high_s_cas(crypto: Path) -> list[Path]:
    """cryptogen's CA certificates (``<org>/ca/``, ``<org>/tlsca/``) whose signatures have a high S."""
    certs = sorted(crypto.glob("*Organizations/*/ca/*-cert.pem")) + sorted(crypto.glob("*Organizations/*/tlsca/*-cert.pem"))
    return [c for c in certs if signature_s(c.read_text()) > P256_N // 2]


def generate_crypto(cryptogen: Path, config: Path, crypto: Path, release: str) -> int:
    """Run cryptogen; where the release mishandles high-S CA certificates (network.needs_low_s_cas),
    again until none has one (ours: a fresh draw of keys, nothing patched). Returns the runs made."""
    for attempt in range(1, CRYPTOGEN_ATTEMPTS + 1):
        shutil.rmtree(crypto, ignore_errors=True)
        _run([cryptogen, "generate", "--config", config, "--output", crypto])
        if not net_config.needs_low_s_cas(release) or not high_s_cas(crypto):
            return attempt
    raise HarnessError(f"cryptogen: a CA certificate with a high-S signature in each of {CRYPTOGEN_ATTEMPTS} runs")


def write(spec: dict) -> dict:
    """Write the network's files (see the module's doc) and return ``network.json``'s content."""
    build, out = Path(spec["build"]), Path(spec["out"])
    check_release(build, spec["release"])
    net = net_config.layout(spec["release"], spec["ordering"], base_port=int(spec.get("base_port", 27050)),
                            orderer_hosts=spec["orderer_hosts"], peer_host=spec["peer_host"],
                            orderer_binds=spec.get("orderer_binds"), peer_bind=spec.get("peer_bind"))
    net.block_size = int(spec.get("block_size", net.block_size))
    net.batch_timeout = spec.get("batch_timeout", net.batch_timeout)
    dirs = spec["node_dirs"]
    missing = [n.name for n in [*net.orderers, net.peer] if n.name not in dirs]
    if missing:
        raise HarnessError(f"network-files: no working directory for {', '.join(missing)} in node_dirs")
    crypto = out / "crypto"
    _write_yaml(out / "crypto-config.yaml", net_config.crypto_config(net))
    generate_crypto(build / "bin" / "cryptogen", out / "crypto-config.yaml", crypto, net.release)
    _write_yaml(out / "configtx" / "configtx.yaml", net_config.configtx(net, str(crypto)))
    legacy = net_config.system_channel(net.release)
    if legacy:
        _run([build / "bin" / "configtxgen", "-profile", "SystemChannel", "-channelID", net_config.SYSTEM_CHANNEL,
              "-outputBlock", out / "system.block", "-configPath", out / "configtx"])
        _run([build / "bin" / "configtxgen", "-profile", "Channel", "-channelID", net.channel,
              "-outputCreateChannelTx", out / "channel.tx", "-configPath", out / "configtx"])
    else:
        _run([build / "bin" / "configtxgen", "-profile", "Channel", "-channelID", net.channel,
              "-outputBlock", out / "channel.block", "-configPath", out / "configtx"])
    samples = sample_tree(build)
    sample_orderer = yaml.safe_load((samples / "orderer.yaml").read_text())
    sample_core = yaml.safe_load((samples / "core.yaml").read_text())
    for o in net.orderers:
        d = dirs[o.name]
        _write_yaml(out / "nodes" / o.name / "orderer.yaml",
                    net_config.orderer_yaml(sample_orderer, net, o, f"{d}/crypto", f"{d}/data",
                                            bootstrap_file=f"{d}/system.block" if legacy else ""))
    d = dirs[net.peer.name]
    _write_yaml(out / "nodes" / net.peer.name / "core.yaml",
                net_config.core_yaml(sample_core, net, net.peer, f"{d}/crypto", f"{d}/data", f"{d}/ccaas_builder"))
    package = chaincode_package(net.chaincode_address)
    (out / f"{CC_NAME}.tar.gz").write_bytes(package)
    client = out / "crypto-client"
    user = f"peerOrganizations/{net_config.PEER_DOMAIN}/users/User1@{net_config.PEER_DOMAIN}/msp"
    shutil.copytree(crypto / user, client / user, dirs_exist_ok=True)
    if not legacy:
        shutil.copyfile(out / "channel.block", client / "genesis.block")
    (client / "tls").mkdir(exist_ok=True)
    shutil.copyfile(crypto / net_config.peer_dir(net.peer) / "tls" / "ca.crt", client / "tls" / "peer-ca.crt")
    shutil.copyfile(crypto / net_config.orderer_dir(net.orderers[0]) / "tls" / "ca.crt",
                    client / "tls" / "orderer-ca.crt")
    doc = {"release": net.release, "ordering": net.consensus, "channel": net.channel,
           # how the channel comes to be: channel participation (the orderers join channel.block), or a
           # system channel (the orderers start from system.block; the peer creates it with channel.tx)
           "bootstrap": "system_channel" if legacy else "participation",
           "orderer_block": "system.block" if legacy else "channel.block",
           "peer_channel_file": "channel.tx" if legacy else "channel.block",
           "block_size": net.block_size, "batch_timeout": net.batch_timeout,
           "orderers": [{"name": o.name, "host": o.host, "bind": o.bind, "address": o.address, "port": o.port,
                         "admin_address": f"{o.host}:{o.admin_port}",
                         "tls_ca": f"{net_config.orderer_dir(o)}/tls/ca.crt"} for o in net.orderers],
           "peer": {"name": net.peer.name, "host": net.peer.host, "bind": net.peer.bind, "address": net.peer.address,
                    "port": net.peer.port, "tls_ca": f"{net_config.peer_dir(net.peer)}/tls/ca.crt"},
           "orderer_admin_tls": f"{net_config.orderer_admin_dir()}/tls",
           "peer_admin_msp": f"{net_config.peer_admin_dir()}/msp",
           "peer_msp_id": net_config.PEER_MSP, "client_msp": user,
           "chaincode": {"name": CC_NAME, "version": CC_VERSION, "address": net.chaincode_address,
                         "package_id": package_id(package)}}
    (out / "network.json").write_text(json.dumps(doc, indent=2, sort_keys=True))
    return doc
