"""A report a researcher reads at a glance (issue 23, item 4 and the caveats of item 6).

Visible measured bars beside large published values, repeated sentences folded, each table once,
resource plots in human units with the measured window, one memory value per timestamp, the
schema version in resources.parquet, n=1 without "± 0", every experiment's deviations and fixed
parameters, and each claim's ``comparable_on`` beside any verdict.
"""

import json
from types import SimpleNamespace

import pandas as pd
import pyarrow.parquet as pq
import pytest

from harness.report import experiment as EXP
from harness.report import figures as FIG
from harness.report import hosts as HOSTS
from harness.report import paper as PAPER
from harness.report import render as RENDER
from harness.report import text as TEXT
from harness.report import verdicts as V
from harness import resources as RES
from harness.errors import HarnessError

METRIC = "throughput_tps"


def _capture(monkeypatch, module, name="png_bytes"):
    """Replace ``module.png_bytes`` by one that keeps the figure (and still returns bytes)."""
    figures = []

    def keep(fig, **_kw):
        figures.append(fig)
        return b"png"
    monkeypatch.setattr(module, name, keep)
    return figures


def _experiment(published):
    return {"id": "t1", "title": "End-to-end", "metric": METRIC, "axes": {"x": "variant"},
            "variants": [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}],
            "published": [{"variant": v, "value": x, "metric": METRIC} for v, x in published]}


def _groups(means, n=3):
    return [{"variant": v, "sweep": {}, "metrics": {METRIC: {"n": n, "mean": m, "std": 0.0 if n == 1 else 10.0}}}
            for v, m in means]


# 1. bars: a log y axis beyond a 20x spread, and every measured bar labelled with its value

def test_tiny_measured_bars_beside_published_get_a_log_axis_and_their_values(monkeypatch):
    figures = _capture(monkeypatch, FIG)
    FIG.draw_figure(_experiment([("a", 3185), ("b", 19112)]), {"groups": _groups([("a", 296), ("b", 844)])})
    (fig,) = figures
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and "log scale" in ax.get_ylabel()
    labels = {t.get_text() for t in ax.texts}
    assert {"296", "844"} <= labels
    low, _ = ax.get_ylim()
    assert low < 296  # the smallest bar stands above the axis' bottom


def test_close_values_keep_a_linear_axis_but_still_carry_their_values(monkeypatch):
    figures = _capture(monkeypatch, FIG)
    FIG.draw_figure(_experiment([("a", 3185), ("b", 19112)]), {"groups": _groups([("a", 1526), ("b", 2863)])})
    ax = figures[0].axes[0]
    assert ax.get_yscale() == "linear"
    assert {"1,526", "2,863"} <= {t.get_text() for t in ax.texts}


def test_a_variant_shown_by_its_own_metric_gets_its_bar_and_its_row_names_the_metric(monkeypatch):
    """fig4-revisit-v31: v0.6.1's committed throughput_tps beside v3.1's endorsement_throughput_tps (run
    20261129T053042Z showed v0.6.1's columns empty, "- (n=0)")."""
    figures = _capture(monkeypatch, FIG)
    experiment = _experiment([])
    experiment["metric"] = "endorsement_throughput_tps"
    experiment["variants"][0]["metric"] = METRIC
    groups = [{"variant": "a", "sweep": {}, "metrics": {METRIC: {"n": 3, "mean": 805.0, "std": 5.0},
                                                         "endorsement_throughput_tps": {}}},
              {"variant": "b", "sweep": {}, "metrics": {"endorsement_throughput_tps": {"n": 3, "mean": 1072.0,
                                                                                       "std": 9.0}}}]
    FIG.draw_figure(experiment, {"groups": groups})
    assert {"805", "1,072"} <= {t.get_text() for t in figures[0].axes[0].texts}
    _, rows = EXP._measured_table(experiment, {"groups": groups})
    assert rows[0][3].startswith("805") and rows[0][3].endswith(f"({METRIC})")
    assert rows[1][3].startswith("1,072") and "(" + "endorsement" not in rows[1][3]
    # negative control: without the variant's own metric its column is empty, as before
    del experiment["variants"][0]["metric"]
    _, rows = EXP._measured_table(experiment, {"groups": groups})
    assert rows[0][3].startswith("–")


# 2. one sentence per distinct link shaping and reason, with the count

def test_links_not_applied_is_said_once_with_the_count():
    roles = ["client", "kafka", "orderer", "peer", "storage", "zookeeper"]
    why = "the local provider runs every role on one host"
    links = [{"from": a, "to": b, "rate_mbit": 1000, "applied": False, "reason": why}
             for a in roles for b in roles if a != b]
    text = HOSTS._links_text({"cluster": {"links": links}})
    assert len(links) == 30 and text.count(why) == 1 and "30 links" in text


def test_point_delays_are_folded_by_delay(tmp_path):
    for i in range(4):
        d = tmp_path / "points" / f"p__r{i}"
        d.mkdir(parents=True)
        (d / "links.json").write_text(json.dumps([{"delay_ms": 50, "delay_method": "netem"}]))
    text = HOSTS._point_delays(SimpleNamespace(path=tmp_path))
    assert text.count("+50 ms") == 1 and "4 point(s)" in text


# 3. the claims table once in the paper's report (at the top); the section points to it

def test_claims_table_appears_once_in_the_paper_report(root, tmp_path, monkeypatch):
    claim = {"id": "c1", "statement": "Quick is as fast as slow", "compare": "ratio", "expected": 1.0,
             "measured": 1.02, "verdict": "reproduced", "reason": "measured 1.02"}

    seen = []

    def blocks(experiment, run, figure):  # the claim belongs to the first experiment only
        seen.append(experiment["id"])
        mine = [claim] if len(seen) == 1 else []
        return [("h2", experiment["id"])] + ([("table", V.CLAIM_HEADERS, V.claims_rows(mine))] if mine else []), mine, []
    def select(results, paper, exp, **_kw):  # TEST DOUBLE of selection.select_runs: one run per experiment
        (tmp_path / "runs" / exp).mkdir(parents=True, exist_ok=True)
        return SimpleNamespace(shown=SimpleNamespace(path=tmp_path / "runs" / exp))
    monkeypatch.setattr(PAPER, "select_runs", select)
    monkeypatch.setattr(PAPER, "experiment_blocks", blocks)
    out = PAPER.render_paper("mini", tmp_path / "results", tmp_path / "reports", root / "papers")
    md = (out / "report.md").read_text()
    assert md.count("| Quick is as fast as slow |") == 1
    assert "Claims table at the top" in md
    own = tmp_path / "runs" / seen[0] / "report.md"  # the run's own report keeps its claims table
    assert own.read_text().count("| Quick is as fast as slow |") == 1


# 4. resource plots: human units, no offset, the measured window shaded (or said to be missing)

def _resources(times, mem, stale=None):
    rows = []
    for t, m in zip(times, mem):
        rows += [(t, "h", "peer", "cpu_util_ratio", 0.5), (t, "h", "peer", "net_rx_bytes_per_s", 3e7),
                 (t, "h", "peer", "mem_used_bytes", m)]
        if stale is not None:
            rows.append((t, "h", "peer", "mem_used_bytes", stale))
    return pd.DataFrame(rows, columns=["time_ns", "host", "role", "metric", "value"])


def test_resource_plot_has_human_units_and_the_measured_window(monkeypatch):
    import harness.figure_png as F
    figures = _capture(monkeypatch, F)
    t = [10**18 + i * 10**9 for i in range(10)]
    RES.plot_resources(_resources(t, [2.1e9 + i * 1e6 for i in range(10)]), None, window_ns=(t[3], t[6]))
    (fig,) = figures
    fig.canvas.draw()
    labels = [ax.get_ylabel() for ax in fig.axes]
    assert labels == ["CPU %", "net rx (MB/s)", "memory used (GB)"]
    assert all(ax.yaxis.get_offset_text().get_text() == "" for ax in fig.axes)
    assert max(fig.axes[0].lines[0].get_ydata()) == pytest.approx(50)
    assert max(fig.axes[2].lines[0].get_ydata()) == pytest.approx(2.109)
    spans = [p for p in fig.axes[0].patches]
    assert spans and spans[0].get_x() == pytest.approx(3.0)


def _point(tmp_path, name, df, doc, blocks=None):
    d = tmp_path / "points" / name
    (d / "metrics").mkdir(parents=True)
    df.to_parquet(d / "metrics" / "resources.parquet", index=False)  # an older file: no schema version
    (d / "metrics" / "resources.json").write_text(json.dumps({"schema_version": 1, **doc}))
    if blocks is not None:
        blocks.to_parquet(d / "blocks.parquet", index=False)
    return d


def test_measured_window_from_blocks_and_a_note_where_there_is_none(tmp_path):
    t = [10**18 + i * 10**9 for i in range(10)]
    blocks = pd.DataFrame({"block_number": [1, 2, 3], "received_ns": [t[2], t[4], t[5]],
                           "committed_ns": [t[2] + 5, t[4] + 5, t[7]]})
    d = _point(tmp_path, "a__r0", _resources(t, [1e9] * 10), {"hosts": {}}, blocks)
    (d / "measured.json").write_text(json.dumps({"first_block": 2}))
    assert HOSTS.measured_window(d) == (t[4], t[7])
    _point(tmp_path, "b__r0", _resources(t, [1e9] * 10), {"hosts": {}})
    run = SimpleNamespace(path=tmp_path, metadata={"provider": "local"})
    captions = [b[3] for b in HOSTS.resource_blocks(run, "figures/x") if b[0] == "img"]
    assert "shaded: the measured window" in captions[0] and "not recorded for this point" in captions[1]


# 5. one memory value per host and timestamp; the schema version in resources.parquet

def test_stale_second_memory_series_is_dropped_and_memory_max_is_the_live_one(tmp_path):
    t = [10**18 + i * 10**9 for i in range(6)]
    live = [1.0e9, 1.2e9, 1.5e9, 2.0e9, 1.8e9, 1.1e9]
    df = _resources(t, live, stale=3.0e9)  # the stale series is above the live max: the JSON's max is wrong
    doc = {"hosts": {"h": {"roles": ["peer"], "metrics": {"mem_used_bytes": {"max": 3.0e9, "mean": 2e9}}}}}
    d = _point(tmp_path, "a__r0", df, doc)
    got = RES.read_resources(d / "metrics" / "resources.parquet")
    mem = got[got["metric"] == "mem_used_bytes"]
    assert len(mem) == 6 and list(mem["value"]) == live
    run = SimpleNamespace(path=tmp_path, metadata={"provider": "local"})
    (table,) = [b for b in HOSTS.resource_blocks(run, "figures/x") if b[0] == "table"]
    assert table[2][0][table[1].index("memory GB max")] == "2.00"


def test_collect_selects_the_targets_instance_and_writes_the_schema_version(tmp_path, monkeypatch):
    target = RES.HostTarget("h", ["peer"], "127.0.0.1", 9999, "lo")
    mon = RES.ResourceMonitor(tmp_path / "mon", [target])
    queries = []

    def query_range(q, start, end):
        queries.append(q)
        return [{"values": [[1.0, "5"], [2.0, "6"]]}]
    monkeypatch.setattr(mon, "query_range", query_range)
    mon.collect(0, 2 * 10**9, tmp_path / "out")
    assert queries and all('instance="127.0.0.1:9999"' in q for q in queries)
    meta = pq.read_schema(tmp_path / "out" / "resources.parquet").metadata
    assert meta[b"fabricrepro.schema_version"] == str(RES.RESOURCES_SCHEMA_VERSION).encode()
    assert meta[b"fabricrepro.table"] == b"resources"
    assert len(RES.read_resources(tmp_path / "out" / "resources.parquet")) == 2 * len(RES.QUERIES)


def test_an_unknown_resources_schema_version_is_rejected(tmp_path):
    import pyarrow as pa
    table = pa.Table.from_pandas(_resources([1], [1e9]), preserve_index=False)
    pq.write_table(table.replace_schema_metadata({b"fabricrepro.schema_version": b"99"}), tmp_path / "r.parquet")
    with pytest.raises(HarnessError, match="schema_version"):
        RES.read_resources(tmp_path / "r.parquet")


# 6. n=1 has no spread to show

def test_one_repetition_is_not_shown_as_plus_minus_zero():
    exp = {"metric": METRIC, "variants": [{"id": "a"}], "published": []}
    _, rows = EXP._measured_table(exp, {"groups": _groups([("a", 7434.0)], n=1)})
    assert rows[0][3] == "7,434 (n=1, no spread)"
    _, rows = EXP._measured_table(exp, {"groups": _groups([("a", 7434.0)], n=3)})
    assert rows[0][3] == "7,434 ± 10 (n=3)"
    meta = {"run_id": "r", "status": "complete", "provider": "local", "scale": "smoke"}
    text = TEXT.caption(meta, {"points": {"complete": 1, "total": 1}}, {"repetitions": 1})
    assert "no spread" in text and "mean ± standard deviation" not in text


# 7. every experiment's deviations at the run's scale, and its fixed parameters

def test_deviations_and_fixed_parameters_are_rendered_for_any_experiment():
    exp = {"parameters": {"fixed": {"block_size": 100, "loadgen_streams": 50}},
           "deviations": [{"scales": ["local"], "what": "all roles on one machine", "why": "2 cores"},
                          {"scales": ["paper"], "what": "only at paper scale", "why": "n/a"}]}
    resolved = {"scale": "local", "parameters": {"loadgen_streams": {"value": 50, "source": "experiment"}}}
    (block,) = EXP.conditions_blocks(exp, resolved)
    text = block[1]
    assert "loadgen_streams=50" in text and "block_size=100" in text
    assert "all roles on one machine (why: 2 cores)" in text and "only at paper scale" not in text


# 8. comparable_on beside any verdict

def test_comparable_on_is_shown_beside_a_reproduced_verdict_and_not_twice():
    exp = {"claims": [{"id": "c1", "comparable_on": "ratio measured in the same run"},
                      {"id": "c2", "comparable_on": "the paper's hardware"}]}
    claims = [{"id": "c1", "statement": "s1", "compare": "ratio", "expected": 2.0, "measured": 2.1,
               "verdict": "reproduced", "reason": "measured 2.1"},
              {"id": "c2", "statement": "s2", "compare": "absolute", "expected": 9.0, "measured": None,
               "verdict": "not comparable", "reason": "needs hardware; comparable on: the paper's hardware"}]
    rows = V.claims_rows(V.with_caveats(claims, exp))
    caveat = V.CLAIM_HEADERS.index("caveat (comparable on)")
    assert rows[0][caveat] == "ratio measured in the same run" and rows[0][3] == "**reproduced**"
    assert rows[1][caveat] == "the paper's hardware" and rows[1][4] == "needs hardware"


def _fake_run(tmp_path, experiment):
    (tmp_path / "points").mkdir(exist_ok=True)
    docs = {"experiment": {"experiment": experiment}, "resolved": {"scale": "local", "repetitions": 3}}
    return SimpleNamespace(path=tmp_path, id="r", stored=lambda key: docs[key],
                           metadata={"status": "complete", "run_id": "r", "provider": "local", "scale": "local"})


@pytest.mark.parametrize("hook_tables_them", [False, True])
def test_an_experiments_section_shows_its_deviations_once(tmp_path, monkeypatch, hook_tables_them):
    exp = {"id": "e", "title": "E", "metric": METRIC, "variants": [], "parameters": {"fixed": {"loadgen_streams": 50}},
           "deviations": [{"scales": ["local"], "what": "all roles on one machine", "why": "2 cores"}]}
    if hook_tables_them:
        exp["axes"] = {"figure": "phase-breakdown"}
        # a test double of a system's report part that tables the deviations itself
        monkeypatch.setattr(EXP.systems, "report_parts", lambda: {"phase-breakdown": lambda *a: [
            ("table", ["deviation", "why"], [["all roles on one machine", "2 cores"]])]})
    monkeypatch.setattr(EXP, "analyze_pool", lambda runs: {"groups": [], "claims": [],
                                                         "points": {"complete": 0, "total": 0}})
    selection = EXP.Selection(pooled=[_fake_run(tmp_path, exp)], listed=[], complete=True,
                            configuration={"scale": "local", "build": {"kind": "reference"}, "provider": "local",
                                           "cores": 2})
    blocks, _, _ = EXP.experiment_blocks(exp, selection, "figures/e.png")
    md = RENDER.to_markdown(blocks)
    assert md.count("all roles on one machine") == 1 and "loadgen_streams=50" in md
