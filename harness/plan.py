"""Expand an experiment into run points: variants x sweep values x repetitions.

Points are ordered repetition-major (every configuration's first repetition,
then every second one, ...), so that a run stopped midway has measured every
configuration as evenly as possible. A point's id names its variant, its swept
values and its repetition, e.g. ``fastfabric__block_size=100__r0``.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import REPO_ROOT, SCHEMA_VERSION
from .catalogue import Paper, load_system, load_yaml, scale_of
from .config import check, declarations, from_environment, harness_defaults, resolve
from .errors import HarnessError

#: Keys of catalogue mappings that annotate a value rather than set a parameter.
ANNOTATIONS = ("note", "citation", "citations")


def _settings(mapping: dict | None) -> dict:
    """``mapping`` without its annotation keys (notes and citations)."""
    return {k: v for k, v in (mapping or {}).items() if k not in ANNOTATIONS and not k.endswith("_note")}


@dataclass(frozen=True)
class Point:
    """One run of one configuration: what the runner deploys and measures once. A ``control`` point
    corrupts a planned share of its transactions on purpose (``add_controls``); it proves the checks,
    measures nothing and is never pooled."""

    id: str
    variant: str
    system: str
    label: str
    repetition: int
    sweep: dict
    parameters: dict
    switches: dict
    control: bool = False

    def to_dict(self) -> dict:
        """The point as stored in ``points/<point>/point.json``."""
        return {"schema_version": SCHEMA_VERSION, **asdict(self)}


@dataclass
class Plan:
    """Every point of one experiment at one scale, with the resolved configuration."""

    paper: str
    experiment: dict
    scale: str
    repetitions: int
    points: list[Point] = field(default_factory=list)
    resolved: dict = field(default_factory=dict)


def _slug(value) -> str:
    """A file-name-safe rendering of a parameter value."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", str(value))


def point_id(variant: str, sweep: dict, repetition: int) -> str:
    """The id of a point: ``<variant>[__<param>=<value>...]__r<repetition>``."""
    parts = [_slug(variant)] + [f"{_slug(k)}={_slug(v)}" for k, v in sweep.items()] + [f"r{repetition}"]
    return "__".join(parts)


def workload_defaults(name: str | None, workloads_dir: Path) -> dict:
    """The ``defaults`` mapping of ``workloads/<name>/workload.yaml``, if that file exists."""
    path = workloads_dir / str(name) / "workload.yaml"
    return dict(load_yaml(path).get("defaults") or {}) if name and path.exists() else {}


def driver_of(experiment: dict, variant: str) -> str:
    """The catalogue driver the points of ``variant`` run: the variant's own ``driver`` where it names one
    (Fabric 1.2 on Kafka beside v3.1 on Raft in one run), else the experiment's."""
    for v in experiment.get("variants") or []:
        if v["id"] == variant and v.get("driver"):
            return v["driver"]
    return experiment["driver"]


def metric_of(experiment: dict, variant: str) -> str | None:
    """The metric the points of ``variant`` are shown by: the variant's own ``metric`` where it names one (a
    system measured by another quantity beside the experiment's), else the experiment's."""
    for v in experiment.get("variants") or []:
        if v["id"] == variant and v.get("metric"):
            return v["metric"]
    return experiment.get("metric")


def own_drivers(experiment: dict, variants=None) -> dict[str, tuple[str, str]]:
    """``{variant: (system, driver)}`` of the variants (of ``variants``, default all) whose driver is not the
    experiment's."""
    return {v["id"]: (v["system"], v["driver"]) for v in experiment.get("variants") or []
            if v.get("driver") and v["driver"] != experiment["driver"] and (variants is None or v["id"] in variants)}


def for_build(experiment: dict, kind: str) -> dict:
    """The experiment as build ``kind`` runs it: on the reference build, with its ``reference_build`` applied.

    An experiment whose driver only the upstream builds have (Table I on Kafka)
    names there the driver the reference build runs instead, the fixed
    parameters that change with it and the variants it cannot run, each with
    its reason (docs/catalogue.md). Every other experiment and build: unchanged.
    """
    alt = experiment.get("reference_build")
    if kind != "reference" or not alt:
        return experiment
    out = copy.deepcopy(experiment)
    out["driver"] = alt["driver"]
    params = out.setdefault("parameters", {})
    params["fixed"] = {**(params.get("fixed") or {}), **(alt.get("fixed") or {})}
    for v in out.get("variants") or []:
        if v["id"] in (alt.get("not_runnable_variants") or {}):
            v["runnable"], v["not_runnable_reason"] = False, alt["not_runnable_variants"][v["id"]]
    return out


def make_plan(paper: Paper, experiment: dict, scale: str, *, overrides: dict | None = None,
              repeat: int | None = None, environ=None, root: Path | None = None,
              only_variants: list[str] | None = None) -> Plan:
    """Resolve the experiment's configuration and expand it into points.

    ``overrides`` are the command line's ``--set`` values and ``repeat`` its
    ``--repeat``; ``environ`` defaults to the process environment. A command-line
    or environment value for a swept parameter replaces the sweep by that value;
    a list of values (``--set cpus=1,2``) sweeps the parameter over them.
    Every value is checked against ``harness/parameters.yaml`` (ParameterError).
    ``only_variants`` runs just those variants (``invoke regress`` measures
    the variants its build has); the others are listed as left out.
    """
    root = root or REPO_ROOT
    declared = declarations()
    in_file = f"papers/{paper.id}.yaml, experiment {experiment['id']}"
    overrides = dict(overrides or {})
    settings = _settings(scale_of(experiment, scale))
    scale_repetitions = settings.pop("repetitions", 1)
    check("repetitions", scale_repetitions, f"{in_file}, scale {scale}", declared)
    if repeat is not None:
        check("repetitions", repeat, "--repeat on the command line", declared)
    repetitions = repeat or scale_repetitions
    params = experiment.get("parameters") or {}
    sweep = dict(settings.pop("sweep", None) or params.get("sweep") or {})
    workload = _settings(experiment.get("workload"))
    workload_name = workload.pop("name", None)

    environment = from_environment(environ, declared)
    sweep_sources = dict.fromkeys(sweep, in_file)
    for source, layer in (("environment", environment), ("cli", overrides)):
        for name, value in layer.items():
            if isinstance(value, list) or name in sweep:  # several values (--set cpus=1,2): a sweep
                sweep[name], sweep_sources[name] = (value if isinstance(value, list) else [value]), source
    for name, values in sweep.items():
        for value in values if isinstance(values, list) else [values]:
            check(name, value, sweep_sources[name], declared)
    experiment_layer = {**({"workload": workload_name} if workload_name else {}), **workload,
                        **_settings(params.get("fixed")), **settings}
    base, base_sources = resolve({
        "defaults": harness_defaults(),
        "system": workload_defaults(workload_name, root / "workloads"),
        "experiment": experiment_layer,
        "environment": {k: v for k, v in environment.items() if k not in sweep},
        "cli": {k: v for k, v in overrides.items() if k not in sweep},
    })
    named = {"experiment": in_file, "system": f"workloads/{workload_name}/workload.yaml"}
    for name in sorted(base):
        check(name, base[name], named.get(base_sources[name], base_sources[name]), declared)

    known = [v["id"] for v in experiment.get("variants") or []]
    unknown = sorted(set(only_variants or []) - set(known))
    if unknown:
        raise HarnessError(f"experiment {experiment['id']} has no variant {', '.join(unknown)}; "
                           f"its variants: {', '.join(known)}")
    variants, not_runnable = {}, {}
    for v in experiment.get("variants") or []:
        if v.get("runnable") is False:
            not_runnable[v["id"]] = v.get("not_runnable_reason") or "marked not runnable in the catalogue"
            continue
        if only_variants is not None and v["id"] not in only_variants:
            not_runnable[v["id"]] = f"left out of this run (variants: {', '.join(only_variants)})"
            continue
        system = load_system(v["system"], root / "systems")
        defaults = {k: s["default"] for k, s in system["reference"]["switches"].items()}
        switches, sources = resolve({"system": defaults, "experiment": v.get("switches") or {}})
        # The variant's own fixed parameters (each system's ordering service beside another's), over the
        # experiment's and under the environment's and the command line's.
        own = {k: val for k, val in (v.get("parameters") or {}).items() if k not in environment and k not in overrides}
        for name, value in own.items():
            check(name, value, f"{in_file}, variant {v['id']}", declared)
        variants[v["id"]] = {"system": v["system"], "label": v.get("label", v["id"]),
                             "switches": switches, "switch_sources": sources, "parameters": own}

    resolved = {
        "schema_version": SCHEMA_VERSION,
        "paper": paper.id,
        "experiment": experiment["id"],
        "scale": scale,
        "repetitions": repetitions,
        "parameters": {k: {"value": base[k], "source": base_sources[k]} for k in sorted(base)},
        "sweep": sweep,
        "variants": {vid: {"system": v["system"], "label": v["label"],
                           "switches": {k: {"value": v["switches"][k], "source": v["switch_sources"][k]}
                                        for k in sorted(v["switches"])},
                           **({"parameters": {k: {"value": v["parameters"][k], "source": "variant"}
                                              for k in sorted(v["parameters"])}} if v["parameters"] else {})}
                     for vid, v in variants.items()},
        "not_runnable_variants": not_runnable,
    }
    points = expand(resolved)
    resolved["points"] = [p.id for p in points]
    return Plan(paper=paper.id, experiment=experiment, scale=scale, repetitions=repetitions,
                points=points, resolved=resolved)


def variant_parameters(variant: dict) -> dict:
    """A resolved variant's own fixed parameters (none in runs made before variants had them)."""
    return {k: p["value"] for k, p in (variant.get("parameters") or {}).items()}


def expand(resolved: dict) -> list[Point]:
    """The points of a resolved configuration (``resolved.yaml``), repetition-major.

    ``--resume`` rebuilds a run's points from its stored ``resolved.yaml`` with
    this function, so that they are the same even if the catalogue changed.
    """
    base = {k: v["value"] for k, v in resolved["parameters"].items()}
    sweep = resolved["sweep"]
    names = list(sweep)
    points = control_points(resolved)
    for rep in range(resolved["repetitions"]):
        for vid, v in resolved["variants"].items():
            switches = {k: s["value"] for k, s in v["switches"].items()}
            for values in itertools.product(*(sweep[n] for n in names)):
                swept = dict(zip(names, values))
                points.append(Point(id=point_id(vid, swept, rep), variant=vid, system=v["system"],
                                    label=v["label"], repetition=rep, sweep=swept,
                                    parameters={**base, **variant_parameters(v), **swept}, switches=switches))
    return points


#: A control point's share of each mutation kind, and its most transactions (issue 31: a control beside every run).
CONTROL_SHARE = 0.01
CONTROL_TRANSACTIONS = 2000


def add_controls(plan: Plan, mutations_of) -> None:
    """Put control points first in ``plan`` for each variant whose system's driver can corrupt
    transactions: ``mutations_of(variant, system)`` gives the parameters (``corrupt_creator_fraction``, ...) of the
    kinds it supports (its ``validity.yaml`` evidence). A control runs the first sweep values with
    ``CONTROL_SHARE`` of its transactions (at most ``CONTROL_TRANSACTIONS``) corrupted per kind, and the
    run completes only if the ledger and our verifier mark exactly those invalid. A swept parameter declared
    ``path: true`` (one that changes the path a transaction takes, e.g. v3.1's ``ordering``) gets a control per
    value: SmartBFT's checks are not proven by Raft's control. Stored in ``resolved.yaml`` (``control``) so
    that ``--resume`` makes the same points."""
    controls = {}
    for vid, v in plan.resolved["variants"].items():
        kinds = mutations_of(vid, v["system"])
        if kinds:
            controls[vid] = {name: CONTROL_SHARE for name in kinds}
    if controls:
        declared = declarations()
        paths = [n for n in plan.resolved["sweep"] if (declared.get(n) or {}).get("path")]
        plan.resolved["control"] = {"parameters": controls, "max_transactions": CONTROL_TRANSACTIONS,
                                    "paths": paths}
        plan.points[:0] = control_points(plan.resolved)
        plan.resolved["points"] = [p.id for p in plan.points]


def control_points(resolved: dict) -> list[Point]:
    """The control points a resolved configuration states (none without ``control``): per variant, one for
    each combination of its ``paths`` parameters' swept values, the other swept parameters at their first."""
    control = resolved.get("control") or {}
    base = {k: v["value"] for k, v in resolved["parameters"].items()}
    sweep = resolved["sweep"]
    first = {n: (v[0] if isinstance(v, list) else v) for n, v in sweep.items()}
    paths = [n for n in control.get("paths") or [] if n in sweep]
    values = [sweep[n] if isinstance(sweep[n], list) else [sweep[n]] for n in paths]
    at = [{**first, **dict(zip(paths, combo))} for combo in itertools.product(*values)]
    points = []
    for vid, mutations in sorted((control.get("parameters") or {}).items()):
        v = resolved["variants"][vid]
        for swept in at:
            parameters = {**base, **variant_parameters(v), **swept, **mutations}
            if "transactions" in parameters:
                parameters["transactions"] = min(int(parameters["transactions"]), int(control["max_transactions"]))
            points.append(Point(id="control__" + point_id(vid, swept, 0), variant=vid, system=v["system"],
                                label=f"{v['label']} (control)", repetition=0, sweep=swept, parameters=parameters,
                                switches={k: s["value"] for k, s in v["switches"].items()}, control=True))
    return points


def point_done(run_dir: Path, point: Point) -> bool:
    """True when ``point`` finished completely in ``run_dir`` (its summary says complete)."""
    summary = Path(run_dir) / "points" / point.id / "summary.json"
    if not summary.exists():
        return False
    with open(summary, encoding="utf-8") as f:
        return json.load(f).get("status") == "complete"


def pending(plan: Plan, run_dir: Path) -> list[Point]:
    """The points of ``plan`` still to run in ``run_dir`` (all of them in a new run)."""
    return [p for p in plan.points if not point_done(run_dir, p)]
