"""Install, build and test the project: what ``invoke setup``, ``build`` and ``test`` do.

``setup`` is idempotent: it installs only what is missing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

from . import REPO_ROOT
from .errors import HarnessError
from .tools import ensure_go_bin_on_path, require_tool

#: What the core needs from Debian; each system states its own in its system.yaml (``setup``).
APT_PACKAGES = ["protobuf-compiler", "libprotobuf-dev", "prometheus", "prometheus-node-exporter",
                "openssh-server", "openssh-client", "iproute2", "util-linux", "curl",
                # the system Python that Ansible runs modules with on netns hosts, and the tests' bin/ double, read YAML
                "python3-yaml",
                # the report's browser check: headless Chromium loads the rendered HTML (test_report_browser.py)
                "chromium",
                # invoke kit: strip carries the binaries without symbols; venv makes the tests' bare Python
                "binutils", "python3-venv",
                # upstream builds: sources from git, patches, cgo (a stock Debian or Ubuntu has none of these)
                "git", "patch", "make", "gcc", "g++",
                # the upstream snapshots are .tar.xz (a stock Debian 12 root has no xz)
                "xz-utils"]
GO_TOOLS = {"protoc-gen-go": "google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.11",
            "protoc-gen-go-grpc": "google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1"}


def sh(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    """Run ``cmd`` in the repository, echoing it; raise HarnessError if it fails."""
    print("$ " + " ".join(cmd), flush=True)
    result = subprocess.run(cmd, cwd=REPO_ROOT, check=False, **kwargs)
    if result.returncode != 0:
        raise HarnessError(f"command failed (exit {result.returncode}): {' '.join(cmd)}")
    return result


def system_setup(systems_dir=None) -> tuple[list[str], dict[str, list[str]]]:
    """What the discovered systems need installed (``setup`` of each ``system.yaml``): the union of their
    ``apt`` packages, and of their ``apt_if_command_missing`` (command -> packages, installed only when
    the command is absent: e.g. Debian's npm conflicts with the npm inside a nodejs from elsewhere)."""
    from . import systems  # the loader needs the Python requirements, which setup installs first
    apt: list[str] = []
    if_missing: dict[str, list[str]] = {}
    for name in systems.names(systems_dir):
        wanted = systems.declaration(name, systems_dir).get("setup") or {}
        apt += wanted.get("apt") or []
        for command, packages in (wanted.get("apt_if_command_missing") or {}).items():
            if_missing.setdefault(command, []).extend(packages)
    return list(dict.fromkeys(apt)), {c: list(dict.fromkeys(p)) for c, p in if_missing.items()}


def missing_apt_packages(packages=None) -> list[str]:
    """The packages of ``packages`` (default: the core's and every system's) that dpkg does not report as
    installed."""
    if packages is None:
        packages = list(dict.fromkeys(APT_PACKAGES + system_setup()[0]))
    missing = []
    for pkg in packages:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True, check=False)
        if "install ok installed" not in out.stdout:
            missing.append(pkg)
    return missing


def uninstallable(policy: str, packages: list[str]) -> list[str]:
    """The packages of ``packages`` that ``apt-cache policy``'s output ``policy`` gives no candidate (absent
    from this distribution's archive, e.g. Ubuntu 24.04 has no libmozjs-78-dev, and its chromium is a snap)."""
    candidates, name = set(), None
    for line in policy.splitlines():
        if line and not line[0].isspace() and line.endswith(":"):
            name = line[:-1].split(":")[0]
        elif name and line.strip().startswith("Candidate:") and line.split(":", 1)[1].strip() != "(none)":
            candidates.add(name)
    return [p for p in packages if p not in candidates]


def _apt_install(packages: list[str], updated: bool) -> bool:
    """Install ``packages`` (none: nothing), leaving out, with a line naming them, those this distribution
    does not have; whether the package lists are now updated."""
    if not packages:
        return updated
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    if not updated:
        sh(sudo + ["apt-get", "update"])
    policy = subprocess.run(["apt-cache", "policy", *packages], capture_output=True, text=True, check=False).stdout
    absent = uninstallable(policy, packages)
    if absent:
        print(f"not in this distribution's archive, left out: {' '.join(absent)} (what needs them skips or "
              "fails naming them; Debian 12 has them all)", flush=True)
    packages = [p for p in packages if p not in absent]
    if packages:
        # through env, not the environment: sudo resets it, and a debconf prompt would wait on no terminal
        sh(sudo + ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "--no-install-recommends"]
           + packages)
    return True


#: What installs this project on a bare Debian or Ubuntu, Python and Go included (README, "Start").
BOOTSTRAP = "./setup"


def go_mod_versions(go_mod: Path | None = None) -> tuple[str, str]:
    """The Go versions ``go.mod`` states: the least its ``go`` line allows, and the toolchain to install
    (its ``toolchain`` line, else the ``go`` line's version, as Go's own toolchain switch chooses)."""
    text = (go_mod or REPO_ROOT / "go.mod").read_text(encoding="utf-8")
    least = re.search(r"^go\s+(\S+)\s*$", text, re.M)
    if not least:
        raise HarnessError("go.mod has no `go` line")
    toolchain = re.search(r"^toolchain\s+go(\S+)\s*$", text, re.M)
    return least.group(1), toolchain.group(1) if toolchain else least.group(1)


def go_version_key(version: str) -> tuple[int, int, int, int, int]:
    """A sortable key for a Go version ("1.26.8", "go1.26.8", "1.26rc1", "1.26"): by Go's rules,
    the language version 1.26 < 1.26rc1 < 1.26.0 < 1.26.8."""
    m = re.fullmatch(r"(?:go)?(\d+)\.(\d+)(?:\.(\d+))?(?:(beta|rc)(\d+))?", version.strip())
    if not m:
        raise HarnessError(f"not a Go version: {version!r}")
    major, minor, patch, pre, n = m.groups()
    rank = 3 if patch is not None else {"beta": 1, "rc": 2}.get(pre or "", 0)
    return int(major), int(minor), int(patch or 0), rank, int(n or 0)


def installed_go_version(go: str) -> str | None:
    """What ``go`` reports as its own version (outside any module: GOTOOLCHAIN switches nothing), or None."""
    try:
        out = subprocess.run([go, "env", "GOVERSION"], cwd="/", capture_output=True, text=True, check=False,
                             env={**os.environ, "GOTOOLCHAIN": "local"}, timeout=60).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.removeprefix("go") or None


def go_problem(go: str | None, have: str | None, go_mod: Path | None = None) -> str | None:
    """Why the Go at ``go`` (of version ``have``) cannot build this project, naming the fix; None if it can."""
    least, want = go_mod_versions(go_mod)
    fix = (f"run `{BOOTSTRAP}` (it installs Go {want} for this clone through Go's own toolchain module), "
           f"or install Go >= {least} first on PATH (https://go.dev/dl)")
    if not go:
        return f"no `go` on PATH; go.mod needs Go >= {least}: {fix}"
    if not have:
        return f"{go} does not say its version (`go env GOVERSION`); go.mod needs Go >= {least}: {fix}"
    try:
        if go_version_key(have) >= go_version_key(least):
            return None
    except HarnessError:
        pass
    return f"Go {have} ({go}) is older than go.mod's go {least}: {fix}"


def python_problem(version: tuple[int, ...] = sys.version_info[:3], pyproject: Path | None = None) -> str | None:
    """Why this Python (``version``) is too old for pyproject.toml's ``requires-python``, naming the fix."""
    text = (pyproject or REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    m = re.search(r'^requires-python\s*=\s*">=\s*([\d.]+)"', text, re.M)
    if not m:
        return None
    need = tuple(int(x) for x in m.group(1).split("."))
    if tuple(version[:len(need)]) >= need:
        return None
    have = ".".join(str(x) for x in version)
    return (f"Python {have} ({sys.executable}) is older than pyproject.toml's >= {m.group(1)}: run "
            f"`{BOOTSTRAP}` with a python3 >= {m.group(1)} first on PATH (e.g. from pyenv)")


def prerequisite_problems(missing_apt: list[str]) -> list[str]:
    """What ``setup`` cannot do on this machine, each naming its fix; checked before it installs anything.
    ``missing_apt``: the core's packages not installed (apt-get and root or sudo are needed only then)."""
    problems = [p for p in (python_problem(),) if p]
    if missing_apt and not shutil.which("apt-get"):
        problems.append(f"no apt-get to install {' '.join(missing_apt)}: this set-up is for Debian and Ubuntu "
                        "(Debian 12, Ubuntu 24.04 tested); install them with this system's package manager")
    elif missing_apt and os.geteuid() != 0 and not shutil.which("sudo"):
        problems.append(f"not root and no sudo, to apt-get install {' '.join(missing_apt)}: run it as root, or "
                        "install sudo and allow this user")
    go = shutil.which("go")
    problem = go_problem(go, installed_go_version(go) if go else None)
    if problem:
        problems.append(problem)
    return problems


def setup() -> None:
    """Check the prerequisites (Python, Go of go.mod's version, apt-get with root or sudo) and stop naming
    each fix if one fails; else install the core's apt packages, the Python requirements, every system's
    apt packages and the Go tools that are missing, then build."""
    ensure_go_bin_on_path()
    missing = missing_apt_packages(APT_PACKAGES)
    problems = prerequisite_problems(missing)
    if problems:
        raise HarnessError("cannot set up, nothing installed:\n" + "\n".join(f"  - {p}" for p in problems),
                           hint=f"`{BOOTSTRAP}` checks and installs all of these on Debian and Ubuntu")
    updated = _apt_install(missing, False)
    sh([sys.executable, "-m", "pip", "install", "-q", "-r", "requirements.txt"])
    apt, if_missing = system_setup()
    missing = missing_apt_packages(apt)
    for command, packages in if_missing.items():
        if not shutil.which(command):
            missing += [p for p in packages if p not in missing]
    _apt_install(missing, updated)
    require_tool("go")
    ensure_go_bin_on_path()
    for tool, module in GO_TOOLS.items():
        if not shutil.which(tool):
            sh(["go", "install", module])
    if not shutil.which("toxiproxy-server"):
        sh(["sh", "infra/netns/install-toxiproxy.sh"])  # per-link delay for the netns provider
    build()


def build() -> None:
    """Generate the Fabric protobuf code and build every command into ``bin/``."""
    ensure_go_bin_on_path()
    require_tool("go")
    sh(["bash", "internal/protos/generate.sh"])
    if any((REPO_ROOT / "cmd").glob("*/*.go")):
        sh(["go", "build", "-o", "bin/", "./cmd/..."])
    else:
        print("no commands under cmd/ yet: nothing to build into bin/")


def go_test_counts(json_lines: str) -> tuple[int, int]:
    """Passed and failed test counts from ``go test -json`` output (tests and subtests)."""
    passed = failed = 0
    for line in json_lines.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if event.get("Test"):
            passed += event.get("Action") == "pass"
            failed += event.get("Action") == "fail"
        elif event.get("Action") == "fail":
            failed += 1  # a package that failed to build or failed outside any test
    return passed, failed


def go_test_skips(json_lines: str) -> Counter:
    """Skipped Go tests by reason (the last line the test logged before ``t.Skip``) from ``go test -json``."""
    last, skips = {}, Counter()
    for line in json_lines.splitlines():
        event = json.loads(line) if line.startswith("{") else {}
        test = (event.get("Package"), event.get("Test"))
        if event.get("Action") == "output" and event.get("Test"):
            text = event.get("Output", "").strip()
            if text and not text.startswith(("=== ", "--- ")):
                last[test] = re.sub(r"^\S+\.go:\d+: ", "", text)
        elif event.get("Action") == "skip" and event.get("Test"):
            skips[last.get(test, "no reason given")] += 1
    return skips


def pytest_skips(junit_xml: str) -> Counter:
    """Skipped pytest tests by reason, from a pytest JUnit XML report."""
    return Counter(s.get("message") or "no reason given" for s in ET.fromstring(junit_xml).iter("skipped"))


def pytest_report(junit: Path) -> tuple[int, int, Counter]:
    """Passed, failed and skips by reason from pytest's JUnit report; a missing or unreadable report is one failure.

    A full disk, for one, leaves the report empty: nothing pytest ran can then count as passed.
    """
    try:
        report = junit.read_text(encoding="utf-8")
        passed, failed = pytest_counts(report)
        return passed, failed, pytest_skips(report)
    except (OSError, ET.ParseError) as e:
        print(f"pytest's report {junit} is missing or unreadable ({e}): counted as one failure", flush=True)
        return 0, 1, Counter()


def _print_free_disk(when: str) -> None:
    gib = lambda where: f"{shutil.disk_usage(where).free / 2**30:.1f}"  # noqa: E731
    tmp = tempfile.gettempdir()
    print(f"free disk {when} the tests: {gib(REPO_ROOT)} GiB here, {gib(tmp)} GiB in {tmp}", flush=True)


def pytest_counts(junit_xml: str) -> tuple[int, int]:
    """Passed and failed counts from a pytest JUnit XML report (errors count as failures)."""
    root = ET.fromstring(junit_xml)
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    total = sum(int(s.get("tests", 0)) for s in suites)
    failed = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
    skipped = sum(int(s.get("skipped", 0)) for s in suites)
    return total - failed - skipped, failed


def test() -> int:
    """``go vet``, ``go test ./...`` and pytest over ``tests/`` and every system's ``systems/*/tests``; print ``N passed, N failed, N skipped``.

    Before that line, every reason for a skip with how many tests it skipped
    (e.g. a clone without ``../shared`` skips the tests of the seed texts).
    Returns the number of failures (a failing ``go vet`` counts as one).
    """
    ensure_go_bin_on_path()
    # the tests build several Fabric releases and run networks: a CI machine short of disk fails late, so say it early
    _print_free_disk("before")
    passed = failed = 0
    skips = Counter()
    build_dir = REPO_ROOT / "build"
    build_dir.mkdir(exist_ok=True)
    print("$ go vet ./...", flush=True)
    if subprocess.run(["go", "vet", "./..."], cwd=REPO_ROOT, check=False).returncode != 0:
        failed += 1
    print("$ go test -json ./...", flush=True)
    go = subprocess.run(["go", "test", "-json", "./..."], cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    for line in go.stdout.splitlines():
        event = json.loads(line) if line.startswith("{") else {}
        if event.get("Action") == "output" and re.match(r"^(---|FAIL|ok|PASS)", event.get("Output", "")):
            print(event["Output"], end="")
    sys.stderr.write(go.stderr)
    p, f = go_test_counts(go.stdout)
    passed, failed = passed + p, failed + max(f, int(go.returncode != 0))
    skips += go_test_skips(go.stdout)
    junit = build_dir / "pytest.xml"
    junit.unlink(missing_ok=True)
    print("$ pytest tests/ systems/", flush=True)
    subprocess.run([sys.executable, "-m", "pytest", "-q", "tests/", "systems/", f"--junitxml={junit}",
                    "--durations=25"], cwd=REPO_ROOT,
                   check=False)
    p, f, s = pytest_report(junit)
    passed, failed, skips = passed + p, failed + f, skips + s
    _print_free_disk("after")
    if skips:
        print(f"skipped {sum(skips.values())} test(s):")
        for reason, n in sorted(skips.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {n:4d}  {reason}")
    print(f"{passed} passed, {failed} failed, {sum(skips.values())} skipped", flush=True)
    return failed
