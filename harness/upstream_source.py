"""Where an upstream build's code comes from, and the commands that fetch and build it.

A pinned tree (``{repository, commit, snapshot}``, a recipe or one of its
components) comes from the snapshot in ``../shared/upstream/`` (its sha256
checked against ``MANIFEST.tsv``, its commit against the pin) or from a
``git clone`` of the commit (the ref's commit checked against the pin); ``auto``
prefers a snapshot that is present. What was used is returned, to be recorded.

Whether a source *can* be had (``source_available``) is tried, not assumed: a
build of the pinned commit already in the cache, a snapshot, or a repository
that answers ``git ls-remote`` within ``probe_timeout_s()`` (asked once per
repository in a process), so that a machine without a network falls back to
the reference build instead of failing at the clone.

A leaf of the upstream build: it imports nothing of the harness but its errors
and tools, so that the recipe reader, the build and the build kinds a system
defines (through ``harness.plugin_api.BuildContext``) all use one copy.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from . import REPO_ROOT
from .errors import HarnessError, choose
from .tools import require_tool

#: Where the source snapshots live beside a checkout (``FABRICREPRO_UPSTREAM_SNAPSHOTS`` overrides).
SNAPSHOTS = REPO_ROOT.parent / "shared" / "upstream"
SOURCES = ("auto", "snapshot", "git")
#: Where upstream builds are cached (``harness.upstream.BUILDS``; this leaf cannot import it).
BUILDS = REPO_ROOT / "build" / "upstream"
#: Seconds ``git ls-remote`` may take to show that a repository can be cloned (``FABRICREPRO_GIT_PROBE_TIMEOUT_S``).
PROBE_TIMEOUT_S = 8.0

_probes: dict[str, str | None] = {}   # clone URL -> why it cannot be cloned now (None: it answered); per process


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


def clone_url(recipe: dict) -> str:
    """Where a pinned tree is cloned from: the recipe's ``clone_url``, else GitHub (git's
    ``url.<base>.insteadOf`` may point that at a mirror)."""
    return recipe.get("clone_url") or f"https://github.com/{recipe['repository']}.git"


def probe_timeout_s() -> float:
    """The probe's time limit: ``FABRICREPRO_GIT_PROBE_TIMEOUT_S``, else ``PROBE_TIMEOUT_S``."""
    value = os.environ.get("FABRICREPRO_GIT_PROBE_TIMEOUT_S")
    try:
        return float(value) if value else PROBE_TIMEOUT_S
    except ValueError:
        raise HarnessError(f"FABRICREPRO_GIT_PROBE_TIMEOUT_S={value!r} is not a number of seconds") from None


def git_unreachable(url: str) -> str | None:
    """Why ``url`` cannot be cloned now (None when it can): ``git ls-remote`` of its HEAD within
    ``probe_timeout_s()``, no prompt for credentials. Asked once per URL in a process
    (``forget_probes`` asks again)."""
    if url not in _probes:
        _probes[url] = _probe(url)
    return _probes[url]


def forget_probes() -> None:
    """Forget what ``git_unreachable`` found (the next question probes again)."""
    _probes.clear()


def _probe(url: str) -> str | None:
    if not shutil.which("git"):
        return "no git on PATH"
    timeout = probe_timeout_s()
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "SSH_ASKPASS": "true"}
    env.setdefault("GIT_SSH_COMMAND", f"ssh -o BatchMode=yes -o ConnectTimeout={max(1, int(timeout))}")
    # a session of its own: on timeout the whole group goes (git ls-remote runs git-remote-https, which would
    # hold the pipes open after git itself is killed)
    proc = subprocess.Popen(["git", "ls-remote", url, "HEAD"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return f"git ls-remote {url} got no answer in {timeout:g} s"
    if proc.returncode != 0:
        lines = [line.strip() for line in (err or "").splitlines() if line.strip()]
        return f"git ls-remote {url} failed (exit {proc.returncode}){': ' + lines[-1] if lines else ''}"
    return None


def cached_build(recipe: dict, builds: Path | None = None) -> Path | None:
    """A finished build of the recipe's pinned commit in the cache (``build/upstream/<system>/<key>/``), or
    None. It stands for the source: ``harness.upstream.build`` reuses it without fetching where its inputs
    (patches, toolchain) are unchanged."""
    root = Path(builds or BUILDS) / str(recipe.get("system") or "")
    if not recipe.get("system") or not root.is_dir():
        return None
    for info in sorted(root.glob("*/build.json")):
        try:
            doc = json.loads(info.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if doc.get("commit") == recipe["commit"] and doc.get("built_commit", doc.get("commit")) == recipe["commit"]:
            return info.parent
    return None


def source_available(recipe: dict, source: str = "auto") -> str | None:
    """Why no source of ``recipe`` can be had with ``source`` (None if one can).

    ``snapshot``: the snapshot archive. ``auto`` and ``git``: a cached build of
    the pin, else (``auto``) the snapshot, else a clone: tried (``git_unreachable``), not assumed.
    """
    choose("upstream source", source, SOURCES)
    if source != "snapshot" and cached_build(recipe):
        return None
    for name, component in (recipe.get("components") or {}).items():
        why = source_available({**component, "system": f"{recipe['system']}/{name}"}, source)
        if why:
            return f"component {name}: {why}"
    if source in ("auto", "snapshot") and snapshot_archive(recipe):
        return None
    no_snapshot = (f"no snapshot {recipe['snapshot']!r} in {snapshots_dir()}" if recipe.get("snapshot")
                   else "no snapshot of it")
    if source == "snapshot":
        return no_snapshot
    url = clone_url(recipe)
    why = git_unreachable(url)
    if why is None:
        return None
    return f"cannot clone {url}: {why}" if source == "git" else f"{no_snapshot}, and cannot clone {url}: {why}"


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
    url = clone_url(recipe)
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
