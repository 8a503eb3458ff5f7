"""A network smoke of Fabric v2.2-v3.1 on this machine, each step timed.

    invoke system-command --system fabric-3.1 --name smoke --args "--build build/upstream/fabric-3.1/<key> \
        --release 3.1 --consensus etcdraft --chaincode <money-transfer binary> --work /tmp/smoke [--transfers 10]"

Steps (the names of ``timings`` in the summary it prints as JSON on its last line):
crypto (cryptogen, TLS for every node), genesis (configtxgen: the channel's genesis block, no system
channel; before v2.3 the system channel's genesis block and the channel's creation transaction),
orderers_up (each orderer listening), from v2.3 participation_join (every orderer joins the channel
through the channel participation API, participation.py: what osnadmin does) and channel_active (every
orderer reports the channel active), peer_up, before v2.3 channel_create (``peer channel create``, then
block 0 fetched), peer_join (``peer channel join`` with the channel's block 0), chaincode (chaincode as a service: package,
install, approve, commit, the server started), create (two accounts), transfers (each ``peer chaincode
invoke --waitForEvent``: committed valid), query. Every process it starts is stopped by its PID at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import yaml

from harness.plugin_api import Command

from . import network as net_config
from . import network_files, participation

HERE = Path(__file__).resolve().parent
BUILDER = HERE / "files" / "ccaas_builder"
CC_NAME, CC_VERSION = network_files.CC_NAME, network_files.CC_VERSION
#: Wait for the lifecycle transactions' commit up to 2 min, not the CLI's 30 s: on busy cores a BFT
#: service's first blocks took 80 s, and a retry after a timeout orders the approval twice (the second
#: DUPLICATE_TXID, whose private data the peer then waits 60 s for before the block commits).
WAIT = ["--waitForEvent", "--waitForEventTimeout", "120s"]


class Smoke:
    def __init__(self, args):
        self.build = Path(args.build).resolve()
        network_files.check_release(self.build, args.release)
        self.bin = self.build / "bin"
        self.work = Path(args.work).resolve()
        self.net = net_config.layout(args.release, args.consensus, base_port=args.base_port)
        self.cc_binary = Path(args.chaincode).resolve()
        self.transfers = args.transfers
        self.crypto = str(self.work / "crypto")
        self.procs: list[subprocess.Popen] = []
        self.timings: dict[str, float] = {}
        tree = self.build / "gopath" / "src" / "github.com" / "hyperledger" / "fabric" / "sampleconfig"
        self.sample_orderer = yaml.safe_load((tree / "orderer.yaml").read_text())
        self.sample_core = yaml.safe_load((tree / "core.yaml").read_text())
        self.sampleconfig = tree
        self.legacy = net_config.system_channel(args.release)

    # -------------------------------------------------------------- helpers
    def step(self, name, fn):
        t = time.monotonic()
        result = fn()
        self.timings[name] = round(time.monotonic() - t, 2)
        print(f"smoke: {name} {self.timings[name]} s", flush=True)
        return result

    def run(self, cmd, env=None, cwd=None, retries=0, delay=1.0, stdout_only=False, done_if=None):
        """Run cmd, retried on failure; a retry failing with ``done_if`` in its output means an earlier
        attempt took effect (it failed after the change was made)."""
        for attempt in range(retries + 1):
            r = subprocess.run([str(c) for c in cmd], env={**os.environ, **(env or {})}, cwd=cwd,
                               capture_output=True, text=True)
            if r.returncode == 0 or (attempt and done_if and done_if in r.stdout + r.stderr):
                return r.stdout if stdout_only else r.stdout + r.stderr
            if attempt < retries:
                time.sleep(delay)
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")

    def start(self, name, cmd, env):
        log = open(self.work / "logs" / f"{name}.log", "w")
        p = subprocess.Popen([str(c) for c in cmd], env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True)
        (self.work / "pids" / f"{name}.pid").write_text(str(p.pid))
        self.procs.append(p)
        return p

    def wait_port(self, host, port, proc, timeout=60):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if proc.poll() is not None:
                raise RuntimeError(f"process {proc.args[0]} exited with {proc.returncode} before listening on {port}")
            try:
                with socket.create_connection((host, port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"nothing listens on {host}:{port} after {timeout} s")

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                os.kill(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()

    def write_yaml(self, path: Path, doc: dict) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return path

    # -------------------------------------------------------------- identities
    def orderer_tls_ca(self, o) -> str:
        return f"{self.crypto}/{net_config.orderer_dir(o)}/tls/ca.crt"

    def admin_env(self) -> dict:
        admin = f"{self.crypto}/{net_config.peer_admin_dir()}"
        return {"FABRIC_CFG_PATH": str(self.work / "peer0"), "CORE_PEER_MSPCONFIGPATH": f"{admin}/msp",
                "CORE_PEER_ADDRESS": self.net.peer.address, "CORE_PEER_LOCALMSPID": net_config.PEER_MSP,
                "CORE_PEER_TLS_ENABLED": "true",
                "CORE_PEER_TLS_ROOTCERT_FILE": f"{self.crypto}/{net_config.peer_dir(self.net.peer)}/tls/ca.crt"}

    def orderer_flags(self) -> list:
        o = self.net.orderers[0]
        return ["-o", o.address, "--tls", "--cafile", self.orderer_tls_ca(o)]

    # -------------------------------------------------------------- steps
    def crypto_material(self):
        cfg = self.write_yaml(self.work / "crypto-config.yaml", net_config.crypto_config(self.net))
        network_files.generate_crypto(self.bin / "cryptogen", cfg, Path(self.crypto), self.net.release)

    def genesis(self):
        self.write_yaml(self.work / "configtx" / "configtx.yaml", net_config.configtx(self.net, self.crypto))
        cfg = ["-configPath", self.work / "configtx"]
        if self.legacy:  # the orderers' system channel, and the application channel's creation transaction
            self.run([self.bin / "configtxgen", "-profile", "SystemChannel", "-channelID", net_config.SYSTEM_CHANNEL,
                      "-outputBlock", self.work / "system.block", *cfg])
            self.run([self.bin / "configtxgen", "-profile", "Channel", "-channelID", self.net.channel,
                      "-outputCreateChannelTx", self.work / "channel.tx", *cfg])
            return
        self.run([self.bin / "configtxgen", "-profile", "Channel", "-channelID", self.net.channel,
                  "-outputBlock", self.work / "channel.block", *cfg])

    def orderers_up(self):
        boot = str(self.work / "system.block") if self.legacy else ""
        for o in self.net.orderers:
            d = self.work / o.name
            self.write_yaml(d / "orderer.yaml", net_config.orderer_yaml(self.sample_orderer, self.net, o,
                                                                       self.crypto, str(d / "data"), boot))
            self.start(o.name, [self.bin / "orderer"], {"FABRIC_CFG_PATH": str(d)})
        for o, p in zip(self.net.orderers, self.procs):
            self.wait_port(o.host, o.port if self.legacy else o.admin_port, p)

    def admin_tls(self, o) -> tuple[str, str, str]:
        admin = f"{self.crypto}/{net_config.orderer_admin_dir()}/tls"
        return self.orderer_tls_ca(o), f"{admin}/client.crt", f"{admin}/client.key"

    def participation_join(self):
        # The last first: a node dials the others' cluster ports as soon as it joins, and a node that has
        # not joined yet refuses it (TLS "unknown certificate authority": its cluster CAs come from the
        # channel). SmartBFT's first leader (ID 1, orderer0) joining first then sent no heartbeat for
        # the whole leader timeout (1 min) and the followers changed the view.
        for o in reversed(self.net.orderers):
            participation.join(f"{o.host}:{o.admin_port}", self.work / "channel.block", self.admin_tls(o))

    def channel_create(self):
        """Before v2.3: the organization's admin creates the channel (retried while the system channel's
        Raft leader is elected), then fetches its block 0 for the join."""
        self.run([self.bin / "peer", "channel", "create", "-c", self.net.channel, "-f", self.work / "channel.tx",
                  "--outputBlock", self.work / "created.block", *self.orderer_flags()], env=self.admin_env(),
                 retries=30, delay=2, done_if="already exists")
        self.run([self.bin / "peer", "channel", "fetch", "0", self.work / "channel.block", "-c", self.net.channel,
                  *self.orderer_flags()], env=self.admin_env(), retries=10)

    def channel_active(self, timeout=60):
        end = time.monotonic() + timeout
        while True:
            states = []
            for o in self.net.orderers:
                body = participation.channel(f"{o.host}:{o.admin_port}", self.net.channel, self.admin_tls(o))
                states.append((body.get("status"), body.get("consensusRelation")))
            if all(s == ("active", "consenter") for s in states):
                return states
            if time.monotonic() > end:
                raise RuntimeError(f"channel not active on every orderer after {timeout} s: {states}")
            time.sleep(0.5)

    def peer_up(self):
        d = self.work / "peer0"
        self.write_yaml(d / "core.yaml", net_config.core_yaml(self.sample_core, self.net, self.net.peer, self.crypto,
                                                              str(d / "data"), str(BUILDER)))
        p = self.start("peer0", [self.bin / "peer", "node", "start"], {"FABRIC_CFG_PATH": str(d)})
        self.wait_port(self.net.peer.host, self.net.peer.port, p)

    def peer_join(self):
        # the orderers may still elect a leader: the peer's join only needs the block, retries cover the rest
        self.run([self.bin / "peer", "channel", "join", "-b", self.work / "channel.block"], env=self.admin_env(),
                 retries=10)

    def chaincode_package(self) -> Path:
        pkg = self.work / f"{CC_NAME}.tar.gz"
        pkg.write_bytes(network_files.chaincode_package(self.net.chaincode_address))
        return pkg

    def chaincode(self):
        pkg = self.chaincode_package()
        env = self.admin_env()
        self.run([self.bin / "peer", "lifecycle", "chaincode", "install", pkg], env=env)
        package_id = network_files.package_id(pkg.read_bytes())
        host, port = self.net.chaincode_address.rsplit(":", 1)
        cc = self.start("chaincode", [self.cc_binary], {"CHAINCODE_ID": package_id,
                                                       "CHAINCODE_SERVER_ADDRESS": self.net.chaincode_address})
        self.wait_port(host, int(port), cc)
        common = ["--channelID", self.net.channel, "--name", CC_NAME, "--version", CC_VERSION, "--sequence", "1"]
        self.run([self.bin / "peer", "lifecycle", "chaincode", "approveformyorg", *self.orderer_flags(), *common,
                  "--package-id", package_id, *WAIT], env=env, retries=5, delay=2,
                 # seen on BFT: the first attempt's approval committed, yet the CLI reported a failure
                 done_if="attempted to redefine uncommitted sequence (1) for namespace money-transfer with unchanged content")
        self.run([self.bin / "peer", "lifecycle", "chaincode", "commit", *self.orderer_flags(), *common,
                  "--peerAddresses", self.net.peer.address, "--tlsRootCertFiles", env["CORE_PEER_TLS_ROOTCERT_FILE"],
                  *WAIT], env=env)

    def invoke(self, *args):
        env = self.admin_env()
        return self.run([self.bin / "peer", "chaincode", "invoke", *self.orderer_flags(), "-C", self.net.channel,
                         "-n", CC_NAME, "--peerAddresses", self.net.peer.address,
                         "--tlsRootCertFiles", env["CORE_PEER_TLS_ROOTCERT_FILE"], "--waitForEvent",
                         "-c", json.dumps({"Args": list(args)})], env=env)

    def query(self, account) -> int:
        out = self.run([self.bin / "peer", "chaincode", "query", "-C", self.net.channel, "-n", CC_NAME,
                        "-c", json.dumps({"Args": ["balance", account]})], env=self.admin_env(), stdout_only=True)
        return int(out.strip().splitlines()[-1])

    def main(self) -> dict:
        for sub in ("logs", "pids"):
            (self.work / sub).mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        try:
            self.step("crypto", self.crypto_material)
            self.step("genesis", self.genesis)
            self.step("orderers_up", self.orderers_up)
            if not self.legacy:
                self.step("participation_join", self.participation_join)
                self.step("channel_active", self.channel_active)
            self.step("peer_up", self.peer_up)
            if self.legacy:
                self.step("channel_create", self.channel_create)
            self.step("peer_join", self.peer_join)
            self.step("chaincode", self.chaincode)
            self.step("create", lambda: (self.invoke("create", "a", "1000"), self.invoke("create", "b", "1000")))
            self.step("transfers", lambda: [self.invoke("transfer", "a", "b", "1") for _ in range(self.transfers)])
            balances = self.step("query", lambda: (self.query("a"), self.query("b")))
        finally:
            self.stop()
        version = self.run([self.bin / "peer", "version"]).split("Version:")[1].split()[0]
        committed = _committed_blocks(self.work / "logs" / "peer0.log")
        return {"release": version, "ordering": self.net.consensus, "orderers": len(self.net.orderers),
                "transfers": self.transfers, "balances": list(balances), "peer_blocks_committed": committed,
                "timings": self.timings, "total_s": round(time.monotonic() - started, 2)}


def _committed_blocks(log: Path) -> int:
    """Blocks the peer logged as committed ("Committed block [n] with k transaction(s) in ...")."""
    return sum(1 for line in log.read_text(errors="replace").splitlines() if "Committed block [" in line)


def main(argv: list, tools) -> int:
    ap = argparse.ArgumentParser(prog="smoke", description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--release", required=True, choices=net_config.RELEASES)
    ap.add_argument("--consensus", default="etcdraft", choices=("etcdraft", "BFT"))
    ap.add_argument("--chaincode", required=True, help="the money-transfer chaincode server binary")
    ap.add_argument("--work", required=True)
    ap.add_argument("--transfers", type=int, default=10)
    ap.add_argument("--base-port", type=int, default=27050)
    args = ap.parse_args(argv)
    summary = Smoke(args).main()
    print(json.dumps(summary, sort_keys=True))
    expected = [1000 - args.transfers, 1000 + args.transfers]
    return 0 if summary["balances"] == expected else 1



COMMAND = Command("smoke", "a timed network smoke of Fabric v2.2-v3.1 (Raft or BFT) on this machine", main)
