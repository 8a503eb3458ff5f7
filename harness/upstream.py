"""Upstream builds: the published code of a system, pinned, fetched, verified, patched and built.

A system's recipe is ``systems/<system>/upstream.yaml`` (schema
``harness/schemas/upstream.json``): the repository and full commit, the
snapshot that holds the same tree, the toolchain, the build targets, the
chaincode built beside it, and the series of our patches
(``systems/<system>/patches/``, applied in order with ``git apply``).

The steps, each recorded in the build's ``build.json``:

1. **source**: the snapshot in ``../shared/upstream/`` (its sha256 checked
   against ``MANIFEST.tsv``, its commit against the pin) or a ``git clone`` of
   the pinned commit (the ref's commit checked against the pin). ``auto``
   prefers a snapshot that is present.
2. **patch**: every patch of the series, in order, then the patches of each
   *flavour* whose ``when`` matches the variant's switches (a flavour may
   also build on another system's recipe, ``base``, and copy paths from
   another system's pinned tree, ``graft``).
3. **build**: ``go build`` of each target in GOPATH mode, and each chaincode
   in the same GOPATH; then each Java ``component`` (another repository at
   its own pin) with Ant, kept under ``components/<name>/``. A component may
   merge a second commit of its repository (``merge``, git source only), take
   its own patches, and take files built by an earlier component (``inputs``);
   a flavour may replace or add components (``components``).

A build is kept under ``build/upstream/<system>/<key>/`` where the key hashes
the commit, the patches, the toolchain and the chaincode sources: a second
build with the same inputs reuses it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import REPO_ROOT, SCHEMA_VERSION, systems
from .catalogue import load_system, load_upstream, load_yaml
from .errors import HarnessError, choose
from .tools import require_tool

SYSTEMS = REPO_ROOT / "systems"
BUILDS = REPO_ROOT / "build" / "upstream"
#: Where the source snapshots live beside a checkout (``FABRICREPRO_UPSTREAM_SNAPSHOTS`` overrides).
SNAPSHOTS = REPO_ROOT.parent / "shared" / "upstream"
SOURCES = ("auto", "snapshot", "git")
#: Patch header fields we read (DEP-3 style, plus our Kind and Changes-measured-path).
PATCH_FIELDS = ("Description", "Kind", "Changes-measured-path", "Origin", "Forwarded", "Paper")


def snapshots_dir() -> Path:
    """The directory of source snapshots (may not exist: a user's clone has none)."""
    return Path(os.environ.get("FABRICREPRO_UPSTREAM_SNAPSHOTS") or SNAPSHOTS)


def systems_with_recipe(systems_dir: Path = SYSTEMS) -> list[str]:
    """Ids of the systems whose ``upstream.yaml`` is a build recipe (schema version 2)."""
    return sorted(p.parent.name for p in Path(systems_dir).glob("*/upstream.yaml")
                  if (load_yaml(p) or {}).get("schema_version") == 2)


def load_recipe(system: str, systems_dir: Path = SYSTEMS) -> dict:
    """The validated ``upstream.yaml`` of ``system`` (``catalogue.load_upstream``); an unknown system
    lists the systems that have a recipe."""
    choose("upstream system", system, systems_with_recipe(systems_dir))
    return load_upstream(system, Path(systems_dir))


# ---------------------------------------------------------------- patches

@dataclass(frozen=True)
class Patch:
    """One patch of a series: its file, content hash and header fields, and the recipe's note on it.

    ``needed_by``: the drivers that need it (None: every driver); ``adds_targets``:
    the targets it creates, not built where it is left out (``patches_for_driver``).
    """
    name: str
    path: Path
    sha256: str
    header: dict
    needed_by: tuple[str, ...] | None = None
    adds_targets: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"name": self.name, "sha256": self.sha256,
                **{k.lower().replace("-", "_"): v for k, v in self.header.items()}}


def read_patch(path: Path) -> Patch:
    """Read a patch file and its header (the lines before the first ``diff``/``---``)."""
    data = Path(path).read_bytes()
    header: dict[str, str] = {}
    key = None
    for line in data.decode("utf-8", errors="replace").splitlines():
        if line.startswith(("diff --git", "--- ", "Index: ")):
            break
        m = re.match(r"^([A-Za-z-]+):\s*(.*)$", line)
        if m and m.group(1) in PATCH_FIELDS:
            key = m.group(1)
            header[key] = m.group(2).strip()
        elif key and line.startswith((" ", "\t")) and line.strip():
            header[key] += " " + line.strip()
        else:
            key = None
    missing = [f for f in ("Description", "Kind") if f not in header]
    if missing:
        raise HarnessError(f"patch {path}: header lacks {', '.join(missing)} (see docs/upstream.md)")
    return Patch(Path(path).name, Path(path), hashlib.sha256(data).hexdigest(), header)


def patch_series(system: str, recipe: dict, systems_dir: Path = SYSTEMS, names: list[str] | None = None) -> list[Patch]:
    """The recipe's patches (or ``names``), in order, read from ``systems/<system>/patches/``.

    A recipe's entry is a file name, or ``{patch, needed_by, adds_targets, why, applies}``
    (harness/schemas/upstream.json).
    """
    out = []
    for entry in recipe.get("patches") or [] if names is None else names:
        note = entry if isinstance(entry, dict) else {"patch": entry}
        path = Path(systems_dir) / system / "patches" / note["patch"]
        if not path.is_file():
            raise HarnessError(f"systems/{system}/upstream.yaml lists patch {note['patch']}, but {path} does not exist")
        needed_by = note.get("needed_by")
        out.append(dataclasses.replace(read_patch(path), needed_by=None if needed_by is None else tuple(needed_by),
                                       adds_targets=tuple(note.get("adds_targets") or ())))
    return out


def patches_for_driver(patches: list[Patch], driver: str) -> tuple[list[Patch], list[Patch]]:
    """The patches ``driver`` needs, and those it does not (``invoke regress``)."""
    kept = [p for p in patches if p.needed_by is None or driver in p.needed_by]
    return kept, [p for p in patches if p not in kept]


def matching_flavours(system: str, recipe: dict, switches: dict | None, systems_dir: Path = SYSTEMS) -> list[dict]:
    """The recipe's flavours whose ``when`` holds for ``switches`` (defaults from ``system.yaml``), in order.

    A variant's switches pick the build: e.g. FastFabric's O-I alone is the
    published tree plus a patch restoring Fabric 1.2's broadcast handler.
    """
    flavours = recipe.get("flavours") or []
    if not flavours:
        return []
    declared = (load_system(system, systems_dir).get("reference") or {}).get("switches") or {}
    values = {name: spec.get("default") for name, spec in declared.items()}
    values.update(switches or {})
    out = []
    for flavour in flavours:
        unknown = sorted(set(flavour["when"]) - set(values))
        if unknown:
            raise HarnessError(f"systems/{system}/upstream.yaml flavour {flavour['name']}: "
                               f"unknown switch(es) {', '.join(unknown)} (declared: {', '.join(sorted(values))})")
        if all(values[k] == v for k, v in flavour["when"].items()):
            out.append(flavour)
    bases = [f["name"] for f in out if f.get("base")]
    if len(bases) > 1:
        raise HarnessError(f"systems/{system}/upstream.yaml: flavours {', '.join(bases)} all set a base; "
                           "at most one matching flavour may")
    return out


# ---------------------------------------------------------------- source

def read_manifest(directory: Path) -> dict[str, dict]:
    """``MANIFEST.tsv`` of a snapshot directory: name -> {repository, commit, sha256, note}."""
    path = Path(directory) / "MANIFEST.tsv"
    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        cols = line.split("\t") + [""] * 5
        rows[cols[0]] = {"repository": cols[1], "commit": cols[2], "sha256": cols[3], "note": cols[4].strip()}
    return rows


def snapshot_archive(recipe: dict, directory: Path | None = None) -> tuple[Path, dict] | None:
    """The recipe's snapshot archive and manifest row, or None when no snapshot is at hand."""
    directory = Path(directory or snapshots_dir())
    name = recipe.get("snapshot")
    if not name or not (directory / "MANIFEST.tsv").is_file():
        return None
    row = read_manifest(directory).get(name)
    if row is None:
        return None
    archive = directory / f"{name}-{row['commit'][:12]}.tar.xz"
    return (archive, row) if archive.is_file() else None


def source_available(recipe: dict, source: str = "auto") -> str | None:
    """Why no source of ``recipe`` can be had with ``source`` (None if one can)."""
    choose("upstream source", source, SOURCES)
    for name, component in (recipe.get("components") or {}).items():
        why = source_available({**component, "system": f"{recipe['system']}/{name}"}, source)
        if why:
            return f"component {name}: {why}"
    if source in ("auto", "snapshot") and snapshot_archive(recipe):
        return None
    if source == "snapshot":
        return f"no snapshot {recipe.get('snapshot')!r} in {snapshots_dir()}"
    if shutil.which("git"):
        return None
    return f"no snapshot {recipe.get('snapshot')!r} in {snapshots_dir()} and no git to clone {recipe['repository']}"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch_source(recipe: dict, dest: Path, source: str = "auto") -> dict:
    """Put the pinned tree at ``dest``; return what was used (kind, where, commit, checksum)."""
    choose("upstream source", source, SOURCES)
    found = snapshot_archive(recipe) if source in ("auto", "snapshot") else None
    if found:
        return _from_snapshot(recipe, dest, *found)
    if source == "snapshot":
        raise HarnessError(f"no snapshot {recipe.get('snapshot')!r} of {recipe['system']} in {snapshots_dir()}",
                           hint="set FABRICREPRO_UPSTREAM_SNAPSHOTS, or use --source git")
    return _from_git(recipe, dest)


def _from_snapshot(recipe: dict, dest: Path, archive: Path, row: dict) -> dict:
    if row["commit"] != recipe["commit"]:
        raise HarnessError(f"snapshot {archive.name} holds commit {row['commit']}, "
                           f"but systems/{recipe['system']}/upstream.yaml pins {recipe['commit']}")
    digest = sha256_file(archive)
    if digest != row["sha256"]:
        raise HarnessError(f"snapshot {archive} has sha256 {digest}, MANIFEST.tsv says {row['sha256']}: "
                           "the archive is damaged or not the one listed")
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        run_command(["tar", "-xJf", str(archive), "-C", tmp], "unpack " + archive.name)
        top = Path(tmp) / recipe["snapshot"]
        if not top.is_dir():
            raise HarnessError(f"snapshot {archive.name} has no top-level directory {recipe['snapshot']}/")
        top.rename(dest)
    return {"kind": "snapshot", "archive": str(archive), "sha256": digest, "commit": row["commit"],
            "absent_files": row["note"] or None}


def _from_git(recipe: dict, dest: Path) -> dict:
    require_tool("git")
    url = recipe.get("clone_url") or f"https://github.com/{recipe['repository']}.git"
    run_command(["git", "clone", "--quiet", "--no-checkout", url, str(dest)], f"clone {url}")
    git = ["git", "-C", str(dest)]
    absent = _absent_files(git, recipe["commit"])
    if absent:  # a mirror without some large files (as the snapshots lack them): check out the rest, and say so
        run_command(git + ["sparse-checkout", "set", "--no-cone", "/*", *(f"!/{path}" for path in absent)],
                    "sparse-checkout without the absent files")
    run_command(git + ["checkout", "--quiet", "--detach", recipe["commit"]], f"check out {recipe['commit']}")
    head = run_command(git + ["rev-parse", "HEAD"], "read HEAD").strip()
    if head != recipe["commit"]:
        raise HarnessError(f"{url}: checked out {head}, not the pinned {recipe['commit']}")
    ref = recipe.get("ref")
    if ref:
        resolved = subprocess.run(git + ["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
                                  capture_output=True, text=True, check=False).stdout.strip()
        if resolved and resolved != recipe["commit"] and not recipe.get("ref_moves"):
            raise HarnessError(f"{url}: {ref} is {resolved}, but systems/{recipe['system']}/upstream.yaml "
                               f"pins {recipe['commit']}: fix the pin")
    merged = _merge(recipe, dest, git, url) if recipe.get("merge") else None
    shutil.rmtree(dest / ".git")
    return {"kind": "git", "url": url, "commit": head, **({"merged": merged} if merged else {}),
            **({"absent": absent} if absent else {})}


def _absent_files(git: list[str], commit: str) -> list[str]:
    """Files of the commit whose content the clone lacks (a mirror may leave out its largest files)."""
    listing = run_command(git + ["ls-tree", "-r", "--full-tree", commit], "list the tree")
    blobs = [(line.split()[2], line.split("\t", 1)[1]) for line in listing.splitlines() if line.split()[1] == "blob"]
    found = subprocess.run(git + ["cat-file", "--batch-check"], input="".join(sha + "\n" for sha, _ in blobs),
                           capture_output=True, text=True, check=False).stdout
    missing = {line.split()[0] for line in found.splitlines() if line.endswith(" missing")}
    return sorted(path for sha, path in blobs if sha in missing)


def _merge(recipe: dict, dest: Path, git: list[str], url: str) -> dict:
    """Merge ``recipe['merge']['commit']`` (a second commit of the same repository) into the checked-out pin.

    For a published branch that lacks an API its companion code calls (WHEAT's
    branch and the ordering nodes of its time). Conflicts are allowed only in
    paths the build removes first (shipped binaries): the build never sees
    either side of them; any other conflict stops the build.
    """
    spec = recipe["merge"]
    ident = ["-c", "user.name=fabricrepro", "-c", "user.email=fabricrepro@localhost"]
    result = subprocess.run(git + ident + ["merge", "--quiet", "--no-commit", "--no-ff", spec["commit"]],
                            capture_output=True, text=True, check=False)
    conflicts = run_command(git + ["diff", "--name-only", "--diff-filter=U"], "list merge conflicts").split()
    removed = [r.rstrip("/") for r in (recipe.get("build") or {}).get("remove") or []]
    stray = [c for c in conflicts if not any(c == r or c.startswith(r + "/") for r in removed)]
    if (result.returncode != 0 and not conflicts) or stray:
        tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-10:])
        raise HarnessError(f"{url}: merging {spec['commit'][:12]} into {recipe['commit'][:12]} conflicts in "
                           f"{', '.join(stray) or '(no file)'} (only paths in build.remove may conflict)\n{tail}")
    changed = run_command(git + ["diff", "--cached", "--name-only", recipe["commit"]], "list merged files").split()
    return {"commit": spec["commit"], "ref": spec.get("ref"), "files_changed": len(changed),
            "conflicts_removed": len(conflicts)}


# ---------------------------------------------------------------- build

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
        keys = ("system", "repository", "ref", "commit", "built_commit", "key", "source", "patches", "patch_series",
                "toolchain", "flavours", "base", "grafts", "components")
        return {"kind": "upstream", "path": str(self.path), **{k: self.info[k] for k in keys if k in self.info}}


def go_version() -> str:
    require_tool("go")
    return run_command(["go", "version"], "go version").strip()


def _tree_digest(root: Path) -> str:
    """A digest of the files under ``root`` (names and contents)."""
    h = hashlib.sha256()
    for p in sorted(q for q in Path(root).rglob("*") if q.is_file()):
        h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def build_key(recipe: dict, patches: list[Patch], toolchain_version: str, flavours: list[dict] = (),
              systems_dir: Path = SYSTEMS) -> str:
    """The cache key of a build: commit, patches, toolchain, chaincode sources and flavours."""
    doc = {"commit": recipe["commit"], "patches": [p.sha256 for p in patches],
           "toolchain": recipe["toolchain"], "toolchain_version": toolchain_version,
           "targets": recipe.get("targets"),
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


def at_pin(recipe: dict, pin: dict) -> dict:
    """The recipe built at another commit of its repository (``invoke regress``).

    ``pin`` gives the ``commit``, optionally the ``ref`` naming it (a tag) and a
    ``clone_url`` (a local clone of the repository, so that each commit is not
    fetched from the network again). The snapshot holds only the recipe's own
    pin, so the tree comes from git; the patches, toolchain and targets stay
    (``build`` applies only those the pin's ``driver`` needs, and records a
    patch already in the tree instead of applying it).
    """
    return {**recipe, "commit": pin["commit"], "ref": pin.get("ref"), "ref_moves": False, "snapshot": None,
            "clone_url": pin.get("clone_url") or recipe.get("clone_url")}


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
    own = load_recipe(system, systems_dir)
    if pin:
        own = at_pin(own, pin)
    flavours = matching_flavours(system, own, switches, systems_dir)
    base = next((f["base"] for f in flavours if f.get("base")), None)
    if pin and base:
        raise HarnessError(f"{system}: flavour {next(f['name'] for f in flavours if f.get('base'))} builds on "
                           f"{base}'s tree, not on a commit of {own['repository']}")
    recipe = load_recipe(base, systems_dir) if base else own
    choose("toolchain kind", recipe["toolchain"]["kind"], ["go-gopath"])
    patches = patch_series(base or system, recipe, systems_dir)
    left_out = []
    if pin and pin.get("driver"):
        patches, left_out = patches_for_driver(patches, pin["driver"])
    for flavour in flavours:
        patches += patch_series(system, own, systems_dir, names=flavour.get("patches") or [])
    not_built = {target for patch in left_out for target in patch.adds_targets}
    targets = {name: package for name, package in recipe["targets"].items() if name not in not_built}
    for flavour in flavours:
        targets.update(flavour.get("targets") or {})
    chaincodes = {**(recipe.get("chaincodes") or {}), **(own.get("chaincodes") or {})}
    for flavour in flavours:  # chaincode that needs the flavour's patches (e.g. a new shim API)
        chaincodes.update(flavour.get("chaincodes") or {})
    recipe = {**recipe, "targets": targets, "chaincodes": chaincodes}
    for flavour in flavours:  # a flavour's component replaces the recipe's of that name, and builds after the rest
        extra = flavour.get("components") or {}
        if extra:
            kept = {n: c for n, c in (recipe.get("components") or {}).items() if n not in extra}
            recipe = {**recipe, "components": {**kept, **extra}}
    version = go_version()
    if recipe.get("components"):
        kinds = {c["build"]["kind"] for c in recipe["components"].values()}
        if "ant" in kinds:
            version += "; " + java_version()
        extra = systems.build_kinds()  # the systems' own component build kinds (e.g. validation-opt's CouchDB)
        for kind in sorted(kinds & set(extra)):
            version += "; " + extra[kind].toolchain()
    key = build_key(recipe, patches, version, flavours, systems_dir)
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
            started = time.monotonic()
            tree = work / "gopath" / "src" / recipe["toolchain"]["import_path"]
            log(f"upstream {system}: fetching {recipe['repository']} @ {recipe['commit'][:12]} ({source})")
            fetched = fetch_source(recipe, tree, source)
            grafts = [_graft(f["graft"], tree, work, source, systems_dir, log) for f in flavours if f.get("graft")]
            applied, series = [], []
            for patch in patches:
                present = _already_applied(patch, tree) if pin else None
                if present is not None:
                    log(f"upstream {system}: {patch.name} is already in {recipe['commit'][:12]} (its reverse applies)")
                    series.append({"name": patch.name, "status": "already in upstream",
                                   "why": "it does not apply and git apply --check --reverse succeeds on the files "
                                          "it changes" + (f" (not added: {', '.join(present)})" if present else "")})
                    continue
                log(f"upstream {system}: applying {patch.name}")
                _apply(patch, tree)
                applied.append(patch)
                series.append({"name": patch.name, "status": "applied"})
            for patch in left_out:
                needed = ", ".join(patch.needed_by) or "no driver"
                series.append({"name": patch.name, "status": "skipped",
                               "why": f"not needed by driver {pin['driver']} (needed by {needed})"})
            modules = [_add_module(m, work / "gopath", tree) for m in recipe["toolchain"].get("modules") or []]
            env = _go_env(recipe, work)
            _write_go_wrapper(work / "tools")
            (work / "bin").mkdir()
            for name, package in targets.items():
                log(f"upstream {system}: go build {package} -> bin/{name}")
                _go_build(env, tree, package, work / "bin" / name, recipe["toolchain"].get("tags") or [])
            for name, cc in chaincodes.items():
                src = work / "gopath" / "src" / cc["import_path"]
                shutil.copytree(REPO_ROOT / cc["source"], src, ignore=shutil.ignore_patterns("go.mod", "go.sum"))
                log(f"upstream {system}: go build chaincode {cc['import_path']} -> bin/{name}")
                # With the recipe's tags too: Fabric v1.1.0's shim imports the BCCSP factory, whose
                # PKCS#11 half needs cgo headers (ltdl.h) without nopkcs11; later shims do not import it.
                _go_build(env, src, ".", work / "bin" / name, recipe["toolchain"].get("tags") or [],
                          what=f"go build chaincode {cc['import_path']}")
            components = _build_components(recipe, work / "components", source, log, systems_dir)
            info = {"schema_version": SCHEMA_VERSION, "system": system, "repository": recipe["repository"],
                    "ref": recipe.get("ref"), "commit": recipe["commit"], "built_commit": fetched["commit"],
                    "key": key, "source": fetched,
                    "patches": [p.to_dict() for p in applied],
                    "patch_series": series,
                    "flavours": [f["name"] for f in flavours], "base": base, "grafts": grafts,
                    "toolchain": {**recipe["toolchain"], "version": version, "env": {k: env[k] for k in _GO_ENV_KEYS}},
                    "modules": modules, "targets": targets, "chaincodes": chaincodes,
                    "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "build_seconds": round(time.monotonic() - started, 1)}
            if components:
                info["components"] = components
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)  # a failed build leaves nothing behind
            raise
        (work / "build.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        work.rename(final)
        log(f"upstream {system}: built in {info['build_seconds']} s -> {final}")
        return Build(system, final, info)


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


def java_version() -> str:
    """The JDK and Ant that build a recipe's Java components."""
    require_tool("java")
    require_tool("ant")
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr.splitlines()
    return f"{java[0] if java else 'java ?'}; {run_command(['ant', '-version'], 'ant -version').strip()}"


def component_patches(recipe: dict, systems_dir: Path = SYSTEMS) -> dict[str, list[Patch]]:
    """Each component's own patch series (``components.<name>.patches``, files in ``systems/<system>/patches/``)."""
    return {name: patch_series(recipe["system"], recipe, systems_dir, names=c.get("patches") or [])
            for name, c in (recipe.get("components") or {}).items()}


def _build_components(recipe: dict, root: Path, source: str, log, systems_dir: Path = SYSTEMS) -> dict:
    """Fetch and build each of the recipe's ``components`` (Java trees built with Ant) under ``root/<name>``.

    A system whose published code spans several repositories (BFT-SMaRt's
    ordering nodes beside the Fabric fork that fronts them) keeps each at its
    own pin; the whole built tree stays, since Java runs from it (jars, lib/, config/).
    In order, per component: fetch (and ``merge``), apply its ``patches``,
    delete ``build.remove``, copy its ``inputs`` (``dest: <earlier component>:<path>``,
    e.g. the library jar the nodes link), build.
    """
    out = {}
    patches = component_patches(recipe, systems_dir)
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
            _apply(patch, tree)
        spec = component["build"]
        for rel in spec.get("remove") or []:  # shipped binaries the build must not fall back on
            target = tree / rel
            if target.is_dir():
                shutil.rmtree(target)
            elif target.is_file():
                target.unlink()
            else:
                raise HarnessError(f"component {name}: build.remove names {rel}, which the tree does not hold")
        inputs = {}
        for rel, ref in (component.get("inputs") or {}).items():
            other, _, path = ref.partition(":")
            if other not in out:
                raise HarnessError(f"component {name}: input {rel} comes from {ref}, but component {other!r} "
                                   "is not built before it (list it first)")
            src = root / other / path
            if not src.is_file():
                raise HarnessError(f"component {name}: input {rel}: component {other} made no {path}")
            (tree / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, tree / rel)
            inputs[rel] = {"from": ref, "sha256": sha256_file(src)}
        deps = None
        extra = systems.build_kinds()
        if spec["kind"] in extra:  # a system's own build kind (harness/systems.py BuildKind)
            deps = extra[spec["kind"]].build(recipe["system"], name, tree, spec, source, log)
        else:
            log(f"upstream {recipe['system']}: ant {spec['target']} in component {name}")
            run_command(["ant", "-noinput", "-quiet", spec["target"]], f"ant {spec['target']} ({name})", cwd=tree)
        missing = [rel for rel in spec["outputs"] if not (tree / rel).exists()]
        if missing:
            raise HarnessError(f"component {name}: {spec['kind']} {spec['target']} did not make {', '.join(missing)}")
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


_GO_ENV_KEYS = ("GOPATH", "GO111MODULE", "GOFLAGS", "CGO_ENABLED")


def _go_env(recipe: dict, work: Path) -> dict:
    env = {**os.environ, "GOPATH": str(work / "gopath"), "GO111MODULE": "off", "GOFLAGS": "",
           "CGO_ENABLED": os.environ.get("CGO_ENABLED", "1")}
    env.update({k: str(v) for k, v in (recipe["toolchain"].get("env") or {}).items()})
    return env


def _go_build(env: dict, cwd: Path, package: str, out: Path, tags: list[str], what: str | None = None) -> None:
    cmd = ["go", "build", "-o", str(out)] + (["-tags", ",".join(tags)] if tags else []) + [package]
    run_command(cmd, what or f"go build {package}", cwd=cwd, env=env)


def _git_apply_env(tree: Path) -> dict:
    # GIT_CEILING_DIRECTORIES keeps git from treating an enclosing checkout as the repository.
    return {**os.environ, "GIT_CEILING_DIRECTORIES": str(tree.parent)}


def _apply(patch: Patch, tree: Path) -> None:
    run_command(["git", "apply", "--whitespace=nowarn", str(patch.path.resolve())], f"apply {patch.name}", cwd=tree,
                env=_git_apply_env(tree))


def _already_applied(patch: Patch, tree: Path) -> list[str] | None:
    """Whether the tree already holds the patch (e.g. a fix upstream made itself): None if not; else the
    files the patch would create that the tree lacks (e.g. a regression test of ours), left out.

    Held: the patch does not apply, and its reverse applies to the files it
    changes. A patch that only creates files is never held.
    """
    text = patch.path.read_text(encoding="utf-8", errors="replace")
    created = re.findall(r"^--- /dev/null\n\+\+\+ b/(\S+)$", text, flags=re.MULTILINE)
    ours = [path for path in created if not (tree / path).exists()]
    if len(ours) == len(re.findall(r"^diff --git ", text, flags=re.MULTILINE)):
        return None

    def check(*flags: str) -> bool:
        return subprocess.run(["git", "apply", "--check", "--whitespace=nowarn", *flags, str(patch.path.resolve())],
                              cwd=tree, env=_git_apply_env(tree), capture_output=True, check=False).returncode == 0
    if check() or not check("--reverse", *(f"--exclude={path}" for path in ours)):
        return None
    return ours


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


@contextlib.contextmanager
def file_lock(path: Path):
    """Hold an exclusive flock on ``path`` (created if missing) for the block."""
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def run_command(cmd: list[str], what: str, **kwargs) -> str:
    """Run a build step; its stdout, or a HarnessError naming ``what`` with the tail of its output."""
    result = subprocess.run(cmd, capture_output=True, text=True, check=False, **kwargs)
    if result.returncode != 0:
        tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-15:])
        raise HarnessError(f"upstream build: {what} failed (exit {result.returncode}):\n{tail}")
    return result.stdout
