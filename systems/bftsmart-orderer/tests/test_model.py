"""Eq. 1 of the BFT-SMaRt ordering-service paper and the report's parts for Figs. 6 and 7 (systems/bftsmart-orderer/model.py)."""

import pytest

from fabricrepro_systems.bftsmart_orderer import model as M
from fabricrepro_systems.bftsmart_orderer.model import throughput_bound
from harness.errors import HarnessError


def test_paper_footnote_5_signing_capacity():
    # seed 004 footnote 5: TP_sign x bs = 8.4k x 100 = 840k envelopes/s
    b = throughput_bound(8400, 100)
    assert b.sign_term == 840000 and b.bound == 840000 and b.limited_by == "signing"


def test_bftsmart_term_sets_the_bound_when_lower():
    # Fig. 6a-c: ~50k tx/s measured below the 84k signing capacity (line 154)
    b = throughput_bound(8400, 10, bftsmart_envelopes_per_s=50000)
    assert (b.sign_term, b.bound, b.limited_by) == (84000, 50000, "bftsmart")


def test_double_signature_halves_the_signing_term():
    # line 128: with Fabric 1.0's two signatures, TP_sign / 2
    b = throughput_bound(8400, 10, bftsmart_envelopes_per_s=50000, both_signatures=True)
    assert (b.sign_term, b.bound, b.limited_by) == (42000, 42000, "signing")


@pytest.mark.parametrize("args", [(0, 10), (100, 0), (100, 10, -1.0)])
def test_bad_input_is_refused(args):
    with pytest.raises(HarnessError):
        throughput_bound(*args)


# ---------------------------------------------------------------- the report's part

def _group(nodes, bs, es, receivers, tp):
    return {"variant": "bftsmart", "sweep": {"nodes": nodes, "block_size": bs, "envelope_bytes": es,
                                             "receivers": receivers},
            "metrics": {"orderer_throughput_tps": {"mean": tp}}}


def test_bound_rows_halve_the_signing_term_with_two_signatures():
    rows = M.bound_rows([_group(4, 10, 40, 1, 500.0), _group(4, 100, 40, 1, 9000.0)], 1000.0, both=True)
    # 1000 sig/s / 2 x 10 = 5000 >= 500 (holds); x 100 = 50000 >= 9000 (holds)
    assert [(r["sign_term"], r["holds"]) for r in rows] == [(5000.0, True), (50000.0, True)]
    rows = M.bound_rows([_group(4, 10, 40, 1, 6000.0)], 1000.0, both=True)
    assert rows[0]["holds"] is False and rows[0]["share"] == pytest.approx(1.2)


def test_big_blocks_claim_is_judged_on_small_envelopes():
    judged = M.judge_fig6([_group(4, 10, 40, 1, 300.0), _group(4, 100, 40, 1, 450.0),
                           _group(4, 10, 1024, 1, 300.0), _group(4, 100, 1024, 1, 290.0)])
    ok, reason = judged["big-blocks-help-small-envelopes"]
    assert ok is True and "1.50 (4 nodes, 40 B, 1 receivers)" in reason
    judged = M.judge_fig6([_group(4, 10, 40, 1, 300.0), _group(4, 100, 40, 1, 330.0)])
    assert judged["big-blocks-help-small-envelopes"][0] is False  # 1.1 < 1.2: not "significantly higher"


def test_receiver_claims_need_the_receivers_swept():
    judged = M.judge_fig6([_group(4, 10, 40, 1, 300.0)])
    assert judged["receivers-matter-less-for-large"][0] is None and "one receiver count" in \
        judged["receivers-matter-less-for-large"][1]
    assert judged["receivers-converge"][0] is None and "16 and 32" in judged["receivers-converge"][1]
    judged = M.judge_fig6([_group(4, 10, 40, 1, 400.0), _group(4, 10, 40, 2, 200.0),
                           _group(4, 10, 1024, 1, 300.0), _group(4, 10, 1024, 2, 270.0)])
    ok, reason = judged["receivers-matter-less-for-large"]
    assert ok is True and "10% for 1-4 KB envelopes, 50% for 40-200 B" in reason


def test_report_blocks_without_a_signature_run_says_why():
    summary = {"groups": [_group(4, 10, 40, 1, 300.0)],
               "claims": [{"id": "receivers-converge", "compare": "qualitative", "verdict": "not comparable",
                           "reason": "a qualitative statement: judge it from the figure"}]}
    blocks = M.report_blocks({"id": M.FIG6}, summary, "figures/x", "upstream", run=None)
    assert "TP_sign is not measured" in blocks[0][1]
    assert "16 and 32" in summary["claims"][0]["reason"]


def _store_run(results, experiment, run_id, groups, both_sigs=None):
    import json

    from harness import SCHEMA_VERSION
    d = results / "bftsmart-orderer" / experiment / run_id
    d.mkdir(parents=True)
    build = {"kind": "upstream"}
    if both_sigs is not None:
        build["role_settings"] = {"bftsmart_config": {"bftsmart_config_both_sigs": both_sigs}}
    (d / "metadata.json").write_text(json.dumps({"schema_version": SCHEMA_VERSION, "paper": "bftsmart-orderer", "experiment": experiment, "run_id": run_id,
                                                 "status": "complete", "started_utc": run_id, "build": build}))
    (d / "summary.json").write_text(json.dumps({"schema_version": SCHEMA_VERSION, "groups": groups}))
    # its plan, every point of which it holds (a complete run holds every planned point: rundir.missing_points)
    (d / "resolved.yaml").write_text("points: []\n")
    from harness.rundir import Run
    return Run.open(d)


def test_report_blocks_read_the_signature_run_of_the_same_store(tmp_path):
    from harness.rundir import Run
    sign = {"variant": "bftsmart", "sweep": {}, "metrics": {"signatures_per_s": {"mean": 2000.0}}}
    _store_run(tmp_path, M.SIGN, "20260101T000000Z", [sign])
    fig6_groups = [_group(4, 10, 40, 1, 900.0), _group(4, 100, 40, 1, 1600.0)]
    run = _store_run(tmp_path, M.FIG6, "20260101T000100Z", fig6_groups, both_sigs=True)
    summary = {"groups": fig6_groups, "claims": []}
    blocks = M.report_blocks({"id": M.FIG6}, summary, "figures/fig6", "upstream", run=run)
    table = next(b for b in blocks if b[0] == "table")
    # TP_sign 2000 / 2 (two signatures per block) x 10 = 10000; x 100 = 100000
    assert [row[5] for row in table[2]] == ["1e+04", "1e+05"] and [row[-1] for row in table[2]] == ["yes", "yes"]
    assert any(b[0] == "img" for b in blocks)
    # the signature benchmark's report judges its claim against the Fig. 6 run of the same store
    claims = {"claims": [{"id": "signing-not-bottleneck", "compare": "qualitative", "verdict": "not comparable"}],
              "groups": [sign], "run_id": "20260101T000000Z"}
    sign_run = Run.open(tmp_path / "bftsmart-orderer" / M.SIGN / "20260101T000000Z")
    M.report_blocks({"id": M.SIGN}, claims, "figures/sign", "upstream", run=sign_run)
    assert claims["claims"][0]["verdict"] == "reproduced" and "1e+05 envelopes/s" in claims["claims"][0]["reason"]


# ---------------------------------------------------------------- Fig. 7 (bftsmart-geo)

def _fig7():
    from harness.catalogue import load_paper
    return next(e for e in load_paper("bftsmart-orderer").experiments if e["id"] == "fig7-geo-latency")


def _geo(wheat_scale=0.6, sp_extra=130.0, size_extra=20.0):
    """Latencies shaped like the paper's text: WHEAT a fraction of BFT-SMaRt, Sao Paulo slower, 4 KB a bit slower."""
    base = {"oregon": 200.0, "virginia": 230.0, "sao-paulo": 230.0 + sp_extra}
    lat = {}
    for v, scale in (("bftsmart", 1.0), ("wheat", wheat_scale)):
        for e, extra in ((40, 0.0), (4096, size_extra)):
            for r, ms in base.items():
                for i, (col, _) in enumerate(M.PERCENTILES):
                    lat[(v, e, r, col)] = (ms + extra + 10 * i) * scale
    return lat


def test_fig7_claims_and_published_values_are_judged_from_the_latencies():
    verdicts, rows = M.judge_fig7(_geo(), _fig7())
    assert verdicts["wheat-up-to-45pct-less"][0] == "reproduced"          # 0.6 in [0.44, 0.66], all <= 1
    assert verdicts["wheat-up-to-45pct-less"][1] == pytest.approx(0.6)
    assert verdicts["wheat-always-lower"][0] == "reproduced"
    held = {r[0]: r[3] for r in rows}
    # WHEAT's largest: (230 + 130 + 20 + 20) x 0.6 = 240 ms < 500; 4 KB - 40 B = 20 ms <= 61;
    # Sao Paulo - Virginia = 130 x 0.6 = 78 ms, not above 90; Sao Paulo - Oregon = 160 x 0.6 = 96, not within 25 % of 120
    assert held == {"wheat-below-500ms": "yes", "abstract-half-second": "yes", "block-size-effect-61ms": "yes",
                    "virginia-vs-sao-paulo": "**no**", "sao-paulo-vs-oregon": "yes"}


def test_fig7_wheat_slower_somewhere_is_not_reproduced():
    lat = _geo()
    lat[("wheat", 40, "virginia", "p95_ms")] = lat[("bftsmart", 40, "virginia", "p95_ms")] * 1.1
    verdicts, _ = M.judge_fig7(lat, _fig7())
    assert verdicts["wheat-always-lower"][0] == "not reproduced" and "virginia" in verdicts["wheat-always-lower"][2]
    assert verdicts["wheat-up-to-45pct-less"][0] == "not reproduced"     # one ratio above 1
    verdicts, _ = M.judge_fig7(_geo(wheat_scale=0.9), _fig7())
    assert verdicts["wheat-up-to-45pct-less"][0] == "not reproduced"     # never 45 % less
    assert verdicts["wheat-always-lower"][0] == "reproduced"


def test_fig7_without_both_protocols_says_why():
    lat = {k: v for k, v in _geo().items() if k[0] == "wheat"}
    verdicts, rows = M.judge_fig7(lat, _fig7())
    assert verdicts["wheat-always-lower"][0] == "not comparable" and "both protocols" in verdicts["wheat-always-lower"][2]
    assert {r[0] for r in rows} >= {"wheat-below-500ms", "virginia-vs-sao-paulo"}


def test_fig7_latencies_read_from_a_run_and_drawn(tmp_path):
    import json
    import pandas as pd
    for v, e in (("bftsmart", 40), ("wheat", 40)):
        d = tmp_path / "points" / f"{v}__envelope_bytes={e}__r0"
        d.mkdir(parents=True)
        (d / "point.json").write_text(json.dumps({"schema_version": 1, "variant": v, "sweep": {"envelope_bytes": e}}))
        (d / "summary.json").write_text(json.dumps({"schema_version": 1, "status": "complete"}))
        scale = 1.0 if v == "bftsmart" else 0.5
        rows = [{"frontend": f, "region": r, "report": i, "mean_ms": 0.0, "p50_ms": (100.0 + i) * scale,
                 "p90_ms": 150.0 * scale, "p95_ms": 170.0 * scale, "max_ms": 300.0}
                for f, r in ((1000, "oregon"), (3000, "sao-paulo")) for i in range(3)]
        pd.DataFrame(rows).to_parquet(d / "bft_frontend_latency.parquet")
    lat = M.geo_latencies(tmp_path)
    # the first of three reports is left out: (101 + 102) / 2
    assert lat[("bftsmart", 40, "oregon", "p50_ms")] == pytest.approx(101.5)
    assert lat[("wheat", 40, "sao-paulo", "p95_ms")] == pytest.approx(85.0)
    assert M.draw_fig7(lat, {}).startswith(b"\x89PNG")
