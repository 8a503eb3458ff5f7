"""The aws provider with a test double of terraform (tests/providers/fakebin/terraform).

The double records every call and prints an inventory whose hosts are the
netns servers, so after Terraform the real ssh path runs: SSH checks,
node-exporter, down. No AWS account is used, nothing is created, and nothing
is sent anywhere: every Terraform call here is the double's.
"""

import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import REPO_ROOT, builds, topology
from harness.catalogue import load_paper
from harness.errors import HarnessError
from harness.providers import aws as A
from harness.providers import aws_plan as P
from harness.providers.aws import AwsProvider, PlanOnly
from harness.reproduce import reproduce
from harness.systems import SYSTEMS_DIR

from provider_hosts import LAYOUT, ROLES, exporter_pids

HERE = Path(__file__).resolve().parent
FAKEBIN = HERE / "fakebin"
NO_AWS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE")


@pytest.fixture(autouse=True)
def terraform_build(tmp_path, monkeypatch):
    """Plugin cache, lock files and plans of these tests in tmp_path, never the repository's build/."""
    monkeypatch.setattr(A, "TERRAFORM_BUILD", tmp_path / "build-terraform")
    monkeypatch.delenv("TF_PLUGIN_CACHE_DIR", raising=False)
    return tmp_path / "build-terraform"


@pytest.fixture
def no_credentials(tmp_path, monkeypatch):
    for v in NO_AWS:
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))


@pytest.fixture
def fake_tf(tmp_path, monkeypatch):
    """The terraform test double first on PATH, AWS keys in the environment; returns its call log."""
    monkeypatch.setenv("PATH", f"{FAKEBIN}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("TERRAFORM", raising=False)
    for v in ("AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "FAKE_TF_APPLY_RC", "FAKE_TF_DESTROY_RC",
              "FAKE_TF_INIT_RC", "FAKE_TF_PLAN_RC"):
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


def provider(tmp_path, key=None, paper="fastfabric", **kw) -> AwsProvider:
    kw.setdefault("operator_cidr", "203.0.113.7/32")
    return AwsProvider(paper, work_root=str(tmp_path / "remote"), key_file=key or keypair(tmp_path),
                       results=tmp_path / "results", stream=io.StringIO(), **kw)


def layout_of(paper: str, experiment: str) -> topology.Layout:
    """The experiment's layout on the upstream build's drivers (the recipes' specs, no build needed)."""
    e = load_paper(paper).experiment(experiment)
    systems = sorted({v["system"] for v in e["variants"] if v.get("runnable") is not False and not v.get("driver")})
    choice = builds.Choice("upstream", {s: builds.upstream_driver(s, e["driver"]) for s in systems})
    return topology.lay_out(e.get("topology"), choice.layout())


VALID = "bftsmart-orderer, fastfabric, fujitsu-api, validation-opt"


# ---- the systems' data and the roots it must agree with

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


def test_roots_declare_what_the_provider_passes():
    """Read again from infra/terraform: every root a system names declares the variables the provider writes
    (the system's, the layout's roles and regions, the operator's) and the outputs it reads."""
    for system, variables in A.environments().items():
        for root, values in A.system_roots(variables).items():
            root_dir = A.TERRAFORM_DIR / "roots" / root
            declared = A.terraform_variables(root_dir)
            geo = bool(A.root_regions(root_dir))
            passed = {"roles", "operator_cidrs", "ssh_public_key_file", "ssh_private_key_file", "name"} | (
                {"role_regions", "ami_ids"} if geo else {"ami_id", "region", "availability_zone"})
            assert set(json.loads(values.read_text())) | passed <= declared, (system, root)
            outputs = (root_dir / "outputs.tf").read_text()
            assert f'output "{A.INVENTORY_OUTPUT}"' in outputs and 'output "ami_id' in outputs, root


def test_the_provider_knows_the_roots_defaults_and_regions():
    """The region the cost is priced in is the single-region root's default; the geo root's regions are its
    aliased providers'; the root volume priced is the cluster module's."""
    single = (A.TERRAFORM_DIR / "roots" / "single-region" / "variables.tf").read_text()
    assert re.search(r'variable "region" \{[^}]*default\s*=\s*"' + A.DEFAULT_REGION + '"', single)
    assert A.root_regions(A.TERRAFORM_DIR / "roots" / "single-region") == set()
    assert A.root_regions(A.TERRAFORM_DIR / "roots" / "bftsmart-geo") == {
        "us-west-2", "eu-west-1", "ap-southeast-2", "sa-east-1", "us-east-1"}
    cluster = (A.TERRAFORM_DIR / "modules" / "cluster" / "variables.tf").read_text()
    assert re.search(r'variable "root_volume_gb" \{[^}]*default\s*=\s*' + str(P.ROOT_VOLUME_GB) + r"\n", cluster)


def test_every_instance_type_the_systems_name_is_priced_in_the_default_region():
    prices = P.load(P.PRICES)
    assert prices["source"].startswith("https://aws.amazon.com/") and re.fullmatch(r"\d{4}-\d{2}", prices["as_of"])
    named = set()
    for variables in A.environments().values():
        for values in (json.loads(f.read_text()) for f in A.system_roots(variables).values()):
            named |= {values.get("default_instance_type") or values["instance_type"],
                      *(values.get("instance_types") or {}).values()}
    assert named - set(prices["regions"][A.DEFAULT_REGION]["instance_hour"]) == set()


# ---- what place() plans: the layout's hosts only, named as Terraform names them

def test_table1_is_fifteen_instances_named_as_terraform_names_them():
    p = AwsProvider("fastfabric")
    layout = layout_of("fastfabric", "table1-end-to-end")
    placed = p.place(layout)
    assert len(placed) == 15 and len(set(placed.values())) == 15
    assert placed["orderer"] == "orderer-0" and placed["kafka-2"] == "kafka-2" and placed["endorser-4"] == "endorser-4"
    assert all(placed[h.name] == f"{h.role}-{h.index}" for h in layout.hosts)
    assert [i.name for i in p.chosen][:4] == ["client-0", "endorser-0", "endorser-1", "endorser-2"]  # Terraform's order
    assert {i.instance_type for i in p.chosen} == {"c5.9xlarge"} and p.root == "single-region"


def test_only_the_hosts_the_experiment_lays_out_are_asked_of_terraform(fake_tf, tmp_path, monkeypatch):
    """Fig. 6 lays out the peer benchmark and its storage server: two instances, not the system's 15;
    --instance-type is every role's; the operator's inputs follow."""
    monkeypatch.setenv("FAKE_TF_APPLY_RC", "1")   # stop after apply: the variables are written by then
    p = provider(tmp_path, instance_type="m5.large", region="eu-west-1", ami_id="ami-0123456789abcdef0")
    layout = layout_of("fastfabric", "fig6-peer-throughput")
    assert p.place(layout) == {"peer": "peer-0", "storage": "storage-0"}
    with pytest.raises(HarnessError, match="terraform apply failed for fastfabric"):
        p.up(layout, tmp_path / "run")
    p.down()
    variables = json.loads((tmp_path / "run" / "terraform" / "fabricrepro.tfvars.json").read_text())
    system = json.loads((SYSTEMS_DIR / "fastfabric" / "terraform" / "single-region.tfvars.json").read_text())
    assert sum(system["roles"].values()) == 15
    assert variables["roles"] == {"peer": 1, "storage": 1}
    assert variables["default_instance_type"] == "m5.large" and variables["instance_types"] == {}
    assert variables["region"] == "eu-west-1" and variables["availability_zone"] == "eu-west-1a"
    assert variables["ami_id"] == "ami-0123456789abcdef0" and variables["operator_cidrs"] == ["203.0.113.7/32"]
    assert variables["name"].startswith("repro-fastfabric-")
    assert [c["argv"][1] for c in calls(fake_tf)] == ["init", "apply", "destroy"]


def test_without_ami_id_terraform_looks_the_image_up(fake_tf, tmp_path, monkeypatch):
    """No --ami-id: no ami_id variable, so the root's aws_ami data source finds the region's Ubuntu 24.04."""
    monkeypatch.setenv("FAKE_TF_APPLY_RC", "1")
    p = provider(tmp_path)
    with pytest.raises(HarnessError):
        p.up(LAYOUT, tmp_path / "run")
    p.down()
    variables = json.loads((tmp_path / "run" / "terraform" / "fabricrepro.tfvars.json").read_text())
    assert "ami_id" not in variables and "region" not in variables
    assert variables["roles"] == {"orderer": 1, "peer": 1, "client": 1}
    region = (A.TERRAFORM_DIR / "modules" / "region" / "main.tf").read_text()
    assert '"099720109477"' in region and "ubuntu-noble-24.04-amd64-server-*" in region   # Canonical's


def test_a_geo_distributed_layout_gets_the_multi_region_root(fake_tf, tmp_path, monkeypatch):
    """Sousa's Fig. 7: every topology role is a place with an AWS region, so the system's multi-region
    root, one m4.4xlarge per region; the links' delays are the regions' own, not shaped."""
    monkeypatch.setenv("FAKE_TF_APPLY_RC", "1")
    p = provider(tmp_path, paper="bftsmart-orderer", ami_id="us-west-2=ami-1,eu-west-1=ami-2,ap-southeast-2=ami-3,"
                                                           "sa-east-1=ami-4,us-east-1=ami-5")
    layout = layout_of("bftsmart-orderer", "fig7-geo-latency")
    assert p.place(layout) == {"oregon": "oregon-0", "virginia": "virginia-0", "ireland": "ireland-0",
                               "sydney": "sydney-0", "sao_paulo": "sao_paulo-0"}
    assert p.root == "bftsmart-geo"
    with pytest.raises(HarnessError, match="apply failed"):
        p.up(layout, tmp_path / "run")
    p.down()
    assert calls(fake_tf)[0]["chdir"] == str(tmp_path / "run" / "terraform" / "roots" / "bftsmart-geo")
    variables = json.loads((tmp_path / "run" / "terraform" / "fabricrepro.tfvars.json").read_text())
    assert variables["roles"] == {"oregon": 1, "virginia": 1, "ireland": 1, "sydney": 1, "sao_paulo": 1}
    assert variables["role_regions"]["sao_paulo"] == "sa-east-1" and variables["instance_type"] == "m4.4xlarge"
    assert variables["ami_ids"]["eu-west-1"] == "ami-2"
    links = p.apply_links([{"from": "oregon", "to": "sydney", "delay_ms": 81}])
    assert links == [{"from": "oregon", "to": "sydney", "delay_ms": 81, "applied": False, "delay_applied": False,
                      "reason": "the hosts are in the AWS regions the topology names: the delay is the real "
                                "network's between them, not emulated"}]
    with pytest.raises(HarnessError, match="an AMI id belongs to one"):
        provider(tmp_path, paper="bftsmart-orderer", ami_id="ami-1").place(layout)


def test_regions_the_system_has_no_root_for_are_refused():
    roles = {"oregon": ["x"], "tokyo": ["x"]}
    assert P.role_regions(roles) == {"oregon": "us-west-2", "tokyo": "ap-northeast-1"}
    assert P.role_regions({"oregon": 1, "peer": 1}) is None   # not every role is a place: one region
    with pytest.raises(HarnessError, match="regions ap-northeast-1, us-west-2.*bftsmart-geo has ap-southeast-2"):
        AwsProvider("bftsmart-orderer").place(topology.as_layout(roles))
    with pytest.raises(HarnessError, match="fastfabric has no multi-region Terraform root.*it has none"):
        AwsProvider("fastfabric").place(topology.as_layout(roles))


# ---- what it costs and how long it takes, before anything is created

def test_hourly_cost_from_the_dated_table():
    chosen = AwsProvider("fastfabric")
    chosen.place(layout_of("fastfabric", "table1-end-to-end"))
    cost = P.hourly_cost(chosen.chosen)
    # 15 x $1.53 + 15 x 100 GiB x $0.08 a GB-month / 730 h
    assert cost.total == pytest.approx(15 * 1.53 + 15 * 100 * 0.08 / 730, abs=1e-3) and cost.unpriced == []
    odd = [P.Instance("x-0", "x", 0, "c5.9xlarge", "eu-north-1"), P.Instance("y-0", "y", 0, "z9.huge", "us-east-1")]
    assert P.hourly_cost(odd).unpriced == ["c5.9xlarge in eu-north-1", "gp3 in eu-north-1", "z9.huge in us-east-1"]
    line = P.plan_lines(odd, P.hourly_cost(odd), None, "single-region", wall_unknown="why")[-2]
    assert "NOT PRICED" in line and "z9.huge in us-east-1" in line and "not live" in line


def test_wall_time_from_stored_runs_else_the_stated_assumption(tmp_path):
    est = P.load(P.ESTIMATES)
    assumed = P.wall_estimate(3, "smoke", None, controls=1)
    assert assumed.seconds == est["setup_s"] + 4 * est["point_s"]["smoke"] + est["destroy_s"]
    assert "assumed" in assumed.how and "at most 1 control point" in assumed.how
    run = tmp_path / "fastfabric" / "table1-end-to-end" / "r1"
    for name, wall in (("a", 50.0), ("b", 70.0)):
        (run / "points" / name).mkdir(parents=True)
        (run / "points" / name / "summary.json").write_text(json.dumps({"duration_s": wall}))
    (run / "metadata.json").write_text(json.dumps({"scale": "smoke"}))
    measured = P.measured_point_seconds(tmp_path, "fastfabric", "table1-end-to-end", "smoke")
    assert measured == (60.0, ["r1"]) and P.measured_point_seconds(tmp_path, "fastfabric", "table1-end-to-end",
                                                                   "local") is None
    assert P.wall_estimate(2, "smoke", measured).seconds == est["setup_s"] + 120 + est["destroy_s"]


@pytest.fixture
def upstream_at_hand(monkeypatch):
    """The paper's build, the upstream one, is what the AWS plan lays out, whether or not this machine has its
    source (a clone without ../shared, offline, would plan the reference build's fewer hosts): plan-only stops
    before anything is fetched or built."""
    from harness import upstream
    monkeypatch.setattr(upstream, "source_available", lambda recipe, source="auto": None)


def plan_only(paper: str, experiment: str, tmp_path: Path, **options):
    """``reproduce(..., provider="aws", plan_only)``: its output and the PlanOnly it stops with."""
    out = io.StringIO()
    with pytest.raises(PlanOnly) as stop:
        reproduce(paper, experiment, provider="aws", stream=out, results=tmp_path / "results",
                  reports=tmp_path / "reports",
                  provider_options={"plan_only": True, "results": tmp_path / "results", "stream": out, **options})
    return out.getvalue(), stop.value


def test_plan_only_without_credentials_prints_the_plan_then_names_what_is_missing(fake_tf, tmp_path, no_credentials,
                                                                                 upstream_at_hand):
    """This machine's case: no credentials, no --operator-cidr. The hosts with their types and the cost line
    come first, then the stop naming what `terraform plan` would need; no Terraform call, no run directory."""
    text, stop = plan_only("fastfabric", "table1-end-to-end", tmp_path, key_file=str(tmp_path / "nokey"))
    lines = text.splitlines()
    first_aws = next(i for i, ln in enumerate(lines) if ln.startswith("aws: "))
    assert lines[first_aws] == "aws: 15 instance(s) to create in us-east-1 (Terraform root single-region):"
    assert "  in all: 15 x c5.9xlarge" in lines and "  endorser: 5 x c5.9xlarge  (endorser-0..endorser-4)" in lines
    assert any(ln.startswith("aws: cost: about $23.11 an hour") for ln in lines)
    assert any(ln.startswith("aws: expected wall time: about ") for ln in lines)
    assert not stop.complete
    assert str(stop).startswith("--plan-only: stopped before `terraform plan`, which needs --operator-cidr")
    for what in ("SSH private key", "AWS credentials", "Nothing was created"):
        assert what in str(stop)
    assert calls(fake_tf) == [] and not (tmp_path / "results").exists()
    text, _ = plan_only("fastfabric", "fig6-peer-throughput", tmp_path)
    assert "aws: 2 instance(s) to create in us-east-1 (Terraform root single-region):" in text
    assert "  in all: 2 x c5.9xlarge" in text


def test_plan_only_runs_terraform_plan_where_it_can(fake_tf, tmp_path):
    """With Terraform, the inputs and credentials: init and plan in a copy under build/terraform/plans, with the
    plugin cache outside results; nothing applied, no run directory."""
    p = provider(tmp_path, plan_only=True)
    p.place(topology.as_layout(LAYOUT))
    with pytest.raises(PlanOnly) as stop:
        p.hold("fastfabric table1-end-to-end")
    assert stop.value.complete, str(stop.value)
    assert "terraform plan done (Plan: 3 to add, 0 to change, 0 to destroy.)" in str(stop.value)
    argv = [c["argv"][1] for c in calls(fake_tf)]
    assert argv == ["init", "plan"]
    assert calls(fake_tf)[0]["chdir"].startswith(str(A.TERRAFORM_BUILD / "plans"))
    assert calls(fake_tf)[0]["plugin_cache"] == str(A.TERRAFORM_BUILD / "plugin-cache")
    assert not (tmp_path / "results").exists()
    p.down()
    assert len(calls(fake_tf)) == 2   # nothing to destroy


def test_plan_only_where_init_cannot_install_the_provider(fake_tf, tmp_path, monkeypatch):
    """Terraform and credentials here, but init fails (the registry out of reach, no plugin cached): said so."""
    monkeypatch.setenv("FAKE_TF_INIT_RC", "1")
    p = provider(tmp_path, plan_only=True)
    p.place(topology.as_layout(LAYOUT))
    with pytest.raises(PlanOnly) as stop:
        p.hold("fastfabric table1-end-to-end")
    assert not stop.value.complete and str(stop.value).startswith("--plan-only: terraform init failed in ")
    assert "download the hashicorp/aws provider from registry.terraform.io" in str(stop.value)
    assert [c["argv"][1] for c in calls(fake_tf)] == ["init"]


def test_a_run_asks_before_creating(fake_tf, tmp_path, monkeypatch):
    """A stdin that is not a terminal refuses without --yes; at a terminal anything but y is a no; --yes goes on."""
    p = provider(tmp_path)
    p.place(topology.as_layout(LAYOUT))
    monkeypatch.setattr(A, "_stdin_is_terminal", lambda: False)
    with pytest.raises(HarnessError, match="stdin is not a terminal: nothing was asked and nothing was created"):
        p.hold("fastfabric table1-end-to-end")
    assert "aws: 3 instance(s) to create" in p.stream.getvalue()
    monkeypatch.setattr(A, "_stdin_is_terminal", lambda: True)
    asked = []
    monkeypatch.setattr(A, "_ask", lambda q: asked.append(q) or "n")
    with pytest.raises(HarnessError, match="not confirmed: nothing was created"):
        p.hold("fastfabric table1-end-to-end")
    assert asked and asked[0].startswith("Create these 3 instance(s), about $")
    monkeypatch.setattr(A, "_ask", lambda q: "y")
    p.hold("fastfabric table1-end-to-end")
    monkeypatch.setattr(A, "_stdin_is_terminal", lambda: False)
    y = provider(tmp_path, yes=True)
    y.place(topology.as_layout(LAYOUT))
    y.hold("fastfabric table1-end-to-end")
    assert calls(fake_tf) == []


def test_invoke_plan_only_exits_non_zero_naming_what_is_missing(tmp_path, no_credentials):
    """The command a user types: the plan on stderr, then what is missing, exit 1 (0 only after a plan)."""
    env = {k: v for k, v in os.environ.items() if k not in NO_AWS}
    env.update({"HOME": str(tmp_path), "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
                "AWS_CONFIG_FILE": str(tmp_path / "none")})
    r = subprocess.run([sys.executable, "-m", "invoke", "reproduce", "--paper", "fastfabric", "--experiment",
                        "fig6-peer-throughput", "--provider", "aws", "--plan-only"], cwd=REPO_ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    if "reference build (upstream not available" in r.stderr:  # a clone without ../shared, offline: Fig. 6's
        assert re.search(r"aws: 1 instance\(s\) to create", r.stderr), r.stderr  # reference build, no storage host
    else:
        assert "aws: 2 instance(s) to create" in r.stderr and "aws: cost: about $3.08 an hour" in r.stderr
    assert "--plan-only: stopped before `terraform plan`" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "invoke", "reproduce", "--paper", "fastfabric", "--plan-only"],
                       cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "options of --provider aws" in r.stderr


# ---- checks, failures, Terraform's files

def test_missing_credentials_fail_before_terraform(fake_tf, tmp_path, no_credentials):
    p = provider(tmp_path)
    with pytest.raises(HarnessError) as e:
        p.check()
    assert "AWS credentials" in str(e.value) and "nothing was created" in str(e.value)
    assert "aws configure" in e.value.hint
    with pytest.raises(HarnessError, match="AWS credentials"):
        p.up(LAYOUT, tmp_path / "run")
    assert calls(fake_tf) == [] and not (tmp_path / "run" / "terraform").exists()
    p.down()   # nothing to destroy: no call either
    assert calls(fake_tf) == []


def test_credentials_file_counts(tmp_path, monkeypatch):
    for v in NO_AWS:
        monkeypatch.delenv(v, raising=False)
    creds = tmp_path / "credentials"
    creds.write_text("[default]\naws_access_key_id = AKIA...\naws_secret_access_key = x\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    assert A.aws_credentials() == f"shared file {creds}"


def test_missing_terraform_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))     # no terraform anywhere (this machine has a real one)
    monkeypatch.delenv("TERRAFORM", raising=False)
    with pytest.raises(HarnessError, match="terraform \\(not found\\)"):
        provider(tmp_path).check()


def test_missing_inputs_are_named(fake_tf, tmp_path):
    key = keypair(tmp_path)
    with pytest.raises(HarnessError, match="--operator-cidr"):
        AwsProvider("fastfabric", key_file=key).check()
    with pytest.raises(HarnessError, match="is not a CIDR"):
        AwsProvider("fastfabric", operator_cidr="me", key_file=key, plan_only=True).check()
    with pytest.raises(HarnessError, match="private key .*nokey \\(not found\\)"):
        AwsProvider("fastfabric", operator_cidr="203.0.113.7/32", key_file=tmp_path / "nokey").check()
    AwsProvider("fastfabric", plan_only=True).check()   # --plan-only prints the plan first, whatever is missing
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


def test_plugins_are_cached_once_outside_the_run_and_the_lock_file_reused(fake_tf, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_TF_APPLY_RC", "1")
    for run in ("run1", "run2"):
        p = provider(tmp_path)
        with pytest.raises(HarnessError):
            p.up(LAYOUT, tmp_path / run)
        p.down()
    inits = [c for c in calls(fake_tf) if c["argv"][1] == "init"]
    assert [c["plugin_cache"] for c in inits] == [str(A.TERRAFORM_BUILD / "plugin-cache")] * 2
    assert [c["lock_before"] for c in inits] == [False, True]   # the second run starts from the first's lock file
    assert (A.TERRAFORM_BUILD / "locks" / "single-region.terraform.lock.hcl").is_file()
    assert not list((tmp_path / "run1").rglob("plugin-cache"))


def test_a_variable_the_root_does_not_declare_fails_before_terraform(fake_tf, tmp_path):
    p = provider(tmp_path)
    p.system_variables = tmp_path / "single-region.tfvars.json"
    p.system_variables.write_text(json.dumps({"default_instance_type": "m5.large", "instance_types": {},
                                              "wheat": True}))
    with pytest.raises(HarnessError, match="root single-region declares no variable wheat"):
        p.up(LAYOUT, tmp_path / "run")
    assert calls(fake_tf) == []


def test_an_inventory_without_the_predicted_names_is_refused(fake_tf, tmp_path):
    p = provider(tmp_path)
    inv = tmp_path / "inventory.yml"
    inv.write_text(json.dumps({"all": {"children": {r: {"hosts": {f"{r}-7": {"ansible_host": "192.0.2.1"}}}
                                                    for r in ROLES}}}))
    p.inventory_path, p._inventory_ready = inv, True
    with pytest.raises(HarnessError, match="does not hold the instances the placement named: client -> client-0 "
                                           "\\(inventory: client-7\\)"):
        p.place(topology.as_layout(LAYOUT))


@pytest.mark.netns
def test_up_and_down_through_terraform(fake_tf, cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_TF_HOSTS", json.dumps({r: cluster.ip(r) for r in ROLES}))
    key = cluster.key_path    # the "instances" accept the cluster's key, as EC2 would the key pair's
    repo_env = A.TERRAFORM_DIR / "roots" / "single-region"
    before = sorted(p.name for p in repo_env.iterdir())
    # preflight=False: the preflight path is covered by test_ssh.py; here it would add ~10 s
    p = provider(tmp_path, key=key, preflight=False, region="eu-west-1", yes=True)
    run = tmp_path / "run"
    try:
        t = time.monotonic()
        groups = p.up(LAYOUT, run)
        print(f"aws provider up (fake terraform, netns hosts) in {time.monotonic() - t:.1f}s")
        assert groups == {"orderer": ["orderer-0"], "peer": ["peer-0"], "blockwatch": ["client-0"],
                          "loadgen": ["client-0"]}
        assert p.placed == {"orderer": "orderer-0", "peer": "peer-0", "client": "client-0"}
        env_dir = run / "terraform" / "roots" / "single-region"
        tfvars = run / "terraform" / "fabricrepro.tfvars.json"
        assert [(c["argv"][1:], c["chdir"]) for c in calls(fake_tf)] == [
            (["init", "-input=false", "-no-color"], str(env_dir)),
            (["apply", "-auto-approve", "-input=false", "-no-color", f"-var-file={tfvars}"], str(env_dir)),
            (["output", "-json"], str(env_dir)),
        ]
        variables = json.loads(tfvars.read_text())
        assert variables["operator_cidrs"] == ["203.0.113.7/32"] and variables["roles"] == {
            "orderer": 1, "peer": 1, "client": 1}
        assert variables["region"] == "eu-west-1" and variables["availability_zone"] == "eu-west-1a"
        assert variables["ssh_private_key_file"] == str(key.resolve())
        assert variables["ssh_public_key_file"] == str(key.resolve()) + ".pub"
        assert (env_dir / "terraform.tfstate").exists()             # the state lives in the run
        assert (run / "terraform" / "modules").is_dir()              # with the modules it reaches by ../../
        assert sorted(x.name for x in repo_env.iterdir()) == before  # nothing written into the repository
        inv = run / "provider" / "inventory.aws.yml"
        assert p.inventory_path == inv and "orderer-0" in inv.read_text()
        d = p.describe()
        assert d["provider"] == "aws" and d["environment"] == "fastfabric" and d["credentials"].startswith("env")
        assert d["amis"] == {"ami_id": "ami-0fakelookup000000"} and d["root"] == "single-region"
        assert d["instances"]["client-0"] == {"host": "client", "role": "client", "instance_type": "c5.9xlarge",
                                              "region": "eu-west-1"}
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
