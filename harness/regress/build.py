"""What ``invoke regress`` builds and runs: the tracked system, its variant, and each commit's build."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

from .. import REPO_ROOT, upstream
from ..errors import HarnessError
from ..gitrepo import clone, worktree

REFERENCE = "reference"


class NotMeasurable(HarnessError):
    """A commit that yields no sample: its patches do not apply, its build fails, or its run has no value."""


def reference_variants(experiment: dict) -> list[str]:
    """The runnable variants of the experiment whose system the reference build has a driver for."""
    from ..builds import reference_driver
    from ..plan import for_build
    experiment = for_build(experiment, REFERENCE)
    return [v["id"] for v in experiment.get("variants") or [] if v.get("runnable") is not False
            and reference_driver(v["system"], experiment["driver"]) is not None]


def upstream_variant(system: str, experiment: dict, variant: str | None, systems_dir: Path) -> dict:
    """The experiment's variant of ``system`` that regress runs on that system's upstream builds."""
    from ..builds import upstream_driver
    ours = [v for v in experiment.get("variants") or [] if v["system"] == system and v.get("runnable") is not False]
    if variant:
        ours = [v for v in ours if v["id"] == variant]
    if len(ours) != 1:
        names = ", ".join(v["id"] for v in experiment.get("variants") or [] if v["system"] == system) or "none"
        raise HarnessError(f"experiment {experiment['id']}: " + (
            f"no runnable variant {variant!r} of system {system}" if variant else
            f"{len(ours)} runnable variants of system {system}") + f" (variants of {system}: {names}); "
            "name one with --variant")
    driver = ours[0].get("driver") or experiment["driver"]  # a variant may name its own (the catalogue's)
    if upstream_driver(system, driver, systems_dir) is None:
        raise HarnessError(f"system {system} has no upstream driver {driver!r} "
                           f"(systems/{system}/upstream.yaml drivers)")
    return ours[0]


def tracked_system(system: str, experiment: dict, variant: str | None, repo: Path | None, root: Path,
                   systems_dir: Path, builds: Path, log) -> dict:
    """What regress builds and runs for ``system``: where its commits are read, and for an upstream
    system the variant (and its switches) measured."""
    if system == REFERENCE:
        return {"system": system, "repo": Path(repo or REPO_ROOT).resolve()}
    recipe = upstream.load_recipe(system, systems_dir)
    chosen = upstream_variant(system, experiment, variant, systems_dir)
    # --repo: another repository's commits (e.g. a fork's branches) built with this system's recipe
    return {"system": system, "repo": Path(repo).resolve() if repo else clone(recipe, root, log),
            "repository": str(Path(repo).resolve()) if repo else recipe["repository"], "variant": chosen["id"],
            "switches": chosen.get("switches") or {},
            "driver": chosen.get("driver") or experiment["driver"],
            "systems_dir": systems_dir, "builds": builds}


def pin_of(tracked: dict, commit: dict) -> dict:
    """The pin that builds an upstream system's recipe at ``commit`` from the local clone, with the
    patches the experiment's driver needs (at every commit, the recipe's own included, so that one
    series builds every point)."""
    pin = {"commit": commit["sha"], "ref": commit.get("ref"), "clone_url": str(tracked["repo"]),
           "driver": tracked["driver"]}
    if tracked.get("release_lines"):  # across release lines: the build checks the tree's release again
        pin["release_lines"] = tracked["release_lines"]
    return pin


def build(tracked: dict, commit: dict, root: Path, log=print) -> tuple[Path, float]:
    """The ``bin/`` of the commit's build and the seconds spent building; NotMeasurable if it cannot be built.

    The reference build: once per build key in a worktree. An upstream
    system: its recipe at the commit (``upstream.build`` with a pin), which
    keeps its own cache.
    """
    started = time.monotonic()
    if tracked["system"] != REFERENCE:
        try:
            built = upstream.build(tracked["system"], "git", systems_dir=tracked["systems_dir"],
                                   builds=tracked["builds"], log=log, switches=tracked["switches"],
                                   pin=pin_of(tracked, commit))
        except HarnessError as e:
            raise NotMeasurable(build_failure(str(e))) from None
        commit["build_key"] = built.info["key"]
        commit["patches"] = built.info["patch_series"]  # applied, skipped (driver) or already in upstream
        return built.bin_dir, time.monotonic() - started
    tree = worktree(tracked["repo"], root, commit)
    done = tree / "bin" / ".built"
    if done.exists():
        return tree / "bin", 0.0
    log(f"regress: building {commit['short']} ({commit['subject'][:60]}) in {tree}")
    for cmd in (["bash", "internal/protos/generate.sh"], ["go", "build", "-o", "bin/", "./cmd/..."]):
        out = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            tail = out.stderr.strip().splitlines()[-1:] or ["(no output)"]
            raise NotMeasurable(f"build failed: {' '.join(cmd)}: {tail[0]}")
    done.write_text(commit["sha"] + "\n")
    return tree / "bin", time.monotonic() - started


def build_failure(message: str) -> str:
    """A failed build step in one line: the step, and the tool's diagnosis (its last line naming an
    error, e.g. gcc's "fatal error: ltdl.h: No such file or directory" rather than its closing
    "compilation terminated."; else its last line at a source position, e.g. Go's "x.go:22:2: cannot
    find package ..." rather than the last directory it looked in), else its last line."""
    lines = [line.strip() for line in message.strip().splitlines()]
    if len(lines) == 1:
        return lines[0]
    diagnosis = next((line for line in reversed(lines[1:]) if "error" in line.lower()),
                     next((line for line in reversed(lines[1:]) if re.match(r"\S+:\d+(:\d+)?: ", line)), lines[-1]))
    return f"{lines[0]} {diagnosis}"
