"""The aws provider: Terraform creates the experiment's hosts on EC2, then the ssh provider takes over.

    invoke reproduce --paper fastfabric --experiment table1-end-to-end --provider aws \\
        --operator-cidr 203.0.113.7/32 --key-file ~/.ssh/repro [--plan-only | --yes]

Only the hosts the experiment lays out are created (``harness.topology``: one
instance per host of the layout, ``layout.counts()`` as the Terraform root's
``roles``). ``place`` names each host's instance as Terraform will,
``<role>-<i>``, before anything exists; after ``apply`` the inventory must hold
exactly those names. The instance types are the paper's system's, kept in
``systems/<system>/terraform/<root>.tfvars.json`` (found by its name, which is
also its paper's id).

The Terraform root is chosen from data: an experiment whose every topology role
names an AWS region (``infra/aws/regions.json``: ``oregon`` is us-west-2) is
geo-distributed and gets the system's multi-region root (one whose
``main.tf`` configures an aliased ``aws`` provider for each of those regions,
and for which the system has a variables file); every other experiment gets
``single-region``. On a geo-distributed run the links' delays are the real
network's: they are recorded as not shaped.

``hold`` (before anything is built) prints the instances, their hourly cost
(``infra/aws/ec2-prices.json``, a dated table, never live) and the run's
expected wall time, then asks to go on: ``yes`` skips the question, a stdin
that is not a terminal refuses, and ``plan_only`` stops there, after
``terraform plan`` where Terraform, the operator's inputs and AWS credentials
are at hand (else it names what is missing), with ``PlanOnly``.

``up`` copies ``infra/terraform`` into ``<run_dir>/terraform`` (the applied
configuration and its state stay with the run), writes one variables file
there, then in ``<run_dir>/terraform/roots/<root>``::

    terraform init -input=false
    terraform apply -auto-approve -input=false -var-file=<run_dir>/terraform/fabricrepro.tfvars.json
    terraform output -json        # inventory_yaml -> <run_dir>/provider/inventory.aws.yml, the AMI(s) used

Provider plugins are cached once, in ``build/terraform/plugin-cache``
(``TF_PLUGIN_CACHE_DIR``; the run's ``.terraform`` links to them), with each
root's lock file kept in ``build/terraform/locks`` so that later runs use the
cache. The image is the newest Ubuntu 24.04 LTS of each region (an ``aws_ami``
data source in ``modules/region``) unless ``ami_id`` is given. The hosts of
the inventory are then brought up as ``SshProvider`` does (waiting for their
SSH while they boot, installing node-exporter where it is missing; the
preflight checks each host's Python against the pinned ansible-core).
``down`` stops what the ssh provider started, then ``terraform destroy``; if
that fails it raises with the exact command that removes the instances.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import secrets
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from .. import REPO_ROOT
from ..errors import HarnessError
from ..topology import Layout, as_layout
from . import aws_plan
# the environment's look-ups, here too for callers of this module (environments, root_regions...)
from .aws_env import (ROOT, TERRAFORM_DIR, aws_credentials, environment_for, environments,  # noqa: F401
                      find_terraform, geo_root, plugin_cached, root_regions, system_roots,
                      system_variables_file, terraform_variables)
from .ssh import DEFAULT_WORK_ROOT, SshProvider

log = logging.getLogger(__name__)

#: The single-region root's default region (its variables.tf; tests/providers/test_aws.py checks they agree).
DEFAULT_REGION = "us-east-1"
#: The Terraform output holding the Ansible inventory (roots/*/outputs.tf).
INVENTORY_OUTPUT = "inventory_yaml"
TFVARS_NAME = "fabricrepro.tfvars.json"
#: Seconds to wait for fresh instances to answer SSH.
BOOT_WAIT_S = 600
#: Terraform's provider plugins, downloaded once for every run (TF_PLUGIN_CACHE_DIR), and each root's lock file.
TERRAFORM_BUILD = REPO_ROOT / "build" / "terraform"


class PlanOnly(Exception):
    """``--plan-only`` stopped before anything was created (``complete``: after ``terraform plan``)."""

    def __init__(self, message: str, complete: bool, hint: str | None = None, log: str | None = None):
        super().__init__(message)
        self.complete, self.hint, self.log = complete, hint, log

    def __str__(self) -> str:
        return (self.args[0] + (f"\n  hint: {self.hint}" if self.hint else "")
                + (f"\n  see: {self.log}" if self.log else ""))


# stdin and the question, replaceable in tests
def _stdin_is_terminal() -> bool:
    return bool(sys.stdin) and sys.stdin.isatty()


def _ask(question: str) -> str:
    return input(question)


class AwsProvider(SshProvider):
    """``--provider aws``: the experiment's hosts on EC2 (Terraform), then as ``ssh``."""

    name = "aws"
    ssh_wait_s = BOOT_WAIT_S
    # fresh Ubuntu images have no node-exporter; these hosts are ours to change
    install_exporter = True
    # the instances' host keys are new with every run, and their addresses may be another run's before:
    # accepted when first met into <run>/provider/known_hosts, then checked (SshProvider)
    known_hosts_per_run = True

    def __init__(self, paper: str, work_root: str = DEFAULT_WORK_ROOT, bin_dir: Path | None = None,
                 region: str | None = None, operator_cidr: str | None = None, key_file: Path | str | None = None,
                 public_key_file: Path | str | None = None, ami_id: str | None = None,
                 instance_type: str | None = None, availability_zone: str | None = None,
                 preflight: bool = True, require_clock_sync: bool = True, min_cores: int | None = None,
                 min_memory_mb: int | None = None, controller_work_root: Path | None = None,
                 exporter_binary: str | None = None, strict_topology: bool = False, plan_only: bool = False,
                 yes: bool = False, scale: str = "smoke", repeat: int | None = None, overrides: dict | None = None,
                 results: Path | None = None, stream=None):
        super().__init__(Path("inventory.aws.yml"), work_root=work_root, bin_dir=bin_dir, preflight=preflight,
                         require_clock_sync=require_clock_sync, min_cores=min_cores, min_memory_mb=min_memory_mb,
                         controller_work_root=controller_work_root, exporter_binary=exporter_binary,
                         strict_topology=strict_topology)
        self.paper = paper
        self.region = region
        self.availability_zone = availability_zone
        self.operator_cidr = operator_cidr
        self.key_file = Path(key_file).expanduser() if key_file else None
        self.public_key_file = Path(public_key_file).expanduser() if public_key_file else None
        self.ami_id = ami_id
        self.instance_type = instance_type
        self.plan_only = plan_only
        self.yes = yes
        # what the wall-time estimate plans with (reproduce's --scale, --repeat, --set)
        self.scale, self.repeat, self.overrides = scale, repeat, dict(overrides or {})
        self.results = Path(results or REPO_ROOT / "results")
        self.stream = stream
        self.env = paper                      # the paper's system, whose instance types these are
        self.system_variables = environment_for(paper)
        self.root = ROOT                      # chosen by place() from the layout
        self.regions: dict[str, str] | None = None   # {role: region} of a geo-distributed layout
        self.chosen: list[aws_plan.Instance] = []    # the instances place() planned
        self._layout: Layout | None = None
        self.tf_root: Path | None = None      # <run_dir>/terraform (or a plan's copy under build/terraform/plans)
        self._applied = False                 # apply was started: down() must destroy
        self._inventory_ready = False         # Terraform made the inventory: place() checks it
        self.credentials: str | None = None
        self.amis: dict | None = None         # the AMI(s) the instances got (Terraform's output)
        self._terraform: str | None = None
        self._tf_log: Path | None = None
        self.estimate: dict | None = None     # what hold() printed: instances, cost an hour, wall time

    # ---- paths and commands
    @property
    def root_dir(self) -> Path:
        """The applied root's directory in the run's copy of infra/terraform."""
        return self.tf_root / "roots" / self.root

    @property
    def tfvars(self) -> Path:
        return self.tf_root / TFVARS_NAME

    def _say(self, line: str) -> None:
        print(line, file=self.stream or sys.stderr, flush=True)

    def _tf_argv(self, *args: str) -> list[str]:
        return [self._terraform, f"-chdir={self.root_dir}", *args]

    def destroy_command(self) -> str:
        """The command that removes this run's instances, to run by hand if ``down`` could not."""
        return shlex.join(["terraform", f"-chdir={self.root_dir}", "destroy", "-auto-approve", "-input=false",
                           f"-var-file={self.tfvars}"])

    def _tf(self, *args: str, capture: bool = False, timeout: float = 3600) -> subprocess.CompletedProcess:
        """Run terraform in the root; output appended to the log (<run_dir>/provider/terraform.log)."""
        argv = self._tf_argv(*args)
        env = dict(os.environ)
        # no prompts, no version check calls; plugins from the one cache outside results
        env.update({"TF_IN_AUTOMATION": "1", "TF_INPUT": "0", "CHECKPOINT_DISABLE": "1"})
        cache = Path(env.setdefault("TF_PLUGIN_CACHE_DIR", str(TERRAFORM_BUILD / "plugin-cache")))
        cache.mkdir(parents=True, exist_ok=True)   # Terraform ignores a cache directory that does not exist
        with open(self._tf_log, "a", encoding="utf-8") as out:
            out.write("$ " + shlex.join(argv) + "\n")
            out.flush()
            try:
                return subprocess.run(argv, stdout=subprocess.PIPE if capture else out, stderr=out,
                                      stdin=subprocess.DEVNULL, text=True, env=env, timeout=timeout, check=False)
            except subprocess.TimeoutExpired:
                out.write(f"(timed out after {timeout:.0f} s)\n")
                return subprocess.CompletedProcess(argv, 124, "", "")

    def _init(self) -> subprocess.CompletedProcess:
        """``terraform init`` with the root's lock file from earlier runs (so the plugin cache is used), saved after."""
        lock = self.root_dir / ".terraform.lock.hcl"
        saved = TERRAFORM_BUILD / "locks" / f"{self.root}.terraform.lock.hcl"
        if not lock.exists() and saved.is_file():
            shutil.copyfile(saved, lock)
        r = self._tf("init", "-input=false", "-no-color")
        if r.returncode == 0 and lock.is_file():
            saved.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(lock, saved)
        return r

    # ---- checks before anything is created
    def check(self) -> None:
        # the inventory does not exist before `terraform apply`: check the inputs that make it. --plan-only
        # needs none of them to print the plan (it names the missing ones when it stops)
        self._valid_inputs()
        if not self.plan_only:
            self._require_all()

    def _key(self) -> Path | None:
        return self.key_file or next((k for k in (Path("~/.ssh/id_ed25519").expanduser(),
                                                  Path("~/.ssh/id_rsa").expanduser()) if k.exists()), None)

    def _valid_inputs(self) -> None:
        """Inputs given must be valid, whether or not everything is there yet."""
        if self.operator_cidr:
            try:
                ipaddress.ip_network(self.operator_cidr, strict=False)
            except ValueError:
                raise HarnessError(f"--operator-cidr {self.operator_cidr!r} is not a CIDR (e.g. 203.0.113.7/32)") \
                    from None

    def _missing(self) -> list[tuple[str, str]]:
        """``(what, how to get it)`` for each thing ``terraform plan``/``apply`` needs that is not here."""
        out = []
        if not self.operator_cidr:
            out.append(("--operator-cidr (your address as a CIDR: the security group admits SSH and node-exporter "
                        "scrapes from it only)", "pass --operator-cidr <your public IP>/32"))
        key = self._key()
        if not key or not key.is_file():
            out.append((f"SSH private key {key or '~/.ssh/id_ed25519'} (not found)",
                        "pass --key-file <private key> (its .pub is installed on the instances)"))
        elif not (self.public_key_file or Path(str(key) + ".pub")).is_file():
            pub = self.public_key_file or Path(str(key) + ".pub")
            out.append((f"SSH public key {pub} (not found)", f"create it: ssh-keygen -y -f {key} > {key}.pub"))
        self._terraform = find_terraform()
        if not self._terraform:
            out.append(("terraform (not found)", "install Terraform >= 1.6 "
                        "(https://developer.hashicorp.com/terraform/install) or set TERRAFORM to its path"))
        self.credentials = aws_credentials()
        if not self.credentials:
            out.append(("AWS credentials (none in AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, "
                        "~/.aws/credentials)", "run `aws configure`, or export AWS_PROFILE=<profile>, or export "
                                               "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"))
        return out

    def _require_all(self) -> None:
        missing = self._missing()
        if missing:
            raise HarnessError(f"--provider aws needs {'; '.join(w for w, _ in missing)}; nothing was created",
                               hint="; ".join(h for _, h in missing))

    def _inputs(self) -> dict:
        self._valid_inputs()
        self._require_all()
        key = self._key()
        pub = self.public_key_file or Path(str(key) + ".pub")
        return {"cidr": str(ipaddress.ip_network(self.operator_cidr, strict=False)), "key": key.resolve(),
                "pub": pub.resolve()}

    # ---- the hosts
    def place(self, layout: Layout) -> dict[str, str]:
        """Each host of the layout on an instance of its own, named as Terraform will name it (``<role>-<i>``).

        Before ``apply`` the names are predicted; after it, the inventory
        Terraform wrote must hold exactly them (``SshProvider.place``).
        """
        layout = as_layout(layout)
        self._plan_instances(layout)
        predicted = {i.host: i.name for i in self.chosen}
        if self._inventory_ready:
            found = super().place(layout)
            if found != predicted:
                wrong = sorted(h for h in predicted if found.get(h) != predicted[h])
                raise HarnessError(f"Terraform's inventory {self.inventory_path} does not hold the instances the "
                                   f"placement named: " + ", ".join(f"{h} -> {predicted[h]} (inventory: "
                                                                    f"{found.get(h)})" for h in wrong),
                                   hint="infra/terraform/modules/topology names hosts <role>-<i>, as "
                                        "harness/providers/aws_plan.py does")
        return predicted

    def _plan_instances(self, layout: Layout) -> None:
        """Choose the root (geo-distributed or not) and the instances for ``layout``."""
        self._layout = layout
        self.regions = aws_plan.role_regions(layout.counts())
        if self.regions:
            self.root = geo_root(self.system_variables, set(self.regions.values()))
            if self.ami_id:
                self._ami_ids()   # an AMI id belongs to one region: refused before anything is printed or built
            values = self._system_values()
            self.chosen = aws_plan.instances(layout, values["instance_type"], regions=self.regions)
        else:
            self.root = ROOT
            values = self._system_values()
            self.chosen = aws_plan.instances(layout, values["default_instance_type"], values["instance_types"],
                                             self.region or DEFAULT_REGION)

    def _system_values(self) -> dict:
        """The system's variables of the chosen root, with ``--instance-type`` for every role."""
        values = json.loads(system_roots(self.system_variables)[self.root].read_text(encoding="utf-8"))
        if self.instance_type:
            if "default_instance_type" in values:
                values.update({"default_instance_type": self.instance_type, "instance_types": {}})
            else:
                values["instance_type"] = self.instance_type
        return values

    # ---- before anything is built: what it costs, and whether to go on
    def hold(self, label: str, plan=None) -> None:
        """Print the instances, their hourly cost and the run's expected wall time; then stop (``plan_only``) or
        ask to go on (``yes`` skips the question). ``label`` is ``<paper> <experiment>``; ``plan`` the run's,
        whose points (controls included) the wall time counts (without it, the catalogue's at this scale)."""
        if not self.chosen:
            return
        for line in self.plan_text(label.rsplit(" ", 1)[-1], plan):
            self._say(line)
        if self.plan_only:
            self._stop_after_plan()
        self._confirm()

    def plan_text(self, experiment_id: str, plan=None) -> list[str]:
        cost = aws_plan.hourly_cost(self.chosen)
        (points, variants), why = ((len(plan.points), 0), "") if plan is not None else self._points(experiment_id)
        wall = None
        if points is not None:
            measured = aws_plan.measured_point_seconds(self.results, self.paper, experiment_id, self.scale)
            wall = aws_plan.wall_estimate(points, self.scale, measured, controls=variants)
        self.estimate = {"instances": len(self.chosen), "usd_per_hour": cost.total,
                         "prices_as_of": cost.as_of, "unpriced": cost.unpriced,
                         "wall_s": round(wall.seconds) if wall else None, "wall_how": wall.how if wall else why}
        return aws_plan.plan_lines(self.chosen, cost, wall, self.root, wall_unknown=why)

    def _points(self, experiment_id: str) -> tuple[tuple[int | None, int], str]:
        """How many points the catalogue plans for the experiment at this scale, and its variants (each may add
        a control point, which the run's build decides)."""
        from ..catalogue import load_paper
        from ..plan import make_plan
        try:
            paper = load_paper(self.paper)
            plan = make_plan(paper, paper.experiment(experiment_id), self.scale, overrides=self.overrides,
                             repeat=self.repeat)
        except (HarnessError, KeyError) as e:
            return (None, 0), f"no plan for {experiment_id!r} at scale {self.scale}: {e.args[0] if e.args else e}"
        return (len(plan.points), len(plan.resolved["variants"])), ""

    def _confirm(self) -> None:
        n, usd = len(self.chosen), self.estimate["usd_per_hour"]
        if self.yes:
            return
        if not _stdin_is_terminal():
            raise HarnessError(f"--provider aws would create {n} instance(s) at about ${usd:.2f} an hour and asks "
                               "first, but stdin is not a terminal: nothing was asked and nothing was created",
                               hint="pass --yes to create them without asking, or --plan-only to print the plan "
                                    "and stop")
        answer = _ask(f"Create these {n} instance(s), about ${usd:.2f} an hour until the run ends? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            raise HarnessError("not confirmed: nothing was created")

    def _stop_after_plan(self) -> None:
        """``terraform plan`` where everything it needs is here; in any case stop with ``PlanOnly``."""
        missing = self._missing()
        cache = Path(os.environ.get("TF_PLUGIN_CACHE_DIR") or TERRAFORM_BUILD / "plugin-cache")
        plugin = ("" if plugin_cached(cache) else
                  f"; `terraform init` will then download the hashicorp/aws provider from registry.terraform.io "
                  f"(not in the plugin cache {cache} yet)")
        if missing:
            raise PlanOnly(f"--plan-only: stopped before `terraform plan`, which needs "
                           f"{'; '.join(w for w, _ in missing)}{plugin}. Nothing was created.", complete=False,
                           hint="; ".join(h for _, h in missing))
        inputs = self._inputs()
        name = f"repro-{self.env}-{secrets.token_hex(3)}"
        self.tf_root = TERRAFORM_BUILD / "plans" / name
        self._tf_log = self.tf_root / "terraform.log"
        self._write_tree(inputs, name)
        if self._init().returncode != 0:
            raise PlanOnly(f"--plan-only: terraform init failed in {self.root_dir}{plugin}. Nothing was created.",
                           complete=False, log=str(self._tf_log))
        r = self._tf("plan", "-input=false", "-no-color", f"-var-file={self.tfvars}", "-out=plan.tfplan")
        text = self._tf_log.read_text(encoding="utf-8", errors="replace")
        summary = next((ln.strip() for ln in reversed(text.splitlines()) if ln.startswith(("Plan:", "Error:"))), "")
        if r.returncode != 0:
            raise PlanOnly(f"--plan-only: terraform plan failed ({summary or f'exit {r.returncode}'}). "
                           "Nothing was created.", complete=False, log=str(self._tf_log))
        raise PlanOnly(f"--plan-only: terraform plan done ({summary}); nothing was created. The plan and its "
                       f"variables: {self.root_dir}", complete=True, log=str(self._tf_log))

    # ---- Terraform's inputs
    def _write_tree(self, inputs: dict, name: str) -> None:
        """A copy of infra/terraform at ``tf_root`` with this run's variables file."""
        if not self.root_dir.is_dir():
            # the whole tree: roots reach their modules by relative paths (../../modules/...);
            # not someone's local plugins or state (a lock file, which pins provider versions, is kept)
            shutil.copytree(TERRAFORM_DIR, self.tf_root, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns(".terraform", "*.tfstate*", "__pycache__", "*.py"))
        variables = self._variables(inputs, name)
        self.tfvars.write_text(json.dumps(variables, indent=2, sort_keys=True) + "\n", encoding="utf-8")

    def _ami_ids(self) -> dict[str, str]:
        """``--ami-id`` per region of a geo-distributed run: ``region=ami,...`` (an AMI id belongs to one region)."""
        regions = sorted(set(self.regions.values()))
        if "=" not in self.ami_id:
            if len(regions) == 1:
                return {regions[0]: self.ami_id}
            raise HarnessError(f"--ami-id {self.ami_id}: this run's hosts are in {len(regions)} regions "
                               f"({', '.join(regions)}), and an AMI id belongs to one",
                               hint="leave --ami-id out (each region's Ubuntu 24.04 LTS is looked up), or give "
                                    "region=ami-... for each, comma-separated")
        pairs = dict(p.split("=", 1) for p in self.ami_id.split(",") if p.strip())
        pairs = {k.strip(): v.strip() for k, v in pairs.items()}
        if set(pairs) != set(regions):
            raise HarnessError(f"--ami-id names regions {', '.join(sorted(pairs))}; this run's are "
                               f"{', '.join(regions)}")
        return pairs

    def _variables(self, inputs: dict, name: str) -> dict:
        """The root's variables: the system's (instance types), the layout's hosts, then the operator's inputs."""
        want = self._system_values()
        want["roles"] = self._layout.counts()        # only the hosts the experiment lays out
        want.update({"operator_cidrs": [inputs["cidr"]], "ssh_public_key_file": str(inputs["pub"]),
                     "ssh_private_key_file": str(inputs["key"]),
                     # unique per run: names of key pairs and groups must not clash with another run's
                     "name": name})
        if self.regions:
            want["role_regions"] = dict(self.regions)
            if self.ami_id:
                want["ami_ids"] = self._ami_ids()
        else:
            if self.ami_id:
                want["ami_id"] = self.ami_id
            if self.region:
                want["region"] = self.region
                # the root defaults to us-east-1a, which exists only in us-east-1
                want["availability_zone"] = self.availability_zone or f"{self.region}a"
            elif self.availability_zone:
                want["availability_zone"] = self.availability_zone
        undeclared = sorted(set(want) - terraform_variables(self.root_dir))
        if undeclared:
            raise HarnessError(f"Terraform root {self.root} declares no variable {', '.join(undeclared)}; the aws "
                               f"provider or {system_roots(self.system_variables)[self.root]} and infra/terraform "
                               "disagree", hint=f"read {TERRAFORM_DIR / 'roots' / self.root / 'variables.tf'}")
        return want

    # ---- lifecycle
    def up(self, layout: Layout | dict[str, list[str]], run_dir: Path) -> dict[str, list[str]]:
        self.run_dir = Path(run_dir)
        layout = as_layout(layout)
        self._inventory_ready = False
        inputs = self._inputs()
        self._plan_instances(layout)
        self.provider_dir.mkdir(parents=True, exist_ok=True)
        self._tf_log = self.provider_dir / "terraform.log"
        self.tf_root = self.run_dir / "terraform"
        self._write_tree(inputs, f"repro-{self.env}-{secrets.token_hex(3)}")
        if self._init().returncode != 0:
            raise HarnessError(f"terraform init failed in {self.root_dir} (nothing was created)", log=str(self._tf_log))
        self._applied = True  # from here a failure may leave instances: down() destroys
        if self._tf("apply", "-auto-approve", "-input=false", "-no-color", f"-var-file={self.tfvars}").returncode != 0:
            raise HarnessError(f"terraform apply failed for {self.env} (down() destroys what was made)",
                               log=str(self._tf_log))
        out = self._tf("output", "-json", capture=True, timeout=300)
        try:
            outputs = {k: v.get("value") for k, v in json.loads(out.stdout or "{}").items()}
        except (ValueError, AttributeError):
            outputs = {}
        if out.returncode != 0 or not str(outputs.get(INVENTORY_OUTPUT) or "").strip():
            raise HarnessError(f"terraform output gave no {INVENTORY_OUTPUT}", log=str(self._tf_log))
        self.amis = {k: v for k, v in outputs.items() if k.startswith("ami_id")} or None
        inventory = self.provider_dir / "inventory.aws.yml"
        inventory.write_text(outputs[INVENTORY_OUTPUT], encoding="utf-8")
        self.inventory_path = inventory
        self._inventory_ready = True   # place() (from SshProvider.up) now checks the inventory's names
        return super().up(layout, run_dir)

    def apply_links(self, links: list[dict]) -> list[dict]:
        """As ssh; on a geo-distributed run the delays are the regions' own network, so they are not added."""
        if not self.regions:
            return super().apply_links(links)
        reason = ("the hosts are in the AWS regions the topology names: the delay is the real network's "
                  "between them, not emulated")
        rated = [{k: v for k, v in link.items() if k != "delay_ms"} for link in links if link.get("rate_mbit")]
        shaped = {(r["from"], r["to"]): r for r in (super().apply_links(rated) if rated else [])}
        out = []
        for link in links:
            record = dict(shaped.get((link["from"], link["to"])) or {**link, "applied": False})
            if link.get("delay_ms"):
                record.update({"delay_ms": link["delay_ms"], "delay_applied": False, "reason": reason})
                if not link.get("rate_mbit"):
                    record["applied"] = False
            out.append(record)
        self.links_applied = list(out)
        return out

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
                               log=str(self._tf_log))
        self._applied = False

    def describe(self) -> dict:
        d = super().describe()
        d.update({"provider": self.name, "paper": self.paper, "environment": self.env, "root": self.root,
                  "terraform_dir": str(self.root_dir) if self.tf_root else None,
                  "system_variables": str(system_roots(self.system_variables).get(self.root, self.system_variables)),
                  "region": self.region or (None if self.regions else DEFAULT_REGION),
                  "role_regions": self.regions, "ami_id": self.ami_id, "amis": self.amis,
                  "instance_type": self.instance_type,
                  "instances": {i.name: {"host": i.host, "role": i.role, "instance_type": i.instance_type,
                                         "region": i.region} for i in self.chosen},
                  "estimate": self.estimate, "credentials": self.credentials,
                  "destroy_command": self.destroy_command() if self.tf_root else None})
        return d
