"""Across release lines: ``invoke regress --system <line>`` builds each commit with the recipe of the system
whose release lines cover it, and a boundary wherever the measured configuration changes.

A *line* is a name such as ``fabric``: its systems are every ``<line>-*`` system
whose recipe names its release (``toolchain.release``: the make variable that
states it and the ``lines``, major.minor, the system builds and configures),
all of one repository (``fabric-1.2``: 1.1 to 1.4, ``fabric-2.5``,
``fabric-3.1``). A commit's release is read from its tree with each recipe's
own ``file`` and ``variable`` (``upstream.stated_releases``); the system whose
lines hold that release's major.minor builds it (its pin names those lines,
so the build checks them again) and the experiment's variant of that system
measures it. A commit that no system covers, or whose system has no variant
in the experiment, is *not measurable* with the reason.

Each measured commit carries its *segment*: the system, the variant, the
driver and the ordering service of its points (its system's plugin hook
``ordering_service``: "Kafka", "Raft", "SmartBFT"). Two commits of different segments are never
tested against each other (``boundary``): their numbers come from different
deployments, and a change test across them would call the deployment's
difference a regression. Bisection never crosses a boundary either.
"""

from __future__ import annotations

from pathlib import Path

from .. import upstream
from ..errors import HarnessError
from ..gitrepo import clone, git
from .build import NotMeasurable, upstream_variant

#: What a segment is made of, in the order a boundary names its changes.
SEGMENT_KEYS = ("ordering_service", "system", "variant", "driver")


def line_systems(name: str, systems_dir: Path) -> dict[str, dict]:
    """``{system: recipe}`` of the line ``name`` (every ``<name>-*`` system whose recipe names its release);
    {} where ``name`` is no line. HarnessError if they build different repositories."""
    recipes = {}
    for system in upstream.systems_with_recipe(systems_dir):
        if system.startswith(f"{name}-"):
            recipe = upstream.load_recipe(system, systems_dir)
            if (recipe["toolchain"].get("release") or {}).get("variable"):
                recipes[system] = recipe
    repositories = sorted({r["repository"] for r in recipes.values()})
    if len(repositories) > 1:
        raise HarnessError(f"regress --system {name}: its systems build {', '.join(repositories)}; a line is one "
                           "repository's releases")
    return recipes


def lines_of(recipes: dict[str, dict]) -> dict[str, list[str]]:
    """Each system's release lines (``upstream.release_lines``)."""
    return {system: upstream.release_lines(r["toolchain"]["release"]) for system, r in sorted(recipes.items())}


def covering(repo: Path, sha: str, recipes: dict[str, dict]) -> tuple[str, str]:
    """(system, release): the one system of ``recipes`` whose lines cover the release the commit's tree states,
    read with each recipe's own file and variable (where several cover what they read, the latest release
    read: a tree names older releases in other variables, e.g. a stale BASE_VERSION, never a later one);
    NotMeasurable naming what each system read otherwise."""
    found, read = [], []
    for system, recipe in sorted(recipes.items()):
        spec = recipe["toolchain"]["release"]
        lines = upstream.release_lines(spec)
        try:
            text = git(repo, "show", f"{sha}:{spec['file']}")
        except HarnessError:
            text = ""
        releases = upstream.stated_releases(spec, text)
        where = f"{system} ({', '.join(line + '.x' for line in lines)})"
        if len(releases) != 1:
            read.append(f"{where}: its {spec['file']} sets {upstream.variables_text(spec)} "
                        + (f"{len(releases)} times" if releases else "nowhere"))
        elif upstream.release_line(releases[0]) in lines:
            found.append((system, releases[0]))
        else:
            read.append(f"{where}: {upstream.variables_text(spec)} {releases[0]}")
    if len(found) == 1:
        return found[0]
    if found:
        # A tree may name an older release than its own in another variable (a stale BASE_VERSION, the binaries
        # a bootstrap script downloads), never a later one: of several systems' readings, the latest is the tree's.
        latest = max(version_key(release) for _, release in found)
        found = [(s, release) for s, release in found if version_key(release) == latest]
        if len(found) == 1:
            return found[0]
        raise NotMeasurable(f"release {found[0][1]} is covered by {' and '.join(s for s, _ in found)}: name one "
                            "with --system")
    raise NotMeasurable("no system covers its release: " + "; ".join(read))


def version_key(release: str) -> tuple:
    """A release's order: ``2.5.16`` -> (2, 5, 16); a part that is no number sorts first."""
    return tuple(int(part) if part.isdigit() else -1 for part in release.split("-")[0].split("."))


def ordering_of(paper: str, experiment: dict, variant: dict, scale: str, systems_dir: Path) -> str | None:
    """The ordering service the variant's points deploy, as its system's plugin names it (hook
    ``ordering_service``) from the points' parameters: the plan's (``plan.make_plan`` with the environment, as
    ``reproduce`` resolves it), or the experiment's and the variant's fixed parameters where no plan can be
    made (a test's systems); several values are joined by commas; None where the system names none."""
    from ..catalogue import load_paper
    from ..plan import for_build, make_plan
    from ..systems import plugin
    try:
        hook = plugin(variant["system"], systems_dir).ordering_service
    except HarnessError:  # a recipe without a system.yaml (a test's toy upstream): nothing names its ordering
        return None
    try:
        plan = make_plan(load_paper(paper), for_build(experiment, "upstream"), scale, only_variants=[variant["id"]])
        found = {hook(p.parameters) for p in plan.points if not p.control} - {None}
        if found:
            return ",".join(sorted(found))
    except (HarnessError, OSError, KeyError):
        pass
    fixed = {**((experiment.get("parameters") or {}).get("fixed") or {}), **(variant.get("parameters") or {})}
    return hook(fixed)


def segment(system: str, variant: dict | None, experiment: dict, ordering: str | None) -> dict:
    """What must agree for two commits' samples to be tested against each other."""
    return {"system": system, "variant": (variant or {}).get("id"),
            "driver": (variant or {}).get("driver") or experiment["driver"], "ordering_service": ordering}


def ordering_name(value: str | None) -> str:
    """A page's name of an ordering service: the plugin's, or 'none named' for None."""
    return "none named" if value is None else value


def boundary(before: dict | None, after: dict | None) -> dict | None:
    """None where two segments agree; else what changes and the page's line: not compared, naming the
    ordering service's change first (``Kafka → Raft``), else the first other change."""
    if before is None or after is None or before == after:
        return None
    changes = {k: [before.get(k), after.get(k)] for k in SEGMENT_KEYS if before.get(k) != after.get(k)}
    key, (a, b) = next(iter(changes.items()))
    headline = (f"ordering service changes ({ordering_name(a)} → {ordering_name(b)})" if key == "ordering_service"
                else f"{key} changes ({a} → {b})")
    return {"why": f"not compared: {headline}", "changes": changes, "from": before, "to": after}


class Router:
    """Each commit's tracked system on a line: the covering system's recipe and the experiment's variant of it
    (one per system, made once), or NotMeasurable naming why there is none."""

    def __init__(self, name: str, recipes: dict[str, dict], paper: str, experiment: dict, scale: str,
                 variant: str | None, root: Path, systems_dir: Path, builds: Path, log):
        self.name, self.recipes, self.paper, self.experiment, self.scale = name, recipes, paper, experiment, scale
        self.variants = [v for v in (variant or "").split(",") if v]
        self.systems_dir, self.builds, self.log = systems_dir, builds, log
        first = next(iter(sorted(recipes.items())))[1]
        self.repository = first["repository"]
        self.repo = clone(first, root, log)
        self.by_system: dict[str, dict | str] = {}

    def lines(self) -> dict[str, list[str]]:
        """Each system's release lines."""
        return lines_of(self.recipes)

    def tracked(self, system: str) -> dict:
        """The tracked system (as ``build.tracked_system``) with its segment and release lines."""
        if system not in self.by_system:
            ours = [v["id"] for v in self.experiment.get("variants") or [] if v["system"] == system]
            chosen = next((v for v in self.variants if v in ours), None)
            try:
                variant = upstream_variant(system, self.experiment, chosen, self.systems_dir)
            except HarnessError as e:
                self.by_system[system] = f"built by {system}, but {e}"
            else:
                spec = self.recipes[system]["toolchain"]["release"]
                self.by_system[system] = {
                    "system": system, "repo": self.repo, "repository": self.repository, "variant": variant["id"],
                    "switches": variant.get("switches") or {},
                    "driver": variant.get("driver") or self.experiment["driver"],
                    "systems_dir": self.systems_dir, "builds": self.builds,
                    "release_lines": upstream.release_lines(spec),
                    "segment": segment(system, variant, self.experiment,
                                       ordering_of(self.paper, self.experiment, variant, self.scale,
                                                   self.systems_dir))}
        found = self.by_system[system]
        if isinstance(found, str):
            raise NotMeasurable(found)
        return found

    def __call__(self, commit: dict) -> dict:
        """The commit's tracked system, with ``release`` its tree's release; NotMeasurable if none."""
        system, release = covering(self.repo, commit["sha"], self.recipes)
        commit["release"] = release
        return {**self.tracked(system), "release": release}
