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
import sys
import tarfile
import tempfile
import time
import zlib
from pathlib import Path

from . import REPO_ROOT, SCHEMA_VERSION, kit_java, kit_target, user_refs
from .analyze import analyze_run
from .builds import prepare
from .catalogue import load_paper
from .errors import HarnessError
from .preflight import largest_cpus
from .rundir import Run, git_state, iso, read_json, utc_now, write_json
from .runner import analyze_point
from .upstream_source import sha256_file
from .kit_parts import (  # noqa: F401 (re-exported: harness.kit is the kit's one entry point)
    KIT_FORMAT, RUN_FORMAT, KIT_BUILD, KIT_PLANS, PLAN_FORMAT, MAX_BYTES, TARGET_TOOLS, OLDEST_PYTHON,
    OLDER_ANSIBLE, WHEEL_PACKAGES, STATIC_GO, elf_linking, tool_refusals, upstream_files, uses_upstream,
    target_python, wheel_requirements, wheelhouse, static_commands, stripped, harness_modules, repo_files, made_files,
    stored_jars, role_commands, KitTooLarge, carried_alone)


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
# before anything is made: can this host hold the plan, and how long will it take (harness/kit_target.py)
(cd "$here" && "$py" -s -m harness.kit_target)
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
# the kit's own Java runtime (harness/kit_java.py) before anything on the target's PATH
if [ -x "$here/java/bin/java" ]; then export JAVA_HOME="$here/java" PATH="$here/java/bin:$PATH"; fi
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


def _kit_choice(paper, experiment_id: str, scale: str, build: str, source: str, overrides, repeat, variants,
                controls: bool, log):
    """The experiment's plan as ``invoke reproduce`` makes it, the build chosen for it and its layout; refuses
    what a kit's single host cannot run, and components needing a tool the kit does not carry."""
    from .reproduce import build_choice, plan_experiments, skip_reason
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
    refused = tool_refusals(layout, {"java"} if kit_java.jdk_tools() else set())
    if refused:
        raise HarnessError("kit: cannot carry " + "; ".join(refused))
    return plan, choice, layout


def _prepare_static(choice, plan, source: str, log) -> None:
    """Upstream builds for the kit, linked statically, in their own cache (``KIT_BUILD/upstream``); a user's own
    commit of a system (``--set fabric_ref=...``; harness/user_refs.py) as reproduce builds it."""
    from .reproduce import variant_systems
    if choice.kind != "upstream":
        return
    saved = {k: os.environ.get(k) for k in STATIC_GO}
    os.environ.update(STATIC_GO)
    try:
        prepare(choice, variant_systems(plan), source, log=log, builds_dir=KIT_BUILD / "upstream",
                pins=user_refs.pins(plan.points, choice.kind, source, None, log=log, experiment=plan.experiment))
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)


def _carried(choice, commands: list[str], bin_dir: Path) -> tuple[dict[str, Path], dict[str, str]]:
    """(path in the kit -> file or folder here, upstream build path -> its path in the kit): the static commands,
    the upstream builds' files the roles use (each build as ``build/upstream/<system>/<key>/``) and their
    ``build.json``, stripped; refuses a role that uses its build in place without a list, and dynamic binaries."""
    builds = {str(b.path): b for b in [*choice.builds.values(),
                                       *[c for cs in choice.companions.values() for c in cs.values()]]}
    build_paths = {path: f"build/upstream/{b.system}/{b.info['key']}" for path, b in builds.items()}
    carried: dict[str, Path] = {f"bin/{name}": bin_dir / name for name in commands}
    roles = sorted({r for spec in [*choice.drivers.values(), *choice.variant_drivers.values()] for r in spec["roles"]})
    for role in roles:
        for rel in repo_files(role):
            if not (REPO_ROOT / rel).exists():
                raise HarnessError(f"kit: role {role} needs {rel} on the controller, which is not here to carry (a "
                                   "local run of the experiment fetches it)")
            carried[rel.rstrip("/")] = REPO_ROOT / rel
        if not uses_upstream(role) or not builds:
            continue
        files = upstream_files(role)
        if files is None:
            raise HarnessError(f"kit: cannot carry role {role}: it uses its upstream build in place and neither its "
                               "tasks/install.yml nor its meta/kit.yml lists the files it needs")
        for path in builds:
            for rel in files:
                src = Path(path) / rel
                if src.exists():
                    carried[f"{build_paths[path]}/{rel.rstrip('/')}"] = src
            if all((Path(path) / rel).exists() for rel in files):  # a build this role runs on (another variant's not)
                made = made_files(role, Path(path), KIT_BUILD / "made" / build_paths[path])
                carried.update({f"{build_paths[path]}/{rel}": src for rel, src in made.items()})
    dynamic = [arc for arc, src in sorted(carried.items()) if src.is_file() and elf_linking(src) == "dynamic"]
    if dynamic:
        raise HarnessError("kit: cannot carry dynamically linked binaries: " + ", ".join(dynamic),
                           hint="a kit takes static binaries only (CGO_ENABLED=0)")
    for path, arc in build_paths.items():
        carried[f"{arc}/build.json"] = Path(path) / "build.json"
    return stored_jars(stripped(carried, KIT_BUILD / "stripped"), KIT_BUILD / "stored"), build_paths


def _plan_doc(paper, plan, choice, layout: dict, build_paths: dict[str, str]) -> dict:
    """``plan.json``: the measuring loop's plan (harness/point_loop.py), as reproduce makes it for the local
    provider, with the builds' paths relative to the kit."""
    from .providers.local import LocalProvider
    from .reproduce import lay_out_run, measuring_plan, network_links, variant_switches
    build_meta = choice.metadata(variant_switches(plan))
    build_meta["kit_link"] = "static (CGO_ENABLED=0, -trimpath)"
    laid, placed, topology = lay_out_run(plan.experiment, choice, LocalProvider())
    return {
        **measuring_plan(plan, choice, paper.doc["paper"], topology, network_links(plan.experiment, laid, None, placed),
                         where=lambda path: build_paths[path]),
        "schema_version": SCHEMA_VERSION, "paper": paper.doc["paper"], "resolved": plan.resolved,
        "scale": plan.scale, "seed": plan.resolved["parameters"].get("seed", {}).get("value"),
        "build": build_meta, "layout": layout,  # the build's {role: [component]}, for the target's preflight
        "driver_layouts": [{c: ([r] if isinstance(r, str) else list(r)) for c, r in spec["placement"].items()}
                           for spec in [*choice.drivers.values(), *choice.variant_drivers.values()]],
        "largest_cpus": largest_cpus(plan),
    }


def _manifest(paper_id: str, experiment_id: str, plan, choice, py: tuple[int, int], wheel_files: list[str],
              carried: dict[str, Path], java: dict | None) -> dict:
    """``kit.json``: what the kit is, for whom, and what it carries."""
    git = git_state()
    return {
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
        **({"java": java} if java else {}),
        "not_carried": {"per-host metrics": "Prometheus and node-exporter (dynamically linked here, and storing "
                                            "their series needs pandas): a kit's run has none"},
    }


def _space_part(arc: str) -> str:
    """What a kit member counts as in the manifest's ``space``: its upstream build, ``java``, ``bin``, ``wheels``..."""
    parts = arc.split("/")
    if parts[1:3] == ["build", "upstream"] and len(parts) > 3:
        return "build/upstream/" + parts[3]
    return "kit files (kit.json, plans, run)" if parts[1:] in (["kit.json"], ["plan.json"], ["run"]) \
        or parts[1] == "plans" else parts[1]


def _write_archive(tmp: Path, texts: dict[str, str], carried: dict[str, Path], wheels: Path,
                   wheel_files: list[str], py: tuple[int, int], java_dir: Path | None, preset: int) -> dict:
    """The kit (``kit/...`` in one ``.tar.xz``: ``texts``, e.g. kit.json and the plans, then the rest); returns
    the bytes each part took before compression."""
    space: dict[str, int] = {}
    with lzma.open(tmp, "wb", preset=preset) as xz, tarfile.open(fileobj=xz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        def text(arc: str, body: str, mode: int = 0o644):
            data = body.encode()
            info = tarfile.TarInfo(f"kit/{arc}")
            info.size, info.mode, info.mtime = len(data), mode, int(time.time())
            tar.addfile(info, io.BytesIO(data))
            space[_space_part(info.name)] = space.get(_space_part(info.name), 0) + len(data)

        def tree(src: Path, arc: str):
            _add_tree(tar, src, arc)
            space[_space_part(arc)] = space.get(_space_part(arc), 0) + kit_java.tree_bytes(src)
        for arc, body in texts.items():
            text(arc, body)
        text("run", RUN_SCRIPT, 0o755)
        for f in harness_modules():
            tree(f, "kit/" + f.relative_to(REPO_ROOT).as_posix())
        tree(REPO_ROOT / "playbooks", "kit/playbooks")
        for folder in sorted([*(REPO_ROOT / "systems").glob("*/roles"), *(REPO_ROOT / "systems").glob("*/playbooks")]):
            tree(folder, "kit/" + folder.relative_to(REPO_ROOT).as_posix())
        # like files side by side (the same command of several builds), within the compressor's window
        for arc, src in sorted(carried.items(), key=lambda kv: (Path(kv[0]).name, kv[0])):
            tree(src, f"kit/{arc}")
        if java_dir is not None:
            tree(java_dir, f"kit/{kit_java.ARC}")
        for name in wheel_files:
            tree(wheels / name, f"kit/wheels/{name}")
        text("wheels/requirements.txt", "\n".join(wheel_requirements(py)) + "\n")
    return dict(sorted(space.items(), key=lambda kv: -kv[1]))


def _experiment_part(paper, experiment_id: str, scale: str, build: str, source: str, overrides, repeat, variants,
                     controls: bool, log) -> dict:
    """One experiment's share of a kit: its plan, build choice and layout, and the files it carries."""
    plan, choice, layout = _kit_choice(paper, experiment_id, scale, build, source, overrides, repeat, variants,
                                       controls, log)
    _prepare_static(choice, plan, source, log)
    roles = [r for spec in [*choice.drivers.values(), *choice.variant_drivers.values()] for r in spec["roles"]]
    # committerbench: the work check's rate; a role's own commands (meta/kit.yml commands)
    commands = sorted(set(choice.binaries()) | {"committerbench"} | role_commands(roles))
    carried, build_paths = _carried(choice, commands, static_commands(commands, log))
    return {"id": experiment_id, "plan": plan, "choice": choice, "layout": layout, "carried": carried,
            "build_paths": build_paths}


def _java_for(parts: list[dict], carried: dict[str, Path], log) -> tuple[Path | None, dict | None]:
    """The kit's Java runtime where a component of its experiments needs java (harness/kit_java.py)."""
    components = sorted({c for p in parts for c in kit_java.java_components(p["layout"])})
    if not components:
        return None, None
    jars = [p for src in carried.values() for p in ([src] if src.is_file() else src.rglob("*.jar")) if p.suffix == ".jar"]
    java_dir, java = kit_java.runtime(jars, log)
    return java_dir, {**java, "components": components, "path": kit_java.ARC,
                      "links": f"the target's C library: glibc >= {java.get('glibc_at_least')}, as the JDK it was "
                               "made from"}


def _needs(paper_id: str, parts: list[dict], py: tuple[int, int], java: dict | None, results: Path | None) -> dict:
    """``kit.json`` ``needs``: what the plans ask of the target and their points' costs measured in this machine's
    run store ``results`` (default ``results/``), for ./kit/run's first check (harness/kit_target.py)."""
    from .preflight import MIN_FREE_GIB
    from .reproduce import RESULTS
    scale = parts[0]["plan"].scale
    return kit_target.plan_needs([(paper_id, p["id"], [pt.to_dict() for pt in p["plan"].points],
                                   largest_cpus(p["plan"])) for p in parts], Path(results or RESULTS), py,
                                 (java or {}).get("glibc_at_least"), MIN_FREE_GIB.get(scale, MIN_FREE_GIB["smoke"]))


def build_kit(paper_id: str, experiment_id: str | list[str], out: Path, *, scale: str = "smoke",
              build: str = "auto", overrides: dict | None = None, repeat: int | None = None,
              variants: list[str] | None = None, controls: bool = True, python: str | None = None,
              max_bytes: int = MAX_BYTES, preset: int = 9, source: str = "auto", plans: Path | None = None,
              results: Path | None = None, log=print) -> dict:
    """Build the kit of one experiment, or of several (a list), into ``out`` (a ``.tar.xz``) and return its
    manifest (``kit.json``, with ``bytes``, ``pack_s``, ``wall_s`` and ``space``: what each part took before
    compression). Each experiment's plan is kept at home in ``plans`` (default ``KIT_PLANS``; ``keep_plan``).
    One experiment's kit holds ``plan.json``; several share one archive (their binaries, runtime and
    wheelhouse once), each with its own manifest under ``kit.json`` ``kits`` and its plan in ``plans/<id>.json``.

    The plan is ``invoke reproduce``'s for the same options (``reproduce.plan_experiments``), on the
    local provider. ``python`` is the target's Python (MAJOR.MINOR; default this one's). Refuses,
    naming them, components a kit cannot carry, and a kit larger than ``max_bytes``. A component that needs
    ``java`` gets the kit's own runtime (harness/kit_java.py). ``needs`` says what the target must hold and what
    each point cost in ``results`` (this machine's run store; harness/kit_target.py). ``preset`` is xz's (9: a 64 MiB window, in
    which the near-identical commands of several upstream builds compress to one; the tests take 0, fast).
    """
    began = time.monotonic()
    ids = [experiment_id] if isinstance(experiment_id, str) else list(experiment_id)
    py = target_python(python or f"{sys.version_info[0]}.{sys.version_info[1]}")
    paper = load_paper(paper_id)
    parts = [_experiment_part(paper, e, scale, build, source, overrides, repeat, variants, controls, log) for e in ids]
    carried = {arc: src for p in parts for arc, src in p["carried"].items()}
    java_dir, java = _java_for(parts, carried, log)
    wheels = wheelhouse(py, log)
    wheel_files = sorted(p.name for p in wheels.glob("*.whl"))
    manifests = {p["id"]: _manifest(paper_id, p["id"], p["plan"], p["choice"], py, wheel_files, p["carried"], java)
                 for p in parts}
    docs = {p["id"]: json.dumps(_plan_doc(paper, p["plan"], p["choice"], p["layout"], p["build_paths"]), indent=2,
                                sort_keys=True, default=str) + "\n" for p in parts}
    if len(ids) == 1:
        manifest, texts = manifests[ids[0]], {"plan.json": docs[ids[0]]}
    else:
        manifest = {"format": KIT_FORMAT, "schema_version": SCHEMA_VERSION, "paper": paper_id, "experiments": ids,
                    "made_utc": iso(utc_now()), "made_on": socket.gethostname(),
                    "target": manifests[ids[0]]["target"], "kits": manifests}
        texts = {f"plans/{e}.json": body for e, body in docs.items()}
    manifest["needs"] = _needs(paper_id, parts, py, java, results)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".partial")
    started = time.monotonic()
    space = _write_archive(tmp, {"kit.json": json.dumps(manifest, indent=2, sort_keys=True) + "\n", **texts},
                           carried, wheels, wheel_files, py, java_dir, preset)
    size = tmp.stat().st_size
    took = ", ".join(f"{part} {n / 2**20:.1f}" for part, n in space.items() if n >= 2**20 / 10)
    if size > max_bytes:
        tmp.unlink()
        raise KitTooLarge(f"kit: {size / 2**20:.1f} MiB, more than the {max_bytes / 2**20:.0f} MiB allowed "
                          f"({', '.join(ids)}; MiB before compression: {took}); nothing written",
                          carried_alone(parts, java_dir,
                                        [p["id"] for p in parts if kit_java.java_components(p["layout"])]))
    os.replace(tmp, out)
    for p in parts:
        manifests[p["id"]]["plan_kept"] = str(keep_plan(manifests[p["id"]]["kit_id"], paper_id, p["id"],
                                                        p["plan"].resolved, plans))
    manifest.update(bytes=size, pack_s=round(time.monotonic() - started, 1), wall_s=round(time.monotonic() - began, 1),
                    space=space, points=sum(len(p["plan"].points) for p in parts))
    log(f"kit: {out} ({size / 2**20:.1f} MiB, {', '.join(ids)}: {manifest['points']} points, Python {py[0]}.{py[1]}; "
        f"MiB before compression: {took}); on the target: tar xJf {out.name} && ./kit/run")
    return manifest


def kit_experiments(paper_id: str, experiments: list[str] | None = None) -> list[str]:
    """The experiments ``invoke kit`` carries: those named (``--experiment``, repeatable), else the paper's own,
    as ``invoke reproduce`` runs them (``reproduce.is_ours``: experiments of ours only when named)."""
    from .reproduce import is_ours
    paper = load_paper(paper_id)
    if experiments:
        for e in experiments:
            paper.experiment(e)  # an unknown id fails here, naming the paper's
        return list(dict.fromkeys(experiments))
    return [e["id"] for e in paper.experiments if not is_ours(e)]


def build_kits(paper_id: str, experiments: list[str] | None, out: Path, log=print, **options) -> dict:
    """``invoke kit``: one kit (``out``) of every experiment that can go (``kit_experiments``; ``build_kit`` with
    ``options``). Where none was named, an experiment that cannot go (``_kit_choice`` refuses it) is left out,
    naming why; a named one that cannot go fails. Returns ``{"kit": manifest, "left_out": {experiment: why}}``."""
    chosen = kit_experiments(paper_id, experiments)
    left_out = {}
    if not experiments:
        paper = load_paper(paper_id)
        for experiment_id in chosen:
            try:
                _kit_choice(paper, experiment_id, options.get("scale", "smoke"), options.get("build", "auto"),
                            options.get("source", "auto"), options.get("overrides"), options.get("repeat"),
                            options.get("variants"), options.get("controls", True), log)
            except HarnessError as e:
                left_out[experiment_id] = str(e)
                log(f"kit: left out {experiment_id}: {e}")
    going = [e for e in chosen if e not in left_out]
    if not going:
        raise HarnessError(f"kit: no experiment of {paper_id} can go in a kit: "
                           + "; ".join(f"{k}: {v}" for k, v in left_out.items()))
    while True:
        try:
            manifest = build_kit(paper_id, going[0] if len(going) == 1 else going, out, log=log, **options)
            return {"kit": manifest, "left_out": left_out}
        except KitTooLarge as e:
            # the paper's kit over the limit: leave out the experiment whose files alone take the most, say so,
            # and pack the rest (named experiments are the user's choice: refused whole)
            if experiments or len(going) == 1:
                raise
            largest = max(going, key=lambda x: e.alone.get(x, 0))
            left_out[largest] = (f"the kit of all {len(going)} went over the size limit ({e}); {largest} alone "
                                 f"carries {e.alone.get(largest, 0) / 2**20:.1f} MiB before compression: build its "
                                 f"kit apart (invoke kit --paper {paper_id} --experiment {largest})")
            log(f"kit: left out {largest}: {left_out[largest]}")
            going.remove(largest)


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
