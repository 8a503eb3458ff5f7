"""The validation-phase paper's stacked breakdown and its qualitative claims (phase_figures.py)."""

import copy

from harness import systems
from harness.catalogue import load_paper

from fabricrepro_systems.validation_opt import phase_figures

PAPER = load_paper("validation-opt")
FIG8 = next(e for e in PAPER.experiments if e["id"] == "fig8-optimized-leveldb-block-size")
FIG2 = next(e for e in PAPER.experiments if e["id"] == "fig2-original-leveldb-vscc-threads")


def _group(variant, sweep, **means):
    return {"variant": variant, "sweep": sweep, "metrics": {k: {"n": 1, "mean": v, "std": 0.0} for k, v in means.items()}}


ORIGINAL = dict(vscc_latency_ms=20, statedb_read_latency_ms=0, mvcc_latency_ms=4, ledger_write_latency_ms=6,
                statedb_write_latency_ms=2, others_latency_ms=4, vsc_statedb_read_latency_ms=0,
                ledger_statedb_write_latency_ms=0, block_validation_latency_ms=36)
OPTIMIZED = dict(vscc_latency_ms=15, statedb_read_latency_ms=0, mvcc_latency_ms=4, ledger_write_latency_ms=6,
                 statedb_write_latency_ms=3, others_latency_ms=1, vsc_statedb_read_latency_ms=15.5,
                 ledger_statedb_write_latency_ms=6.2, block_validation_latency_ms=26.7)


def _summary(tps):
    """Both fig. 8 variants at block sizes 50 and 200 with the given {(variant, block size): tx/s}."""
    return {"groups": [_group(v, {"block_size": b}, **(ORIGINAL if v.startswith("original") else OPTIMIZED),
                              commit_throughput_tps=t) for (v, b), t in tps.items()],
            "claims": [{"id": c["id"], "compare": c["compare"], "verdict": "not comparable",
                        "reason": "a qualitative statement: judge it from the figure"} for c in FIG8["claims"]]}


def test_the_bar_stacks_the_six_phases_or_the_overlapped_pairs():
    original, optimized = _group("o", {}, **ORIGINAL), _group("p", {}, **OPTIMIZED)
    assert [s[0] for s in phase_figures.segments(original)] == [
        "vscc_latency_ms", "statedb_read_latency_ms", "mvcc_latency_ms", "ledger_write_latency_ms",
        "statedb_write_latency_ms", "others_latency_ms"]
    assert [s[0] for s in phase_figures.segments(optimized)] == [
        "vsc_statedb_read_latency_ms", "mvcc_latency_ms", "ledger_statedb_write_latency_ms", "others_latency_ms"]
    # Patch 0003 makes others the rest: the stack adds up to the block validation latency.
    for g, means in ((original, ORIGINAL), (optimized, OPTIMIZED)):
        assert sum(means[m] for m, _, _ in phase_figures.segments(g)) == means["block_validation_latency_ms"]


def test_qualitative_claims_get_a_verdict_from_the_means():
    gain_grows = _summary({("original-leveldb", 50): 1000, ("optimized-leveldb", 50): 1100,
                           ("original-leveldb", 200): 1000, ("optimized-leveldb", 200): 1300})
    phase_figures.judge_qualitative(FIG8, gain_grows)
    claim = next(c for c in gain_grows["claims"] if c["id"] == "bigger-blocks-bigger-gain")
    assert claim["verdict"] == "reproduced" and "1.10× → 1.30×" in claim["reason"], claim

    gain_shrinks = _summary({("original-leveldb", 50): 1000, ("optimized-leveldb", 50): 1300,
                             ("original-leveldb", 200): 1000, ("optimized-leveldb", 200): 1100})
    phase_figures.judge_qualitative(FIG8, gain_shrinks)
    claim = next(c for c in gain_shrinks["claims"] if c["id"] == "bigger-blocks-bigger-gain")
    assert claim["verdict"] == "not reproduced", claim

    summary = {"groups": [_group("original-leveldb", {"vscc_threads": t}, **ORIGINAL, commit_throughput_tps=900)
                          for t in (16, 48)],
               "claims": [{"id": c["id"], "compare": c["compare"]} for c in FIG2["claims"]]}
    phase_figures.judge_qualitative(FIG2, summary)
    assert {c["id"]: c["verdict"] for c in summary["claims"]} == {
        "vscc-bottleneck-leveldb": "reproduced", "ledger-write-dominates": "reproduced"}


def test_fig5_trends_need_vscc_largest_and_statedb_write_over_ledger_write_at_every_block_size():
    fig5 = next(e for e in PAPER.experiments if e["id"] == "fig5-original-couchdb-block-size")
    couch = dict(ORIGINAL, vscc_latency_ms=100, statedb_read_latency_ms=30, statedb_write_latency_ms=40)

    def verdict(at_200):
        summary = {"groups": [_group("original-couchdb", {"block_size": 50}, **couch),
                              _group("original-couchdb", {"block_size": 200}, **at_200)],
                   "claims": [{"id": c["id"], "compare": c["compare"]} for c in fig5["claims"]]}
        phase_figures.judge_qualitative(fig5, summary)
        return summary["claims"][0]["verdict"]

    assert verdict(couch) == "reproduced"
    assert verdict(dict(couch, statedb_write_latency_ms=2)) == "not reproduced"  # ledger_write (6) dominates at 200
    assert verdict(dict(couch, vscc_latency_ms=20, statedb_read_latency_ms=50)) == "not reproduced"


def test_the_report_hook_adds_the_breakdown_figure_and_table():
    summary = _summary({("original-leveldb", 50): 1000, ("optimized-leveldb", 50): 1100})
    blocks = systems.report_parts()[FIG8["axes"]["figure"]](copy.deepcopy(FIG8), summary, "figures/x", "upstream", None)
    assert [b[0] for b in blocks] == ["img", "table"]
    assert blocks[0][1] == "figures/x-breakdown.png" and blocks[0][2].startswith(b"\x89PNG")
    assert [r[:2] for r in blocks[1][2]] == [["50", "original-leveldb"], ["50", "optimized-leveldb"]]
    # Deterministic: the same summary draws the same bytes.
    assert phase_figures.draw_breakdown(FIG8, summary) == phase_figures.draw_breakdown(FIG8, summary)


class _Run:
    """The two things conditions() reads of a run: its directory and its resolved variants."""

    def __init__(self, path, dbs):
        self.path, self._dbs = path, dbs

    def stored(self, name):
        assert name == "resolved"
        return {"scale": "smoke",
                "variants": {f"v-{db}": {"switches": {"state_db": {"value": db}}} for db in self._dbs}}


def test_conditions_state_the_couchdb_version_and_the_load_average(tmp_path):
    for point, version, start in [("original-couchdb__b=50__r0", "3.3.3", "1.50 0.80 0.40 2/300 9\n"),
                                  ("optimized-couchdb__b=50__r0", None, None)]:
        logs = tmp_path / "points" / point / "logs" / "localhost"
        logs.mkdir(parents=True)
        if version:
            (logs / "couchdb-version.log").write_text('{"version": "%s", "git_sha": "40afbcf"}\n' % version)
        if start:
            (logs / "loadavg-start.log").write_text(start)
            (logs / "loadavg-end.log").write_text("2.25 1.10 0.50 3/310 10\n")
    text = phase_figures.conditions(_Run(tmp_path, ["couchdb"]))
    assert "CouchDB 3.3.3 (git 40afbcf) at 1 of 2 CouchDB points" in text and "CouchDB 2.1" in text
    assert "original-couchdb__b=50__r0: 1.50 / 0.80 / 0.40 → 2.25 / 1.10 / 0.50" in text
    assert "optimized-couchdb__b=50__r0:" not in text  # a point without the logs is not invented
    text = phase_figures.conditions(_Run(tmp_path / "none", ["leveldb"]))
    assert text.startswith("State database LevelDB") and "not recorded" in text


def test_the_deviations_of_the_run_scale_are_listed(tmp_path):
    blocks = phase_figures.deviation_blocks(FIG8, _Run(tmp_path, ["leveldb"]))
    rows = blocks[1][2]
    assert any("one organization with one peer" in what for what, _ in rows)  # smoke's layout, said
    local_only = dict(FIG8, deviations=[{"scales": ["paper"], "what": "x", "why": "y"}])
    assert phase_figures.deviation_blocks(local_only, _Run(tmp_path, ["leveldb"])) == []
