"""Upstream builds: the published code of a system, pinned, fetched, verified, patched and built.

A system's recipe is ``systems/<system>/upstream.yaml`` (schema
``harness/schemas/upstream.json``): the repository and full commit, the
snapshot that holds the same tree, the toolchain, the build targets, the
chaincode built beside it, and the series of our patches
(``systems/<system>/patches/``, applied in order with ``git apply``).

The steps, each recorded in the build's ``build.json``:

1. **source** (``harness.upstream_source``): the snapshot in ``../shared/upstream/``
   (its sha256 checked against ``MANIFEST.tsv``, its commit against the pin) or a
   ``git clone`` of the pinned commit (the ref's commit checked against the pin).
2. **patch** (``harness.upstream_recipe``): every patch of the series, in order,
   then the patches of each *flavour* whose ``when`` matches the variant's
   switches (a flavour may also build on another system's recipe, ``base``, and
   copy paths from another system's pinned tree, ``graft``).
3. **build**: ``go build`` of each target in GOPATH mode, and each chaincode
   in the same GOPATH; then each ``component`` (another repository at its own
   pin) with its build kind, which a system's plugin defines
   (``harness.plugin_api.BuildKind``), kept under ``components/<name>/``. A
   component may merge a second commit of its repository (``merge``, git source
   only), take its own patches, and take files built by an earlier component
   (``inputs``); a flavour may replace or add components (``components``).

A build is kept under ``build/upstream/<system>/<key>/`` where the key hashes
the commit, the patches' contents, the toolchain and the chaincode sources: a
second build with the same inputs reuses it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import REPO_ROOT, SCHEMA_VERSION, systems
from .errors import HarnessError, choose
from .plugin_api import BuildContext, BuildKind
from .tools import require_tool
from .upstream_recipe import (SYSTEMS, Patch, already_applied, apply_patch, at_pin, component_kinds,
                              component_patches, load_recipe, matching_flavours, patch_series, patches_for_driver)
from .upstream_source import SOURCES, fetch_source, file_lock, run_command, sha256_file

# Callers know these by harness.upstream; they live beside the source and the recipe they read.
from .upstream_recipe import read_patch, systems_with_recipe  # noqa: F401
from .upstream_source import read_manifest, snapshot_archive, snapshots_dir, source_available  # noqa: F401

BUILDS = REPO_ROOT / "build" / "upstream"
#: go-gopath: the tree under $GOPATH/src, GO111MODULE=off; go-modules: module mode, the tree's vendor/ only.
TOOLCHAIN_KINDS = ("go-gopath", "go-modules")


@dataclass
class Build:
    """A finished upstream build: where it is and what it is."""
    system: str
    path: Path
    info: dict

    @property
    def bin_dir(self) -> Path:
        return self.path / "bin"

    def provenance(self) -> dict:
        """What a run's metadata records about this build."""
        keys = ("system", "repository", "ref", "release", "commit", "built_commit", "key", "source", "patches", "patch_series",
                "toolchain", "flavours", "base", "grafts", "components")
        return {"kind": "upstream", "path": str(self.path), **{k: self.info[k] for k in keys if k in self.info}}


@dataclass(frozen=True)
class _Plan:
    """What one build makes: ``recipe`` is the tree's recipe (the system's, or its flavour's base's) with
    the flavours' targets, chaincodes and components; ``own`` the system's own recipe."""
    system: str
    recipe: dict
    own: dict
    flavours: list
    base: str | None
    patches: list
    left_out: list
    pin: dict | None


def go_version() -> str:
    require_tool("go")
    return run_command(["go", "version"], "go version").strip()


def _kind(name: str) -> BuildKind:
    kinds = systems.build_kinds()
    return kinds[choose("component build kind", name, kinds)]


def toolchain_version(recipe: dict) -> str:
    """``go version``, then the toolchain of each of the components' build kinds, in kind order."""
    return "; ".join([go_version(), *(_kind(kind).toolchain() for kind in component_kinds(recipe))])


def _tree_digest(root: Path) -> str:
    """A digest of the files under ``root`` (names and contents)."""
    h = hashlib.sha256()
    for p in sorted(q for q in Path(root).rglob("*") if q.is_file()):
        h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def build_key(recipe: dict, patches: list[Patch], toolchain_version: str, flavours: list[dict] = (),
              systems_dir: Path = SYSTEMS) -> str:
    """The cache key of a build: commit, patches, toolchain, chaincode sources and flavours.

    A patch counts by its content: the same file reused from another system's folder keeps the key."""
    doc = {"commit": recipe["commit"], "patches": [p.sha256 for p in patches],
           "toolchain": recipe["toolchain"], "toolchain_version": toolchain_version,
           "targets": recipe.get("targets"), "go_flags": _go_flags(recipe),
           "chaincodes": {name: {**cc, "digest": _tree_digest(REPO_ROOT / cc["source"])}
                          for name, cc in sorted((recipe.get("chaincodes") or {}).items())}}
    if recipe.get("components"):  # absent otherwise, so that Go-only builds keep their keys
        doc["components"] = recipe["components"]
        patched = {name: [p.sha256 for p in ps] for name, ps in component_patches(recipe, systems_dir).items() if ps}
        if patched:  # absent otherwise, so that builds without component patches keep their keys
            doc["component_patches"] = patched
    if flavours:  # absent otherwise, so that builds without flavours keep their keys
        doc["flavours"] = [{k: f[k] for k in ("name", "base", "graft", "targets") if k in f} for f in flavours]
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


def _plan(system: str, systems_dir: Path, switches: dict | None, pin: dict | None) -> _Plan:
    """The tree, patches, targets, chaincodes and components of ``system``'s build for ``switches`` at ``pin``."""
    own = load_recipe(system, systems_dir)
    if pin:
        own = at_pin(own, pin)
    flavours = matching_flavours(system, own, switches, systems_dir)
    base = next((f["base"] for f in flavours if f.get("base")), None)
    if pin and base:
        raise HarnessError(f"{system}: flavour {next(f['name'] for f in flavours if f.get('base'))} builds on "
                           f"{base}'s tree, not on a commit of {own['repository']}")
    recipe = load_recipe(base, systems_dir) if base else own
    choose("toolchain kind", recipe["toolchain"]["kind"], TOOLCHAIN_KINDS)
    patches = patch_series(base or system, recipe, systems_dir)
    left_out = []
    if pin and pin.get("driver"):
        patches, left_out = patches_for_driver(patches, pin["driver"])
    not_built = {target for patch in left_out for target in patch.adds_targets}
    targets = {name: package for name, package in recipe["targets"].items() if name not in not_built}
    chaincodes = {**(recipe.get("chaincodes") or {}), **(own.get("chaincodes") or {})}
    components = dict(recipe.get("components") or {})
    for flavour in flavours:
        patches += patch_series(system, own, systems_dir, names=flavour.get("patches") or [])
        targets.update(flavour.get("targets") or {})
        chaincodes.update(flavour.get("chaincodes") or {})  # chaincode that needs the flavour's patches
        for name, component in (flavour.get("components") or {}).items():  # replaces, and builds after the rest
            components.pop(name, None)
            components[name] = component
    recipe = {**recipe, "targets": targets, "chaincodes": chaincodes}
    if components:
        recipe["components"] = components
    return _Plan(system, recipe, own, flavours, base, patches, left_out, pin)


def build(system: str, source: str = "auto", systems_dir: Path = SYSTEMS, builds: Path = BUILDS,
          log=print, switches: dict | None = None, pin: dict | None = None) -> Build:
    """Build ``system``'s upstream code for a variant's ``switches`` (or reuse the same build) and return it.

    The tree is the recipe's (or a matching flavour's ``base`` system's),
    patched with its series and then with each matching flavour's patches;
    ``pin`` builds it at another commit (``at_pin``): of the recipe's series
    only the patches the pin's ``driver`` needs (``patches_for_driver``; every
    patch where the pin names no driver), a patch already in the tree (its
    reverse applies) is recorded as such instead of failing, and
    ``patch_series`` in ``build.json`` says of each patch whether it was
    applied, skipped or already in upstream.
    """
    choose("upstream source", source, SOURCES)
    plan = _plan(system, Path(systems_dir), switches, pin)
    version = toolchain_version(plan.recipe)
    key = build_key(plan.recipe, plan.patches, version, plan.flavours, systems_dir)
    final = Path(builds) / system / key
    final.parent.mkdir(parents=True, exist_ok=True)
    # A go.mod of its own keeps the GOPATH trees below out of an enclosing
    # module's `./...` (this repository's `go vet` and `go test`).
    marker = Path(builds) / "go.mod"
    if not marker.exists():
        marker.write_text("// Upstream builds (harness/upstream.py): GOPATH trees, not part of any module.\n"
                          "module fabricrepro/build/upstream\n", encoding="utf-8")
    with file_lock(final.parent / f"{key}.lock"):
        if (final / "build.json").is_file():
            log(f"upstream {system}: reusing build {key} ({final})")
            return Build(system, final, json.loads((final / "build.json").read_text(encoding="utf-8")))
        work = final.parent / f"{key}.partial"
        shutil.rmtree(work, ignore_errors=True)
        try:
            info = _make(plan, work, source, Path(systems_dir), log)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)  # a failed build leaves nothing behind
            raise
        info["key"] = key
        info["toolchain"]["version"] = version
        (work / "build.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        work.rename(final)
        log(f"upstream {system}: built in {info['build_seconds']} s -> {final}")
        return Build(system, final, info)


def _make(plan: _Plan, work: Path, source: str, systems_dir: Path, log) -> dict:
    """Fetch, patch and build ``plan`` in ``work``; return its ``build.json`` but for the key and the
    toolchain's version."""
    started = time.monotonic()
    recipe = plan.recipe
    tree = work / "gopath" / "src" / recipe["toolchain"]["import_path"]
    log(f"upstream {plan.system}: fetching {recipe['repository']} @ {recipe['commit'][:12]} ({source})")
    fetched = fetch_source(recipe, tree, source)
    release = _check_release(recipe, tree, plan.pin, systems_dir)
    if plan.pin and release:  # the tree's release, not the recipe's, is linked in and recorded
        recipe = {**recipe, "toolchain": {**recipe["toolchain"],
                                          "release": {**recipe["toolchain"]["release"], "version": release}}}
    grafts = [_graft(f["graft"], tree, work, source, systems_dir, log) for f in plan.flavours if f.get("graft")]
    applied, series = _apply_series(plan, tree, log)
    env, modules = _go_builds(plan.system, recipe, work, tree, log)
    components = _build_components(recipe, work / "components", source, log, systems_dir)
    info = {"schema_version": SCHEMA_VERSION, "system": plan.system, "repository": recipe["repository"],
            "ref": recipe.get("ref"), **({"release": release} if release else {}), "commit": recipe["commit"], "built_commit": fetched["commit"],
            "source": fetched, "patches": [p.to_dict() for p in applied], "patch_series": series,
            "flavours": [f["name"] for f in plan.flavours], "base": plan.base, "grafts": grafts,
            "toolchain": {**recipe["toolchain"], "env": {k: env[k] for k in _go_env_keys(recipe)}},
            "modules": modules, "targets": recipe["targets"], "chaincodes": recipe["chaincodes"],
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "build_seconds": round(time.monotonic() - started, 1)}
    if components:
        info["components"] = components
    return info


def _apply_series(plan: _Plan, tree: Path, log) -> tuple[list[Patch], list[dict]]:
    """Apply the plan's patches in order; the applied ones, and each patch's fate (``patch_series``)."""
    applied, series = [], []
    for patch in plan.patches:
        present = already_applied(patch, tree) if plan.pin else None
        if present is not None:
            log(f"upstream {plan.system}: {patch.name} is already in {plan.recipe['commit'][:12]} "
                "(its reverse applies)")
            series.append({"name": patch.name, "status": "already in upstream",
                           "why": "it does not apply and git apply --check --reverse succeeds on the files "
                                  "it changes" + (f" (not added: {', '.join(present)})" if present else "")})
            continue
        log(f"upstream {plan.system}: applying {patch.name}")
        apply_patch(patch, tree)
        applied.append(patch)
        series.append({"name": patch.name, "status": "applied"})
    for patch in plan.left_out:
        needed = ", ".join(patch.needed_by) or "no driver"
        series.append({"name": patch.name, "status": "skipped",
                       "why": f"not needed by driver {plan.pin['driver']} (needed by {needed})"})
    return applied, series


def _go_builds(system: str, recipe: dict, work: Path, tree: Path, log) -> tuple[dict, list[dict]]:
    """Place the recipe's Go modules and build its targets and chaincodes into ``work/bin``; the build's
    environment and the modules placed."""
    modules = [_add_module(m, work / "gopath", tree) for m in recipe["toolchain"].get("modules") or []]
    env = _go_env(recipe, work)
    tags = recipe["toolchain"].get("tags") or []
    _write_go_wrapper(work / "tools")
    (work / "bin").mkdir()
    flags = _go_flags(recipe)
    for name, package in recipe["targets"].items():
        log(f"upstream {system}: go build {package} -> bin/{name}")
        _go_build(env, tree, package, work / "bin" / name, tags, flags=flags)
    if recipe["toolchain"]["kind"] == "go-modules":
        for name, cc in recipe["chaincodes"].items():  # a module of its own: its go.mod and go.sum pin the shim
            src = work / "chaincode" / name
            shutil.copytree(REPO_ROOT / cc["source"], src)
            log(f"upstream {system}: go build chaincode {cc['import_path']} -> bin/{name} (its own module)")
            # its dependencies from the Go module proxy (go.sum checks them) into the user's module cache
            cc_env = {**env, "GOFLAGS": "-mod=readonly", "GOPROXY": os.environ.get("GOPROXY", ""),
                      "GOMODCACHE": run_command(["go", "env", "GOMODCACHE"], "go env GOMODCACHE").strip()}
            _go_build(cc_env, src, ".", work / "bin" / name, tags, what=f"go build chaincode {cc['import_path']}",
                      flags=["-trimpath", "-buildvcs=false"])
        return env, modules
    for name, cc in recipe["chaincodes"].items():
        src = work / "gopath" / "src" / cc["import_path"]
        shutil.copytree(REPO_ROOT / cc["source"], src, ignore=shutil.ignore_patterns("go.mod", "go.sum"))
        log(f"upstream {system}: go build chaincode {cc['import_path']} -> bin/{name}")
        # With the recipe's tags too: Fabric v1.1.0's shim imports the BCCSP factory, whose
        # PKCS#11 half needs cgo headers (ltdl.h) without nopkcs11; later shims do not import it.
        _go_build(env, src, ".", work / "bin" / name, tags, what=f"go build chaincode {cc['import_path']}",
                  flags=flags)
    return env, modules


def _graft(graft: dict, tree: Path, work: Path, source: str, systems_dir: Path, log) -> dict:
    """Copy ``graft['paths']`` from another system's pinned tree into ``tree`` (replacing what is there).

    How a variant takes one mechanism of the published code into another
    base without copying that code into this repository.
    """
    donor = load_recipe(graft["from"], systems_dir)
    where = work / "graft" / graft["from"]
    log(f"upstream: grafting {len(graft['paths'])} path(s) from {donor['repository']} @ {donor['commit'][:12]}")
    fetched = fetch_source(donor, where, source)
    for rel in graft["paths"]:
        src, dest = where / rel, tree / rel
        if not src.exists():
            raise HarnessError(f"graft from {graft['from']}: {rel} does not exist in {donor['repository']} "
                               f"@ {donor['commit'][:12]}")
        if dest.is_dir():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, dest)
    shutil.rmtree(where)
    return {"from": graft["from"], "commit": fetched["commit"], "paths": graft["paths"]}


def _fetch_for_kind(spec: dict, dest: Path, source: str, log=None) -> dict:
    """``BuildContext.fetch_source``: a build kind's further pinned tree (e.g. CouchDB's rebar)."""
    if log:
        log(f"upstream: fetching {spec['repository']} @ {spec['commit'][:12]} ({source})")
    return fetch_source({"system": spec["repository"], **spec}, dest, source)


def _build_components(recipe: dict, root: Path, source: str, log, systems_dir: Path = SYSTEMS) -> dict:
    """Fetch and build each of the recipe's ``components`` under ``root/<name>`` with its build kind.

    A system whose published code spans several repositories (BFT-SMaRt's
    ordering nodes beside the Fabric fork that fronts them) keeps each at its
    own pin; the whole built tree stays, since it runs from there (jars, lib/, config/).
    In order, per component: fetch (and ``merge``), apply its ``patches``,
    delete ``build.remove``, copy its ``inputs`` (``dest: <earlier component>:<path>``,
    e.g. the library jar the nodes link), build.
    """
    out = {}
    patches = component_patches(recipe, systems_dir)
    context = BuildContext(fetch_source=_fetch_for_kind, run_command=run_command, log=log)
    for name, component in (recipe.get("components") or {}).items():
        tree = root / name
        log(f"upstream {recipe['system']}: fetching component {name}: {component['repository']} "
            f"@ {component['commit'][:12]} ({source})")
        if component.get("merge") and source == "snapshot":
            raise HarnessError(f"component {name} merges {component['merge']['commit'][:12]}, which needs "
                               "the repository's history: use --source git (or auto)")
        fetched = fetch_source({**component, "system": f"{recipe['system']}/{name}"}, tree,
                               "git" if component.get("merge") else source)
        for patch in patches[name]:
            log(f"upstream {recipe['system']}: applying {patch.name} to component {name}")
            apply_patch(patch, tree)
        spec = component["build"]
        for rel in spec.get("remove") or []:  # shipped binaries the build must not fall back on
            target = tree / rel
            if target.is_dir():
                shutil.rmtree(target)
            elif target.is_file():
                target.unlink()
            else:
                raise HarnessError(f"component {name}: build.remove names {rel}, which the tree does not hold")
        inputs = _copy_inputs(name, component, root, out)
        deps = _kind(spec["kind"]).build(recipe["system"], name, tree, spec, source, context)
        missing = [rel for rel in spec["outputs"] if not (tree / rel).exists()]
        if missing:
            raise HarnessError(f"component {name}: build kind {spec['kind']} did not make {', '.join(missing)}")
        out[name] = {"repository": component["repository"], "ref": component.get("ref"),
                     "commit": component["commit"], "built_commit": fetched["commit"], "source": fetched,
                     "build": spec, "path": str(tree.relative_to(root.parent))}
        if deps:
            out[name]["dependencies"] = deps
        if patches[name]:
            out[name]["patches"] = [p.to_dict() for p in patches[name]]
        if inputs:
            out[name]["inputs"] = inputs
    return out


def _copy_inputs(name: str, component: dict, root: Path, built: dict) -> dict:
    """Copy the component's ``inputs`` from the components ``built`` before it; each with its sha256."""
    inputs, tree = {}, root / name
    for rel, ref in (component.get("inputs") or {}).items():
        other, _, path = ref.partition(":")
        if other not in built:
            raise HarnessError(f"component {name}: input {rel} comes from {ref}, but component {other!r} "
                               "is not built before it (list it first)")
        src = root / other / path
        if not src.is_file():
            raise HarnessError(f"component {name}: input {rel}: component {other} made no {path}")
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, tree / rel)
        inputs[rel] = {"from": ref, "sha256": sha256_file(src)}
    return inputs


_GO_ENV_KEYS = ("GOPATH", "GO111MODULE", "GOFLAGS", "CGO_ENABLED")
_GO_MODULES_ENV_KEYS = _GO_ENV_KEYS + ("GOPROXY", "GOTOOLCHAIN")


def _go_env_keys(recipe: dict) -> tuple[str, ...]:
    return _GO_MODULES_ENV_KEYS if recipe["toolchain"]["kind"] == "go-modules" else _GO_ENV_KEYS


def _go_env(recipe: dict, work: Path) -> dict:
    env = {**os.environ, "GOPATH": str(work / "gopath"), "GO111MODULE": "off", "GOFLAGS": "",
           "CGO_ENABLED": os.environ.get("CGO_ENABLED", "1")}
    if recipe["toolchain"]["kind"] == "go-modules":
        # Only the tree's vendor/: no download, and the installed Go even where go.mod names a toolchain line.
        env.update({"GO111MODULE": "on", "GOFLAGS": "-mod=vendor", "GOPROXY": "off", "GOTOOLCHAIN": "local"})
    env.update({k: str(v) for k, v in (recipe["toolchain"].get("env") or {}).items()})
    return env


def _go_flags(recipe: dict) -> list[str]:
    """``-trimpath``: packages compiled in one build directory are reused from Go's build cache by every
    other (FastFabric's variants and Fabric 1.2 share most of their tree; without it each build adds its own
    200-300 MB to the cache, which filled CI's disk once), and no build directory is named in a binary.
    go-modules also: no VCS stamp (a snapshot has no .git), and the recipe's ``ldflags_x`` (e.g. the release
    Fabric's Makefile links in)."""
    toolchain = recipe["toolchain"]
    if toolchain["kind"] != "go-modules":
        return ["-trimpath"]
    values = {"release": (toolchain.get("release") or {}).get("version", ""), "commit": recipe["commit"]}
    xs = [f"-X {var}={value.format(**values)}" for var, value in sorted((toolchain.get("ldflags_x") or {}).items())]
    return ["-trimpath", "-buildvcs=false"] + (["-ldflags", " ".join(xs)] if xs else [])


def release_variables(spec: dict) -> list[str]:
    """The variables that may state a recipe's release, in the order they are read (``toolchain.release``
    ``variable``: one name, or a list where the tree renamed it, e.g. Fabric's BASE_VERSION before v2.5)."""
    names = spec["variable"]
    return [names] if isinstance(names, str) else list(names)


def variables_text(spec: dict) -> str:
    """The release variables as a message names them: ``FABRIC_VER`` or ``FABRIC_VER or BASE_VERSION``."""
    return " or ".join(release_variables(spec))


def stated_releases(spec: dict, text: str) -> list[str]:
    """The values the first of a recipe's ``toolchain.release`` variables that ``text`` (its file) sets is set
    to, in order; [] where it sets none of them."""
    for name in release_variables(spec):
        found = re.findall(rf"^{re.escape(name)}\s*[?:]?=\s*(\S+)\s*$", text, flags=re.MULTILINE)
        if found:
            return found
    return []


def release_line(version: str) -> str:
    """A release's line, its major.minor: ``2.5.16`` -> ``2.5``."""
    return ".".join(version.split(".")[:2])


def release_lines(spec: dict) -> list[str]:
    """The lines a recipe's system configures (``toolchain.release.lines``; absent: its own release's line)."""
    return list(spec.get("lines") or [release_line(spec["version"])])


def pinned_release(recipe: dict, text: str, pin: dict, systems_dir: Path = SYSTEMS) -> str:
    """The release a tree at ``pin`` states (``text``: its ``toolchain.release`` file), checked against the
    pin's ``release_lines`` where it names them (a user's own ref, ``harness.user_refs``): a release of
    another line is refused, naming the system that builds it."""
    spec = recipe["toolchain"]["release"]
    found = stated_releases(spec, text)
    where = f"{pin.get('ref') or pin['commit'][:12]} ({pin['commit'][:12]})"
    if len(found) != 1:
        raise HarnessError(f"{recipe['system']}: {spec['file']} of {recipe['repository']} {where} sets "
                           f"{variables_text(spec)} to {', '.join(found) or 'nothing'}: no release to build")
    release, lines = found[0], pin.get("release_lines")
    if lines and release_line(release) not in lines:
        others = {}
        for other in systems_with_recipe(systems_dir):
            r = load_recipe(other, systems_dir)
            if r["repository"] == recipe["repository"] and (r["toolchain"].get("release") or {}).get("version"):
                others[other] = release_lines(r["toolchain"]["release"])
        fits = sorted(s for s, ls in others.items() if release_line(release) in ls)
        use = (f"use system {' or '.join(fits)}, which builds {release_line(release)}.x" if fits else
               f"no system here builds {release_line(release)}.x ("
               + ", ".join(f"{s}: {', '.join(l + '.x' for l in ls)}" for s, ls in sorted(others.items())) + ")")
        raise HarnessError(f"{recipe['system']} builds and configures {recipe['repository']} "
                           f"{', '.join(l + '.x' for l in lines)} only, but "
                           f"{where} is release {release} ({spec['file']}'s {variables_text(spec)}): {use}")
    return release


def _check_release(recipe: dict, tree: Path, pin: dict | None = None, systems_dir: Path = SYSTEMS) -> str | None:
    """The release the tree states (``toolchain.release``: a make variable in a file): the recipe's own, or at
    a ``pin`` whatever the tree states (``pinned_release``); None where the recipe names none."""
    spec = recipe["toolchain"].get("release")
    if not spec:
        return None
    path = tree / spec["file"]
    text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    if pin:
        return pinned_release(recipe, text, pin, systems_dir)
    found = stated_releases(spec, text)
    if found != [spec["version"]]:
        raise HarnessError(f"{recipe['system']}: the recipe says release {spec['version']}, but {spec['file']} "
                           f"of {recipe['commit'][:12]} sets {variables_text(spec)} to "
                           f"{', '.join(found) or 'nothing'}")
    return spec["version"]


def _go_build(env: dict, cwd: Path, package: str, out: Path, tags: list[str], what: str | None = None,
              flags: list[str] = ()) -> None:
    cmd = ["go", "build", "-o", str(out), *flags] + (["-tags", ",".join(tags)] if tags else []) + [package]
    run_command(cmd, what or f"go build {package}", cwd=cwd, env=env)


def _add_module(module: dict, gopath: Path, tree: Path) -> dict:
    """Download a Go module at a pinned version and place it (or some of its files) for GOPATH mode."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "GO111MODULE": "on", "GOFLAGS": "-modcacherw", "GOMODCACHE": cache}
        out = run_command(["go", "mod", "download", "-json", f"{module['path']}@{module['version']}"],
                          f"download {module['path']}@{module['version']}", env=env, cwd=cache)
        meta = json.loads(out)
        src = Path(meta["Dir"])
        if module.get("files"):
            for inside, target in module["files"].items():
                (tree / target).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src / inside, tree / target)
        else:
            dest = gopath / "src" / module["path"]
            if dest.exists():
                shutil.rmtree(dest)
            shutil.copytree(src, dest)
    return {"path": module["path"], "version": module["version"], "sum": meta.get("Sum"),
            **({"files": module["files"]} if module.get("files") else {})}


_GO_WRAPPER = """#!/bin/sh
# Fabric 1.x's peer CLI parses `go env` expecting KEY="v"; Go >= 1.17 prints KEY='v'.
if [ "$#" -eq 1 ] && [ "$1" = env ]; then
  {go} env | sed "s/='\\(.*\\)'$/=\\"\\1\\"/"
else
  exec {go} "$@"
fi
"""


def _write_go_wrapper(tools: Path) -> None:
    """``tools/go``: the real ``go``, with a bare ``go env`` printed the way Fabric 1.x parses it."""
    tools.mkdir(parents=True, exist_ok=True)
    (tools / "go").write_text(_GO_WRAPPER.format(go=shutil.which("go")), encoding="utf-8")
    (tools / "go").chmod(0o755)
