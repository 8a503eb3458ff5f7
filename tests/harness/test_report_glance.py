"""The answer at a glance (issue 36): a report's first screen says how many claims held, on what they were
judged and what to run next; the claims table is one line per claim with its details folded and shared
sentences said once; ``reports/index.html`` links every paper's report, its export and the regression pages.

The run stores are TEST DOUBLES (test_pooling's ``make_run``: fixture runs written directly, nothing
deployed), each point's ``duration_s`` set by the test.
"""

import re

from harness.report import render_all, render_paper
from harness.report.glance import counts, next_run
from harness.report.render import to_html, to_markdown
from harness.report.verdicts import claims_block
from harness.rundir import read_json, write_json
from tests.harness.test_pooling import _equal_speed, make_run


def one_repetition_store(results, root, seconds=20.0):
    """A complete run of mini/bench with one repetition per configuration (so every measured claim is
    inconclusive), each point costing ``seconds`` of wall time."""
    run = make_run(results, root, "20260101T000000Z-aaaaaaa", _equal_speed([100], [50]), reps=1)
    for path in (run.path / "points").glob("*/summary.json"):
        write_json(path, {**read_json(path), "duration_s": seconds})
    return run


def test_first_screen_counts_the_verdicts_and_says_what_to_run_next(root, tmp_path):
    results = tmp_path / "results"
    one_repetition_store(results, root)
    out = render_paper("mini", results, tmp_path / "reports", root / "papers")
    md = (out / "report.md").read_text()
    glance = md[md.index("## At a glance"):md.index("## Claims")]
    assert "3 claim(s): 0 **reproduced** · 0 **not reproduced** · 1 **inconclusive** (1 no transactions counted)" in glance
    assert "Judged on 2 cores (Test CPU), scale smoke, reference build, provider local" in glance
    # the paper's 64 cores: a cpus sweep this 2-core host can run gives the trend to them
    command = "invoke reproduce --paper mini --experiment bench --scale smoke --build reference --repeat 3 --set cpus=1,2"
    assert command in glance
    # 4 configurations × 3 repetitions × 2 cpus values at the 20 s each point of this machine cost
    assert "about 8 min: 24 points (4 configuration(s) × 3 repetitions × 2 cpus values) at 20 s a point" in glance
    facts = read_json(out / "glance.json")
    assert facts["next"][0]["command"].startswith(command) and facts["next"][0]["estimate_s"] == 480
    assert facts["counts"]["inconclusive"]["n"] >= 1 and facts["runs"][0]["run_id"] == "20260101T000000Z-aaaaaaa"


def test_the_next_run_asks_for_the_repetitions_the_spread_needs_and_a_cpus_sweep_for_the_papers_cores():
    selection = type("S", (), {"configuration": {"scale": "local", "build": {"kind": "upstream"}},
                               "shown": type("R", (), {"metadata": {"host": {"cores": 4}}})(), "pooled": []})()
    claims = [{"verdict": "inconclusive", "repetitions_needed": 7,
               "cores": {"paper": 24, "measured": [{"cores": 4}], "verdict": "inconclusive"}},
              {"verdict": "reproduced"}]
    n = next_run("p", "e", claims, selection)
    assert n["command"] == "invoke reproduce --paper p --experiment e --scale local --build upstream --repeat 7 --set cpus=1,2,4"
    assert "about 7 repetitions decide 1 of them" in n["why"] and n["estimate_s"] is None
    assert next_run("p", "e", [{"verdict": "reproduced"}], selection) is None
    tally = counts([{"verdict": "reproduced", "evidence_class": "independent check"}])
    assert tally["reproduced"] == {"n": 1, "evidence": {"not ledger-proven": 1}} and tally["inconclusive"]["n"] == 0


def test_the_claims_table_is_one_line_a_claim_and_says_a_shared_sentence_once():
    shared = "inconclusive: one repetition has no spread, so no interval"
    claims = [{"experiment": "e", "id": f"c{i}", "statement": f"claim {i}", "compare": "ratio", "expected": 2.0,
               "measured": 1.0, "repetitions": 1, "verdict": "inconclusive", "reason": f"measured {i}; {shared}",
               "comparable_on": "same run", "evidence": "ledger-proven (every count held)"} for i in range(3)]
    block = claims_block(claims)
    assert block[0] == "claims" and len(block[2]) == 3 and all(len(r) == 5 for r in block[2])
    page = to_html([("h2", "Claims"), block], "t")
    assert page.count(shared) == 1 and page.count("<details>") == 3
    assert '<strong class="v v-open">? inconclusive</strong>' in page  # the words and a symbol, not colour alone
    assert to_markdown([block]).count(shared) == 1


def test_the_index_links_every_report_export_and_regression_page_and_each_link_resolves(root, tmp_path):
    results, reports = tmp_path / "results", tmp_path / "reports"
    one_repetition_store(results, root)
    page = reports / "regress" / "reference" / "bench" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text("<html></html>")
    exported = []

    def export(paper, results, out, papers_dir):  # TEST DOUBLE of harness.export.export_paper
        exported.append(paper)
        out.mkdir(parents=True, exist_ok=True)
        (out / "claims.csv").write_text("id\n")

    render_all(results, reports, root / "papers", export=export)
    index = (reports / "index.html").read_text()
    hrefs = re.findall(r'href="([^"]+)"', index)
    assert {"mini/report.html", "mini/export/claims.csv", "regress/reference/bench/index.html"} <= set(hrefs)
    assert [h for h in hrefs if not (reports / h).is_file()] == []
    assert all(not h.startswith(("/", "http")) for h in hrefs)  # relative: file:// and any static host
    assert exported and "1 run(s), 2026-01-01 (UTC); reference build, harness aaaaaaa" in index


def test_a_stale_glance_file_does_not_break_the_index(root, tmp_path):
    reports = tmp_path / "reports"
    (reports / "mini").mkdir(parents=True)
    (reports / "mini" / "glance.json").write_text("{}")
    from harness.report import write_index
    assert "not rendered yet" in write_index(reports, root / "papers").read_text()



def test_no_verdict_where_the_scale_cannot_show_the_effect(root, tmp_path):
    """Issue 36, item 5: an experiment's ``judged_when`` unmet by the runs (here 2 blocks where 124 are
    needed) leaves its claims "not comparable at this scale" with the scale that judges them, in the report
    and the export alike, and the next command asks for that scale."""
    import yaml
    from harness.export import export_paper
    path = root / "papers" / "mini.yaml"
    doc = yaml.safe_load(path.read_text())
    bench = next(e for e in doc["experiments"] if e["id"] == "bench")
    bench["judged_when"] = [{"what": "blocks", "parameter": "block_size", "min": 124, "scale": "local",
                             "why": "a pipeline of 31 blocks must fill"}]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    results = tmp_path / "results"
    one_repetition_store(results, root)
    out = render_paper("mini", results, tmp_path / "reports", root / "papers")
    md = (out / "report.md").read_text()
    line = next(x for x in md.splitlines() if x.startswith("| bench | Quick is as fast as slow"))
    assert "**not comparable** at this scale (scale local judges it)" in line and "inconclusive" not in line
    assert "not comparable at this scale (smoke): blocks 10 here, at least 124 needed" in md
    assert "--scale local" in read_json(out / "glance.json")["next"][0]["command"]
    claims = export_paper("mini", results, tmp_path / "export", root / "papers")["claims"]
    c1 = claims[claims.claim == "c1"].iloc[0]
    assert c1.verdict == "not comparable" and "scale local would judge it" in c1.reason


def test_no_resource_figure_where_the_measured_window_spans_too_few_samples(tmp_path):
    """Issue 36, item 4: a point whose measured window holds 2 of its 1 s samples gets no resource figure,
    and the report says why; one whose window holds 4 keeps its figure."""
    import json
    from types import SimpleNamespace

    import pandas as pd

    from harness.report import hosts
    t = [10**18 + i * 10**9 for i in range(10)]
    samples = pd.DataFrame([(x, "h", "peer", m, 0.5) for x in t for m in ("cpu_util_ratio", "mem_used_bytes")],
                           columns=["time_ns", "host", "role", "metric", "value"])
    for name, (first, last) in (("short__r0", (t[3], t[4] + 5)), ("long__r0", (t[2], t[5]))):
        d = tmp_path / "points" / name
        (d / "metrics").mkdir(parents=True)
        samples.to_parquet(d / "metrics" / "resources.parquet", index=False)
        (d / "metrics" / "resources.json").write_text(json.dumps({"schema_version": 1, "hosts": {}}))
        pd.DataFrame({"block_number": [1, 2], "received_ns": [first, last - 5],
                      "committed_ns": [first + 5, last]}).to_parquet(d / "blocks.parquet", index=False)
    blocks = hosts.resource_blocks(SimpleNamespace(path=tmp_path, metadata={"provider": "local"}), "figures/x")
    assert [b[1] for b in blocks if b[0] == "img"] == ["figures/x-long__r0-resources.png"]
    assert any(b[0] == "p" and "fewer than 3 samples" in b[1] and "`short__r0` (1 s, 2 sample(s))" in b[1]
               for b in blocks)


def test_the_estimate_counts_what_a_run_spent_outside_its_points(root, tmp_path):
    """Start-up, analysis and report (the run's wall time less its points', and the command's recorded time
    before and after it) are part of the estimate; a resumed run's pause is not."""
    import json
    from harness.report.glance import _run_overhead
    from harness.rundir import Run
    from tests.harness.test_pooling import _equal_speed, make_run
    run = make_run(tmp_path / "results", root, "r1", _equal_speed([1000], [1000]), reps=1,
                   started="2026-01-01T00:00:00Z")
    meta = json.loads((run.path / "metadata.json").read_text())
    meta.update(ended_utc="2026-01-01T00:01:40Z", command_timing={"prepared_s": 7.0, "report_s": 3.0})
    (run.path / "metadata.json").write_text(json.dumps(meta))
    for summary in (run.path / "points").glob("*/summary.json"):  # 4 points of 20 s: 80 of the run's 100 s
        summary.write_text(json.dumps({**json.loads(summary.read_text()), "duration_s": 20.0}))
    assert _run_overhead([Run.open(run.path)]) == 100 - 80 + 7 + 3
    meta["resumed_utc"] = ["2026-01-02T00:00:00Z"]
    (run.path / "metadata.json").write_text(json.dumps(meta))
    assert _run_overhead([Run.open(run.path)]) is None
