"""WHEAT for Fig. 7 (systems/bftsmart-orderer, flavour zeromq-wheat): the build's recipe and the driver's pieces.

Fast tests (a few seconds): the flavour's choice by the ``generation`` switch;
the geo layout, weights and link delays; the parser of bft.TestNodes' latency
reports on a golden sample. The component mechanism the flavour needs (a merge,
a component's own patches, inputs from an earlier component) is tested on toy
projects in tests/harness/test_upstream_components.py. The real WHEAT build
(bft-smart/library wheat2 merged with master, the zeromq nodes linked against
it) is opt-in: it clones the library, so it runs only when
FABRICREPRO_BFTSMART_LIBRARY_GIT names a clone source of bft-smart/library (a
mirror, or https://github.com/bft-smart/library.git).
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fabricrepro_systems.bftsmart_orderer import logs
from harness import upstream
from harness.deploy import ansible_env, playbook_path
from harness.errors import HarnessError

FIXTURES = Path(__file__).parent / "fixtures"

def test_generation_switch_picks_the_zeromq_wheat_flavour():
    recipe = upstream.load_recipe("bftsmart-orderer")
    assert upstream.matching_flavours("bftsmart-orderer", recipe, {"protocol": "bftsmart"}) == []
    (flavour,) = upstream.matching_flavours("bftsmart-orderer", recipe, {"protocol": "wheat", "generation": "zeromq"})
    comps = flavour["components"]
    assert comps["wheat-library"]["commit"].startswith("41a23e076f3d")
    assert comps["wheat-library"]["merge"]["commit"].startswith("ff5f027ab7f1")
    assert comps["ordering-service"]["commit"].startswith("3bea6670ea19")
    assert comps["ordering-service"]["inputs"] == {"lib/BFT-SMaRt.jar": "wheat-library:bin/BFT-SMaRt.jar"}
    # each patch the flavour names exists and has its header
    upstream.component_patches({"system": "bftsmart-orderer", "components": comps})


@pytest.mark.skipif(not os.environ.get("FABRICREPRO_BFTSMART_LIBRARY_GIT"),
                    reason="opt-in (about a minute): set FABRICREPRO_BFTSMART_LIBRARY_GIT to a clone source of "
                           "bft-smart/library (a mirror or GitHub's URL)")
def test_wheat_library_and_zeromq_nodes_build_from_source(tmp_path, monkeypatch):
    source = os.environ["FABRICREPRO_BFTSMART_LIBRARY_GIT"]
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", f"url.{source}.insteadOf")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "https://github.com/bft-smart/library.git")
    recipe = upstream.load_recipe("bftsmart-orderer")
    (flavour,) = upstream.matching_flavours("bftsmart-orderer", recipe, {"generation": "zeromq"})
    if upstream.source_available({**flavour["components"]["ordering-service"], "system": "x"}, "snapshot"):
        pytest.skip("no snapshot bftsmart-os-zeromq in ../shared/upstream")
    out = upstream._build_components({"system": "bftsmart-orderer", "components": flavour["components"]},
                                     tmp_path / "components", "auto", lambda *_: None)
    jar = tmp_path / "components" / "ordering-service" / "lib" / "BFT-SMaRt.jar"
    classes = subprocess.run(["unzip", "-p", str(jar), "bftsmart/reconfiguration/util/TOMConfiguration.class"],
                             capture_output=True, check=True).stdout
    assert b"system.useweights" in classes and b"system.tentative" in classes
    assert out["ordering-service"]["inputs"]["lib/BFT-SMaRt.jar"]["sha256"] == upstream.sha256_file(jar)


# ---------------------------------------------------------------- Fig. 7's driver: layout, weights, links

REGIONS = ["oregon", "virginia", "ireland", "sydney", "sao-paulo"]


def _fig7() -> dict:
    from harness.catalogue import load_paper
    return next(e for e in load_paper("bftsmart-orderer").experiments if e["id"] == "fig7-geo-latency")


@pytest.fixture
def geo_config(tmp_path):
    """Run the config play of the driver's playbook bftsmart-geo.yml (controller only) for a protocol; return its files."""
    if not shutil.which("ansible-playbook"):
        pytest.skip("ansible-playbook is not installed")
    import sys
    import json
    import yaml
    svc = tmp_path / "svc" / "config"
    svc.mkdir(parents=True)
    (svc / "system.config").write_text("system.servers.num = 4\nsystem.servers.f = 1\n"
                                       "system.initial.view = 0,1,2,3\nsystem.totalordermulticast.maxbatchsize = 400\n")
    # the sample MSP's key as the Fabric fork ships it: PKCS#8 (the nodes get it as SEC1)
    keystore = tmp_path / "gopath/src/github.com/hyperledger/fabric/sampleconfig/msp/keystore"
    keystore.mkdir(parents=True)
    subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-out", str(keystore / "key.pem")], check=True, capture_output=True)
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    # as in a run: the region hosts have a work root (group_vars' fabricrepro_work_dir), the controller none
    # and, as on netns, a name (resolved to the links' proxies elsewhere) and an own address
    hosts = {r: {**local, "fabricrepro_address": r, "ansible_host": f"10.77.0.{i + 1}",
                 "fabricrepro_work_root": str(tmp_path / "work" / r)} for i, r in enumerate(REGIONS)}
    inventory = {"all": {"hosts": {"localhost": local, **hosts},
                         "children": {"bftsmart_geo": {"hosts": {r: None for r in REGIONS}}}}}
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))

    def run(protocol: str) -> dict:
        ctl = tmp_path / protocol
        extra = {"fabricrepro_upstream_dir": str(tmp_path), "bftsmart_geo_service_dir": str(tmp_path / "svc"),
                 "bftsmart_geo_block_size": 100,  # Fig. 7's, a point's block_size (the role has no default)
                 "fabricrepro_controller_dir": str(ctl), "fabricrepro_point_path": protocol,
                 "fabricrepro_switches": {"protocol": protocol, "generation": "zeromq"}}
        r = subprocess.run(["ansible-playbook", "-i", str(tmp_path / "inventory.yml"), str(playbook_path("bftsmart-geo.yml")),
                            "--tags", "configure", "-e", json.dumps(extra)],
                           capture_output=True, text=True, timeout=120, env=ansible_env())
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
        d = ctl / "bftsmart_geo"
        system = dict(line.split(" = ", 1) for line in (d / "system.config").read_text().splitlines() if " = " in line)
        layout = json.loads((d / "layout.json").read_text())
        # each region's instances got the shipped config/ with the run's system.config and a hosts.config
        # naming the other regions' replicas (their delayed links) and giving this host's own address to its
        # own replica: a replica binds to its entry, and on netns its own name resolves to 127.0.1.1
        for i, r in enumerate(REGIONS):
            for inst in (tmp_path / "work" / r / protocol / "bftsmart_geo").iterdir():
                assert (inst / "config" / "system.config").read_text() == (d / "system.config").read_text()
                entries = [l.split() for l in (inst / "config" / "hosts.config").read_text().splitlines()
                           if not l.startswith("#")]
                key = inst / "config" / "node-key.pem"
                if inst.name.startswith("node"):   # BFTNode casts the parsed key to a PEMKeyPair: SEC1 only
                    assert key.read_text().startswith("-----BEGIN EC PRIVATE KEY-----")
                else:
                    assert not key.exists()
                assert entries == [[str(n["id"]), f"10.77.0.{i + 1}" if n["host"] == r else n["region"], str(n["port"])]
                                   for n in layout["nodes"]], (inst, entries)
        return {"layout": layout, "system": system,
                "hosts": [l.split() for l in (d / "hosts.config").read_text().splitlines() if not l.startswith("#")]}
    return run


def test_wheat_config_gives_oregon_and_virginia_vmax(geo_config):
    cfg = geo_config("wheat")
    assert cfg["system"]["system.servers.num"] == "5"
    assert cfg["system"]["system.initial.view"] == "0,4,1,2,3"   # the first 2f weigh V_max (View.computeWeights)
    assert cfg["system"]["system.useweights"] == "true" and cfg["system"]["system.tentative"] == "true"
    assert cfg["system"]["system.totalordermulticast.maxbatchsize"] == "400"   # the sample's other keys stay
    weights = {n["region"]: n["weight"] for n in cfg["layout"]["nodes"]}
    # seed 004 line 162: Oregon (the leader, replica 0) and Virginia carry V_max = 2; the rest V_min = 1 (line 84)
    regions = _fig7()["regions"]["wheat_weighted_regions"]
    assert sorted(r for r, w in weights.items() if w == 2) == sorted(regions["v_max"])
    assert sorted(r for r, w in weights.items() if w == 1) == sorted(regions["v_min"])
    assert ["0", "oregon", "11000"] in cfg["hosts"] and ["4", "virginia", "11040"] in cfg["hosts"]
    assert {f["region"] for f in cfg["layout"]["frontends"]} == {"oregon", "virginia", "sao-paulo"}


def test_bftsmart_config_has_four_unweighted_replicas_and_the_same_frontends(geo_config):
    cfg = geo_config("bftsmart")
    assert cfg["system"]["system.servers.num"] == "4" and cfg["system"]["system.initial.view"] == "0,1,2,3"
    assert cfg["system"]["system.useweights"] == "false" and cfg["system"]["system.tentative"] == "false"
    assert {n["region"] for n in cfg["layout"]["nodes"]} == {"oregon", "ireland", "sydney", "sao-paulo"}
    assert {n["weight"] for n in cfg["layout"]["nodes"]} == {1}
    assert {f["region"] for f in cfg["layout"]["frontends"]} == {"oregon", "virginia", "sao-paulo"}


def test_every_region_pair_is_delayed_both_ways_on_every_node_port():
    from harness import reproduce, runner
    exp = _fig7()
    hosts = {h: ["bftsmart_geo"] for h in exp["topology"]}
    links = reproduce.network_links(exp, hosts)
    delay = {(l["from"], l["to"]): l["delay_ms"] for l in links}
    assert len(delay) == 20                       # 10 region pairs, each direction
    for (a, b), d in delay.items():
        assert delay[(b, a)] == d and 20 <= d <= 200
    # Oregon-Sao Paulo: half of the 182.7 ms round trip the cited 2017 table gives
    assert delay[("oregon", "sao_paulo")] == 91
    ports = set(runner.host_ports(["bftsmart_geo"]))
    for node in range(5):                          # client and replica port of every node
        assert {11000 + 10 * node, 11001 + 10 * node} <= ports


# ---------------------------------------------------------------- TestNodes' latency reports

def test_testnodes_latency_reports_are_parsed_and_a_cut_report_left_out():
    # captured: Oregon's TestNodes 1000 in Fig. 7 run 20261124T070434Z-4b0c260 (BFT-SMaRt, 40 B, overloaded)
    text = (FIXTURES / "testnodes_1000.log").read_text()
    reports = logs.testnodes_latency(text)
    assert len(reports) == 3
    first = reports[0]
    assert first["frontend"] == 1000 and first["report"] == 0
    assert first["mean_ms"] == pytest.approx(1891.023) and first["p50_ms"] == pytest.approx(1863.768)
    assert first["p90_ms"] == pytest.approx(2403.862) and first["p95_ms"] == pytest.approx(2491.852)
    assert first["max_ms"] == pytest.approx(2804.654)
    assert math.isnan(first["sd_ms"])   # TestNodes prints its deviation as NaN here
    assert [r["p50_ms"] for r in reports[1:]] == pytest.approx([2236.752, 21643.325])
    # a report cut off at the end of the file (the process stopped while printing) is left out
    cut = text[:text.rindex("[latency] 1000 // 90th p")]
    assert [r["report"] for r in logs.testnodes_latency(cut)] == [0, 1]


def test_testnodes_output_without_a_report_is_an_error():
    with pytest.raises(HarnessError, match="TestNodes output"):
        logs.testnodes_latency("Waiting 15 seconds...\nWindow of client 1001 is full\n")


def test_frontend_latency_table_and_metric(tmp_path):
    from harness import analyze
    text = (FIXTURES / "testnodes_1000.log").read_text()
    for region, fid in (("oregon", 1000), ("sao-paulo", 3000)):
        (tmp_path / "logs" / region).mkdir(parents=True)
        (tmp_path / "logs" / region / f"testnodes-{fid}.log").write_text(text.replace("] 1000 //", f"] {fid} //"))
    table = logs.frontend_latency_table(tmp_path)
    assert sorted(set(zip(table["region"], table["frontend"]))) == [("oregon", 1000), ("sao-paulo", 3000)]
    out = analyze.compute_all({"bft_frontend_latency": table})
    # three reports per frontend, the first left out (the clients' start), averaged, then over the two frontends
    assert out["frontend_latency_p50_ms"] == pytest.approx((2236.752 + 21643.325) / 2)


def test_fig7_is_skipped_with_a_reason_where_links_cannot_be_delayed():
    from harness.reproduce import skip_reason
    exp = _fig7()
    assert "local provider cannot apply" in skip_reason(exp, provider="local")
    assert skip_reason(exp, provider="netns") is None
