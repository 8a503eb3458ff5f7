"""Before a v2.5/v3.1 driver's playbook (the plugin's ``before_playbook`` hook, which the core's point loop
calls once the hosts are up and the inventory written, harness/point_loop.py): the network's files on the
controller, placed on the inventory's hosts.

- Where each node runs: orderer i on the i-th host of the orderers' hosts by name (modulo their number: the
  local provider has one host, netns one per orderer), the peer on the first of the peer's and chaincode's
  hosts. Each is dialled by its host's ``fabricrepro_address`` and listens on the host's own address
  (``private_ip``, else ``ansible_host``; local: 127.0.0.1), on a netns host on every address of its namespace
  (its own name resolves to 127.0.1.1 there, netns_cluster.py). Its directory is ``<work>/fabric3_orderer/
  orderer<i>`` or ``<work>/fabric3_peer`` of its host (``<work>``: playbooks/group_vars/all.yml's
  ``fabricrepro_work_dir``, where teardown finds the PID files). Written as ``placement.json``, which the
  roles fabric3_network (``fabric3_network_orderers``, ``fabric3_network_peer``) and fabric3_orderer read.
- The files themselves (network_files.py ``write``: identities, genesis block, node configurations,
  the chaincode package, ``network.json``), once per point directory (a re-attempt keeps them).
- For the committer-catchup driver (role fabric3_catchup_peer), its second peer's ``core.yaml`` from peer0's
  and ``catchup.json`` (catchup.py ``write_files``).

The playbook gets ``fabric3_network_dir``, where they are."""

from __future__ import annotations

import json
import re
from pathlib import Path

from harness.plugin_api import HarnessError

from . import catchup, network_files


def _release(build: Path) -> str:
    """major.minor of the build's record (build.json ``release``, the Makefile's FABRIC_VER)."""
    try:
        release = str(json.loads((build / "build.json").read_text(encoding="utf-8"))["release"])
    except (OSError, ValueError, KeyError) as e:
        raise HarnessError(f"fabric-3.1: no release in {build / 'build.json'}: {e}") from None
    found = re.match(r"^[0-9]+[.][0-9]+", release)
    if not found:
        raise HarnessError(f"fabric-3.1: {build / 'build.json'}: release {release!r} is not major.minor[.patch]")
    return found.group(0)


def _node(name: str, host: str, vars_: dict, work: str, folder: str) -> dict:
    bind = "0.0.0.0" if "fabricrepro_netns" in vars_ else str(vars_.get("private_ip") or vars_.get("ansible_host")
                                                              or "127.0.0.1")
    return {"name": name, "inventory_host": host, "address": str(vars_.get("fabricrepro_address") or "127.0.0.1"),
            "bind": bind, "dir": f"{work}/{folder}"}


def placement(consensus: str, variables: dict, inventory: dict) -> dict:
    """``{"orderers": [node, ...], "peer": node}``, each node its name, inventory host, address, bind and
    directory (the module's doc)."""
    groups, hosts = inventory["groups"], inventory["hosts"]
    orderer_hosts = sorted(set(groups.get("orderer", []) + groups.get("fabric3_orderer", []))) or ["localhost"]
    peer_hosts = sorted(set(groups.get("peer", []) + groups.get("fabric3_peer", []) + groups.get("fabric3_chaincode", [])))

    def work(host: str) -> str:
        # a host's <work>; one the inventory does not name (the peer of ordering-bench, which runs none) is
        # the controller, whose point directory is fabricrepro_controller_dir
        root = hosts.get(host, {}).get("fabricrepro_work_root")
        return f"{root}/{variables['fabricrepro_point_path']}" if root else str(variables["fabricrepro_controller_dir"])

    orderers = [_node(f"orderer{i}", h, hosts.get(h, {}), work(h), f"fabric3_orderer/orderer{i}")
                for i in range(4 if consensus == "BFT" else 3) for h in [orderer_hosts[i % len(orderer_hosts)]]]
    peer_host = (peer_hosts or ["localhost"])[0]
    return {"orderers": orderers, "peer": _node("peer0", peer_host, hosts.get(peer_host, {}), work(peer_host),
                                                "fabric3_peer")}


def _write(what: str, write, spec: dict) -> None:
    """``write(spec)``; a spec the release's samples or the build cannot serve is an error naming ``what``."""
    try:
        write(spec)
    except (KeyError, ValueError, OSError) as e:
        raise HarnessError(f"fabric-3.1 {what} in {spec.get('out') or spec.get('network_dir')}: {e}") from None


def before_playbook(spec: dict, variables: dict, inventory: dict) -> dict:
    """The hook (the module's doc): the files of a driver whose roles include fabric3_network."""
    roles = spec.get("roles") or []
    if "fabric3_network" not in roles:
        return {}
    out = Path(variables["fabricrepro_controller_dir"]) / "fabric3"
    consensus = str(variables["fabric3_network_consensus"])
    placed = placement(consensus, variables, inventory)
    out.mkdir(parents=True, exist_ok=True)
    (out / "placement.json").write_text(json.dumps(placed, indent=2, sort_keys=True))
    nodes = [*placed["orderers"], placed["peer"]]
    base_port = int(variables["fabric3_network_base_port"])
    if not (out / "network.json").is_file():
        build = Path(variables["fabricrepro_upstream_dir"])
        _write("network", network_files.write, {
            "release": _release(build), "ordering": consensus, "build": str(build), "out": str(out),
            "base_port": base_port, "block_size": int(variables["fabric3_network_block_size"]),
            "batch_timeout": f"{int(variables['fabric3_network_batch_timeout_ms'])}ms",
            "orderer_hosts": [o["address"] for o in placed["orderers"]],
            "orderer_binds": [o["bind"] for o in placed["orderers"]],
            "peer_host": placed["peer"]["address"], "peer_bind": placed["peer"]["bind"],
            "node_dirs": {n["name"]: n["dir"] for n in nodes}})
    if "fabric3_catchup_peer" in roles:
        network = json.loads((out / "network.json").read_text(encoding="utf-8"))
        peer0_dir = placed["peer"]["dir"]
        _write("catch-up peer", catchup.write_files, {
            "network_dir": str(out), "peer0_dir": peer0_dir,
            "node_dir": f"{peer0_dir.rsplit('/', 1)[0]}/fabric3_catchup_peer",  # <work>/fabric3_catchup_peer
            "host": network["peer"]["host"], "bind": network["peer"]["bind"], "base_port": base_port})
    return {"fabric3_network_dir": str(out)}
