"""The aws provider with a test double of terraform (tests/providers/fakebin/terraform).

The double records every call and prints an inventory whose hosts are the
netns servers, so after Terraform the real ssh path runs: SSH checks,
node-exporter, down. No AWS account is used and nothing is created.
"""

import json
import os
import time
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.providers import aws as A
from harness.providers.aws import AwsProvider
from harness.systems import SYSTEMS_DIR

from provider_hosts import LAYOUT, ROLES, exporter_pids

HERE = Path(__file__).resolve().parent
FAKEBIN = HERE / "fakebin"


@pytest.fixture
def fake_tf(tmp_path, monkeypatch):
    """The terraform test double first on PATH, AWS keys in the environment; returns its call log."""
    monkeypatch.setenv("PATH", f"{FAKEBIN}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("TERRAFORM", raising=False)
    for v in ("AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "FAKE_TF_APPLY_RC", "FAKE_TF_DESTROY_RC"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFAKEFORTESTS")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-a-secret")
    log = tmp_path / "terraform-calls.jsonl"
    monkeypatch.setenv("FAKE_TF_LOG", str(log))
    return log


def calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def keypair(tmp_path: Path) -> Path:
    """Key files the provider only checks for and hands to Terraform (the double never reads them)."""
    key = tmp_path / "id_ed25519"
    key.write_text("not a key: test only\n")
    Path(str(key) + ".pub").write_text("ssh-ed25519 AAAA test-only\n")
    return key


def provider(tmp_path, key=None, **kw) -> AwsProvider:
    return AwsProvider("fastfabric", work_root=str(tmp_path / "remote"), ami_id="ami-0123456789abcdef0",
                       operator_cidr="203.0.113.7/32", key_file=key or keypair(tmp_path), region="eu-west-1", **kw)


VALID = "bftsmart-orderer, fastfabric, fujitsu-api, validation-opt"


def test_environments_are_found_in_the_system_folders():
    """One environment per system with the root's variables, named as the system (and its paper)."""
    found = A.environments()
    assert sorted(found) == VALID.split(", ")
    for system, variables in found.items():
        assert variables == SYSTEMS_DIR / system / "terraform" / "single-region.tfvars.json"
        assert A.environment_for(system) == variables
    assert AwsProvider("fujitsu-api").system_variables == found["fujitsu-api"]


@pytest.mark.parametrize("name", ["nope", "fujitsu", "bftsmart", "fabric-1.2"])
def test_unknown_environment_lists_the_valid_names(name):
    """Only a system's own name: no aliases, and a system without variables (fabric-1.2) has none."""
    with pytest.raises(HarnessError) as e:
        AwsProvider(name)
    assert e.value.args[0] == f"no Terraform environment for {name!r}; valid: {VALID}"
    assert "systems/<system>/terraform/single-region.tfvars.json" in e.value.hint


def test_environment_discovery_reads_the_given_systems_folder(tmp_path):
    for name, has_variables in (("alpha", True), ("beta", False)):
        (tmp_path / name / "terraform").mkdir(parents=True)
        (tmp_path / name / "system.yaml").write_text(f"id: {name}\n")
        if has_variables:
            (tmp_path / name / "terraform" / "single-region.tfvars.json").write_text("{}\n")
    assert A.environments(tmp_path) == {"alpha": tmp_path / "alpha" / "terraform" / "single-region.tfvars.json"}
    with pytest.raises(HarnessError, match="valid: alpha\n"):
        A.environment_for("beta", tmp_path)


def test_root_declares_what_the_provider_passes():
    """Read again from infra/terraform: the variables and the inventory output the provider relies on."""
    root = A.TERRAFORM_DIR / "roots" / A.ROOT
    declared = A.terraform_variables(root)
    assert {"operator_cidrs", "ssh_public_key_file", "ssh_private_key_file", "ami_id", "region",
            "availability_zone", "default_instance_type", "roles", "name"} <= declared
    for system, variables in A.environments().items():
        assert set(json.loads(variables.read_text())) <= declared, system
    assert f'output "{A.INVENTORY_OUTPUT}"' in (root / "outputs.tf").read_text()


def test_missing_credentials_fail_before_terraform(fake_tf, tmp_path, monkeypatch):
    for v in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(v)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    p = provider(tmp_path)
    with pytest.raises(HarnessError) as e:
        p.up(LAYOUT, tmp_path / "run")
    assert "no AWS credentials found" in str(e.value) and "nothing was created" in str(e.value)
    assert "aws configure" in e.value.hint
    assert calls(fake_tf) == [] and not (tmp_path / "run" / "terraform").exists()
    p.down()   # nothing to destroy: no call either
    assert calls(fake_tf) == []


def test_credentials_file_counts(tmp_path, monkeypatch):
    for v in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(v, raising=False)
    creds = tmp_path / "credentials"
    creds.write_text("[default]\naws_access_key_id = AKIA...\naws_secret_access_key = x\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    assert A.aws_credentials() == f"shared file {creds}"


def test_missing_terraform_fails_first(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))     # no terraform anywhere (this machine has a real one)
    monkeypatch.delenv("TERRAFORM", raising=False)
    with pytest.raises(HarnessError, match="terraform not found"):
        provider(tmp_path).up(LAYOUT, tmp_path / "run")


def test_missing_inputs_are_named(fake_tf, tmp_path):
    key = keypair(tmp_path)
    with pytest.raises(HarnessError, match="needs an AMI id"):
        AwsProvider("fastfabric", operator_cidr="203.0.113.7/32", key_file=key).up(LAYOUT, tmp_path / "r1")
    with pytest.raises(HarnessError, match="--operator-cidr"):
        AwsProvider("fastfabric", ami_id="ami-1", key_file=key).up(LAYOUT, tmp_path / "r2")
    with pytest.raises(HarnessError, match="is not a CIDR"):
        AwsProvider("fastfabric", ami_id="ami-1", operator_cidr="me", key_file=key).up(LAYOUT, tmp_path / "r3")
    with pytest.raises(HarnessError, match="private key .*nokey not found"):
        AwsProvider("fastfabric", ami_id="ami-1", operator_cidr="203.0.113.7/32",
                    key_file=tmp_path / "nokey").up(LAYOUT, tmp_path / "r4")
    assert calls(fake_tf) == []


def test_apply_failure_still_destroys_and_a_failed_destroy_gives_the_command(fake_tf, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_TF_APPLY_RC", "1")
    monkeypatch.setenv("FAKE_TF_DESTROY_RC", "1")
    p = provider(tmp_path)
    with pytest.raises(HarnessError, match="terraform apply failed"):
        p.up(LAYOUT, tmp_path / "run")
    with pytest.raises(HarnessError) as e:
        p.down()
    env_dir = tmp_path / "run" / "terraform" / "roots" / "single-region"
    tfvars = tmp_path / "run" / "terraform" / "fabricrepro.tfvars.json"
    assert "may still be running" in str(e.value)
    assert e.value.hint == (f"destroy them with: terraform -chdir={env_dir} destroy -auto-approve -input=false "
                            f"-var-file={tfvars}")
    assert [c["argv"][1] for c in calls(fake_tf)] == ["init", "apply", "destroy"]
    # the command in the message is the one that was run (but for the binary's path and -no-color)
    assert [a for a in calls(fake_tf)[-1]["argv"] if a != "-no-color"] == e.value.hint.split(": ", 1)[1].split()[1:]


def test_variables_are_the_systems_then_the_operators(fake_tf, tmp_path, monkeypatch):
    """The run's variables file: the system's values (a role at 0 that the layout needs gets one host),
    then the operator's inputs (an instance type given overrides the system's default)."""
    monkeypatch.setenv("FAKE_TF_APPLY_RC", "1")   # stop after apply: the variables are written by then
    p = AwsProvider("fujitsu-api", work_root=str(tmp_path / "remote"), ami_id="ami-0123456789abcdef0",
                    operator_cidr="203.0.113.7/32", key_file=keypair(tmp_path), instance_type="m5.large")
    with pytest.raises(HarnessError, match="terraform apply failed for fujitsu-api"):
        p.up(LAYOUT, tmp_path / "run")
    p.down()
    system = json.loads((SYSTEMS_DIR / "fujitsu-api" / "terraform" / "single-region.tfvars.json").read_text())
    variables = json.loads((tmp_path / "run" / "terraform" / "fabricrepro.tfvars.json").read_text())
    assert system["roles"] == {"peer": 4, "client": 0} and "client" in LAYOUT
    assert variables["roles"] == {"peer": 4, "client": 1}
    assert variables["default_instance_type"] == "m5.large" and variables["system"] == "fujitsu-api"
    # no --region: the root's default region and zone
    assert set(variables) == set(system) | {"operator_cidrs", "ssh_public_key_file", "ssh_private_key_file",
                                            "ami_id", "name"}
    assert variables["name"].startswith("repro-fujitsu-api-")


def test_a_variable_the_root_does_not_declare_fails_before_terraform(fake_tf, tmp_path):
    p = provider(tmp_path)
    p.system_variables = tmp_path / "single-region.tfvars.json"
    p.system_variables.write_text(json.dumps({"roles": {"peer": 1}, "wheat": True}))
    with pytest.raises(HarnessError, match="root single-region declares no variable wheat"):
        p.up(LAYOUT, tmp_path / "run")
    assert calls(fake_tf) == []


@pytest.mark.netns
def test_up_and_down_through_terraform(fake_tf, cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_TF_HOSTS", json.dumps({r: cluster.ip(r) for r in ROLES}))
    key = cluster.key_path    # the "instances" accept the cluster's key, as EC2 would the key pair's
    repo_env = A.TERRAFORM_DIR / "roots" / "single-region"
    before = sorted(p.name for p in repo_env.iterdir())
    # preflight=False: the preflight path is covered by test_ssh.py; here it would add ~10 s
    p = provider(tmp_path, key=key, preflight=False)
    run = tmp_path / "run"
    try:
        t = time.monotonic()
        groups = p.up(LAYOUT, run)
        print(f"aws provider up (fake terraform, netns hosts) in {time.monotonic() - t:.1f}s")
        assert groups == {"orderer": ["orderer-0"], "peer": ["peer-0"], "blockwatch": ["client-0"],
                          "loadgen": ["client-0"]}
        env_dir = run / "terraform" / "roots" / "single-region"
        tfvars = run / "terraform" / "fabricrepro.tfvars.json"
        assert [(c["argv"][1:], c["chdir"]) for c in calls(fake_tf)] == [
            (["init", "-input=false", "-no-color"], str(env_dir)),
            (["apply", "-auto-approve", "-input=false", "-no-color", f"-var-file={tfvars}"], str(env_dir)),
            (["output", "-raw", "inventory_yaml"], str(env_dir)),
        ]
        variables = json.loads(tfvars.read_text())
        assert variables["operator_cidrs"] == ["203.0.113.7/32"] and variables["ami_id"] == "ami-0123456789abcdef0"
        assert variables["region"] == "eu-west-1" and variables["availability_zone"] == "eu-west-1a"
        assert variables["ssh_private_key_file"] == str(key.resolve())
        assert variables["ssh_public_key_file"] == str(key.resolve()) + ".pub"
        assert variables["name"].startswith("repro-fastfabric-")
        # the system's variables, as its file gives them (fastfabric has a client host of its own)
        system = json.loads((SYSTEMS_DIR / "fastfabric" / "terraform" / "single-region.tfvars.json").read_text())
        assert {k: variables[k] for k in system} == system
        assert (env_dir / "terraform.tfstate").exists()             # the state lives in the run
        assert (run / "terraform" / "modules").is_dir()              # with the modules it reaches by ../../
        assert sorted(x.name for x in repo_env.iterdir()) == before  # nothing written into the repository
        inv = run / "provider" / "inventory.aws.yml"
        assert p.inventory_path == inv and "orderer-0" in inv.read_text()
        d = p.describe()
        assert d["provider"] == "aws" and d["environment"] == "fastfabric" and d["credentials"].startswith("env")
        assert d["destroy_command"].startswith(f"terraform -chdir={env_dir} destroy")
        assert p.host_vars("peer-0")["fabricrepro_copy_binaries"] is True
        for t_ in p.monitor_targets(groups):
            with __import__("urllib.request").request.urlopen(f"http://{t_.address}:9100/metrics", timeout=5) as r:
                assert b"node_exporter_build_info" in r.read()
    finally:
        p.down()
    assert not exporter_pids(cluster)
    assert [c["argv"][1] for c in calls(fake_tf)] == ["init", "apply", "output", "destroy"]
    assert calls(fake_tf)[-1]["argv"][1:] == ["destroy", "-auto-approve", "-input=false", "-no-color",
                                              f"-var-file={run / 'terraform' / 'fabricrepro.tfvars.json'}"]
    assert not (env_dir / "terraform.tfstate").exists()
    p.down()  # idempotent: no second destroy
    assert len(calls(fake_tf)) == 4
