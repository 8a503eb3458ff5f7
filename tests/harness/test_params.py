"""Bad parameters are refused when the plan is made: named, with their source and expected type, no run directory."""

import io
import subprocess
import sys

import pytest
import yaml

from harness import REPO_ROOT
from harness.config import ParameterError, check, declarations
from harness.errors import HarnessError
from harness.plan import make_plan
from harness.reproduce import reproduce

# One parameter of each declared kind, a value of the wrong type and one out of its range.
KINDS = [
    ("block_size", "integer", "abc", 0),
    ("rate_tps", "number", "fast", -5),
    ("orderer_type", "enum", 3, "raft"),
]
#: A boolean has a type but no range: a value of another type is all there is to refuse.
BOOLEAN = "chaincode_timing"


def test_every_kind_in_the_declarations_is_exercised():
    kinds = {d["type"] for d in declarations().values()}
    assert {k for _, k, _, _ in KINDS} | {"string", "boolean"} == kinds
    assert declarations()[BOOLEAN]["type"] == "boolean"
    for name, kind, _, _ in KINDS:
        assert declarations()[name]["type"] == kind


@pytest.mark.parametrize("name,kind,wrong_type,out_of_range", KINDS)
@pytest.mark.parametrize("bad", ["wrong_type", "out_of_range"])
def test_cli_value_of_wrong_type_or_range_is_refused_with_its_name_and_source(mini, root, name, kind, wrong_type,
                                                                              out_of_range, bad):
    value = wrong_type if bad == "wrong_type" else out_of_range
    with pytest.raises(ParameterError, match=rf"parameter {name}={value!r} \(from --set on the command line\): "
                                             r"expected (an integer|a number|one of)"):
        make_plan(mini, mini.experiment("bench"), "smoke", overrides={name: value}, environ={}, root=root)


@pytest.mark.parametrize("name,kind,wrong_type,out_of_range", KINDS)
@pytest.mark.parametrize("bad", ["wrong_type", "out_of_range"])
def test_environment_value_is_checked_naming_the_variable(mini, root, name, kind, wrong_type, out_of_range, bad):
    value = str(wrong_type if bad == "wrong_type" else out_of_range)
    with pytest.raises(ParameterError, match=rf"\(from the environment \(FABRICREPRO_{name.upper()}\)\): expected"):
        make_plan(mini, mini.experiment("bench"), "smoke", environ={f"FABRICREPRO_{name.upper()}": value}, root=root)


@pytest.mark.parametrize("value", ["maybe", 1])
def test_boolean_of_another_type_is_refused(mini, root, value):
    with pytest.raises(ParameterError, match=rf"parameter {BOOLEAN}={value!r} \(from --set on the command line\): "
                                             r"expected true or false"):
        make_plan(mini, mini.experiment("bench"), "smoke", overrides={BOOLEAN: value}, environ={}, root=root)
    with pytest.raises(ParameterError, match=rf"\(from the environment \(FABRICREPRO_{BOOLEAN.upper()}\)\): expected"):
        make_plan(mini, mini.experiment("bench"), "smoke", environ={f"FABRICREPRO_{BOOLEAN.upper()}": str(value)},
                  root=root)


def test_other_fabricrepro_variables_are_not_parameters(mini, root):
    plan = make_plan(mini, mini.experiment("bench"), "smoke", environ={"FABRICREPRO_SEEDS": "/x"}, root=root)
    assert "seeds" not in plan.resolved["parameters"]


def _edit_bench(root, edit):
    path = root / "papers" / "mini.yaml"
    doc = yaml.safe_load(path.read_text())
    edit(doc["experiments"][0])
    path.write_text(yaml.safe_dump(doc))
    from harness.catalogue import load_paper
    return load_paper("mini", root / "papers")


@pytest.mark.parametrize("where,value", [("fixed", "ten"), ("fixed", 0), ("sweep", ["x"]), ("sweep", [-1])])
def test_experiment_file_value_is_checked_naming_the_file(root, where, value):
    def edit(e):
        if where == "fixed":
            e["parameters"]["fixed"]["block_size"] = value
        else:
            e["parameters"]["sweep"]["batch_timeout_ms"] = value
    paper = _edit_bench(root, edit)
    name = "block_size" if where == "fixed" else "batch_timeout_ms"
    with pytest.raises(ParameterError, match=rf"parameter {name}=.* \(from papers/mini.yaml, experiment bench\): "
                                             r"expected an integer in \[1, "):
        make_plan(paper, paper.experiment("bench"), "smoke", environ={}, root=root)


@pytest.mark.parametrize("value", ["many", 0])
def test_repeat_is_checked(mini, root, value):
    with pytest.raises(ParameterError, match=rf"parameter repetitions={value!r} \(from --repeat on the command line\): "
                                             r"expected an integer in \[1, "):
        make_plan(mini, mini.experiment("bench"), "smoke", repeat=value, environ={}, root=root)


@pytest.mark.parametrize("value", ["big", -1])
def test_workload_file_value_is_checked_naming_the_file(root, mini, value):
    workload = root / "workloads" / "transfer"
    workload.mkdir(parents=True)
    (workload / "workload.yaml").write_text(yaml.safe_dump({"defaults": {"loadgen_streams": value}}))
    with pytest.raises(ParameterError, match=r"parameter loadgen_streams=.* \(from workloads/transfer/workload.yaml\)"):
        make_plan(mini, mini.experiment("bench"), "smoke", environ={}, root=root)


def test_unknown_parameter_is_refused():
    with pytest.raises(ParameterError, match=r"unknown parameter 'blok_size' \(from --set on the command line\)"):
        check("blok_size", 3, "cli")


def test_boolean_and_string_kinds():
    declared = {"flag": {"type": "boolean"}, "text": {"type": "string"}}
    check("flag", True, "cli", declared)
    with pytest.raises(ParameterError, match="expected true or false"):
        check("flag", 1, "cli", declared)
    with pytest.raises(ParameterError, match="expected a string"):
        check("text", 5, "cli", declared)
    with pytest.raises(ParameterError, match="expected an integer"):
        check("block_size", True, "cli")  # YAML's true is not the integer 1


def test_every_catalogue_experiment_plans_with_valid_parameters():
    from harness.catalogue import load_paper
    for path in sorted((REPO_ROOT / "papers").glob("*.yaml")):
        paper = load_paper(path.stem)
        for experiment in paper.experiments:
            for scale in experiment.get("scales") or {}:
                make_plan(paper, experiment, scale, environ={})


def test_reproduce_refuses_before_making_a_run_directory(mini, root, tmp_path):
    with pytest.raises(ParameterError, match="block_size='abc'"):
        reproduce("mini", "bench", overrides={"block_size": "abc"}, papers_dir=root / "papers",
                  results=tmp_path / "results", reports=tmp_path / "reports", stream=io.StringIO())
    assert not (tmp_path / "results").exists() and not (tmp_path / "reports").exists()


def test_invoke_reproduce_exits_non_zero_with_one_line_and_no_traceback(tmp_path):
    results = REPO_ROOT / "results" / "fastfabric" / "table1-end-to-end"
    before = sorted(results.iterdir()) if results.exists() else []
    out = subprocess.run([sys.executable, "-m", "invoke", "reproduce", "--paper", "fastfabric", "--experiment",
                          "table1-end-to-end", "--set", "block_size=abc"], cwd=REPO_ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 1
    assert "error: parameter block_size='abc' (from --set on the command line): expected an integer" in out.stderr
    assert "Traceback" not in out.stderr
    assert (sorted(results.iterdir()) if results.exists() else []) == before


def test_a_systems_parameters_are_declared_in_its_folder_and_merged():
    """Discovery: FastFabric's go-routine counts are declared in systems/fastfabric/parameters.yaml."""
    from harness import config
    assert "block_pipeline_goroutines" not in yaml.safe_load(config.DECLARATIONS_FILE.read_text())
    assert declarations()["block_pipeline_goroutines"]["type"] == "integer"


def test_a_parameter_declared_twice_is_refused(tmp_path, monkeypatch):
    from harness import config
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "parameters.yaml").write_text("transactions: {type: integer}\n")
    monkeypatch.setattr(config, "SYSTEMS_DIR", tmp_path)
    with pytest.raises(HarnessError, match="'transactions' is declared in both"):
        declarations()
