"""The paper catalogue (papers/*.yaml) against its schema and the seed texts."""

from __future__ import annotations

import copy

import pytest

import checks
from seedtext import seeds_dir, sources_dir

# The seed texts sit beside the repository (../shared/seeds), not in it: a
# user's clone has none, and the checks against them are skipped there. The
# same holds for the source texts of a paper without a seed (../shared/sources).
needs_seeds = pytest.mark.skipif(not seeds_dir().is_dir(),
                                 reason=f"no seed texts at {seeds_dir()} (../shared/seeds, or set FABRICREPRO_SEEDS)")
needs_sources = pytest.mark.skipif(not (sources_dir() / "fabric-x").is_dir(),
                                   reason=f"no source texts at {sources_dir() / 'fabric-x'} (../shared/sources, or set "
                                          "FABRICREPRO_SOURCES)")


def skip_without_texts(doc: dict) -> None:
    """Skip as the seed checks do where the paper's texts (its seed, or its sources folder) are absent."""
    if doc["paper"].get("seed") and not seeds_dir().is_dir():
        pytest.skip(f"no seed texts at {seeds_dir()} (../shared/seeds, or set FABRICREPRO_SEEDS)")
    if doc["paper"].get("sources") and not (sources_dir() / doc["paper"]["sources"]).is_dir():
        pytest.skip(f"no source texts at {sources_dir() / doc['paper']['sources']} (../shared/sources, or set "
                    "FABRICREPRO_SOURCES)")

FILES = checks.catalogue_files()
DOCS = {f.stem: checks.load(f) for f in FILES}
IDS = sorted(DOCS)


def test_every_paper_has_a_file():
    assert sorted(checks.PAPER_IDS) == IDS


@needs_seeds
def test_seed_texts_are_present():
    assert seeds_dir().is_dir(), f"seed texts not found at {seeds_dir()} (set FABRICREPRO_SEEDS)"


@pytest.mark.parametrize("name", IDS)
def test_file_name_is_paper_id(name):
    assert DOCS[name]["paper"]["id"] == name


@pytest.mark.parametrize("name", IDS)
def test_validates_against_schema(name):
    assert checks.schema_errors(DOCS[name]) == []


@pytest.mark.parametrize("name", IDS)
def test_quotes_stand_on_their_line_and_sentence(name):
    skip_without_texts(DOCS[name])
    assert checks.citation_problems(DOCS[name]) == []


@pytest.mark.parametrize("name", IDS)
def test_published_values_are_stated_in_their_quotes(name):
    assert checks.value_problems(DOCS[name]) == []


@pytest.mark.parametrize("name", IDS)
def test_published_and_claims_name_their_figure_or_table(name):
    assert checks.location_problems(DOCS[name]) == []


def test_missing_location_is_caught():
    doc = _broken()
    del doc["experiments"][0]["published"][0]["citation"]["location"]
    assert checks.location_problems(doc)


@pytest.mark.parametrize("name", IDS)
def test_ids_variants_switches_and_parameters_are_consistent(name):
    assert checks.structure_problems(DOCS[name]) == []


@pytest.mark.parametrize("name", IDS)
def test_ratio_claims_agree_with_published_pairs(name):
    assert checks.ratio_consistency_problems(DOCS[name]) == []


@pytest.mark.parametrize("name", IDS)
def test_every_caption_is_catalogued(name):
    skip_without_texts(DOCS[name])
    assert checks.coverage_problems(DOCS[name]) == []


@pytest.mark.parametrize("name", IDS)
def test_not_runnable_has_reason(name):
    for exp in DOCS[name]["experiments"]:
        if not exp["runnable"]:
            assert exp.get("not_runnable_reason", "").strip(), exp["id"]


@pytest.mark.parametrize("name", IDS)
def test_runnable_have_all_scales(name):
    for exp in DOCS[name]["experiments"]:
        if exp["runnable"]:
            assert {"smoke", "local", "paper"} <= set(exp["scales"]), exp["id"]


def test_runnable_set_is_as_planned():
    """Only what the harness can drive today is runnable; change this when a driver lands."""
    runnable = {(n, e["id"]) for n, d in DOCS.items() for e in d["experiments"] if e["runnable"]}
    assert runnable == {
        ("bftsmart-orderer", "text-signature-bench"),
        ("bftsmart-orderer", "fig6-lan-throughput"),
        ("bftsmart-orderer", "fig7-geo-latency"),
        ("fastfabric", "fig3-grpc-block-transfer"),
        ("fastfabric", "fig4-orderer-payload"),
        ("fastfabric", "fig5-peer-block-latency"),
        ("fastfabric", "fig6-peer-throughput"),
        ("fastfabric", "fig7-parameter-sensitivity"),
        ("fastfabric", "fig8-block-size"),
        ("fastfabric", "table1-end-to-end"),
        # ours, not the paper's: Table I's workload on today's Fabric (issue 33)
        ("fastfabric", "table1-today-raft"),
        ("fastfabric", "table1-today-bft"),
        ("fastfabric", "table1-revisit-v31"),
        ("fastfabric", "table1-three-releases"),  # lab 06
        ("fastfabric", "table1-today-saturation"),
        ("fastfabric", "table1-today-couchdb"),
        # ours, not the paper's: each paper's idea on v3.1 (issue 35)
        ("validation-opt", "validation-revisit-v31"),
        ("fastfabric", "fig6-revisit-v31"),
        ("fastfabric", "fig6-revisit-fabric-x"),  # ours: Fig. 6 on Fabric-X's committer beside 1.2, P-III and v3.1
        ("fujitsu-api", "fig4-revisit-v31"),
        ("bftsmart-orderer", "fig6-revisit-smartbft"),
        # Fabric-X's own claim, judged like a paper's (issue 49)
        ("fabric-x", "committer-compact"),
        ("fabric-x", "e2e-compact-arma"),  # end to end through Arma (driver arma-loadgen)
        ("fabric-x", "e2e-revisit-fabric-x"),  # ours: v3.1 Raft against Fabric-X with Arma, end to end
        ("fujitsu-api", "fig2-chaincode-time"),
        ("fujitsu-api", "fig4-api-comparison"),
        ("fujitsu-api", "fig5-network-latency"),
        *(("validation-opt", e) for e in (
            "fig2-original-leveldb-vscc-threads", "fig3-original-leveldb-block-size",
            "fig4-original-couchdb-vscc-threads", "fig5-original-couchdb-block-size",
            "fig7-optimized-leveldb-vscc-threads", "fig8-optimized-leveldb-block-size",
            "fig9-optimized-couchdb-vscc-threads", "fig10-optimized-couchdb-block-size")),
    }


def test_fastfabric_paper_scales_are_the_published_sizes():
    exps = {e["id"]: e for e in DOCS["fastfabric"]["experiments"]}
    for eid in ("fig5-peer-block-latency", "fig6-peer-throughput", "fig8-block-size"):
        assert exps[eid]["scales"]["paper"]["transactions"] == 100_000
        assert exps[eid]["scales"]["paper"]["repetitions"] == 1000
    assert exps["table1-end-to-end"]["scales"]["paper"]["repetitions"] == 100
    assert sum(exps["table1-end-to-end"]["topology"].values()) == 15


def test_ratio_consistency_is_not_vacuous():
    """The cross-check must actually compare some claims with published pairs."""
    broken = copy.deepcopy(DOCS["fastfabric"])
    table = next(e for e in broken["experiments"] if e["id"] == "table1-end-to-end")
    next(c for c in table["claims"] if c["id"] == "e2e-speedup")["expected"] = 3.0
    assert any("e2e-speedup" in p for p in checks.ratio_consistency_problems(broken))


# ------------------------------------------------------------------ negatives
def _broken(name="fastfabric"):
    return copy.deepcopy(DOCS[name])


def test_schema_rejects_wrong_type_and_names_the_path():
    doc = _broken()
    doc["experiments"][0]["runnable"] = "yes"
    errors = checks.schema_errors(doc)
    assert any(e.startswith("experiments/0/runnable:") for e in errors), errors


def test_schema_rejects_string_value_and_names_the_path():
    doc = _broken()
    table = next(i for i, e in enumerate(doc["experiments"]) if e["id"] == "table1-end-to-end")
    doc["experiments"][table]["published"][0]["value"] = "3,185"
    errors = checks.schema_errors(doc)
    assert any(e.startswith(f"experiments/{table}/published/0/value:") for e in errors), errors


def test_schema_rejects_unknown_key():
    doc = _broken()
    doc["experiments"][0]["runable"] = True
    assert any("runable" in e for e in checks.schema_errors(doc))


def test_schema_requires_reason_when_not_runnable():
    doc = _broken()
    doc["experiments"][0]["runnable"] = False   # every FastFabric experiment runs: make one that does not
    doc["experiments"][0].pop("not_runnable_reason", None)
    assert any(e.startswith("experiments/0:") and "not_runnable_reason" in e for e in checks.schema_errors(doc))


def test_schema_requires_note_when_nothing_published():
    doc = _broken()
    fig5 = next(e for e in doc["experiments"] if e["id"] == "fig5-peer-block-latency")
    del fig5["published_note"]
    assert any("published_note" in e for e in checks.schema_errors(doc))


@needs_seeds
def test_wrong_quote_is_caught():
    doc = _broken()
    doc["experiments"][0]["citation"]["quote"] = "more than 50,000 transactions/s"
    assert checks.citation_problems(doc)


@needs_seeds
def test_wrong_line_is_caught():
    doc = _broken()
    doc["experiments"][0]["citation"]["seed_line"] += 1
    assert checks.citation_problems(doc)


@needs_seeds
def test_wrong_sentence_is_caught():
    doc = _broken()
    cite = doc["paper"]["hardware"]["citation"]
    cite["sentence"] += 1
    assert checks.citation_problems(doc)


def test_value_not_in_quote_is_caught():
    doc = _broken()
    table = next(e for e in doc["experiments"] if e["id"] == "table1-end-to-end")
    table["published"][0]["value"] = 3200
    assert checks.value_problems(doc)
    table["published"][0]["value"] = 3185
    table["published"][0]["uncertainty"] = 26
    assert checks.value_problems(doc)


def test_expected_not_in_quote_is_caught():
    doc = _broken()
    table = next(e for e in doc["experiments"] if e["id"] == "table1-end-to-end")
    table["claims"][0]["expected"] = 8.0          # quote says 6-7x
    assert checks.value_problems(doc)


def test_duplicate_and_dangling_ids_are_caught():
    doc = _broken()
    doc["experiments"][1]["id"] = doc["experiments"][0]["id"]
    assert any("duplicate experiment ids" in p for p in checks.structure_problems(doc))
    doc = _broken()
    fig6 = next(e for e in doc["experiments"] if e["id"] == "fig6-peer-throughput")
    fig6["published"][0]["variant"] = "no-such-variant"
    assert any("unknown variant" in p for p in checks.structure_problems(doc))


def test_undeclared_switch_is_caught():
    doc = _broken()
    fig4 = next(e for e in doc["experiments"] if e["id"] == "fig4-orderer-payload")
    fig4["variants"][1]["switches"]["send_txids_only"] = True
    assert any("undeclared switch" in p for p in checks.structure_problems(doc))


def test_runnable_without_scales_is_caught():
    doc = _broken()
    fig6 = next(e for e in doc["experiments"] if e["id"] == "fig6-peer-throughput")
    del fig6["scales"]["local"]
    assert any("no local scale" in p for p in checks.structure_problems(doc))


@needs_seeds
def test_uncatalogued_caption_is_caught():
    doc = _broken()
    doc["experiments"] = [e for e in doc["experiments"] if e["id"] != "fig3-grpc-block-transfer"]
    assert any("line 180" in p for p in checks.coverage_problems(doc))


# -------------------------------------------- source-file citations (Fabric-X)
def _fabric_x_claim_citation(doc):
    return doc["experiments"][0]["claims"][0]["citation"]


@needs_sources
def test_source_quote_not_on_its_line_is_caught():
    doc = _broken("fabric-x")
    _fabric_x_claim_citation(doc)["quote"] = "Example of 20,000 TPS achieved"
    assert any("quote not on line 324" in p for p in checks.citation_problems(doc))


@needs_sources
def test_source_wrong_line_is_caught():
    doc = _broken("fabric-x")
    _fabric_x_claim_citation(doc)["line"] = 325
    assert any("quote not on line 325" in p for p in checks.citation_problems(doc))


@needs_sources
def test_source_wrong_sentence_and_missing_file_are_caught():
    doc = _broken("fabric-x")
    doc["experiments"][2]["citation"]["sentence"] = 1      # docs/index.md line 37: the claim is its second sentence
    assert any("sentence [2]" in p for p in checks.citation_problems(doc))
    doc = _broken("fabric-x")
    _fabric_x_claim_citation(doc)["file"] = "no-such-text.md"
    assert any("outside no-such-text.md" in p for p in checks.citation_problems(doc))


@needs_seeds
def test_source_citation_in_a_seed_paper_is_caught():
    """A file citation where the paper names no sources folder names no text: reported, never passed."""
    doc = _broken()
    doc["experiments"][0]["citation"] = dict(_fabric_x_claim_citation(DOCS["fabric-x"]))
    assert any("names no sources folder" in p for p in checks.citation_problems(doc))


def test_schema_rejects_a_citation_of_both_forms_or_neither():
    doc = _broken("fabric-x")
    _fabric_x_claim_citation(doc)["seed_line"] = 324
    assert any("/citation" in e for e in checks.schema_errors(doc))
    doc = _broken("fabric-x")
    del _fabric_x_claim_citation(doc)["line"]
    assert any("/citation" in e for e in checks.schema_errors(doc))


def test_schema_requires_a_seed_or_a_sources_folder():
    doc = _broken("fabric-x")
    del doc["paper"]["sources"]
    assert any(e.startswith("paper:") for e in checks.schema_errors(doc))
