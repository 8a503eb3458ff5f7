"""Where ``--provider aws`` finds what it needs: Terraform, AWS credentials, each system's variables per root.

A system the aws provider can provision keeps its values of a Terraform root's
system variables in ``systems/<system>/terraform/<root>.tfvars.json``
(``single-region``, and a multi-region root where its paper runs across
regions); it is found by its name, which is also its paper's id. A
multi-region root is one whose ``main.tf`` configures an aliased ``aws``
provider per region (Terraform cannot make providers from data).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from .. import REPO_ROOT
from ..errors import HarnessError

TERRAFORM_DIR = REPO_ROOT / "infra" / "terraform"
#: The root of an experiment that is not geo-distributed (infra/terraform/roots/<ROOT>).
ROOT = "single-region"


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


def system_roots(system_variables: Path) -> dict[str, Path]:
    """``{root: variables file}`` of every root the system gives variables (beside ``system_variables``)."""
    return {f.name.removesuffix(".tfvars.json"): f for f in sorted(Path(system_variables).parent.glob("*.tfvars.json"))}


def terraform_variables(root_dir: Path) -> set[str]:
    """Names of the variables a Terraform root declares (``variable "x" {`` in its .tf files)."""
    names = set()
    for f in Path(root_dir).glob("*.tf"):
        names |= set(re.findall(r'^\s*variable\s+"([^"]+)"', f.read_text(encoding="utf-8"), re.MULTILINE))
    return names


def root_regions(root_dir: Path) -> set[str]:
    """The regions a multi-region root has an aliased ``aws`` provider for (empty for a single-region root)."""
    text = "".join(f.read_text(encoding="utf-8") for f in sorted(Path(root_dir).glob("*.tf")))
    return set(re.findall(r'provider\s+"aws"\s*\{[^}]*?\balias\s*=\s*"[^"]+"[^}]*?\bregion\s*=\s*"([^"]+)"', text))


def geo_root(system_variables: Path, regions: set[str], terraform_dir: Path = TERRAFORM_DIR) -> str:
    """The system's multi-region root covering ``regions``; refused naming what exists otherwise."""
    have = {root: root_regions(terraform_dir / "roots" / root) for root in system_roots(system_variables)}
    fits = sorted(root for root, rs in have.items() if rs and regions <= rs)
    if fits:
        return fits[0]
    multi = {root: rs for root, rs in have.items() if rs}
    raise HarnessError(f"the experiment's hosts are in regions {', '.join(sorted(regions))}, and system "
                       f"{system_variables.parents[1].name} has no multi-region Terraform root with a provider for "
                       "each: " + ("; ".join(f"{r} has {', '.join(sorted(rs))}" for r, rs in multi.items())
                                   or "it has none"),
                       hint="a multi-region root configures one aliased aws provider per region "
                            "(infra/terraform/roots/*/main.tf); the system names it with "
                            "systems/<system>/terraform/<root>.tfvars.json")


def plugin_cached(cache: Path) -> bool:
    """Whether the plugin cache holds a hashicorp/aws provider already."""
    return any((Path(cache) / "registry.terraform.io" / "hashicorp" / "aws").glob("*/*"))
