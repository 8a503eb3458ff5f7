"""harness/preflight.py: a run's ports, tools, build and disk are checked in seconds, before anything is deployed.

The taken-port tests hold a listener on a port the kernel chooses (never 7050)
and point the layout's port list at it, so they never collide with real runs.
"""

import io
import os
import shutil
import socket
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness import preflight
from harness.builds import Choice
from harness.errors import HarnessError
from harness.providers.local import LocalProvider
from harness.providers.netns import NetnsProvider

REPO = Path(__file__).resolve().parents[2]
FAKEBIN = Path(__file__).resolve().parent / "fakebin"


def _choice(placement: dict, kind: str = "reference", binaries=()) -> Choice:
    return Choice(kind, {"sys": {"playbook": "x.yml", "roles": list(placement), "binaries": list(binaries),
                                 "placement": placement}})


def _plan(scale: str = "smoke", network: dict | None = None):
    return SimpleNamespace(experiment={"network": network or {}}, points=[], scale=scale)


@pytest.fixture
def listener():
    """A TCP listener on 127.0.0.1 at a port the kernel chose; closed after the test."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    try:
        yield s.getsockname()[1]
    finally:
        s.close()


@pytest.fixture
def orderer_on(monkeypatch):
    """Make the ``orderer`` role need ``port`` (and no other role any)."""
    def use(port):
        monkeypatch.setattr(preflight, "role_listen_ports",
                            lambda role: {port: "orderer_port"} if role == "orderer" else {})
    return use


def test_the_roles_defaults_give_every_listening_port():
    # upstream Fabric 1.2's peer: its gRPC, chaincode and event ports; Kafka's three brokers; ZooKeeper's three servers
    assert set(preflight.listen_ports(["fabric_peer"])) == {7051, 7052, 7053}
    assert {9092, 9093, 9094, 2181, 2888, 3888, 2183} <= set(preflight.listen_ports(["kafka", "zookeeper"]))
    assert set(preflight.listen_ports(["orderer", "peer"])) == {7050, 7051, 9443, 9444}
    assert preflight.listen_ports(["loadgen", "blockwatch"]) == {}  # clients only dial out
    # a system's role declares its own in meta/preflight.yml: BFT-SMaRt node i on port_base + 10 i and the next
    assert set(preflight.listen_ports(["bftsmart_node"])) == {11000, 11001, 11010, 11011, 11020, 11021, 11030, 11031}


def test_a_systems_role_declares_the_tools_it_starts(monkeypatch):
    monkeypatch.setattr(preflight.shutil, "which", lambda tool: None if tool == "java" else "/bin/true")
    found = preflight.tool_problems("local", {"orderer": ["bftsmart_node"]}, delayed_links=False)
    assert any(p.startswith("java not found on PATH (needed by role bftsmart_node") for p in found)


@pytest.mark.network
def test_a_taken_port_is_named_with_its_holder_on_the_local_provider(listener, orderer_on, tmp_path):
    orderer_on(listener)
    with pytest.raises(preflight.PreflightError) as e:
        preflight.check(LocalProvider(work_root=tmp_path, bin_dir=FAKEBIN), _choice({"orderer": "orderer"}),
                        _plan(), results=tmp_path)
    msg = str(e.value)
    assert f"port {listener} (needed by orderer (orderer_port)) is in use on this machine: held by " in msg
    assert f"(pid {os.getpid()})" in msg
    assert msg.startswith("preflight: 1 problem(s), nothing was deployed:\n  - port")


@pytest.mark.network
@pytest.mark.skipif(shutil.which("ansible-playbook") is None, reason="needs ansible-playbook")
def test_reproduce_ends_in_seconds_on_a_taken_port_before_any_run_directory(listener, orderer_on, tmp_path,
                                                                           monkeypatch):
    """Table I on the local provider with its orderer's port taken: fails naming the port, makes no run."""
    from harness import reproduce as reproduce_mod
    orderer_on(listener)
    monkeypatch.setattr(reproduce_mod.Run, "create", lambda *a, **k: pytest.fail("a run directory was made"))
    monkeypatch.setattr(reproduce_mod, "prepare", lambda *a, **k: pytest.fail("the build was prepared"))
    started = time.monotonic()
    with pytest.raises(preflight.PreflightError, match=f"port {listener} .*pid {os.getpid()}"):
        reproduce_mod.reproduce("fastfabric", "table1-end-to-end", provider="local", build="reference",
                                results=tmp_path / "results", reports=tmp_path / "reports", stream=io.StringIO(),
                                provider_options={"bin_dir": FAKEBIN, "work_root": tmp_path / "work"})
    assert time.monotonic() - started < 30
    assert not (tmp_path / "results").exists()


@pytest.mark.network
def test_on_netns_the_hosts_own_their_ports(listener, orderer_on, tmp_path):
    """Each netns host is a network namespace made for the run: a listener of this machine's namespace
    cannot take its ports (no line for it)."""
    orderer_on(listener)
    netns = NetnsProvider(work_root=tmp_path, bin_dir=FAKEBIN)
    found = preflight.problems(netns, _choice({"orderer": "orderer"}), _plan(), results=tmp_path)
    assert not [p for p in found if p.startswith("port ")]


def test_two_components_of_one_host_needing_one_port():
    hosts = preflight.host_ports_of("netns", {"node": ["orderer", "fastfabric_orderer"]})
    assert preflight.layout_port_problems(hosts) == [
        "port 7050 is needed by 2 components on host node: orderer (orderer_port), "
        "fastfabric_orderer (fastfabric_orderer_port)"]


def test_missing_tools_name_what_needs_them_and_how_to_get_them(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    found = preflight.tool_problems("local", {"orderer": ["kafka"]}, delayed_links=False)
    assert "ansible-playbook not found on PATH (needed by every provider (deploys the roles); " \
           "`invoke setup` installs it)" in found
    assert any(p.startswith("java not found on PATH (needed by role kafka") for p in found)


def test_too_little_disk_for_the_scale(tmp_path, monkeypatch):
    monkeypatch.setitem(preflight.MIN_FREE_GIB, "paper", 10**9)
    (line,) = preflight.disk_problems("paper", [tmp_path, tmp_path / "not-yet"])
    assert f"free on the file system of {tmp_path}; scale paper needs at least {10**9} GiB" in line
    assert preflight.disk_problems("smoke", [tmp_path]) == [] or preflight.free_bytes(tmp_path) < 2 * 2**30


def test_an_upstream_build_without_source_or_toolchain(tmp_path, monkeypatch):
    from harness import upstream
    monkeypatch.setattr(upstream, "source_available", lambda recipe, source: "no snapshot 'x' and no git")
    monkeypatch.setenv("PATH", str(tmp_path))
    found = preflight.build_problems(Choice("upstream", {"fabric-1.2": {"placement": {}, "binaries": ["blockwatch"]}}),
                                     "auto", tmp_path)
    assert found[0] == f"not built: bin/blockwatch (in {tmp_path})"
    assert "upstream build of fabric-1.2 cannot be made: no snapshot 'x' and no git" in found
    assert any(p.startswith("go not found on PATH (needed to build the upstream fabric-1.2") for p in found)


def test_every_problem_is_one_line_of_one_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(HarnessError) as e:
        preflight.check(LocalProvider(work_root=tmp_path, bin_dir=tmp_path),
                        _choice({"loadgen": "client"}, binaries=["loadgen"]), _plan(), results=tmp_path)
    lines = str(e.value).splitlines()
    assert lines[0].startswith("preflight: ") and all(l.startswith("  - ") for l in lines[1:-1])
    assert lines[-1] == "  hint: run `invoke build`"
    assert any("not built: bin/loadgen" in l for l in lines)


def test_an_upstream_build_needs_its_component_kinds_tools(tmp_path, monkeypatch):
    """bftsmart-orderer's components are built by its plugin's ant kind: the preflight names java and ant
    (the kind's tools), with no kind named in the core."""
    from harness import upstream
    monkeypatch.setattr(upstream, "source_available", lambda recipe, source: None)
    monkeypatch.setenv("PATH", str(tmp_path))
    found = preflight.build_problems(Choice("upstream", {"bftsmart-orderer": {"placement": {}, "binaries": []}}),
                                     "auto", tmp_path)
    for tool in ("go", "java", "ant"):
        assert any(p.startswith(f"{tool} not found on PATH (needed to build the upstream bftsmart-orderer")
                   for p in found), found
    assert not any(p.startswith(("erl ", "make ")) for p in found), "couchdb-release's tools: not this recipe's"
