"""Counting Go and pytest results for the summary line of `invoke test`; what `invoke setup` installs:
the core's packages and each system's own (system.yaml ``setup``)."""

import subprocess

import yaml

from harness import toolchain
from harness.toolchain import go_test_counts, go_test_skips, pytest_counts, pytest_report, pytest_skips


def test_go_test_counts():
    lines = "\n".join([
        '{"Action":"run","Package":"p","Test":"TestA"}',
        '{"Action":"pass","Package":"p","Test":"TestA"}',
        '{"Action":"fail","Package":"p","Test":"TestB"}',
        '{"Action":"fail","Package":"q"}',
        'not json',
    ])
    assert go_test_counts(lines) == (1, 2)


def test_pytest_counts():
    xml = '<testsuites><testsuite tests="5" failures="1" errors="1" skipped="1"/></testsuites>'
    assert pytest_counts(xml) == (2, 2)


def test_a_missing_or_unreadable_pytest_report_is_a_failure_not_a_crash(tmp_path):
    # CI once filled its disk: pytest left an empty report and the count crashed instead of failing
    junit = tmp_path / "pytest.xml"
    assert pytest_report(junit) == (0, 1, {})
    junit.write_text("")
    assert pytest_report(junit) == (0, 1, {})
    junit.write_text('<testsuites><testsuite tests="2" skipped="1"><testcase name="a"/>'
                     '<testcase name="b"><skipped message="needs root"/></testcase></testsuite></testsuites>')
    assert pytest_report(junit) == (1, 0, {"needs root": 1})


def test_skips_are_counted_by_reason():
    xml = ('<testsuites><testsuite tests="3" skipped="3">'
           '<testcase name="a"><skipped message="no seed texts at ../shared/seeds">f.py:1: x</skipped></testcase>'
           '<testcase name="b"><skipped message="no seed texts at ../shared/seeds">f.py:2: x</skipped></testcase>'
           '<testcase name="c"><skipped message="needs root"/></testcase><testcase name="d"/>'
           '</testsuite></testsuites>')
    assert pytest_skips(xml) == {"no seed texts at ../shared/seeds": 2, "needs root": 1}
    lines = "\n".join([
        '{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\\n"}',
        '{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:12: no upstream snapshot\\n"}',
        '{"Action":"output","Package":"p","Test":"TestA","Output":"--- SKIP: TestA (0.00s)\\n"}',
        '{"Action":"skip","Package":"p","Test":"TestA"}',
        '{"Action":"pass","Package":"p","Test":"TestB"}',
    ])
    assert go_test_skips(lines) == {"no upstream snapshot": 1}


def _system(root, name, setup=None):
    (root / name).mkdir(parents=True)
    doc = {"schema_version": 1, "id": name, "paper": "toy", "description": "test double",
           "reference": {"commands": [], "switches": {}}, **({"setup": setup} if setup else {})}
    (root / name / "system.yaml").write_text(yaml.safe_dump(doc))


def test_each_system_states_its_own_packages(tmp_path):
    _system(tmp_path, "a", {"apt": ["openjdk-17-jdk-headless", "ant"], "apt_if_command_missing": {"npm": ["nodejs"]}})
    _system(tmp_path, "b", {"apt": ["openjdk-17-jdk-headless", "maven"],
                            "apt_if_command_missing": {"npm": ["nodejs", "npm"]}})
    _system(tmp_path, "c")
    assert toolchain.system_setup(tmp_path) == (["openjdk-17-jdk-headless", "ant", "maven"],
                                                {"npm": ["nodejs", "npm"]})


def test_the_core_lists_only_its_own_packages():
    """No system's packages in the core's list: the repository's systems state theirs (system.yaml setup)."""
    apt, if_missing = toolchain.system_setup()
    for package in ("ant", "openjdk-17-jdk-headless", "librocksdb-dev", "erlang-nox", "libmozjs-78-dev"):
        assert package in apt and package not in toolchain.APT_PACKAGES, package
    assert if_missing == {"npm": ["nodejs", "npm"]}
    assert "protobuf-compiler" in toolchain.APT_PACKAGES and not hasattr(toolchain, "APT_IF_COMMAND_MISSING")


def test_missing_packages_default_to_the_core_and_every_system(monkeypatch):
    asked = []

    def dpkg_query(cmd, **kwargs):
        asked.append(cmd[-1])
        return subprocess.CompletedProcess(cmd, 0, stdout="install ok installed" if cmd[-1] != "ant" else "")
    monkeypatch.setattr(toolchain, "system_setup", lambda: (["ant", "curl"], {}))
    monkeypatch.setattr(toolchain.subprocess, "run", dpkg_query)
    assert toolchain.missing_apt_packages() == ["ant"]
    assert asked == [*toolchain.APT_PACKAGES, "ant"], "each package asked once"


def test_setup_installs_the_cores_packages_before_the_requirements_and_the_systems_after(monkeypatch):
    """The systems' setup is read by the plugin loader, which needs the Python requirements: so the core's
    packages, pip, then the systems' (one apt-get update); npm's packages only where npm is absent."""
    commands = []
    monkeypatch.setattr(toolchain, "sh", lambda cmd, **kw: commands.append(" ".join(cmd)))
    monkeypatch.setattr(toolchain, "missing_apt_packages",
                        lambda packages: [p for p in packages if p in ("curl", "ant")])
    monkeypatch.setattr(toolchain, "system_setup", lambda: (["ant", "maven"], {"npm": ["nodejs", "npm"]}))
    monkeypatch.setattr(toolchain.shutil, "which", lambda name: None if name == "npm" else f"/usr/bin/{name}")
    monkeypatch.setattr(toolchain, "require_tool", lambda name: name)
    monkeypatch.setattr(toolchain, "ensure_go_bin_on_path", lambda: None)
    monkeypatch.setattr(toolchain, "build", lambda: commands.append("build"))
    monkeypatch.setattr(toolchain.os, "geteuid", lambda: 0)
    monkeypatch.setattr(toolchain, "prerequisite_problems", lambda missing: [])  # test_setup_prerequisites.py
    monkeypatch.setattr(toolchain, "uninstallable", lambda policy, packages: [])
    toolchain.setup()
    installs = [c for c in commands if "apt-get" in c]
    # the frontend through env: sudo's env_reset would drop it from the environment
    assert installs == ["apt-get update",
                        "env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends curl",
                        "env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ant nodejs npm"]
    pip = next(i for i, c in enumerate(commands) if " pip install " in c)
    assert commands.index(installs[1]) < pip < commands.index(installs[2]) and commands[-1] == "build"
