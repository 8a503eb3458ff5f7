"""The parts of a measurement kit (harness/kit.py): what a target can be given and how each part is made.

What can be carried: static ELF binaries only (``elf_linking``), components whose roles need no tool the
target may lack (``tool_refusals``), upstream builds by the files their roles copy (``upstream_files``).
The parts: the wheelhouse of Ansible and Mitogen for the target's Python (``wheelhouse``), this
repository's commands built statically (``static_commands``), every binary stripped (``stripped``), and the
harness modules the target runs (``harness_modules``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import yaml

from . import REPO_ROOT
from .deploy import role_defaults, role_dir
from .errors import HarnessError
from .preflight import role_preflight

#: What a kit and a kit's run say they are (``kit.json`` ``format``, ``kit-run.json`` ``format``).
KIT_FORMAT = "fabricrepro-kit"
RUN_FORMAT = "fabricrepro-kit-run"
#: Where kits are built and their inputs cached: static binaries, static upstream builds, wheelhouses.
KIT_BUILD = REPO_ROOT / "build" / "kit"
#: Where each kit's plan is kept when it is built (``<kit id>.json``), for ``ingest`` to hold its run against.
KIT_PLANS = KIT_BUILD / "plans"
#: What a kit's plan kept at home says it is (its ``format``).
PLAN_FORMAT = "fabricrepro-kit-plan"
#: The largest kit ``invoke kit`` writes by default (``--max-mib``): 60 MiB, so that a kit fits a 64 MiB carry
#: (the device machine's: what travels with a command, 64 MiB in all) with room for the runner and what the
#: command sends beside it. A bigger target needs no default: ``--max-mib`` raises it.
MAX_BYTES = 60 * 2**20
#: Tools a kit's target has without the kit (a Linux host with Python): a role needing another is refused.
TARGET_TOOLS = {"bash", "sh", "python3"}
#: The target's Python: the oldest a kit serves, and the harness's Ansible pin by the target's Python
#: (ansible-core 2.19, requirements.txt, runs on Python >= 3.11; older Pythons get the newest line they
#: can run, recorded in the kit and in each run's ``tool_versions``, with the dependencies it names under an
#: environment marker for that Python, which ``pip download`` judges by this interpreter's version).
OLDEST_PYTHON = (3, 9)
OLDER_ANSIBLE = {(3, 9): ["ansible-core>=2.15,<2.16", "importlib-resources>=5.0,<5.1"],
                 (3, 10): ["ansible-core>=2.17,<2.18"]}
#: The packages of the wheelhouse, pinned as requirements.txt pins them (where the target's Python allows).
WHEEL_PACKAGES = ("ansible-core", "mitogen", "pyyaml", "jinja2")
#: Go commands are linked statically for a kit (no C library of this machine's inside).
STATIC_GO = {"CGO_ENABLED": "0"}


# ---------------------------------------------------------------- what can be carried

def elf_linking(path: Path) -> str | None:
    """``static`` or ``dynamic`` for an x86-64 ELF executable (its program headers: an interpreter or a
    dynamic section means it loads shared libraries), None when ``path`` is not an ELF file; raises for
    an ELF file of another machine."""
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF":
            return None
        if head[4] != 2 or head[5] != 1 or struct.unpack_from("<H", head, 18)[0] != 62:
            raise HarnessError(f"{path}: not a 64-bit little-endian x86-64 ELF file (a kit is for Linux x86-64)")
        phoff, = struct.unpack_from("<Q", head, 32)
        phentsize, phnum = struct.unpack_from("<HH", head, 54)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    types = {struct.unpack_from("<I", table, i * phentsize)[0] for i in range(phnum)}
    return "dynamic" if types & {2, 3} else "static"  # PT_DYNAMIC, PT_INTERP


def tool_refusals(layout: dict[str, list[str]], carried: set[str] | frozenset = frozenset()) -> list[str]:
    """Components whose roles need a tool the target cannot be assumed to have (``meta/preflight.yml``) and the
    kit does not carry (``carried``: ``java`` where this machine can make the kit a runtime, harness/kit_java.py)."""
    out = []
    for component in sorted({c for cs in layout.values() for c in cs}):
        needs = sorted(set(role_preflight(component).get("tools") or []) - TARGET_TOOLS - set(carried))
        if needs:
            what = ", ".join(f"{t} (a JVM)" if t == "java" else t for t in needs)
            out.append(f"component {component} needs {what}, which a kit cannot carry")
    return out


def upstream_files(role: str) -> list[str] | None:
    """The files a role uses from its upstream build, relative to the build: the list its
    ``tasks/install.yml`` copies to a host that is not the controller (``{{ item }}`` of a copy whose source
    is its ``_build_dir``), else the list its ``meta/kit.yml`` declares (``upstream_files``: a role that runs
    its build in place, as BFT-SMaRt's run their jars). None when the role names none."""
    declared = (role_dir(role) or Path("/nonexistent")) / "meta" / "kit.yml"
    files = (yaml.safe_load(declared.read_text(encoding="utf-8")) or {}).get("upstream_files") \
        if declared.is_file() else None
    if files is not None:
        if not isinstance(files, list) or not all(isinstance(f, str) and f and ".." not in f for f in files):
            raise HarnessError(f"{declared}: upstream_files must be a list of paths inside the build")
        return files or None
    path = (role_dir(role) or Path("/nonexistent")) / "tasks" / "install.yml"
    if not path.is_file():
        return None
    files = []
    for task in yaml.safe_load(path.read_text(encoding="utf-8")) or []:
        copy = task.get("ansible.builtin.copy") or task.get("copy") or {}
        if "_build_dir }}/{{ item }}" in str(copy.get("src", "")) and isinstance(task.get("loop"), list):
            files += [str(item) for item in task["loop"]]
    return files or None


def repo_files(role: str) -> list[str]:
    """The files of this repository's build cache a role needs on the controller and fetches there when they
    are missing (``meta/kit.yml`` ``repo_files``, relative to the repository, ``{{ name }}`` filled from the
    role's defaults: the kafka role's Maven jars, which the target cannot fetch). [] when it declares none."""
    declared = (role_dir(role) or Path("/nonexistent")) / "meta" / "kit.yml"
    if not declared.is_file():
        return []
    files = (yaml.safe_load(declared.read_text(encoding="utf-8")) or {}).get("repo_files") or []
    defaults = role_defaults(role)
    out = []
    for f in files:
        path = re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: str(defaults.get(m.group(1), m.group(0))), str(f))
        if "{{" in path or ".." in path or path.startswith("/"):
            raise HarnessError(f"{declared}: repo_files: {f!r} is not a path inside the repository its defaults fill")
        out.append(path)
    return out


def made_files(role: str, build: Path, dest: Path) -> dict[str, Path]:
    """The files a role's ``meta/kit.yml`` says are made here when the kit is built and carried beside its
    upstream build (``made_files``: each a ``path`` inside the build, an ``argv`` and an ``env`` with
    ``{{ build }}`` (the build here), ``{{ out }}`` (the file to write), ``{{ PATH }}`` (this machine's) and
    the role's defaults filled in): fabric_channel's chaincode package, which needs Go and the chaincode's
    source, neither on the target. Made under ``dest`` once per build (``{path in the build: file}``)."""
    declared = (role_dir(role) or Path("/nonexistent")) / "meta" / "kit.yml"
    specs = (yaml.safe_load(declared.read_text(encoding="utf-8")) or {}).get("made_files") or [] \
        if declared.is_file() else []
    out = {}
    for spec in specs:
        values = {**{k: str(v) for k, v in role_defaults(role).items()}, "build": str(build),
                  "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        fill = lambda text, **more: re.sub(r"\{\{\s*(\w+)\s*\}\}",  # noqa: E731
                                          lambda m: {**values, **more}.get(m.group(1), m.group(0)), str(text))
        rel = fill(spec.get("path", ""))
        if not rel or "{{" in rel or ".." in rel or rel.startswith("/") or not spec.get("argv"):
            raise HarnessError(f"{declared}: made_files: {spec!r} needs a path inside the build its defaults fill "
                               "and an argv")
        target = Path(dest) / rel
        if not target.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(target.name + ".partial")
            argv = [fill(a, out=str(partial)) for a in spec["argv"]]
            home = dest / ".home"
            home.mkdir(parents=True, exist_ok=True)
            env = {"HOME": str(home), "GOCACHE": str(home / "gocache"),
                   **{k: fill(v) for k, v in (spec.get("env") or {}).items()}}
            proc = subprocess.run(argv, env=env, cwd=home, capture_output=True, text=True, check=False)
            if proc.returncode != 0 or not partial.is_file():
                partial.unlink(missing_ok=True)
                raise HarnessError(f"kit: making {rel} for role {role} failed ({' '.join(argv[:3])} ...): "
                                   + (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1])
            partial.rename(target)
        out[rel] = target
    return out


def role_commands(roles: list[str]) -> set[str]:
    """This repository's commands (``cmd/<name>``) that ``roles`` run beside their driver's (``meta/kit.yml``
    ``commands``: fastfabric_storage's ``blockfile``, which decodes the storage server's block files)."""
    out: set[str] = set()
    for role in roles:
        declared = (role_dir(role) or Path("/nonexistent")) / "meta" / "kit.yml"
        if declared.is_file():
            out |= set((yaml.safe_load(declared.read_text(encoding="utf-8")) or {}).get("commands") or [])
    return out


def uses_upstream(role: str) -> bool:
    return any("fabricrepro_upstream_dir" in str(v) or "fabricrepro_companion_dirs" in str(v)
               for v in role_defaults(role).values())


# ---------------------------------------------------------------- the parts of a kit

def target_python(version: str) -> tuple[int, int]:
    """``3.12`` -> (3, 12), refusing a Python older than a kit serves."""
    try:
        major, minor = (int(x) for x in version.split(".")[:2])
    except ValueError:
        raise HarnessError(f"--python {version!r}: give the target's Python as MAJOR.MINOR, e.g. 3.12") from None
    if (major, minor) < OLDEST_PYTHON:
        raise HarnessError(f"--python {version}: a kit needs Python >= {'.'.join(map(str, OLDEST_PYTHON))} "
                           "on the target")
    return major, minor


def wheel_requirements(python: tuple[int, int]) -> list[str]:
    """The wheelhouse's requirements for the target's Python: requirements.txt's pins of
    ``WHEEL_PACKAGES``, with an older ansible-core line where the pinned one cannot run, and pip."""
    pins = {}
    for line in (REPO_ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines():
        name, sep, version = line.split("#")[0].strip().partition("==")
        if sep and name.lower() in WHEEL_PACKAGES:
            pins[name.lower()] = f"{name}=={version}"
    older = OLDER_ANSIBLE.get(python, [])
    if older:
        pins["ansible-core"] = older[0]
    return [pins[name] for name in WHEEL_PACKAGES if name in pins] + older[1:] + ["pip"]


def wheelhouse(python: tuple[int, int], log=print) -> Path:
    """The wheels of ``wheel_requirements`` for CPython ``python`` on manylinux x86-64, downloaded once
    (``pip download --only-binary=:all:``) and cached in ``build/kit/wheels/cp<XY>/``."""
    tag = f"cp{python[0]}{python[1]}"
    reqs = wheel_requirements(python)
    dest = KIT_BUILD / "wheels" / tag
    stamp = dest / "requirements.json"
    if stamp.is_file() and json.loads(stamp.read_text(encoding="utf-8")) == reqs:
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    partial = dest.with_name(dest.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    log(f"kit: downloading the wheelhouse for Python {python[0]}.{python[1]}: {' '.join(reqs)}")
    platforms = [a for p in ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64",
                             "linux_x86_64") for a in ("--platform", p)]
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                           "--only-binary=:all:", "--implementation", "cp", "--python-version",
                           f"{python[0]}.{python[1]}", *platforms, "-d", str(partial), *reqs],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        raise HarnessError("kit: pip download of the wheelhouse failed: "
                           + (proc.stderr.strip().splitlines() or ["?"])[-1],
                           hint="the package index must be reachable from this machine (not from the target)")
    stamp_tmp = partial / "requirements.json"
    stamp_tmp.write_text(json.dumps(reqs) + "\n", encoding="utf-8")
    partial.rename(dest)
    return dest


def static_commands(names: list[str], log=print) -> Path:
    """This repository's commands ``names`` built statically (``CGO_ENABLED=0``, ``-trimpath``) into
    ``build/kit/bin/`` (Go's cache makes an unchanged one cheap)."""
    out = KIT_BUILD / "bin"
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        if not (REPO_ROOT / "cmd" / name).is_dir():
            raise HarnessError(f"kit: no command cmd/{name} to build")
    log(f"kit: building {', '.join(names)} statically")
    proc = subprocess.run(["go", "build", "-trimpath", "-ldflags=-s -w", "-o", str(out) + "/",
                           *[f"./cmd/{n}" for n in names]], cwd=REPO_ROOT,
                          env={**os.environ, **STATIC_GO}, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise HarnessError(f"kit: static build of {', '.join(names)} failed: {proc.stderr.strip()[-800:]}")
    return out


def stripped(carried: dict[str, Path], cache: Path) -> dict[str, Path]:
    """``carried`` with every ELF binary replaced by a copy without symbols (``strip --strip-all``; the
    code is the same, the file about a third smaller), made under ``cache``. Without ``strip``, as is."""
    strip = shutil.which("strip")
    if strip is None:
        return carried
    out = {}
    for arc, src in carried.items():
        if src.is_file() and elf_linking(src):
            dest = cache / arc
            if not dest.is_file() or dest.stat().st_mtime < src.stat().st_mtime:
                dest.parent.mkdir(parents=True, exist_ok=True)
                subprocess.run([strip, "--strip-all", "-o", str(dest), str(src)], check=True)
            out[arc] = dest
        else:
            out[arc] = src
    return out


def stored_jars(carried: dict[str, Path], cache: Path) -> dict[str, Path]:
    """``carried`` with every jar (a file, or one in a carried folder, which is then listed file by file)
    replaced by a copy whose entries are stored, not deflated (the same entries, names and order; a signed
    jar's signatures cover the entries' bytes, not their compression): xz compresses class files about half
    again as well as deflate does, and cannot compress deflated ones. Made under ``cache`` once."""
    import zipfile
    out = {}
    for arc, src in carried.items():
        files = {arc: src} if src.is_file() else {f"{arc}/{f.relative_to(src).as_posix()}": f
                                                   for f in sorted(src.rglob("*")) if f.is_file()}
        if not any(a.endswith(".jar") for a in files):
            out[arc] = src
            continue
        for a, f in files.items():
            dest = cache / a
            if a.endswith(".jar") and (not dest.is_file() or dest.stat().st_mtime < f.stat().st_mtime):
                dest.parent.mkdir(parents=True, exist_ok=True)
                partial = dest.with_name(dest.name + ".partial")
                with zipfile.ZipFile(f) as zin, zipfile.ZipFile(partial, "w", zipfile.ZIP_STORED) as zout:
                    for info in zin.infolist():
                        data = zin.read(info)  # before the entry's compression is changed: zin reads by it
                        info.compress_type = zipfile.ZIP_STORED
                        zout.writestr(info, data)
                partial.rename(dest)
            out[a] = dest if a.endswith(".jar") else f
    return out


def harness_modules() -> list[Path]:
    """The harness's files the target runs: ``harness.kit_run``, ``harness.kit_target`` (the check of the host
    before the venv is made) and every harness module they import,
    found by importing it in a fresh interpreter where pandas, numpy, pyarrow, matplotlib and jsonschema
    cannot be imported (so this fails if a change makes the measuring half need one of them)."""
    blocked = ["pandas", "numpy", "pyarrow", "matplotlib", "jsonschema"]
    code = ("import sys\n"
            f"for m in {blocked!r}: sys.modules[m] = None\n"
            "import harness.kit_run, harness.kit_target\n"
            "print('\\n'.join(sorted({m.__file__ for n, m in sys.modules.items()\n"
            "                          if n == 'harness' or n.startswith('harness.')})))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True,
                          check=False, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    if proc.returncode != 0:
        raise HarnessError("kit: the measuring half of the harness needs an analysis library: "
                           + (proc.stderr.strip().splitlines() or ["?"])[-1])
    return [Path(line) for line in proc.stdout.split()]


class KitTooLarge(HarnessError):
    """A kit over its size limit; ``alone``: the bytes (before compression) each experiment carries that no
    other of the kit does (``carried_alone``)."""

    def __init__(self, message: str, alone: dict[str, int]):
        super().__init__(message)
        self.alone = alone


def _bytes(path: Path) -> int:
    return path.stat().st_size if path.is_file() else sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def carried_alone(parts: list[dict], java_dir: Path | None, java_users: list[str]) -> dict[str, int]:
    """Experiment -> the bytes it alone brings into the kit: its carried files that no other part carries, and the
    Java runtime ``java_dir`` where it alone of ``java_users`` (the experiments with a component that needs java)
    needs it: what leaving it out would save, before xz."""
    alone = {}
    for p in parts:
        others = {arc for q in parts if q is not p for arc in q["carried"]}
        alone[p["id"]] = sum(_bytes(src) for arc, src in p["carried"].items() if arc not in others) \
            + (_bytes(java_dir) if java_dir is not None and java_users == [p["id"]] else 0)
    return alone
