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


def test_paper_to_environment():
    assert A.environment_for("fastfabric") == "fastfabric"
    assert A.environment_for("fujitsu-api") == "fujitsu"
    assert A.environment_for("bftsmart-orderer") == "bftsmart"
    assert A.environment_for("validation-opt") == "validation-opt"
    with pytest.raises(HarnessError, match="no Terraform environment for paper 'nope'; valid: .*fastfabric"):
        AwsProvider("nope")


def test_environments_declare_what_the_provider_passes():
    """Read again from infra/terraform: the variables and the inventory output the provider relies on."""
    for paper, env in A.paper_environments().items():
        d = A.TERRAFORM_DIR / "environments" / env
        assert {"operator_cidrs", "ssh_public_key_file", "ssh_private_key_file", "ami_id", "region",
                "availability_zone", "default_instance_type", "name"} <= A.terraform_variables(d), env
        assert f'output "{A.INVENTORY_OUTPUT}"' in (d / "outputs.tf").read_text(), env


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
    env_dir = tmp_path / "run" / "terraform" / "environments" / "fastfabric"
    tfvars = tmp_path / "run" / "terraform" / "fabricrepro.tfvars.json"
    assert "may still be running" in str(e.value)
    assert e.value.hint == (f"destroy them with: terraform -chdir={env_dir} destroy -auto-approve -input=false "
                            f"-var-file={tfvars}")
    assert [c["argv"][1] for c in calls(fake_tf)] == ["init", "apply", "destroy"]
    # the command in the message is the one that was run (but for the binary's path and -no-color)
    assert [a for a in calls(fake_tf)[-1]["argv"] if a != "-no-color"] == e.value.hint.split(": ", 1)[1].split()[1:]


@pytest.mark.netns
def test_up_and_down_through_terraform(fake_tf, cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_TF_HOSTS", json.dumps({r: cluster.ip(r) for r in ROLES}))
    key = cluster.key_path    # the "instances" accept the cluster's key, as EC2 would the key pair's
    repo_env = A.TERRAFORM_DIR / "environments" / "fastfabric"
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
        env_dir = run / "terraform" / "environments" / "fastfabric"
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
    assert not (run / "terraform" / "environments" / "fastfabric" / "terraform.tfstate").exists()
    p.down()  # idempotent: no second destroy
    assert len(calls(fake_tf)) == 4
