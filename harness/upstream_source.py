"""Where an upstream build's code comes from, and the commands that fetch and build it.

A pinned tree (``{repository, commit, snapshot}``, a recipe or one of its
components) comes from the snapshot in ``../shared/upstream/`` (its sha256
checked against ``MANIFEST.tsv``, its commit against the pin) or from a
``git clone`` of the commit (the ref's commit checked against the pin); ``auto``
prefers a snapshot that is present. What was used is returned, to be recorded.

A leaf of the upstream build: it imports nothing of the harness but its errors
and tools, so that the recipe reader, the build and the build kinds a system
defines (through ``harness.plugin_api.BuildContext``) all use one copy.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from . import REPO_ROOT
from .errors import HarnessError, choose
from .tools import require_tool

#: Where the source snapshots live beside a checkout (``FABRICREPRO_UPSTREAM_SNAPSHOTS`` overrides).
SNAPSHOTS = REPO_ROOT.parent / "shared" / "upstream"
SOURCES = ("auto", "snapshot", "git")


def snapshots_dir() -> Path:
    """The directory of source snapshots (may not exist: a user's clone has none)."""
    return Path(os.environ.get("FABRICREPRO_UPSTREAM_SNAPSHOTS") or SNAPSHOTS)


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
    """Run a build step (``kwargs`` as ``subprocess.run``'s: ``cwd``, ``env``, ``timeout``); its stdout, or a
    HarnessError naming ``what`` with the tail of its output."""
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, check=False, **kwargs)
    except subprocess.TimeoutExpired as e:
        raise HarnessError(f"upstream build: {what} did not finish in {e.timeout} s") from None
    if result.returncode != 0:
        tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-15:])
        raise HarnessError(f"upstream build: {what} failed (exit {result.returncode}):\n{tail}")
    return result.stdout
