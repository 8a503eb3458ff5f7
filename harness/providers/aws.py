"""The aws provider: Terraform creates the paper's topology on EC2, then the ssh provider takes over.

    invoke reproduce --paper fastfabric --provider aws --ami-id ami-... --operator-cidr 203.0.113.7/32 \\
        --key-file ~/.ssh/repro

The topology is the paper's system's: a system the provider can provision
keeps its values of the single-region root's system variables (roles, instance
types) in ``systems/<system>/terraform/single-region.tfvars.json``, and is
found there by its name, which is also its paper's id.

``up`` first checks that ``terraform`` and AWS credentials are there (nothing
is created otherwise), copies ``infra/terraform`` into ``<run_dir>/terraform``
(the configuration that was applied stays with the run; the state, the
provider plugins and the lock file live there too, never in the repository),
writes the system's variables and the operator's inputs into one variables
file there, then runs in ``<run_dir>/terraform/roots/single-region``::

    terraform init -input=false
    terraform apply -auto-approve -input=false -var-file=<run_dir>/terraform/fabricrepro.tfvars.json
    terraform output -raw inventory_yaml      > <run_dir>/provider/inventory.aws.yml

and brings the hosts of that inventory up as ``SshProvider`` does (waiting for
their SSH while they boot, installing node-exporter where it is missing).
``down`` stops what the ssh provider started, then ``terraform destroy``; if
that fails it raises with the exact command that removes the instances.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import re
import secrets
import shlex
import shutil
import subprocess
from pathlib import Path

from .. import REPO_ROOT
from ..errors import HarnessError
from .ssh import DEFAULT_WORK_ROOT, SshProvider

log = logging.getLogger(__name__)

TERRAFORM_DIR = REPO_ROOT / "infra" / "terraform"
#: The root the provider applies (infra/terraform/roots/<ROOT>): one region, a system's topology from its variables.
ROOT = "single-region"
#: The Terraform output holding the Ansible inventory (roots/*/outputs.tf).
INVENTORY_OUTPUT = "inventory_yaml"
TFVARS_NAME = "fabricrepro.tfvars.json"
#: Seconds to wait for fresh instances to answer SSH.
BOOT_WAIT_S = 600


def find_terraform() -> str | None:
    """``$TERRAFORM`` if executable, else ``terraform`` on PATH (as infra/terraform/tf.py finds it)."""
    explicit = os.environ.get("TERRAFORM")
    if explicit and os.access(explicit, os.X_OK):
        return explicit
    return shutil.which("terraform")


def aws_credentials() -> str | None:
    """Where AWS credentials come from (for the record), or None when there are none to be found.

    The environment (keys, a profile, a web identity), else the shared
    credentials or config file. Instance roles are not probed: that needs the
    network; set AWS_PROFILE or keys on such a machine.
    """
    if os.environ.get("AWS_ACCESS_KEY_ID") and os.environ.get("AWS_SECRET_ACCESS_KEY"):
        return "environment (AWS_ACCESS_KEY_ID)"
    if os.environ.get("AWS_PROFILE"):
        return f"profile {os.environ['AWS_PROFILE']} (AWS_PROFILE)"
    if os.environ.get("AWS_WEB_IDENTITY_TOKEN_FILE"):
        return "web identity (AWS_WEB_IDENTITY_TOKEN_FILE)"
    for var, default in (("AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials"), ("AWS_CONFIG_FILE", "~/.aws/config")):
        f = Path(os.environ.get(var) or default).expanduser()
        try:
            text = f.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if re.search(r"^\s*(aws_access_key_id|credential_process|sso_start_url|sso_session|role_arn)\s*=", text,
                     re.MULTILINE):
            return f"shared file {f}"
    return None


def system_variables_file(system: str, root: str = ROOT, systems_dir: Path | None = None) -> Path:
    """Where a system keeps its values of a Terraform root's system variables (it may have none)."""
    from .. import systems  # the plugin loader only where systems are read (the providers import light)
    return Path(systems_dir or systems.SYSTEMS_DIR) / system / "terraform" / f"{root}.tfvars.json"


def environments(systems_dir: Path | None = None) -> dict[str, Path]:
    """``{system: its variables file}`` for every system the provider can provision (those with ``ROOT``'s)."""
    from .. import systems
    found = {name: system_variables_file(name, ROOT, systems_dir) for name in systems.names(systems_dir)}
    return {name: f for name, f in found.items() if f.is_file()}


def environment_for(name: str, systems_dir: Path | None = None) -> Path:
    """The variables file of the system ``name`` (a paper's id names its system); errors list the valid names."""
    found = environments(systems_dir)
    if name not in found:
        raise HarnessError(f"no Terraform environment for {name!r}; valid: {', '.join(sorted(found))}",
                           hint=f"a system the aws provider can provision has "
                                f"systems/<system>/terraform/{ROOT}.tfvars.json (infra/terraform/README.md)")
    return found[name]


def terraform_variables(root_dir: Path) -> set[str]:
    """Names of the variables a Terraform root declares (``variable "x" {`` in its .tf files)."""
    names = set()
    for f in Path(root_dir).glob("*.tf"):
        names |= set(re.findall(r'^\s*variable\s+"([^"]+)"', f.read_text(encoding="utf-8"), re.MULTILINE))
    return names


class AwsProvider(SshProvider):
    """``--provider aws``: the paper's topology on EC2 (Terraform), then as ``ssh``."""

    name = "aws"
    ssh_wait_s = BOOT_WAIT_S
    # fresh Ubuntu images have no node-exporter; these hosts are ours to change
    install_exporter = True

    def __init__(self, paper: str, work_root: str = DEFAULT_WORK_ROOT, bin_dir: Path | None = None,
                 region: str | None = None, operator_cidr: str | None = None, key_file: Path | str | None = None,
                 public_key_file: Path | str | None = None, ami_id: str | None = None,
                 instance_type: str | None = None, availability_zone: str | None = None,
                 preflight: bool = True, require_clock_sync: bool = True, min_cores: int | None = None,
                 min_memory_mb: int | None = None, controller_work_root: Path | None = None,
                 exporter_binary: str | None = None):
        super().__init__(Path("inventory.aws.yml"), work_root=work_root, bin_dir=bin_dir, preflight=preflight,
                         require_clock_sync=require_clock_sync, min_cores=min_cores, min_memory_mb=min_memory_mb,
                         controller_work_root=controller_work_root, exporter_binary=exporter_binary)
        self.paper = paper
        self.region = region
        self.availability_zone = availability_zone
        self.operator_cidr = operator_cidr
        self.key_file = Path(key_file).expanduser() if key_file else None
        self.public_key_file = Path(public_key_file).expanduser() if public_key_file else None
        self.ami_id = ami_id
        self.instance_type = instance_type
        self.env = paper                      # the paper's system, whose topology this is
        self.system_variables = environment_for(paper)
        self.tf_root: Path | None = None      # <run_dir>/terraform
        self._applied = False                 # apply was started: down() must destroy
        self.credentials: str | None = None
        self._terraform: str | None = None

    # ---- paths and commands
    @property
    def root_dir(self) -> Path:
        """The applied root's directory in the run's copy of infra/terraform."""
        return self.tf_root / "roots" / ROOT

    @property
    def tfvars(self) -> Path:
        return self.tf_root / TFVARS_NAME

    def _tf_argv(self, *args: str) -> list[str]:
        return [self._terraform, f"-chdir={self.root_dir}", *args]

    def destroy_command(self) -> str:
        """The command that removes this run's instances, to run by hand if ``down`` could not."""
        return shlex.join(["terraform", f"-chdir={self.root_dir}", "destroy", "-auto-approve", "-input=false",
                           f"-var-file={self.tfvars}"])

    def _tf(self, *args: str, capture: bool = False, timeout: float = 3600) -> subprocess.CompletedProcess:
        """Run terraform in the root; output appended to <run_dir>/provider/terraform.log."""
        argv = self._tf_argv(*args)
        env = dict(os.environ)
        # no prompts, no version check calls, no user CLI config surprises
        env.update({"TF_IN_AUTOMATION": "1", "TF_INPUT": "0", "CHECKPOINT_DISABLE": "1"})
        logf = self.provider_dir / "terraform.log"
        with open(logf, "a", encoding="utf-8") as out:
            out.write("$ " + shlex.join(argv) + "\n")
            out.flush()
            try:
                return subprocess.run(argv, stdout=subprocess.PIPE if capture else out, stderr=out,
                                      stdin=subprocess.DEVNULL, text=True, env=env, timeout=timeout, check=False)
            except subprocess.TimeoutExpired:
                out.write(f"(timed out after {timeout:.0f} s)\n")
                return subprocess.CompletedProcess(argv, 124, "", "")

    # ---- checks before anything is created
    def check(self) -> None:
        # the inventory does not exist before `terraform apply`: check the inputs that make it
        self._check_tools_and_inputs()

    def _check_tools_and_inputs(self) -> dict:
        # the flags first: a missing --ami-id is named as such, whatever else is missing
        if not self.ami_id:
            raise HarnessError("--provider aws needs an AMI id (Ubuntu 18.04 LTS in the region)",
                               hint="pass --ami-id ami-... (see infra/terraform/README.md: the image is an input "
                                    "so that a run records exactly which one it used)")
        if not self.operator_cidr:
            raise HarnessError("--provider aws needs your address as a CIDR: the security group admits SSH and "
                               "node-exporter scrapes from it only",
                               hint="pass --operator-cidr <your public IP>/32")
        self._terraform = find_terraform()
        if not self._terraform:
            raise HarnessError("terraform not found (needed by --provider aws to create the instances)",
                               hint="install Terraform >= 1.6 (https://developer.hashicorp.com/terraform/install) "
                                    "or set TERRAFORM to its path")
        self.credentials = aws_credentials()
        if not self.credentials:
            raise HarnessError("no AWS credentials found (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, "
                               "~/.aws/credentials); nothing was created",
                               hint="run `aws configure`, or export AWS_PROFILE=<profile>, or export "
                                    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
        try:
            cidr = str(ipaddress.ip_network(self.operator_cidr, strict=False))
        except ValueError:
            raise HarnessError(f"--operator-cidr {self.operator_cidr!r} is not a CIDR (e.g. 203.0.113.7/32)") from None
        key = self.key_file or next((k for k in (Path("~/.ssh/id_ed25519").expanduser(),
                                                 Path("~/.ssh/id_rsa").expanduser()) if k.exists()), None)
        if not key or not key.is_file():
            raise HarnessError(f"SSH private key {key or '~/.ssh/id_ed25519'} not found",
                               hint="pass --key-file <private key> (its .pub is installed on the instances)")
        pub = self.public_key_file or Path(str(key) + ".pub")
        if not pub.is_file():
            raise HarnessError(f"SSH public key {pub} not found", hint="pass --public-key-file, or create it: "
                               f"ssh-keygen -y -f {key} > {key}.pub")
        return {"cidr": cidr, "key": key.resolve(), "pub": pub.resolve()}

    def _variables(self, inputs: dict, layout: dict[str, list[str]]) -> dict:
        """The root's variables: the system's (its variables file), then the operator's inputs."""
        want = json.loads(self.system_variables.read_text(encoding="utf-8"))
        # a role the paper places no host for (0) gets one when the experiment's layout needs it
        # (fujitsu-api's clients: the harness drives load from a client host)
        want["roles"] = {role: 1 if count == 0 and role in layout else count for role, count in want["roles"].items()}
        want.update({"operator_cidrs": [inputs["cidr"]], "ssh_public_key_file": str(inputs["pub"]),
                     "ssh_private_key_file": str(inputs["key"]), "ami_id": self.ami_id,
                     # unique per run: names of key pairs and groups must not clash with another run's
                     "name": f"repro-{self.env}-{secrets.token_hex(3)}"})
        if self.region:
            want["region"] = self.region
            # the root defaults to us-east-1a, which exists only in us-east-1
            want["availability_zone"] = self.availability_zone or f"{self.region}a"
        elif self.availability_zone:
            want["availability_zone"] = self.availability_zone
        if self.instance_type:
            want["default_instance_type"] = self.instance_type
        undeclared = sorted(set(want) - terraform_variables(self.root_dir))
        if undeclared:
            raise HarnessError(f"Terraform root {ROOT} declares no variable {', '.join(undeclared)}; the aws provider "
                               f"or {self.system_variables} and infra/terraform disagree",
                               hint=f"read {TERRAFORM_DIR / 'roots' / ROOT / 'variables.tf'}")
        return want

    # ---- lifecycle
    def up(self, layout: dict[str, list[str]], run_dir: Path) -> dict[str, list[str]]:
        self.run_dir = Path(run_dir)
        inputs = self._check_tools_and_inputs()
        self.provider_dir.mkdir(parents=True, exist_ok=True)
        self.tf_root = self.run_dir / "terraform"
        if not self.root_dir.is_dir():
            # the whole tree: roots reach their modules by relative paths (../../modules/...);
            # not someone's local plugins or state (a lock file, which pins provider versions, is kept)
            shutil.copytree(TERRAFORM_DIR, self.tf_root, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns(".terraform", "*.tfstate*", "__pycache__", "*.py"))
        variables = self._variables(inputs, layout)
        self.tfvars.write_text(json.dumps(variables, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        logf = self.provider_dir / "terraform.log"
        if self._tf("init", "-input=false", "-no-color").returncode != 0:
            raise HarnessError(f"terraform init failed in {self.root_dir} (nothing was created)", log=str(logf))
        self._applied = True  # from here a failure may leave instances: down() destroys
        if self._tf("apply", "-auto-approve", "-input=false", "-no-color", f"-var-file={self.tfvars}").returncode != 0:
            raise HarnessError(f"terraform apply failed for {self.env} (down() destroys what was made)",
                               log=str(logf))
        out = self._tf("output", "-raw", INVENTORY_OUTPUT, capture=True, timeout=300)
        if out.returncode != 0 or not out.stdout.strip():
            raise HarnessError(f"terraform output {INVENTORY_OUTPUT} gave no inventory", log=str(logf))
        inventory = self.provider_dir / "inventory.aws.yml"
        inventory.write_text(out.stdout, encoding="utf-8")
        self.inventory_path = inventory
        return super().up(layout, run_dir)

    def down(self) -> None:
        """Stop what the ssh provider started, then destroy the instances; raise if destroy fails."""
        try:
            super().down()
        except Exception as e:  # never let it keep the instances alive
            log.warning("aws provider: stopping services failed: %s", e)
        if not self._applied:
            return
        r = self._tf("destroy", "-auto-approve", "-input=false", "-no-color", f"-var-file={self.tfvars}")
        if r.returncode != 0:
            raise HarnessError(f"terraform destroy failed (exit {r.returncode}): instances of {self.env} "
                               "may still be running, and billed",
                               hint=f"destroy them with: {self.destroy_command()}",
                               log=str(self.provider_dir / "terraform.log"))
        self._applied = False

    def describe(self) -> dict:
        d = super().describe()
        d.update({"provider": self.name, "paper": self.paper, "environment": self.env,
                  "terraform_dir": str(self.root_dir) if self.tf_root else None,
                  "system_variables": str(self.system_variables),
                  "region": self.region, "ami_id": self.ami_id, "instance_type": self.instance_type,
                  "credentials": self.credentials,
                  "destroy_command": self.destroy_command() if self.tf_root else None})
        return d
