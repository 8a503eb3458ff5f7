"""A measurement kit: measure an experiment on a host that cannot install the harness, analyse it here.

``invoke kit`` (``build_kit``) makes one archive for a Linux x86-64 host with
Python >= 3.9 and nothing else: the experiment's plan as ``invoke reproduce``
would make it (``plan.json``: every point with its role variables, its driver
and the watcher's patterns, the run's build record), static binaries of every
component the plan starts, the playbooks and roles, the part of the harness
that measures (``harness/kit_run.py`` and what it imports; no pandas, pyarrow,
matplotlib or jsonschema) and a wheelhouse of Ansible and Mitogen for the
target's Python. On the target, ``./kit/run`` measures the plan with the local
provider (harness/kit_run.py) and writes ``run.tar.gz``; here ``invoke ingest``
(``ingest``) stores that run, converts and analyses every point with the same
code as a local run, validity checks included.

The kit's plan is also kept at home when the kit is built (``KIT_PLANS/<kit
id>.json``): the archive's manifest and ``resolved.yaml`` are written by the
target and cannot say what is missing, so ``ingest`` holds the run against the
plan kept here, and stores a run that lacks a planned point (a control point
too), or whose plan is not the kit's, as ``incomplete``, naming them.

A kit refuses what it cannot carry, naming it: a component that needs a tool
the target may not have (e.g. ``java``, a role's ``meta/preflight.yml``
``tools``), a binary that is dynamically linked (its ELF program headers), an
upstream role that uses its build in place without listing the files it needs
(its ``tasks/install.yml`` copy list), an experiment that needs other hosts
than this one (delayed links).
"""

from __future__ import annotations

import io
import json
import lzma
import os
import shutil
import socket
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
import zlib
from pathlib import Path

import yaml

from . import REPO_ROOT, SCHEMA_VERSION, user_refs
from .analyze import analyze_run
from .builds import prepare
from .catalogue import load_paper
from .deploy import role_defaults, role_dir
from .errors import HarnessError
from .preflight import largest_cpus, role_preflight
from .rundir import Run, git_state, iso, read_json, utc_now, write_json
from .runner import analyze_point
from .upstream_source import sha256_file

#: What a kit and a kit's run say they are (``kit.json`` ``format``, ``kit-run.json`` ``format``).
KIT_FORMAT = "fabricrepro-kit"
RUN_FORMAT = "fabricrepro-kit-run"
#: Where kits are built and their inputs cached: static binaries, static upstream builds, wheelhouses.
KIT_BUILD = REPO_ROOT / "build" / "kit"
#: Where each kit's plan is kept when it is built (``<kit id>.json``), for ``ingest`` to hold its run against.
KIT_PLANS = KIT_BUILD / "plans"
#: What a kit's plan kept at home says it is (its ``format``).
PLAN_FORMAT = "fabricrepro-kit-plan"
#: The largest kit ``invoke kit`` writes by default (the device machine takes 64 MiB in all).
MAX_BYTES = 48 * 2**20
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


def tool_refusals(layout: dict[str, list[str]]) -> list[str]:
    """Components whose roles need a tool the target cannot be assumed to have (``meta/preflight.yml``)."""
    out = []
    for component in sorted({c for cs in layout.values() for c in cs}):
        needs = sorted(set(role_preflight(component).get("tools") or []) - TARGET_TOOLS)
        if needs:
            what = ", ".join(f"{t} (a JVM)" if t == "java" else t for t in needs)
            out.append(f"component {component} needs {what}, which a kit cannot carry")
    return out


def upstream_files(role: str) -> list[str] | None:
    """The files a role uses from its upstream build, relative to the build: the list its
    ``tasks/install.yml`` copies to a host that is not the controller (``{{ item }}`` of a copy whose source
    is its ``_build_dir``). None when the role copies nothing so (it uses its build in place)."""
    path = (role_dir(role) or Path("/nonexistent")) / "tasks" / "install.yml"
    if not path.is_file():
        return None
    files = []
    for task in yaml.safe_load(path.read_text(encoding="utf-8")) or []:
        copy = task.get("ansible.builtin.copy") or task.get("copy") or {}
        if "_build_dir }}/{{ item }}" in str(copy.get("src", "")) and isinstance(task.get("loop"), list):
            files += [str(item) for item in task["loop"]]
    return files or None


def _uses_upstream(role: str) -> bool:
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


def harness_modules() -> list[Path]:
    """The harness's files the target runs: ``harness.kit_run`` and every harness module it imports,
    found by importing it in a fresh interpreter where pandas, numpy, pyarrow, matplotlib and jsonschema
    cannot be imported (so this fails if a change makes the measuring half need one of them)."""
    blocked = ["pandas", "numpy", "pyarrow", "matplotlib", "jsonschema"]
    code = ("import sys\n"
            f"for m in {blocked!r}: sys.modules[m] = None\n"
            "import harness.kit_run\n"
            "print('\\n'.join(sorted({m.__file__ for n, m in sys.modules.items()\n"
            "                          if n == 'harness' or n.startswith('harness.')})))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True,
                          check=False, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    if proc.returncode != 0:
        raise HarnessError("kit: the measuring half of the harness needs an analysis library: "
                           + (proc.stderr.strip().splitlines() or ["?"])[-1])
    return [Path(line) for line in proc.stdout.split()]


# ---------------------------------------------------------------- building a kit

def _add_tree(tar: tarfile.TarFile, src: Path, arc: str) -> None:
    """``src`` (a file or folder) as ``arc`` in the kit, without caches and editor files."""
    def keep(info: tarfile.TarInfo):
        name = info.name.rsplit("/", 1)[-1]
        if name == "__pycache__" or name.endswith((".pyc", ".retry")):
            return None
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info
    tar.add(src, arcname=arc, filter=keep)


RUN_SCRIPT = r"""#!/bin/sh
# Measure this kit's plan on this machine (harness/kit_run.py): a private Python
# environment from wheels/ (no network), the plan with the local provider, then
# run.tar.gz beside this script. Options: --python PATH (the Python to use;
# default python3). Everything it writes stays in this folder.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
py=python3
if [ "${1:-}" = "--python" ]; then py=$2; shift 2; fi
if [ ! -f "$here/venv/.complete" ]; then
  rm -rf "$here/venv"
  "$py" -m venv --without-pip "$here/venv"
  pip_wheel=$(ls "$here"/wheels/pip-*.whl | head -n 1)
  "$here/venv/bin/python" -s "$pip_wheel/pip" install --quiet --no-index --no-cache-dir \
    --disable-pip-version-check --find-links "$here/wheels" -r "$here/wheels/requirements.txt"
  touch "$here/venv/.complete"
fi
mkdir -p "$here/home" "$here/tmp"
export HOME="$here/home" TMPDIR="$here/tmp" XDG_CACHE_HOME="$here/home/.cache"
export ANSIBLE_HOME="$here/home/.ansible" ANSIBLE_LOCAL_TEMP="$here/tmp/ansible-local"
export ANSIBLE_REMOTE_TEMP="$here/tmp/ansible-remote" PYTHONDONTWRITEBYTECODE=1
export PATH="$here/venv/bin:$PATH"
cd "$here"
exec "$here/venv/bin/python" -s -m harness.kit_run "$@"
"""


def keep_plan(kit_id: str, paper: str, experiment: str, resolved: dict, plans: Path | None = None) -> Path:
    """Keep a kit's plan at home (``plans``, default ``KIT_PLANS``): the points its run must hold, controls
    included (``resolved``, as the run's ``resolved.yaml``). Returns the file."""
    path = Path(plans or KIT_PLANS) / f"{kit_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, {"format": PLAN_FORMAT, "schema_version": SCHEMA_VERSION, "kit_id": kit_id, "paper": paper,
                      "experiment": experiment, "kept_utc": iso(utc_now()), "resolved": plain(resolved)})
    return path


def plain(doc):
    """``doc`` as JSON holds it (the kit's plan.json and its plan kept at home): two plans compare equal this
    way whichever file they were read from (a run's resolved.yaml too)."""
    return json.loads(json.dumps(doc, default=str, sort_keys=True))


def kept_plan(kit_id: str, plans: Path | None = None) -> dict | None:
    """The plan of kit ``kit_id`` kept at home, None when it is not here."""
    path = Path(plans or KIT_PLANS) / f"{kit_id}.json"
    if "/" in kit_id or not path.is_file():
        return None
    doc = read_json(path)
    if doc.get("format") != PLAN_FORMAT or doc.get("kit_id") != kit_id:
        raise HarnessError(f"{path}: not the kept plan of kit {kit_id}")
    return doc


def build_kit(paper_id: str, experiment_id: str, out: Path, *, scale: str = "smoke", build: str = "auto",
              overrides: dict | None = None, repeat: int | None = None, variants: list[str] | None = None,
              controls: bool = True, python: str | None = None, max_bytes: int = MAX_BYTES,
              preset: int = 9, source: str = "auto", plans: Path | None = None, log=print) -> dict:
    """Build the kit of one experiment into ``out`` (a ``.tar.xz``) and return its manifest (``kit.json``).
    Its plan is kept at home in ``plans`` (default ``KIT_PLANS``; ``keep_plan``).

    The plan is ``invoke reproduce``'s for the same options (``reproduce.plan_experiments``), on the
    local provider. ``python`` is the target's Python (MAJOR.MINOR; default this one's). Refuses,
    naming them, components a kit cannot carry, and a kit larger than ``max_bytes``. ``preset`` is xz's
    (9: a 64 MiB window, in which the near-identical commands of several upstream builds compress to
    one; the tests take 0, which is fast).
    """
    from .providers.local import LocalProvider
    from .reproduce import build_choice, lay_out_run, measuring_plan, network_links, plan_experiments, \
        skip_reason, variant_switches, variant_systems
    py = target_python(python or f"{sys.version_info[0]}.{sys.version_info[1]}")
    paper = load_paper(paper_id)
    experiment = paper.experiment(experiment_id)
    reason = skip_reason(experiment, None, "local")
    if reason:
        raise HarnessError(f"kit: {experiment_id} cannot run on a kit's single host: {reason}")
    kinds, by_experiment = plan_experiments(paper, [experiment], scale, build, source, None, variants, overrides,
                                            repeat, controls)
    plan, (kind, fallback) = by_experiment[experiment_id], kinds[experiment_id]
    if any("network_latency_ms" in p.parameters for p in plan.points):
        raise HarnessError(f"kit: {experiment_id} sweeps network_latency_ms, which needs hosts apart (netns, ssh)")
    choice = build_choice(experiment, plan, kind, fallback, source, None, io.StringIO())
    layout = choice.layout()
    refused = tool_refusals(layout)
    if refused:
        raise HarnessError("kit: cannot carry " + "; ".join(refused))
    # Upstream builds for the kit are linked statically, in their own cache.
    if choice.kind == "upstream":
        saved = {k: os.environ.get(k) for k in STATIC_GO}
        os.environ.update(STATIC_GO)
        try:
            # a user's own commit of a system (--set fabric_ref=...; harness/user_refs.py), as reproduce builds it
            prepare(choice, variant_systems(plan), source, log=log, builds_dir=KIT_BUILD / "upstream",
                    pins=user_refs.pins(plan.points, choice.kind, source, None, log=log,
                                        experiment=plan.experiment))
        finally:
            for k, v in saved.items():
                os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    commands = sorted(set(choice.binaries()) | {"committerbench"})  # committerbench: the work check's rate
    bin_dir = static_commands(commands, log)
    wheels = wheelhouse(py, log)

    # The upstream builds' files the roles use, each build as build/upstream/<system>/<key>/ in the kit.
    builds = {str(b.path): b for b in [*choice.builds.values(),
                                       *[c for cs in choice.companions.values() for c in cs.values()]]}
    build_paths = {path: f"build/upstream/{b.system}/{b.info['key']}" for path, b in builds.items()}
    carried: dict[str, Path] = {}  # path in the kit -> file or folder here
    for name in commands:
        carried[f"bin/{name}"] = bin_dir / name
    roles = sorted({r for spec in [*choice.drivers.values(), *choice.variant_drivers.values()] for r in spec["roles"]})
    for role in roles:
        if not _uses_upstream(role) or not builds:
            continue
        files = upstream_files(role)
        if files is None:
            raise HarnessError(f"kit: cannot carry role {role}: it uses its upstream build in place and its "
                               "tasks/install.yml lists no files to copy")
        for path, b in builds.items():
            for rel in files:
                src = Path(path) / rel
                if src.exists():
                    carried[f"{build_paths[path]}/{rel.rstrip('/')}"] = src
    dynamic = [arc for arc, src in sorted(carried.items()) if src.is_file() and elf_linking(src) == "dynamic"]
    if dynamic:
        raise HarnessError("kit: cannot carry dynamically linked binaries: " + ", ".join(dynamic),
                           hint="a kit takes static binaries only (CGO_ENABLED=0)")
    for path, arc in build_paths.items():
        carried[f"{arc}/build.json"] = Path(path) / "build.json"
    carried = stripped(carried, KIT_BUILD / "stripped")

    git = git_state()
    build_meta = choice.metadata(variant_switches(plan))
    build_meta["kit_link"] = "static (CGO_ENABLED=0, -trimpath)"
    # the measuring loop's plan (harness/point_loop.py), as reproduce makes it for the local provider
    laid, placed, topology = lay_out_run(plan.experiment, choice, LocalProvider())
    plan_doc = {
        **measuring_plan(plan, choice, paper.doc["paper"], topology, network_links(plan.experiment, laid, None, placed),
                         where=lambda path: build_paths[path]),
        "schema_version": SCHEMA_VERSION, "paper": paper.doc["paper"], "resolved": plan.resolved,
        "scale": plan.scale, "seed": plan.resolved["parameters"].get("seed", {}).get("value"),
        "build": build_meta, "layout": layout,  # the build's {role: [component]}, for the target's preflight
        "driver_layouts": [{c: ([r] if isinstance(r, str) else list(r)) for c, r in spec["placement"].items()}
                           for spec in [*choice.drivers.values(), *choice.variant_drivers.values()]],
        "largest_cpus": largest_cpus(plan),
    }
    wheel_files = sorted(p.name for p in wheels.glob("*.whl"))
    manifest = {
        "format": KIT_FORMAT, "schema_version": SCHEMA_VERSION,
        "kit_id": f"{utc_now().strftime('%Y%m%dT%H%M%SZ')}-{paper_id}-{experiment_id}-{git['short']}",
        "made_utc": iso(utc_now()), "made_on": socket.gethostname(), "git": git,
        "paper": paper_id, "experiment": experiment_id, "scale": plan.scale, "build": choice.kind,
        "points": len(plan.points), "target": {"os": "linux", "machine": "x86_64",
                                               "python": f"{py[0]}.{py[1]}"},
        "wheels": wheel_files, "requirements": wheel_requirements(py),
        "binaries": {arc: {"sha256": sha256_file(src), "bytes": src.stat().st_size}
                     for arc, src in sorted(carried.items()) if src.is_file() and elf_linking(src)},
        "binaries_stripped": shutil.which("strip") is not None,
        "not_carried": {"per-host metrics": "Prometheus and node-exporter (dynamically linked here, and storing "
                                            "their series needs pandas): a kit's run has none"},
    }
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".partial")
    started = time.monotonic()
    with lzma.open(tmp, "wb", preset=preset) as xz, tarfile.open(fileobj=xz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        def text(arc: str, body: str, mode: int = 0o644):
            data = body.encode()
            info = tarfile.TarInfo(f"kit/{arc}")
            info.size, info.mode, info.mtime = len(data), mode, int(time.time())
            tar.addfile(info, io.BytesIO(data))
        text("kit.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        text("plan.json", json.dumps(plan_doc, indent=2, sort_keys=True, default=str) + "\n")
        text("run", RUN_SCRIPT, 0o755)
        for f in harness_modules():
            _add_tree(tar, f, "kit/" + f.relative_to(REPO_ROOT).as_posix())
        _add_tree(tar, REPO_ROOT / "playbooks", "kit/playbooks")
        for folder in sorted([*(REPO_ROOT / "systems").glob("*/roles"), *(REPO_ROOT / "systems").glob("*/playbooks")]):
            _add_tree(tar, folder, "kit/" + folder.relative_to(REPO_ROOT).as_posix())
        # like files side by side (the same command of several builds), within the compressor's window
        for arc, src in sorted(carried.items(), key=lambda kv: (Path(kv[0]).name, kv[0])):
            _add_tree(tar, src, f"kit/{arc}")
        for name in wheel_files:
            _add_tree(tar, wheels / name, f"kit/wheels/{name}")
        text("wheels/requirements.txt", "\n".join(wheel_requirements(py)) + "\n")
    size = tmp.stat().st_size
    if size > max_bytes:
        tmp.unlink()
        raise HarnessError(f"kit: {size / 2**20:.1f} MiB, more than the {max_bytes / 2**20:.0f} MiB allowed "
                           f"({experiment_id}, {choice.kind} build); nothing written")
    os.replace(tmp, out)
    manifest["plan_kept"] = str(keep_plan(manifest["kit_id"], paper_id, experiment_id, plan.resolved, plans))
    manifest["bytes"] = size
    manifest["pack_s"] = round(time.monotonic() - started, 1)
    log(f"kit: {out} ({size / 2**20:.1f} MiB, {len(plan.points)} points, {choice.kind} build, "
        f"Python {py[0]}.{py[1]}); on the target: tar xJf {out.name} && ./kit/run")
    return manifest


# ---------------------------------------------------------------- at home: a kit's run into the store

def _safe_members(tar: tarfile.TarFile) -> list[tarfile.TarInfo]:
    members = tar.getmembers()
    for m in members:
        parts = Path(m.name).parts
        if m.name.startswith("/") or ".." in parts or not (m.isfile() or m.isdir() or m.issym()):
            raise HarnessError(f"not a kit's run: member {m.name!r} is not a plain file or folder inside it")
        if m.issym() and (m.linkname.startswith("/") or ".." in Path(m.linkname).parts):
            raise HarnessError(f"not a kit's run: link {m.name!r} points outside it")
    return members


def ingest(archive: Path, results: Path | None = None, log=print, plans: Path | None = None) -> Run:
    """Store a kit's ``run.tar.gz`` in the run store and analyse it as a local run is analysed.

    The archive must be a kit's run (``kit-run.json``), whole (every file's sha256 as the target wrote
    it) and not stored yet; otherwise nothing is stored and the error says why. Every measured point is
    converted and analysed (``runner.analyze_point``), then the run (``analyze.analyze_run``);
    ``metadata.json`` keeps the host it was measured on and says where it came from (``ingested``).
    The run is held against the kit's plan kept at home (``plans``, default ``KIT_PLANS``), not against
    the target's manifest: a run missing a point of that plan, or without a plan kept here, is stored
    ``incomplete``, naming what is missing (``account_for_plan``). The archive is left as it is.
    """
    from .reproduce import RESULTS
    results = Path(results or RESULTS)
    archive = Path(archive)
    if not archive.is_file():
        raise HarnessError(f"{archive}: no such file")
    try:
        tar = tarfile.open(archive, "r:gz")
    except (tarfile.TarError, OSError, EOFError) as e:
        raise HarnessError(f"{archive}: not a readable tar.gz archive ({e})") from None
    staging = None
    try:
        with tar:
            try:
                members = _safe_members(tar)
                manifest_member = tar.extractfile("kit-run.json") if "kit-run.json" in tar.getnames() else None
                if manifest_member is None:
                    raise HarnessError(f"{archive}: not a kit's run (no kit-run.json; `./kit/run` writes run.tar.gz)")
                manifest = json.loads(manifest_member.read().decode())
                if manifest.get("format") != RUN_FORMAT:
                    raise HarnessError(f"{archive}: not a kit's run (format {manifest.get('format')!r})")
                if manifest.get("schema_version") != SCHEMA_VERSION:
                    raise HarnessError(f"{archive}: schema_version {manifest.get('schema_version')!r} is not "
                                       f"supported (this harness reads {SCHEMA_VERSION})")
                dest = results / manifest["paper"] / manifest["experiment"] / manifest["run_id"]
                if dest.exists() or dest.is_symlink():
                    raise HarnessError(f"{archive}: run {manifest['run_id']} is already in the run store ({dest})")
                dest.parent.mkdir(parents=True, exist_ok=True)
                staging = Path(tempfile.mkdtemp(prefix=".ingest-", dir=dest.parent))
                for m in members:
                    tar.extract(m, staging, set_attrs=False, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
            except (tarfile.TarError, OSError, EOFError, zlib.error, json.JSONDecodeError, KeyError) as e:
                raise HarnessError(f"{archive}: corrupt or incomplete archive ({type(e).__name__}: {e})") from None
        run_dir = staging / "run"
        problems = _check_files(run_dir, manifest["files"])
        if problems:
            raise HarnessError(f"{archive}: the run is not as the target wrote it: " + "; ".join(problems[:5])
                               + (f" and {len(problems) - 5} more" if len(problems) > 5 else ""))
        os.replace(run_dir, dest)
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    run = Run.open(dest)
    run.metadata["ingested"] = {"utc": iso(utc_now()), "archive": archive.name, "archive_sha256": sha256_file(archive),
                                "measured_at": manifest["run_path"], "kit_id": manifest["kit_id"],
                                "on": socket.gethostname()}
    account_for_plan(run, manifest, plans)
    run.save()
    for point_dir in sorted((dest / "points").iterdir()):
        if (point_dir / "measurement.json").is_file():
            _relocate(point_dir / "measurement.json", manifest["run_path"], str(dest))
            analyze_point(point_dir)
    analyze_run(run)
    log(f"ingested {archive} -> {dest} (measured on {run.metadata['host'].get('hostname')}, "
        f"status {run.metadata['status']}" + (f": {run.metadata['reason']}" if run.metadata.get("reason") else "")
        + ")")
    return run


def account_for_plan(run: Run, manifest: dict, plans: Path | None = None) -> list[str]:
    """Hold an ingested run against its kit's plan kept at home: every point of it, controls included, must be
    in the run (``points/<point>/point.json``), and the run's ``resolved.yaml`` must be that plan. Otherwise
    the run is ``incomplete`` (a failed or interrupted run keeps its status) with a reason naming what is
    missing; recorded in ``metadata.json`` ``ingested.plan``. Returns the problems."""
    kit_id = str(manifest.get("kit_id"))
    home = kept_plan(kit_id, plans)
    where = str(Path(plans or KIT_PLANS) / f"{kit_id}.json")
    problems, missing = [], []
    if home is None:
        problems.append(f"no plan of kit {kit_id} is kept here ({where}; `invoke kit` keeps it where the kit is "
                        "built): nothing says which points the run must hold")
    else:
        if (home["paper"], home["experiment"]) != (manifest.get("paper"), manifest.get("experiment")):
            problems.append(f"kit {kit_id} was built for {home['paper']}/{home['experiment']}, the run is of "
                            f"{manifest.get('paper')}/{manifest.get('experiment')}")
        planned = [str(p) for p in home["resolved"].get("points") or []]
        missing = [p for p in planned if not (run.path / "points" / p / "point.json").is_file()]
        if missing:
            problems.append(f"{len(missing)} of the {len(planned)} point(s) of the kit's plan are not in the run: "
                            + ", ".join(f"{p} (control)" if p.startswith("control__") else p for p in missing))
        if plain(run.stored("resolved")) != plain(home["resolved"]):
            problems.append("the run's resolved.yaml is not the kit's plan kept at home")
    run.metadata["ingested"]["plan"] = {"kept": where if home is not None else None, "missing_points": missing,
                                        "problems": problems}
    if problems:
        reason = "; ".join(problems)
        if run.metadata.get("status") in ("complete", "running", "incomplete"):
            run.metadata.update(status="incomplete", reason=reason)
        else:
            run.metadata["reason"] = f"{run.metadata.get('reason') or run.metadata.get('status')}; incomplete: {reason}"
    return problems


def _check_files(run_dir: Path, files: dict[str, str]) -> list[str]:
    """Every file the target listed, with its sha256, and no other."""
    problems = []
    found = {p.relative_to(run_dir).as_posix() for p in run_dir.rglob("*") if p.is_file() and not p.is_symlink()}
    for rel, digest in sorted(files.items()):
        if rel not in found:
            problems.append(f"{rel} is missing")
        elif sha256_file(run_dir / rel) != digest:
            problems.append(f"{rel} differs from the target's")
    problems += [f"{rel} was not written by the target" for rel in sorted(found - set(files))]
    return problems


def _relocate(path: Path, old: str, new: str) -> None:
    """Paths of the run directory on the target, in a stored record, as they are here."""
    doc = read_json(path)
    if isinstance(doc.get("log"), str) and doc["log"].startswith(old):
        doc["log"] = new + doc["log"][len(old):]
    write_json(path, doc)
