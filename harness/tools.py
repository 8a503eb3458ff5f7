"""Check for the tools a phase needs, and say which ``invoke`` command provides a missing one."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from . import REPO_ROOT
from .errors import HarnessError

#: Which command installs each external tool.
INSTALLED_BY = {
    "ansible-playbook": "invoke setup",
    "go": "./setup (the Go of go.mod's version)",
    "protoc": "invoke setup",
    "protoc-gen-go": "invoke setup",
    "protoc-gen-go-grpc": "invoke setup",
}


def go_bin_dir() -> Path | None:
    """``$(go env GOPATH)/bin``, where ``go install`` puts tools; None without Go."""
    if not shutil.which("go"):
        return None
    gopath = subprocess.run(["go", "env", "GOPATH"], capture_output=True, text=True, check=False).stdout.strip()
    return Path(gopath) / "bin" if gopath else None


#: Where ``./setup`` links the Go of go.mod's version (``go``, ``gofmt``) when the machine's is missing or
#: older; ``. .venv/bin/activate`` puts it first on PATH, and so does ``ensure_go_bin_on_path``.
PROJECT_GO_DIR = REPO_ROOT / ".venv" / "bin"


def ensure_go_bin_on_path() -> None:
    """Put Go on this process's PATH (children inherit it): the Go ``./setup`` linked into ``.venv/bin``
    first, where it did (also for ``.venv/bin/invoke`` run without activating), then the Go tools directory."""
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p]
    if (PROJECT_GO_DIR / "go").exists() and path[:1] != [str(PROJECT_GO_DIR)]:
        os.environ["PATH"] = os.pathsep.join([str(PROJECT_GO_DIR)] + [p for p in path if p != str(PROJECT_GO_DIR)])
    gobin = go_bin_dir()
    if gobin and str(gobin) not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = os.environ.get("PATH", "") + os.pathsep + str(gobin)


def require_tool(name: str) -> str:
    """The path of ``name`` on PATH, or an error saying which command installs it."""
    path = shutil.which(name)
    if not path:
        raise HarnessError(f"{name} not found on PATH", hint=f"run `{INSTALLED_BY.get(name, 'invoke setup')}`")
    return path


def require_binaries(names, bin_dir: Path | None = None) -> None:
    """Fail unless every project command in ``names`` is built in ``bin/``."""
    bin_dir = bin_dir or REPO_ROOT / "bin"
    missing = [n for n in names if not os.access(bin_dir / n, os.X_OK)]
    if missing:
        raise HarnessError(f"not built: {', '.join('bin/' + n for n in missing)}", hint="run `invoke build`")


#: Ansible's strategies the harness runs playbooks with (``FABRICREPRO_ANSIBLE_STRATEGY``; the first is the
#: default). Mitogen's keeps one Python interpreter per host for the whole playbook, where Ansible's own
#: starts a fresh one for every module call: on 2 shared cores a small task took ~0.35 s with Ansible's
#: and ~0.08 s with Mitogen's, and a Table I point has about a hundred of them (docs/architecture.md).
#: ``mitogen_unpinned`` is Mitogen's linear strategy without its CPU pinning, which the components
#: inherited (playbooks/strategy_plugins/mitogen_unpinned.py).
ANSIBLE_STRATEGIES = ("mitogen_unpinned", "linear")


def ansible_strategy() -> str:
    """The strategy playbooks run with: ``FABRICREPRO_ANSIBLE_STRATEGY``, else Mitogen's, unpinned."""
    strategy = os.environ.get("FABRICREPRO_ANSIBLE_STRATEGY") or ANSIBLE_STRATEGIES[0]
    if strategy not in ANSIBLE_STRATEGIES:
        raise HarnessError(f"FABRICREPRO_ANSIBLE_STRATEGY={strategy}: use one of {', '.join(ANSIBLE_STRATEGIES)}")
    return strategy
