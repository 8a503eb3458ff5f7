"""A user's own commit of a system's upstream code, without editing its recipe (``--set fabric_ref=v2.5.12``).

A system's plugin names the parameter that asks for one (hook ``upstream_ref``: fabric-3.1's, and so
fabric-2.5's, ``fabric_ref``). For each system of a run whose points set it:

1. the ref (a tag, branch or commit) is resolved in a bare clone of the recipe's repository: the one
   ``invoke regress`` keeps (``build/regress/repos/``; the recipe's ``clone_url`` or GitHub, so git's
   ``url.<mirror>.insteadOf`` can point it at a mirror), fetched again each time;
2. where the recipe names a release (``toolchain.release``: Fabric's Makefile ``FABRIC_VER``), the file at
   that commit is read and its release must be of a line the system configures (``release.lines``, else
   the recipe release's major.minor: their configuration is written by release): another line is
   refused, naming the system that builds it, before anything runs;
3. the build is the recipe at that commit (``upstream.at_pin``: from git, its patches and toolchain, cached
   under ``build/upstream/<system>/<key>`` by the commit like any build), with the tree's release linked in;
   ``build.json`` and the run's ``metadata.json`` (``build.systems.<system>``) record the ref, the commit and
   the release, and the run's parameters the value asked for.

One ref per system and run: a sweep over refs is ``invoke regress --tags``.
"""

from __future__ import annotations

from pathlib import Path

from . import REPO_ROOT, systems, upstream
from .errors import HarnessError
from .plan import driver_of
from .gitrepo import clone, git, resolve

#: Where the clones live: the same as ``invoke regress``'s (``harness.regress``, ``build/regress``).
ROOT = REPO_ROOT / "build" / "regress"


def requested(points, systems_dir: Path | None = None) -> dict[str, dict]:
    """``{system: {"ref", "parameter"}}`` that the points' parameters ask for (each system's ``upstream_ref``
    hook); one ref per system, else a HarnessError."""
    asked: dict[str, dict[str, dict]] = {}
    for point in points:
        want = systems.plugin(point.system, systems_dir).upstream_ref(point.parameters)
        if want:
            asked.setdefault(point.system, {})[str(want["ref"])] = want
    out = {}
    for system, refs in sorted(asked.items()):
        if len(refs) > 1:
            parameter = next(iter(refs.values()))["parameter"]
            raise HarnessError(f"{system}: {parameter} asks for {len(refs)} refs ({', '.join(sorted(refs))}); one "
                               "run builds one commit of a system",
                               hint="compare refs with invoke regress --system SYSTEM --tags A,B,...")
        out[system] = next(iter(refs.values()))
    return out


def user_pin(system: str, ref: str, parameter: str, systems_dir: Path | None = None, root: Path = ROOT,
             log=print, commit: str | None = None) -> dict:
    """The pin (``upstream.build``'s ``pin``) of ``ref`` for ``system``: its commit in the clone (``commit``:
    the one a resumed run recorded for it, where a branch may have moved since), the clone to build from and,
    where the recipe names a release, the line the tree's release must be of (checked here from the commit's
    file, and again by the build)."""
    systems_dir = Path(systems_dir or upstream.SYSTEMS)
    recipe = upstream.load_recipe(system, systems_dir)
    repo = clone(recipe, Path(root), log)
    try:
        commit = resolve(repo, commit or ref)
    except HarnessError:
        raise HarnessError(f"{system}: {parameter}={ref} names no tag, branch or commit of {recipe['repository']} "
                           f"(its clone {repo})", hint=f"a tag such as {recipe.get('ref')}, a branch, or a commit") \
            from None
    pin = {"commit": commit, "ref": ref, "clone_url": str(repo)}
    spec = recipe["toolchain"].get("release")
    if spec:
        pin["release_lines"] = upstream.release_lines(spec)
        try:
            text = git(repo, "show", f"{commit}:{spec['file']}")
        except HarnessError:
            text = ""
        release = upstream.pinned_release(recipe, text, pin, systems_dir)
        log(f"upstream {system}: {parameter}={ref} is {commit[:12]}, release {release}")
    else:
        log(f"upstream {system}: {parameter}={ref} is {commit[:12]}")
    return pin


def pins(points, kind: str, source: str, systems_dir: Path | None = None, root: Path = ROOT,
         log=print, recorded: dict | None = None, experiment: dict | None = None) -> dict[str, dict]:
    """``{system: pin}`` of every user's ref the points ask for (``requested``, ``user_pin``); {} for none.
    ``kind`` is the run's build: a ref asks for the upstream build. ``recorded``: a resumed run's builds
    (``metadata.json`` ``build.systems``): a system built at the same ref is built at the commit recorded.
    ``experiment``: where all of a system's points run one driver, its pin names it, so the build applies
    only the patches that driver needs, as ``invoke regress`` does (fabric-1.2's peer-benchmark patches are
    written against v1.2.0 and do not apply at v1.4.x; its end-to-end drivers need none of them)."""
    asked = requested(points, systems_dir)
    if asked and kind != "upstream":
        named = ", ".join(f"{w['parameter']}={w['ref']}" for w in asked.values())
        raise HarnessError(f"{named}: a user's ref is an upstream build, but this run has the {kind} build",
                           hint="use --build upstream")
    if asked and source == "snapshot":
        named = ", ".join(f"{w['parameter']}={w['ref']}" for w in asked.values())
        raise HarnessError(f"{named}: a user's ref is built from git, not from a snapshot",
                           hint="use --source auto or --source git")
    out = {}
    for system, want in asked.items():
        before = (recorded or {}).get(system) or {}
        commit = before.get("commit") if before.get("ref") == want["ref"] else None
        if commit:
            log(f"upstream {system}: {want['parameter']}={want['ref']} at {commit[:12]}, as the run recorded it")
        out[system] = user_pin(system, want["ref"], want["parameter"], systems_dir, root, log, commit=commit)
        drivers = {driver_of(experiment, p.variant) for p in points if p.system == system} if experiment else set()
        if len(drivers) == 1:
            out[system]["driver"] = drivers.pop()
    return out
