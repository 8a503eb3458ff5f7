"""Git for the harness: commit lists, tags, the reference build's keys, worktrees and clones, used by
``invoke regress`` (``harness/regress/``) and by a user's own Fabric refs (``harness/user_refs.py``).
Outside the ``regress`` package, which runs ``reproduce``: ``reproduce`` reaches these through
``user_refs`` without running ``regress``."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Callable

from . import upstream
from .errors import HarnessError

#: What the reference build compiles: commits whose trees agree on these build identical binaries.
BUILD_INPUTS = ("cmd", "internal", "go.mod", "go.sum")


def git(repo: Path, *args: str) -> str:
    """Output of ``git -C repo args`` (stripped); HarnessError naming the command if it fails."""
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise HarnessError(f"git {' '.join(args)} failed in {repo}: {out.stderr.strip()}")
    return out.stdout.strip()


def describe(repo: Path, sha: str, key: str, ref: str | None = None) -> dict:
    """A commit as regress records it: its subject, message, parents and diff stat (against its first parent)."""
    parents = git(repo, "rev-list", "--parents", "-n", "1", sha).split()[1:]
    return {"sha": sha, "short": sha[:10], "ref": ref, "key": key, "parents": parents,
            "subject": git(repo, "log", "-1", "--format=%s", sha),
            "message": git(repo, "log", "-1", "--format=%B", sha),
            # a heading first: stripping the output would otherwise eat the first line's indentation
            "diffstat": git(repo, "show", "--stat=100", "--format=tformat:diff stat against the first parent:",
                            "--diff-merges=first-parent", sha)}


def resolve(repo: Path, ref: str) -> str:
    """The full commit ``ref`` names (tag, branch, commit), or a HarnessError naming the repository."""
    try:
        return git(repo, "rev-parse", "--verify", f"{ref}^{{commit}}")
    except HarnessError:
        raise HarnessError(f"{ref!r} names no commit in {repo}") from None


def first_parent_line(repo: Path, start: str, end: str) -> list[str]:
    """Each first-parent commit after ``start`` up to ``end``, oldest first (``start`` itself not included)."""
    return git(repo, "rev-list", "--reverse", "--first-parent", f"{start}..{end}").split()


def line_of(repo: Path, spec: str) -> list[str]:
    """``A..B``: A then every first-parent commit after it up to B, oldest first."""
    start, end = spec.split("..", 1)
    first = resolve(repo, start)
    shas = [first] + first_parent_line(repo, first, resolve(repo, end))
    if len(shas) < 2:
        raise HarnessError(f"{spec}: no commits after {start}")
    return shas


def build_key(repo: Path, sha: str) -> str:
    """The tree hash of the commit's build inputs: equal keys build identical binaries."""
    listing = git(repo, "ls-tree", sha, "--", *BUILD_INPUTS)
    return subprocess.run(["git", "-C", str(repo), "hash-object", "--stdin"], input=listing, capture_output=True,
                          text=True, check=True).stdout.strip()[:16]


def store_keys(repo: Path, reference: bool = True) -> Callable[[str], str]:
    """Each commit's store key: for the reference build its build key, so that commits of one key share a
    build and a sample; for an upstream system the commit, whose tree its recipe builds."""
    return (lambda sha: build_key(repo, sha)) if reference else (lambda sha: sha[:16])


def commits_of(repo: Path, spec: str, keyed: Callable[[str], str] | None = None) -> list[dict]:
    """``A..B`` (see ``line_of``) or one commit, described; ``keyed(sha)`` is each commit's store key
    (default: the reference build's, ``store_keys``)."""
    keyed = keyed or store_keys(repo)
    shas = line_of(repo, spec) if ".." in spec else [resolve(repo, spec)]
    return [describe(repo, s, keyed(s)) for s in shas]


def releases_of(repo: Path, refs: list[str], keyed: Callable[[str], str]) -> list[dict]:
    """``--tags``: each named ref (tag, branch or commit), in the order given."""
    if len(refs) < 2:
        raise HarnessError("--tags needs at least two refs to compare")
    return [describe(repo, sha, keyed(sha), ref) for ref, sha in ((r, resolve(repo, r)) for r in refs)]


def worktree(repo: Path, root: Path, commit: dict) -> Path:
    """The commit's ``git worktree`` under ``root/worktrees``, one per store key (made once); the working
    tree being edited is never touched."""
    tree = root / "worktrees" / commit["key"]
    if not tree.exists():
        tree.parent.mkdir(parents=True, exist_ok=True)
        git(repo, "worktree", "add", "--detach", str(tree), commit["sha"])
    return tree


def clone(recipe: dict, root: Path, log=print) -> Path:
    """A bare clone of the recipe's repository under ``root/repos`` (made once, fetched each time).

    Cloned from the recipe's ``clone_url`` or GitHub, so that git's own
    ``url.<mirror>.insteadOf`` setting can point it at a local mirror.
    """
    url = recipe.get("clone_url") or f"https://github.com/{recipe['repository']}.git"
    path = root / "repos" / (recipe["repository"].replace("/", "+") + ".git")
    if not path.is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)
        log(f"regress: cloning {url} into {path}")
        upstream.run_command(["git", "clone", "--quiet", "--bare", url, str(path)], f"clone {url}")
    else:
        upstream.run_command(["git", "-C", str(path), "fetch", "--quiet", "--tags", "--force", url,
                              "+refs/heads/*:refs/heads/*"], f"fetch {url}")
    return path
