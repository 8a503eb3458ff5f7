"""Ansible checks: syntax of every upstream playbook, ansible-lint, and the
role conventions (STYLE.md rule 8)."""
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

UPSTREAM = REPO / "playbooks" / "upstream"
PLAYBOOKS = sorted(UPSTREAM.glob("*.yml"))
ROLES = sorted(p for p in (UPSTREAM / "roles").iterdir() if p.is_dir())
INVENTORY = REPO / "infra" / "inventories" / "fastfabric-15.example.yml"
EXPECTED_ROLES = {"go_toolchain", "fabric_build", "fabric_crypto", "fabric_orderer", "fabric_peer", "zookeeper",
                  "kafka", "bftsmart_build", "bftsmart_orderer", "fabric06_peer", "host_tuning", "node_exporter"}

needs_ansible = pytest.mark.skipif(shutil.which("ansible-playbook") is None, reason="ansible-core is not installed")


@needs_ansible
@pytest.mark.parametrize("playbook", PLAYBOOKS, ids=lambda p: p.name)
def test_syntax_check(playbook):
    r = subprocess.run(["ansible-playbook", "--syntax-check", "-i", str(INVENTORY), str(playbook)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.skipif(shutil.which("ansible-lint") is None, reason="ansible-lint is not installed (pip install ansible-lint)")
def test_ansible_lint():
    r = subprocess.run(["ansible-lint", "--offline", "-q", "."], cwd=UPSTREAM, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr


def test_all_roles_present():
    assert EXPECTED_ROLES <= {p.name for p in ROLES}


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_role_layout(role):
    for f in ["defaults/main.yml", "meta/argument_specs.yml", "meta/main.yml",
              "tasks/main.yml", "tasks/install.yml", "tasks/configure.yml", "tasks/run.yml"]:
        assert (role / f).exists(), f"{role.name} lacks {f}"
    main = yaml.safe_load((role / "tasks" / "main.yml").read_text())
    tags = {t for task in main for t in task.get("tags", [])}
    assert {"install", "configure", "run", role.name} <= tags


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_defaults_prefixed_documented_and_specified(role):
    text = (role / "defaults" / "main.yml").read_text()
    defaults = yaml.safe_load(text) or {}
    spec = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    lines = text.splitlines()
    for name in defaults:
        assert name.startswith(role.name + "_"), f"{role.name}: {name} is not prefixed with the role name"
        assert name in spec, f"{role.name}: {name} missing from meta/argument_specs.yml"
        idx = next(i for i, l in enumerate(lines) if l.startswith(name + ":"))
        above = lines[idx - 1].strip() if idx else ""
        assert above.startswith("#") or lines[idx - 1].startswith(tuple(n + ":" for n in defaults)) or "#" in lines[idx], \
            f"{role.name}: {name} has no comment saying what it is"
    for name in spec:
        assert name in defaults, f"{role.name}: argument spec {name} has no default"


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_fully_qualified_modules(role):
    skip = {"name", "tags", "loop", "when", "register", "vars", "notify", "changed_when", "failed_when",
            "environment", "args", "become", "delegate_to", "run_once", "listen", "ignore_errors", "no_log"}
    for f in list((role / "tasks").glob("*.yml")) + list((role / "handlers").glob("*.yml")):
        for task in yaml.safe_load(f.read_text()) or []:
            modules = [k for k in task if k not in skip]
            assert modules, f"{f}: task without module"
            for m in modules:
                assert "." in m, f"{f.relative_to(REPO)}: module {m} is not fully qualified"


def test_fujitsu_tuning_values():
    # The paper's hosts' TCP settings (seed 003 line 124), which providers apply (harness/reproduce.py host_settings).
    paper = yaml.safe_load((REPO / "papers" / "fujitsu-api.yaml").read_text())
    assert paper["paper"]["settings"]["sysctl"] == {"net.ipv4.tcp_tw_reuse": 1, "net.ipv4.tcp_fin_timeout": 5}
    defaults = yaml.safe_load((UPSTREAM / "roles" / "host_tuning" / "defaults" / "main.yml").read_text())
    assert defaults["host_tuning_sysctls"] == {}, "tuning must be applied only where a paper states it"
