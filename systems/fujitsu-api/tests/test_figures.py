"""The Fujitsu paper's qualitative claims judged from measured means (systems/fujitsu-api/figures.py),
and its Fig. 2 breakdown drawn: synthetic run summaries, fast."""

from __future__ import annotations

import pytest

from harness.catalogue import load_paper

from fabricrepro_systems.fujitsu_api import figures as ff

PAPER = load_paper("fujitsu-api")
#: What the report passes every report part besides the experiment and summary; these parts read no run.
BUILD_KIND, RUN = "upstream", None


def _group(variant: str, sweep: dict, **metrics) -> dict:
    return {"variant": variant, "sweep": sweep, "metrics": {k: {"n": 1, "mean": v} for k, v in metrics.items()}}


def _claims(experiment: dict) -> list[dict]:
    """As a run's summary lists them (analyze keeps no params)."""
    return [{"id": c["id"], "compare": c["compare"], "verdict": "not comparable", "reason": "judge it from the figure"}
            for c in experiment["claims"]]


def _latency_summary(existent: dict, revised: dict) -> dict:
    groups = [_group("existent-api", {"network_latency_ms": ms}, throughput_tps=v) for ms, v in existent.items()]
    groups += [_group("revised-api", {"network_latency_ms": ms}, throughput_tps=v) for ms, v in revised.items()]
    return {"groups": groups}


def test_latency_claims_as_the_paper_describes_them_are_reproduced():
    exp = PAPER.experiment("fig5-network-latency")
    summary = {**_latency_summary({0: 700, 4: 690, 32: 600, 64: 300}, {0: 1350, 4: 1340, 32: 1100, 64: 310}),
               "claims": _claims(exp)}
    ff.judge_latency(exp, summary, "fig5", BUILD_KIND, RUN)
    assert {c["id"]: c["verdict"] for c in summary["claims"]} == {
        "no-effect-to-4ms": "reproduced", "small-loss-to-32ms": "reproduced", "advantage-gone-64ms": "reproduced"}
    assert "revised/existent at 64 ms = 1.03" in summary["claims"][2]["reason"]


def test_latency_claims_fail_when_the_rates_say_otherwise():
    exp = PAPER.experiment("fig5-network-latency")
    summary = {**_latency_summary({0: 700, 4: 400, 32: 100, 64: 100}, {0: 1350, 4: 700, 32: 110, 64: 300}),
               "claims": _claims(exp)}
    ff.judge_latency(exp, summary, "fig5", BUILD_KIND, RUN)
    assert {c["verdict"] for c in summary["claims"]} == {"not reproduced"}


def test_latency_claims_without_a_baseline_say_why():
    exp = PAPER.experiment("fig5-network-latency")
    summary = {**_latency_summary({4: 690}, {4: 1340}), "claims": _claims(exp)}
    ff.judge_latency(exp, summary, "fig5", BUILD_KIND, RUN)
    assert all(c["verdict"] == "not comparable" and "at 0 or" in c["reason"] for c in summary["claims"])
    assert "this run measured 4 ms" in summary["claims"][0]["reason"]


@pytest.mark.parametrize("four, verdict", [(700, "reproduced"), (300, "not reproduced")])
def test_four_nodes_like_one(four, verdict):
    exp = PAPER.experiment("fig4-api-comparison")
    groups = [_group(v, {"nodes": n, "concurrent_processes": 16}, throughput_tps=t)
              for v, n, t in [("existent-api", 1, 717), ("existent-api", 4, four),
                              ("revised-api", 1, 1417), ("revised-api", 4, 1350)]]
    summary = {"groups": groups, "claims": _claims(exp)}
    ff.judge_nodes(exp, summary, "fig4", BUILD_KIND, RUN)
    claim = next(c for c in summary["claims"] if c["id"] == "four-nodes-like-one")
    assert claim["verdict"] == verdict, claim["reason"]


def test_breakdown_figure_and_table():
    exp = PAPER.experiment("fig2-chaincode-time")
    metrics = dict(chaincode_exec_time_ms=1.19, chaincode_transfer_us=1000, chaincode_chaincode_us=130,
                   chaincode_peer_us=60, chaincode_message_share=84.0, chaincode_round_trips=5,
                   chaincode_serial_bound_tps=840, throughput_tps=100)
    blocks = ff.breakdown_blocks(exp, {"groups": [_group("existent-api", {}, **metrics)]}, "fig2", BUILD_KIND, RUN)
    assert blocks[0][0] == "img" and blocks[0][2][:8] == b"\x89PNG\r\n\x1a\n"
    assert blocks[1][2] == [["existent API", "1.19", "1000", "130", "60", "84", "5", "840", "100"]]
    assert ff.breakdown_blocks(exp, {"groups": []}, "fig2", BUILD_KIND, RUN) == []


def test_breakdown_shows_the_absolute_claims_measured_values():
    """They stay "not comparable" (analyze's verdict) but say what this run measured."""
    exp = PAPER.experiment("fig2-chaincode-time")
    groups = [_group("existent-api", {}, chaincode_message_share=61.5, chaincode_serial_bound_tps=801.5,
                     chaincode_exec_time_ms=1.248, chaincode_transfer_us=767, chaincode_chaincode_us=334,
                     chaincode_peer_us=147),
              _group("revised-api", {}, chaincode_message_share=62.0, chaincode_serial_bound_tps=1852,
                     chaincode_exec_time_ms=0.54, chaincode_transfer_us=335, chaincode_chaincode_us=132,
                     chaincode_peer_us=73)]
    summary = {"groups": groups, "claims": _claims(exp)}
    for c in summary["claims"]:
        c["compare"] = next(x["compare"] for x in exp["claims"] if x["id"] == c["id"])
    ff.breakdown_blocks(exp, summary, "fig2", BUILD_KIND, RUN)
    claims = {c["id"]: c for c in summary["claims"]}
    assert claims["message-share-90"]["verdict"] == "not comparable"
    assert claims["message-share-90"]["measured"] == 61.5
    assert "measured here 61.5 against the paper's about 90%" in claims["message-share-90"]["reason"]
    assert "measured here 801.5 against the paper's 500" in claims["serial-bound-500"]["reason"]
    assert "measured" not in claims["expected-2.5x"]  # a ratio across experiments: analyze's own reason


def test_report_names_each_points_link_delay(tmp_path):
    """Fig. 5's run metadata keeps the first point's links; the report lists each point's links.json."""
    import json
    from types import SimpleNamespace

    from harness.report import hosts

    for name, ms in [("a__network_latency_ms=0__r0", 0.0), ("a__network_latency_ms=32__r0", 32.0)]:
        (tmp_path / "points" / name).mkdir(parents=True)
        links = [{"from": "peer0", "to": "peer1", "proxies": ["p01"], "delay_ms": ms}]
        (tmp_path / "points" / name / "links.json").write_text(json.dumps(links))
    (tmp_path / "points" / "unshaped").mkdir()
    text = hosts._point_delays(SimpleNamespace(path=tmp_path))
    assert "a__network_latency_ms=0__r0 +0 ms; a__network_latency_ms=32__r0 +32 ms." in text
    assert hosts._point_delays(SimpleNamespace(path=tmp_path / "none")) == ""


def test_fig4_draws_one_line_per_api_and_node_count():
    """axes.series [variant, nodes]: 1- and 4-node points of one API are never joined into one line."""
    import matplotlib.pyplot as plt

    from harness.report import figures as report_figures

    exp = PAPER.experiment("fig4-api-comparison")
    groups = [_group(v, {"nodes": n, "concurrent_processes": c}, throughput_tps=100 * n + c)
              for v in ("existent-api", "revised-api") for n in (1, 4) for c in (8, 16, 32)]
    for g in groups:
        g["metrics"]["throughput_tps"]["std"] = 0.0
    fig, ax = plt.subplots()
    report_figures._draw_lines(ax, "concurrent_processes", ["existent-api", "revised-api"],
                              {"existent-api": "existent API", "revised-api": "revised API"}, groups,
                              exp["published"], {"existent-api": "throughput_tps", "revised-api": "throughput_tps"},
                              "", exp["axes"]["series"])
    labels = ax.get_legend_handles_labels()[1]
    plt.close(fig)
    assert "existent API, nodes=4 (measured)" in labels and "revised API, nodes=1 (published)" in labels
    assert sum("(measured)" in label for label in labels) == 4
