"""Ansible checks: syntax of every playbook, and the role conventions (STYLE.md rule 8)."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

import sys

REPO = Path(__file__).resolve().parents[2]
for _p in (REPO / "infra", REPO / "infra" / "terraform"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from harness.deploy import ansible_env, roles_dirs  # noqa: E402

#: The shared playbooks and roles, and every system's (systems/<system>/playbooks, roles).
PLAYBOOKS = (sorted((REPO / "playbooks").glob("*.yml")) + sorted((REPO / "playbooks" / "upstream").glob("*.yml"))
             + sorted((REPO / "systems").glob("*/playbooks/*.yml")))
ROLES = sorted((p for d in roles_dirs() for p in d.iterdir() if p.is_dir()), key=lambda p: p.name)
INVENTORY = REPO / "infra" / "inventories" / "fastfabric-15.example.yml"

needs_ansible = pytest.mark.skipif(shutil.which("ansible-playbook") is None, reason="ansible-core is not installed")


@needs_ansible
@pytest.mark.parametrize("playbook", PLAYBOOKS, ids=lambda p: p.name)
def test_syntax_check(playbook):
    r = subprocess.run(["ansible-playbook", "--syntax-check", "-i", str(INVENTORY), str(playbook)],
                       capture_output=True, text=True, timeout=300, env=ansible_env())
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_role_layout(role):
    for f in ["defaults/main.yml", "meta/argument_specs.yml"]:
        assert (role / f).exists(), f"{role.name} lacks {f}"
    # tasks/main.yml, or only entry points for include_role tasks_from (the process role's start/stop)
    assert list((role / "tasks").glob("*.yml")), f"{role.name} has no tasks"


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_defaults_prefixed_documented_and_specified(role):
    text = (role / "defaults" / "main.yml").read_text()
    defaults = yaml.safe_load(text) or {}
    # every entry point's options (main, or start/stop of a tasks_from-only role)
    specs = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    spec = {name: opt for entry in specs.values() for name, opt in (entry.get("options") or {}).items()}
    lines = text.splitlines()
    for name in defaults:
        assert name.startswith(role.name + "_"), f"{role.name}: {name} is not prefixed with the role name"
        assert name in spec, f"{role.name}: {name} missing from meta/argument_specs.yml"
        idx = next(i for i, l in enumerate(lines) if l.startswith(name + ":"))
        # a comment on its line, or in the paragraph above it (one comment may cover a group)
        paragraph = []
        for line in reversed(lines[:idx]):
            if not line.strip():
                break
            paragraph.append(line)
        assert "#" in lines[idx] or any(l.lstrip().startswith("#") for l in paragraph), \
            f"{role.name}: {name} has no comment saying what it is"
    # a variable with no default is one the harness always sets (a parameter's table, issue 47): the spec says
    # it is required, so a play that forgets it fails at the role's start instead of running on a made-up value
    for name, opt in spec.items():
        assert name in defaults or (opt or {}).get("required") is True, \
            f"{role.name}: argument spec {name} has no default and is not required"


def required_with_default(defaults: dict, specs: dict) -> list[str]:
    """The options an entry point of a role marks ``required`` that still have a default (in defaults/main.yml,
    which holds for every entry point, or in the spec itself): Ansible never fails on such an option, so the
    required mark checks nothing and a play that forgets the variable runs on the empty default."""
    return sorted(f"{entry}.{name}" for entry, body in specs.items()
                  for name, opt in ((body or {}).get("options") or {}).items()
                  if (opt or {}).get("required") and (name in defaults or "default" in (opt or {})))


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_a_required_variable_has_no_default(role):
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text()) or {}
    specs = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    assert not required_with_default(defaults, specs), f"{role.name}: required but with a default"


def test_a_required_variable_with_a_default_is_found():  # the negative control of the test above
    specs = {"start": {"options": {"x_name": {"type": "str", "required": True},
                                   "x_wait": {"type": "bool", "default": False}}},
             "stop": {"options": {"x_pid": {"type": "str", "required": True, "default": ""}}}}
    assert required_with_default({"x_wait": False}, specs) == ["stop.x_pid"]
    assert required_with_default({"x_name": "", "x_wait": False}, specs) == ["start.x_name", "stop.x_pid"]


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_fully_qualified_modules(role):
    skip = {"name", "tags", "loop", "when", "register", "vars", "notify", "changed_when", "failed_when",
            "environment", "args", "become", "delegate_to", "run_once", "listen", "ignore_errors", "no_log",
            "loop_control", "until", "retries", "delay", "timeout", "check_mode", "any_errors_fatal"}
    # a module the role ships in its own library/ has no collection name (the process role's process_watch)
    own = {p.stem for p in (role / "library").glob("*.py")}
    for f in list((role / "tasks").glob("*.yml")) + list((role / "handlers").glob("*.yml")):
        for task in yaml.safe_load(f.read_text()) or []:
            modules = [k for k in task if k not in skip]
            assert modules, f"{f}: task without module"
            for m in modules:
                assert "." in m or m in own, f"{f.relative_to(REPO)}: module {m} is not fully qualified"


def test_fujitsu_tuning_values():
    # The paper's hosts' TCP settings (seed 003 line 124), which providers apply (harness/reproduce.py host_settings).
    paper = yaml.safe_load((REPO / "papers" / "fujitsu-api.yaml").read_text())
    assert paper["paper"]["settings"]["sysctl"] == {"net.ipv4.tcp_tw_reuse": 1, "net.ipv4.tcp_fin_timeout": 5}
