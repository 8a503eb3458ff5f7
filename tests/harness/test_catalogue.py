"""Catalogue loading: errors name the file, the JSON path and the expected type."""

import subprocess
from pathlib import Path

import pytest
import yaml

from harness.catalogue import list_papers, load_paper, scale_of
from harness.errors import HarnessError
from harness.validate import validate_file

ROOT = Path(__file__).resolve().parents[2]


def _rewrite(root, change):
    path = root / "papers" / "mini.yaml"
    doc = yaml.safe_load(path.read_text())
    change(doc)
    path.write_text(yaml.safe_dump(doc))
    return path


def test_fixture_catalogue_is_valid(mini):
    assert [e["id"] for e in mini.experiments] == ["bench", "later"]


def test_wrong_type_names_file_path_and_expected_type(root):
    path = _rewrite(root, lambda d: d["experiments"][0].update(runnable="yes"))
    errors = validate_file(path)
    assert any("mini.yaml: experiments[0].runnable: expected boolean, got 'yes'" in e for e in errors), errors


def test_catalogue_schema_is_applied_when_present(root):
    (root / "papers" / "schema.json").write_text(
        '{"type": "object", "properties": {"paper": {"type": "object", "required": ["doi"]}}}')
    with pytest.raises(HarnessError, match=r"mini.yaml: paper: 'doi' is a required property"):
        load_paper("mini", root / "papers")


def test_claim_naming_an_unknown_variant_is_reported(root):
    path = _rewrite(root, lambda d: d["experiments"][0]["claims"][0]["numerator"].update(variant="nope"))
    assert any("claims[0].numerator.variant: expected one of" in e for e in validate_file(path))


def test_a_revisit_names_the_papers_own_experiment_and_states_its_questions(root):
    """``revisits`` (issue 35): an experiment of ours re-running one of the paper's; the report lists it under
    "The idea on today's Fabric"."""
    def revisit(target, questions=True):
        def change(doc):
            bench = doc["experiments"][0]
            variant = bench["variants"][0]["id"]
            doc["experiments"][1].update(revisits=[target])
            doc["experiments"][1].pop("questions", None)
            if questions:
                doc["experiments"][1]["questions"] = [{"id": "q", "question": "faster?", "numerator": {
                    "experiment": "bench", "variant": variant}, "denominator": {"experiment": "bench", "variant": variant}}]
        return [e for e in validate_file(_rewrite(root, change)) if "revisits" in e]
    assert revisit("bench") == []
    assert any("revisits[0]: expected one of the paper's own experiments, got 'nope'" in e for e in revisit("nope"))
    assert any("got 'later'" in e for e in revisit("later"))  # not itself
    assert any("states its questions" in e for e in revisit("bench", questions=False))


def test_yaml_syntax_error_names_the_file(root):
    (root / "papers" / "mini.yaml").write_text("paper: [unclosed\n")
    with pytest.raises(HarnessError, match="mini.yaml: not valid YAML"):
        load_paper("mini", root / "papers")


def test_unknown_paper_lists_the_valid_ones(root):
    with pytest.raises(HarnessError, match="unknown paper 'nope'; valid papers: mini"):
        load_paper("nope", root / "papers")
    assert list_papers(root / "papers") == ["mini"]


def test_unknown_experiment_and_scale_list_the_valid_ones(mini):
    with pytest.raises(HarnessError, match="valid experiments: bench, later"):
        mini.experiment("nope")
    with pytest.raises(HarnessError, match="valid scales: local, paper, smoke"):
        scale_of(mini.experiment("bench"), "huge")
    with pytest.raises(HarnessError, match="defines no 'paper' scale; defined scales: local, smoke"):
        scale_of(mini.experiment("bench"), "paper")


def test_validate_checks_validity_rules(tmp_path):
    """`invoke validate` reads systems/*/validity.yaml with the loader the validity check uses."""
    from harness.validate import validate_all
    system = tmp_path / "systems" / "toy"
    system.mkdir(parents=True)
    (system / "validity.yaml").write_text("schema_version: 1\nlog_patterns:\n  - {name: x, regex: '[', meaning: m}\n")
    errors = next(v for k, v in validate_all(tmp_path).items() if k.endswith("toy/validity.yaml"))
    assert len(errors) == 1 and "regex does not compile" in errors[0]
    (system / "validity.yaml").write_text("schema_version: 1\nlog_patterns:\n  - {name: x, regex: 'ok', meaning: m}\n")
    assert not any(validate_all(tmp_path).values())


def test_validate_checks_upstream_recipes(tmp_path):
    """`invoke validate` checks systems/*/upstream.yaml with the loader the upstream build uses
    (catalogue.load_upstream): a broken recipe fails naming the file, the field and what was expected."""
    from harness.validate import validate_all
    from harness.upstream import load_recipe
    recipe = yaml.safe_load((ROOT / "systems" / "fabric-1.2" / "upstream.yaml").read_text(encoding="utf-8"))
    system = tmp_path / "systems" / "fabric-1.2"
    system.mkdir(parents=True)
    (system / "upstream.yaml").write_text(yaml.safe_dump({**recipe, "commit": "v1.2.0"}))
    errors = validate_all(tmp_path)[str(system / "upstream.yaml")]
    assert len(errors) == 1 and errors[0].endswith("upstream.yaml: commit: 'v1.2.0' does not match '^[0-9a-f]{40}$'")
    with pytest.raises(HarnessError, match="invalid upstream recipe:\n.*commit: 'v1.2.0' does not match"):
        load_recipe("fabric-1.2", tmp_path / "systems")

    (system / "upstream.yaml").write_text(yaml.safe_dump({**recipe, "system": "fastfabric"}))
    out = subprocess.run(["invoke", "validate", str(system / "upstream.yaml")], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 1, out.stdout + out.stderr
    assert out.stdout.splitlines() == [
        f"FAIL {system / 'upstream.yaml'}",
        f"     {system / 'upstream.yaml'}: system: expected 'fabric-1.2' (the folder the recipe is in), got 'fastfabric'"]
    assert "1 invalid file(s)" in out.stderr

    (system / "upstream.yaml").write_text(yaml.safe_dump(recipe))
    assert validate_all(tmp_path) == {str(system / "upstream.yaml"): []}
    assert load_recipe("fabric-1.2", tmp_path / "systems") == recipe


def test_papers_schema_takes_its_systems_and_drivers_from_discovery(tmp_path):
    """papers/schema.json lists no system and no driver: the catalogue validation fills both in from the
    systems beside the papers, so a new system's folder is all a paper needs to name it and its drivers."""
    import json
    import shutil

    from harness.catalogue import catalogue_schema, declared_drivers, list_systems
    raw = json.loads((ROOT / "papers" / "schema.json").read_text(encoding="utf-8"))
    assert "enum" not in raw["$defs"]["system"] and "enum" not in raw["$defs"]["driver"]
    filled = catalogue_schema(ROOT / "papers")["$defs"]
    assert filled["system"]["enum"] == list_systems() and "fabric-1.2" in filled["system"]["enum"]
    assert filled["driver"]["enum"] == declared_drivers(ROOT / "systems")
    assert {"end-to-end", "committer-bench", "validation-breakdown", "bft-geo"} <= set(filled["driver"]["enum"])

    papers, systems = tmp_path / "papers", tmp_path / "systems"
    papers.mkdir()
    shutil.copy(ROOT / "papers" / "schema.json", papers)
    for path in (ROOT / "systems").glob("*/*.yaml"):
        if path.name in ("system.yaml", "upstream.yaml"):
            (systems / path.parent.name).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, systems / path.parent.name)
    doc = yaml.safe_load((ROOT / "papers" / "fastfabric.yaml").read_text(encoding="utf-8"))
    experiment = doc["experiments"][0]
    experiment["driver"] = "toy-echo"
    experiment["variants"][0]["system"] = "toy-echo"
    (papers / "fastfabric.yaml").write_text(yaml.safe_dump(doc, allow_unicode=True))
    errors = validate_file(papers / "fastfabric.yaml")
    assert any(e.endswith("experiments[0].driver: expected one of " + str(declared_drivers(systems)) +
                          ", got 'toy-echo'") for e in errors), errors
    assert any(".variants[0].system: expected one of " in e and e.endswith("got 'toy-echo'") for e in errors), errors
    (systems / "toy-echo").mkdir()
    (systems / "toy-echo" / "system.yaml").write_text(yaml.safe_dump({
        "schema_version": 1, "id": "toy-echo", "paper": "toy-echo", "description": "test double",
        "reference": {"commands": [], "switches": {}, "drivers": {"toy-echo": {
            "playbook": "toy-echo.yml", "roles": ["toy_echo"], "binaries": [], "placement": {"toy_echo": "client"}}}}}))
    assert validate_file(papers / "fastfabric.yaml") == []
