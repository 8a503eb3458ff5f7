"""`invoke setup` and `./setup` check their prerequisites before installing anything, and name the fix:
the Go version go.mod needs, the Python version pyproject.toml needs, apt's packages a distribution lacks."""

import os
import subprocess

import pytest

from harness import REPO_ROOT
from harness import toolchain
from harness.errors import HarnessError


def test_go_mod_versions_read_the_go_line_and_prefer_the_toolchain_line(tmp_path):
    go_mod = tmp_path / "go.mod"
    go_mod.write_text("module x\n\ngo 1.26.0\n\nrequire (\n\tgolang.org/x/text v0.42.0\n)\n")
    assert toolchain.go_mod_versions(go_mod) == ("1.26.0", "1.26.0")
    go_mod.write_text("module x\n\ngo 1.25\n\ntoolchain go1.26.3\n")
    assert toolchain.go_mod_versions(go_mod) == ("1.25", "1.26.3")
    go_mod.write_text("module x\n")
    with pytest.raises(HarnessError):
        toolchain.go_mod_versions(go_mod)


def test_this_go_mod_names_an_installable_toolchain():
    least, want = toolchain.go_mod_versions()
    # a release of 1.21 or later: the only ones Go's toolchain module (golang.org/toolchain) carries
    assert toolchain.go_version_key(want) >= toolchain.go_version_key("1.21.0")
    assert toolchain.go_version_key(want) >= toolchain.go_version_key(least)


@pytest.mark.parametrize("older, newer", [
    ("1.19.8", "1.26.0"), ("1.26", "1.26rc1"), ("1.26beta1", "1.26rc1"), ("1.26rc2", "1.26.0"),
    ("1.26.0", "go1.26.8"), ("1.9.0", "1.10.0"), ("1.26.9", "1.26.10"), ("1.26.8", "2.0.0"),
])
def test_go_versions_order_as_go_orders_them(older, newer):
    assert toolchain.go_version_key(older) < toolchain.go_version_key(newer)


def test_go_problem_names_the_version_and_the_fix(tmp_path):
    go_mod = tmp_path / "go.mod"
    go_mod.write_text("module x\n\ngo 1.26.0\n")
    assert toolchain.go_problem("/usr/local/go/bin/go", "1.26.8", go_mod) is None
    assert toolchain.go_problem("/usr/local/go/bin/go", "1.26.0", go_mod) is None
    old = toolchain.go_problem("/usr/bin/go", "1.19.8", go_mod)  # Debian 12's golang-go
    assert old.startswith("Go 1.19.8 (/usr/bin/go) is older than go.mod's go 1.26.0")
    assert "`./setup`" in old and "Go 1.26.0" in old
    assert toolchain.go_problem("/usr/bin/go", "1.26rc1", go_mod).startswith("Go 1.26rc1 (/usr/bin/go) is older")
    missing = toolchain.go_problem(None, None, go_mod)
    assert missing.startswith("no `go` on PATH; go.mod needs Go >= 1.26.0") and "`./setup`" in missing


def test_python_problem_reads_requires_python(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\nrequires-python = ">=3.11"\n')
    assert toolchain.python_problem((3, 11, 2), pyproject) is None
    assert toolchain.python_problem((3, 12, 3), pyproject) is None
    old = toolchain.python_problem((3, 9, 2), pyproject)  # Debian 11's
    assert old.startswith("Python 3.9.2 (") and ">= 3.11" in old and "`./setup`" in old


def test_this_machine_meets_the_prerequisites_it_runs_the_tests_with():
    # the tests run under `invoke test`, after a set-up that passed these same checks
    assert toolchain.python_problem() is None


def test_packages_without_a_candidate_are_left_out():
    policy = ("git:\n  Installed: 1:2.39.5-0+deb12u2\n  Candidate: 1:2.39.5-0+deb12u2\n  Version table:\n"
              "chromium:\n  Installed: (none)\n  Candidate: (none)\n  Version table:\n")
    # libmozjs-78-dev: not in Ubuntu 24.04 at all (apt-cache prints nothing for it)
    assert toolchain.uninstallable(policy, ["git", "chromium", "libmozjs-78-dev"]) == ["chromium", "libmozjs-78-dev"]
    assert toolchain.uninstallable(policy, ["git"]) == []


def test_bootstrap_checks_before_installing_and_names_the_fix():
    # more free disk than any machine has: ./setup stops at its checks, before apt, pip or Go
    env = {**os.environ, "SETUP_GIB": "1000000"}
    r = subprocess.run([str(REPO_ROOT / "setup")], cwd="/", env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "cannot set up" in r.stdout and "set-up needs 1000000 GiB" in r.stdout and "free some" in r.stdout
    assert "apt-get install" not in r.stdout and "pip install" not in r.stdout


def test_setup_stops_before_apt_and_pip_when_go_is_too_old(monkeypatch):
    commands = []
    monkeypatch.setattr(toolchain, "sh", lambda cmd, **kw: commands.append(" ".join(cmd)))
    monkeypatch.setattr(toolchain, "missing_apt_packages", lambda packages: ["curl"])
    monkeypatch.setattr(toolchain, "ensure_go_bin_on_path", lambda: None)
    monkeypatch.setattr(toolchain.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(toolchain, "installed_go_version", lambda go: "1.19.8")
    monkeypatch.setattr(toolchain.os, "geteuid", lambda: 0)
    with pytest.raises(HarnessError) as e:
        toolchain.setup()
    assert commands == []
    assert "cannot set up, nothing installed" in str(e.value) and "Go 1.19.8 (/usr/bin/go) is older" in str(e.value)
    assert "./setup" in str(e.value)
