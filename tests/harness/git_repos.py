"""Git repositories the upstream-build tests make as their 'upstream' (test scaffolding, not a double of
anything): a command runner and the one-commit tagged repository most of them start from."""

from __future__ import annotations

import subprocess
from pathlib import Path

#: An identity for commits, so the tests do not depend on the machine's git configuration.
IDENTITY = ("-c", "user.name=t", "-c", "user.email=t@t")


def git(cwd: Path, *args: str) -> str:
    """``git -C cwd args``; its stripped output (a failure raises)."""
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout.strip()


def tagged_repo(repo: Path, tag: str) -> str:
    """Make ``repo`` (holding its files already) a repository of one commit tagged ``tag``; that commit."""
    git(repo, "init", "-q")
    git(repo, *IDENTITY, "add", ".")
    git(repo, *IDENTITY, "commit", "-qm", "v1")
    git(repo, "tag", tag)
    return git(repo, "rev-parse", "HEAD")
