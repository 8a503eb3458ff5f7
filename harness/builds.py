"""Which build of each system a run uses, and the driver that runs it.

Every system has two builds behind one interface (docs/architecture.md):

* ``upstream``: the published code, built by ``harness.upstream`` from the
  recipe in ``systems/<system>/upstream.yaml``, whose ``drivers`` say how each
  catalogue driver runs it;
* ``reference``: this repository's Go implementation (``bin/``), whose drivers
  are in ``systems/<system>/system.yaml`` under ``reference.drivers``.

A driver spec is ``{playbook, roles, binaries, placement}``: the playbook of
a point, the roles it starts (teardown stops them in reverse), this
repository's commands it needs, and the topology role each component's host
has (or a list of roles: one host each, e.g. one PBFT peer per host). ``--build auto`` (the default) takes upstream wherever its recipe has the
driver and its source can be had (``upstream_source.source_available``: a cached build of the pin, a
snapshot, or a repository that answers within seconds, not merely git on PATH), and says why when it falls
back. An explicit ``--source git`` whose repository cannot be reached fails instead of falling back.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path


from . import upstream
from .deploy import role_defaults
from .catalogue import load_system
from .errors import HarnessError, choose
from .rundir import git_state

KINDS = ("auto", "upstream", "reference")


@dataclass
class Choice:
    """The build of one run: its kind, each system's driver spec and provenance, why it fell back.

    Upstream builds are per variant (``builds``, ``variants``): a variant's
    switches may pick a flavour of its system's recipe.
    """
    kind: str
    drivers: dict[str, dict]            # system -> driver spec
    provenance: dict[str, dict] = field(default_factory=dict)
    fallback_reason: str | None = None
    builds: dict[str, upstream.Build] = field(default_factory=dict)   # variant -> build
    variants: dict[str, dict] = field(default_factory=dict)           # variant -> its build's provenance
    variant_drivers: dict[str, dict] = field(default_factory=dict)    # variant -> driver spec, where not its system's
    own_drivers: dict[str, tuple[str, str]] = field(default_factory=dict)  # variant -> (system, its catalogue driver)
    companions: dict[str, dict] = field(default_factory=dict)         # variant -> {system: build} its driver also runs
    driver: str = ""                                                  # the catalogue driver of the run
    note: str | None = None            # how the experiment differs on this build (its reference_build.why)

    def driver_spec(self, variant: str, system: str) -> dict:
        """The driver spec a point of ``variant`` runs with."""
        return self.variant_drivers.get(variant) or self.drivers[system]

    def driver_name(self, variant: str) -> str:
        """The catalogue driver a point of ``variant`` runs (its own, else the run's)."""
        return self.own_drivers[variant][1] if variant in self.own_drivers else self.driver

    def systems(self) -> list[str]:
        """Every system the run's variants build, those with a driver of their own included."""
        return sorted(set(self.drivers) | {system for system, _ in self.own_drivers.values()})

    def companion_dirs(self, variant: str) -> dict[str, str]:
        """``{system: build dir}`` of the companion builds a point of ``variant`` runs (docs/upstream.md)."""
        return {s: str(b.path) for s, b in self.companions.get(variant, {}).items()}

    def metadata(self, switches: dict) -> dict:
        """What ``metadata.json`` records under ``build``."""
        drivers = {**self.drivers, **self.variant_drivers}
        out = {"kind": self.kind, "systems": self.provenance, "switches": switches, "drivers": drivers,
               "role_settings": role_settings(drivers)}
        if self.own_drivers:
            out["variant_driver_names"] = {v: d for v, (_, d) in sorted(self.own_drivers.items())}
        if self.variants:
            out["variants"] = self.variants
        if self.kind == "reference":
            out["source"] = git_state()["sha"]
        if self.fallback_reason:
            out["fallback_reason"] = self.fallback_reason
        if self.note:
            out["note"] = self.note
        return out

    def layout(self) -> dict[str, list[str]]:
        """``{host_role: [component, ...]}`` over every system's driver."""
        out: dict[str, list[str]] = {}
        for spec in [*self.drivers.values(), *self.variant_drivers.values()]:
            for component, roles in spec["placement"].items():
                for role in [roles] if isinstance(roles, str) else roles:
                    if component not in out.setdefault(role, []):
                        out[role].append(component)
        return out

    def binaries(self) -> list[str]:
        specs = [*self.drivers.values(), *self.variant_drivers.values()]
        return list(dict.fromkeys(b for spec in specs for b in spec["binaries"]))


def role_settings(drivers: dict[str, dict]) -> dict[str, dict]:
    """Every setting the drivers' roles apply by default (each role's ``defaults/main.yml``).

    Recorded in each run so that the choices a paper does not state (log
    levels, GOMAXPROCS, ledger types, pool sizes...) travel with its numbers.
    Values that Ansible derives from other variables are kept as written.
    """
    out: dict[str, dict] = {}
    for spec in drivers.values():
        for role in spec["roles"]:
            if role not in out and (defaults := role_defaults(role)):
                out[role] = defaults
    return out


def reference_driver(system: str, driver: str, systems_dir: Path | None = None) -> dict | None:
    """The reference build's spec of ``driver`` for ``system`` (None if it has none)."""
    doc = load_system(system, systems_dir)
    return (doc["reference"].get("drivers") or {}).get(driver)


def on_reference(experiment: dict, kind: str, systems_dir: Path | None = None) -> dict:
    """The experiment as the reference build runs it: a variant whose system has no reference driver for its
    driver is not runnable there, saying why, so that the others run (e.g. Fig. 6's Fabric 1.2 without
    FastFabric's variants, whose code exists only upstream). Unchanged on another build, or where no variant
    would be left (``choose_build`` then says why none can run)."""
    if kind != "reference":
        return experiment
    runs = [v for v in experiment.get("variants") or [] if v.get("runnable") is not False]
    lacking = {}
    for v in runs:
        driver = v.get("driver") or experiment["driver"]
        if reference_driver(v["system"], driver, systems_dir) is None:
            lacking[v["id"]] = (f"the reference build has no driver {driver!r} for system {v['system']} "
                                f"(systems/{v['system']}/system.yaml reference.drivers): it runs on the upstream "
                                "build only")
    if not lacking or len(lacking) == len(runs):
        return experiment
    out = copy.deepcopy(experiment)
    for v in out["variants"]:
        if v["id"] in lacking:
            v["runnable"], v["not_runnable_reason"] = False, lacking[v["id"]]
    return out


def upstream_driver(system: str, driver: str, systems_dir: Path | None = None) -> dict | None:
    """The upstream build's spec of ``driver`` for ``system`` (None without a recipe or that driver)."""
    systems_dir = systems_dir or upstream.SYSTEMS
    if system not in upstream.systems_with_recipe(systems_dir):
        return None
    return (upstream.load_recipe(system, systems_dir).get("drivers") or {}).get(driver)


def _upstream_unavailable(systems: list[str], driver: str, source: str, systems_dir: Path | None) -> str | None:
    for system in systems:
        if upstream_driver(system, driver, systems_dir) is None:
            return f"system {system} has no upstream driver {driver!r} yet (systems/{system}/upstream.yaml)"
        why = upstream.source_available(upstream.load_recipe(system, systems_dir or upstream.SYSTEMS), source)
        if why and source == "git":  # asked for by name: no quiet fallback to the reference build
            raise HarnessError(f"--source git: system {system}: {why}",
                               hint="reach the repository (or a mirror: git's url.<base>.insteadOf), "
                                    "or leave --source at auto to fall back to the reference build")
        if why:
            return f"system {system}: {why}"
    return None


def build_kind(kind: str, experiment: dict, source: str = "auto", systems_dir: Path | None = None,
               only_variants: list[str] | None = None) -> tuple[str, str | None]:
    """The build (``upstream`` or ``reference``) a run of ``experiment`` gets, and why ``auto`` fell back.

    Decided before the plan: on the reference build an experiment may run
    another driver and fewer variants (``plan.for_build``). ``upstream`` stays
    ``upstream`` even when it cannot be had (``choose_build`` says why).
    """
    choose("build", kind, KINDS)
    if kind != "auto":
        return kind, None
    runs = [v for v in experiment.get("variants") or [] if v.get("runnable") is not False
            and (only_variants is None or v["id"] in only_variants)]
    pairs = sorted({(v["system"], v.get("driver") or experiment["driver"]) for v in runs})
    reason = next((why for system, driver in pairs
                   if (why := _upstream_unavailable([system], driver, source, systems_dir))), None)
    return ("reference", reason) if reason else ("upstream", None)


def choose_build(kind: str, systems: list[str], driver: str, source: str = "auto",
                 systems_dir: Path | None = None, own: dict[str, tuple[str, str]] | None = None) -> Choice:
    """Decide the build of a run whose variants use ``systems`` with catalogue ``driver``, and whose variants
    ``own`` (``{variant: (system, driver)}``, ``plan.own_drivers``) run a driver of their own.

    ``upstream`` fails with the reason when it cannot be had; ``auto`` falls
    back to the reference build and records why.
    """
    choose("build", kind, KINDS)
    own = dict(own or {})
    pairs = [(s, driver) for s in systems] + sorted(set(own.values()))
    reason = None
    if kind in ("auto", "upstream"):
        reason = next((why for s, d in pairs if (why := _upstream_unavailable([s], d, source, systems_dir))), None)
        if reason is None:
            return Choice("upstream", {s: upstream_driver(s, driver, systems_dir) for s in systems}, driver=driver,
                          variant_drivers={v: upstream_driver(s, d, systems_dir) for v, (s, d) in own.items()},
                          own_drivers=own)
        if kind == "upstream":
            raise HarnessError(f"--build upstream: {reason}", hint="use --build reference, or see docs/upstream.md")
    specs = {}
    for system, name in pairs:
        spec = reference_driver(system, name, systems_dir)
        if spec is None:
            raise HarnessError(f"system {system} has no reference driver {name!r} "
                               f"(systems/{system}/system.yaml reference.drivers)")
        specs[system, name] = spec
    return Choice("reference", {s: specs[s, driver] for s in systems}, fallback_reason=reason, driver=driver,
                  variant_drivers={v: specs[pair] for v, pair in own.items()}, own_drivers=own)


def prepare(choice: Choice, variants: dict[str, tuple[str, dict]], source: str = "auto", log=print,
            systems_dir: Path | None = None, pins: dict[str, dict] | None = None,
            builds_dir: Path | None = None) -> None:
    """Build (or reuse) the upstream build of every variant (``{variant: (system, switches)}``) and record it.

    ``pins`` ({system: pin}) builds those systems at other commits (``upstream.at_pin``, ``invoke regress``);
    ``builds_dir`` keeps the builds in another cache than ``upstream.BUILDS`` (a kit's static builds).

    ``provenance[system]`` is the system's build without flavours where a
    variant has it (else its first variant's); ``variants[variant]`` names
    each variant's own.
    """
    if choice.kind != "upstream":
        return
    cache = {"builds": builds_dir} if builds_dir else {}
    for variant, (system, switches) in variants.items():
        built = upstream.build(system, source, systems_dir=systems_dir or upstream.SYSTEMS, log=log,
                               switches=switches, pin=(pins or {}).get(system), **cache)
        choice.builds[variant] = built
        if built.info.get("base"):  # the base system's tree: it runs with the base's driver
            spec = upstream_driver(built.info["base"], choice.driver_name(variant), systems_dir)
            if spec is None:
                raise HarnessError(f"variant {variant} is built on {built.info['base']}, which has no upstream "
                                   f"driver {choice.driver_name(variant)!r}")
            choice.variant_drivers[variant] = spec
        if system not in choice.provenance or (choice.provenance[system].get("flavours") and not built.info.get("flavours")):
            choice.provenance[system] = built.provenance()  # the system's own tree where a variant has it
        choice.variants[variant] = {k: v for k, v in built.provenance().items()
                                    if k in ("system", "key", "path", "flavours", "base", "patches", "grafts")}
        # Builds of other systems the driver's roles also run (e.g. the published
        # clients of FastFabric against Fabric v1.2.0's orderer), without flavours.
        for other in choice.driver_spec(variant, system).get("companions") or []:
            companion = upstream.build(other, source, systems_dir=systems_dir or upstream.SYSTEMS, log=log,
                                       pin=(pins or {}).get(other), **cache)
            choice.companions.setdefault(variant, {})[other] = companion
            choice.variants[variant].setdefault("companions", {})[other] = {
                k: v for k, v in companion.provenance().items() if k in ("system", "key", "path", "patches")}
