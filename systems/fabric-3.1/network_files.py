"""Every file a Fabric v2.5 / v3.1 network of an experiment needs, made on the controller:

    invoke system-command --system fabric-3.1 --name network-files --args "SPEC.json"

(the role ``fabric3_network`` runs it as ``python -m harness.system_commands fabric-3.1 network-files
SPEC.json``). SPEC names the release, the ordering (``etcdraft`` or ``BFT``), the build, the hosts of the
orderers and of the peer, each node's working directory on its host, the block cutting and ``out``.
Into ``out`` it writes:

- ``crypto/``: cryptogen's identities and TLS material (``crypto-config.yaml`` beside it);
- ``channel.block``: configtxgen's genesis block of the application channel (``configtx/``);
- ``nodes/<name>/orderer.yaml`` or ``core.yaml``: each node's configuration from the release's sample
  (network.py), its paths on its own host (``<node dir>/crypto``, ``<node dir>/data``);
- ``money-transfer.tar.gz``: the chaincode-as-a-service package, whose ID the peer derives from its bytes;
- ``crypto-client/``: what the load generator and the block watcher copy: the client user's MSP,
  ``genesis.block`` (the channel's block 0) and the TLS CAs ``tls/peer-ca.crt``, ``tls/orderer-ca.crt``;
- ``network.json``: the addresses, ports and names the roles use (and the chaincode's package ID).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import yaml

from harness.plugin_api import Command, HarnessError

from . import network as net_config

CC_NAME, CC_VERSION = "money-transfer", "1.0"


def sample_tree(build: Path) -> Path:
    """The release's ``sampleconfig/`` in the build's source tree."""
    return build / "gopath" / "src" / "github.com" / "hyperledger" / "fabric" / "sampleconfig"


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


def write(spec: dict) -> dict:
    """Write the network's files (see the module's doc) and return ``network.json``'s content."""
    build, out = Path(spec["build"]), Path(spec["out"])
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
    _run([build / "bin" / "cryptogen", "generate", "--config", out / "crypto-config.yaml", "--output", crypto])
    _write_yaml(out / "configtx" / "configtx.yaml", net_config.configtx(net, str(crypto)))
    _run([build / "bin" / "configtxgen", "-profile", "Channel", "-channelID", net.channel,
          "-outputBlock", out / "channel.block", "-configPath", out / "configtx"])
    samples = sample_tree(build)
    sample_orderer = yaml.safe_load((samples / "orderer.yaml").read_text())
    sample_core = yaml.safe_load((samples / "core.yaml").read_text())
    for o in net.orderers:
        d = dirs[o.name]
        _write_yaml(out / "nodes" / o.name / "orderer.yaml",
                    net_config.orderer_yaml(sample_orderer, net, o, f"{d}/crypto", f"{d}/data"))
    d = dirs[net.peer.name]
    _write_yaml(out / "nodes" / net.peer.name / "core.yaml",
                net_config.core_yaml(sample_core, net, net.peer, f"{d}/crypto", f"{d}/data", f"{d}/ccaas_builder"))
    package = chaincode_package(net.chaincode_address)
    (out / f"{CC_NAME}.tar.gz").write_bytes(package)
    client = out / "crypto-client"
    user = f"peerOrganizations/{net_config.PEER_DOMAIN}/users/User1@{net_config.PEER_DOMAIN}/msp"
    shutil.copytree(crypto / user, client / user, dirs_exist_ok=True)
    shutil.copyfile(out / "channel.block", client / "genesis.block")
    (client / "tls").mkdir(exist_ok=True)
    shutil.copyfile(crypto / net_config.peer_dir(net.peer) / "tls" / "ca.crt", client / "tls" / "peer-ca.crt")
    shutil.copyfile(crypto / net_config.orderer_dir(net.orderers[0]) / "tls" / "ca.crt",
                    client / "tls" / "orderer-ca.crt")
    doc = {"release": net.release, "ordering": net.consensus, "channel": net.channel,
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


def main(argv: list, tools) -> int:
    ap = argparse.ArgumentParser(prog="network-files", description=__doc__.splitlines()[0])
    ap.add_argument("spec", help="JSON: release, ordering (etcdraft or BFT), build, orderer_hosts, peer_host, node_dirs, out, "
                                 "[orderer_binds, peer_bind, base_port, block_size, batch_timeout]")
    args = ap.parse_args(argv)
    spec = json.loads(Path(args.spec).read_text())
    try:
        write(spec)
    except (KeyError, ValueError) as e:
        raise HarnessError(f"network-files {args.spec}: {e}") from e
    return 0


COMMAND = Command("network-files", "write a Fabric v2.5 / v3.1 network's identities, genesis block and node "
                                   "configurations for the end-to-end driver", main)
