"""The fidelity comparison (reference ÷ upstream) on hand-made run summaries (test doubles of stored runs)."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from harness import fidelity
from harness.report.text import fmt


def _run(name, kind, host=None, scale="smoke"):
    return SimpleNamespace(path=Path(f"/runs/{name}"), metadata={
        "build": {"kind": kind}, "host": host or {"cpu_model": "X", "cores": 2}, "scale": scale, "provider": "local"})


SUMMARIES = {
    "ref": {"groups": [{"variant": "fabric-1.2", "metrics": {"throughput_tps": {"mean": 5000.0, "n": 2},
                                                             "vscc_ms": {"mean": 10.0, "n": 2}}}]},
    "up": {"groups": [{"variant": "fabric-1.2", "metrics": {"throughput_tps": {"mean": 2500.0, "n": 2},
                                                            "vscc_ms": {"mean": 40.0, "n": 2}}}]},
}


@pytest.fixture(autouse=True)
def summaries(monkeypatch):
    monkeypatch.setattr(fidelity, "analyze_run", lambda run: SUMMARIES[run.path.name.split("-")[0]])


def test_ratio_is_reference_over_upstream():
    c = fidelity.compare(_run("ref-1", "reference"), _run("up-1", "upstream"), "fabric-1.2")
    rows = {r["metric"]: r for r in c["rows"]}
    assert rows["throughput_tps"]["ratio"] == 2.0
    assert rows["vscc_ms"]["ratio"] == 0.25
    assert c["not_comparable"] is None
    assert "block_latency_ms" not in rows  # measured by neither


def test_runs_on_other_hosts_or_scales_are_not_comparable():
    other = _run("up-1", "upstream", host={"cpu_model": "Y", "cores": 24})
    assert "different hosts" in fidelity.compare(_run("ref-1", "reference"), other, "fabric-1.2")["not_comparable"]
    assert "different scales" in fidelity.not_comparable(_run("ref-1", "reference"), _run("up-1", "upstream",
                                                                                          scale="local"))


def test_section_lists_each_experiment_with_both_builds(monkeypatch):
    runs = {("e1", "reference"): _run("ref-1", "reference"), ("e1", "upstream"): _run("up-1", "upstream")}
    monkeypatch.setattr(fidelity, "latest_complete_run", lambda results, paper, exp, kind: runs.get((exp, kind)))
    experiments = [{"id": "e1", "title": "one", "variants": [{"id": "fabric-1.2", "system": "fabric-1.2"}]},
                   {"id": "e2", "title": "two", "variants": [{"id": "fabric-1.2", "system": "fabric-1.2"}]}]
    comparisons = fidelity.fidelity("/results", "p", experiments, "fabric-1.2")
    assert [c["experiment"] for c in comparisons] == ["e1"]
    blocks = fidelity.blocks(comparisons, fmt)
    assert blocks[0] == ("h2", "Fidelity of the reference build")
    table = next(b for b in blocks if b[0] == "table")
    assert ["throughput_tps (tx/s)", "5,000 (n=2)", "2,500 (n=2)", "2"] in table[2]
    assert fidelity.blocks([], fmt) == []


def test_caption_names_the_upstream_build_and_its_drivers_deviation():
    from harness.report.text import caption
    meta = {"run_id": "r", "status": "complete", "provider": "local", "scale": "smoke",
            "host": {"cores": 2, "cpu_model": "X"},
            "build": {"kind": "upstream",
                      "systems": {"fabric-1.2": {"repository": "hyperledger/fabric", "built_commit": "cae2ad4456914adf",
                                                 "source": {"kind": "snapshot"}, "patches": [{"name": "0001-x.patch"}]}},
                      "drivers": {"fabric-1.2": {"playbook": "p.yml", "note": "Deviation: blocks over Deliver."}}}}
    text = caption(meta, {"points": {"complete": 1, "total": 1}}, {"repetitions": 1})
    assert "upstream — fabric-1.2 hyperledger/fabric @ cae2ad445691 (snapshot), patches: 0001-x.patch" in text
    assert text.endswith("Deviation: blocks over Deliver.")
