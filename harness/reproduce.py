"""The whole lifecycle of a reproduction: plan, provision, deploy, run, collect, analyze, report.

``reproduce`` runs each runnable experiment of a paper (or one experiment) in
its own run directory; experiments that cannot run yet are skipped with their
reason printed and recorded in ``results/<paper>/skipped.json``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from . import REPO_ROOT, SCHEMA_VERSION, capacity, machine_lock, preflight, systems, topology, user_refs, validity
from .analyze import analyze_run
from .catalogue import SCALES, declared_drivers, load_paper
from .errors import HarnessError, Interrupted, choose
from .plan import Plan, add_controls, driver_of, expand, for_build, make_plan, metric_of, own_drivers
from .progress import Progress
from .providers import PROVIDERS, get_provider
from .providers.aws import PlanOnly
from .report import render_paper
from .rundir import Run, read_json, write_json
from .resources import ResourceMonitor
from .topology import Layout, as_layout
from .builds import Choice, build_kind, choose_build, on_reference, prepare
from .point_loop import Measuring, run_points
from .runner import analyze_point, host_ports, role_variables
from .tools import require_binaries, require_tool

# FABRICREPRO_RESULTS / FABRICREPRO_REPORTS move the run store and the reports
# (the labs' tests run the labs' commands into a temporary directory).
RESULTS = Path(os.environ.get("FABRICREPRO_RESULTS") or REPO_ROOT / "results")
REPORTS = Path(os.environ.get("FABRICREPRO_REPORTS") or REPO_ROOT / "reports")


def skip_reason(experiment: dict, systems_dir: Path | None = None, provider: str | None = None) -> str | None:
    """Why an experiment cannot run (None if it can), on ``provider`` when given."""
    if not experiment.get("runnable"):
        return experiment.get("not_runnable_reason") or "marked not runnable in the catalogue"
    if provider == "local" and has_fixed_delays(experiment):
        # its result is the effect of the delays (e.g. geo-distributed latency): without them it means nothing
        return ("its links have fixed delays (network), which the local provider cannot apply "
                "(every role on one host): use --provider auto (the default: netns here), netns, ssh or aws")
    drivers = declared_drivers(systems_dir or REPO_ROOT / "systems")
    for name in [experiment.get("driver"), *(v["driver"] for v in experiment.get("variants") or [] if v.get("driver"))]:
        if name not in drivers:
            return f"driver {name!r} has no runner yet (runners: {', '.join(sorted(drivers))})"
    return None


def has_fixed_delays(experiment: dict) -> bool:
    """Whether the experiment's ``network`` delays the whole network or any link."""
    network = experiment.get("network") or {}
    return bool(network.get("delay_ms") or any(link.get("delay_ms") for link in network.get("links", [])))


def auto_provider(experiment: dict, plan: Plan | None) -> tuple[str, str]:
    """The provider ``--provider auto`` gives an experiment, and why.

    Local (every role on this machine, the least overhead) unless the
    experiment's result depends on delayed links, which only separate hosts
    can have: then network-namespace hosts on this machine (netns).
    """
    if has_fixed_delays(experiment):
        return "netns", "its links have fixed delays, which need separate hosts"
    if plan is not None and point_latency(plan) is not None:
        return "netns", "it sweeps network_latency_ms on the links between hosts"
    return "local", "no delayed links"


def network_links(experiment: dict, layout: Layout | dict[str, list[str]], delay_ms: float | None = None,
                  placed: dict[str, str] | None = None) -> list[dict]:
    """The links the experiment's ``network`` asks for between the hosts of the run's ``layout``.

    ``network.rate_mbit`` / ``network.delay_ms`` apply to every ordered pair of
    hosts; ``network.links`` (``{from, to, delay_ms, rate_mbit}`` by topology
    role) override single pairs (every host of a role of several). A delayed link proxies the ports of the
    servers on its ``to`` host (clients only dial out, so delay towards a host
    without servers has nothing to act on and is left out). ``delay_ms`` (the
    points' ``network_latency_ms``, swept by the Fujitsu paper's Fig. 5) is the
    delay of each listed link that states none, 0 included, so that each point
    can change it (``provider.set_link_delay``). Pairs that the provider
    ``placed`` on one host of its own have no link between them and are left out.
    """
    net = experiment.get("network") or {}
    layout = as_layout(layout)
    hosts = layout.by_name()
    of_role: dict[str, list[str]] = {}
    for h in layout.hosts:
        of_role.setdefault(h.role, []).append(h.name)
    pairs: dict[tuple[str, str], dict] = {}
    default = {k: net[k] for k in ("rate_mbit", "delay_ms") if net.get(k)}
    if default:
        for a in hosts:
            for b in hosts:
                if a != b:
                    pairs[(a, b)] = dict(default)
    for link in net.get("links", []):
        for end in ("from", "to"):
            if link[end] not in of_role:
                raise HarnessError(f"experiment {experiment['id']}: network link {link['from']}->{link['to']}: "
                                   f"{link[end]!r} is not a role of this run (roles: {', '.join(of_role)})")
        shape = {k: link[k] for k in ("rate_mbit", "delay_ms") if link.get(k)}
        if delay_ms is not None and "delay_ms" not in shape:
            shape["delay_ms"] = delay_ms
        for a in of_role[link["from"]]:
            for b in of_role[link["to"]]:
                pairs[(a, b)] = dict(shape)
    links = []
    for (a, b), shape in sorted(pairs.items()):
        if placed and placed.get(a) == placed.get(b):
            continue
        ports = host_ports(hosts[b])
        if "delay_ms" in shape and not ports:
            shape.pop("delay_ms")
        if shape:
            links.append({"from": a, "to": b, **shape, **({"ports": ports} if "delay_ms" in shape else {})})
    return links


def lay_out_run(experiment: dict, build: Choice, provider, say=None) -> tuple[Layout, dict[str, str], dict]:
    """The run's hosts (the paper's topology, ``topology.lay_out``), where the provider places them, and the
    record of both for ``metadata.json`` (``topology``); printed before anything starts.

    A provider that would put several hosts of the layout on one of its own
    says so as a deviation; with ``provider.strict_topology`` it is refused instead.
    """
    layout = topology.lay_out(experiment.get("topology"), build.layout())
    placed = provider.place(layout)
    shared = topology.placement_deviations(layout, placed, provider.name)
    if shared and provider.strict_topology:
        raise HarnessError(f"--strict-topology: {experiment['id']} lays out {len(layout.hosts)} hosts, and "
                           + "; ".join(shared),
                           hint="give the provider a host per instance (ssh: more hosts in the groups), "
                                "or run without --strict-topology")
    record = {**layout.record(), "provider": provider.name, "placement": placed,
              "deviations": [*layout.deviations, *shared]}
    if say is not None:
        say(f"{experiment['id']}: {len(layout.hosts)} hosts of the topology on {len(set(placed.values()))} "
            f"{provider.name} host(s):")
        for line in topology.placement_table(layout, placed):
            say(line)
        for line in record["deviations"]:
            say(f"  deviation: {line}")
    return layout, placed, record


def point_latency(plan: Plan) -> float | None:
    """The first point's ``network_latency_ms`` when the experiment sets it (the links' delay at start)."""
    values = [p.parameters["network_latency_ms"] for p in plan.points if "network_latency_ms" in p.parameters]
    return float(values[0]) if values else None


def _run_plan(plan: Plan, run: Run, provider, progress: Progress, build: Choice,
              systems_dir: Path | None = None, placement=None) -> None:
    """Measure the pending points of ``plan`` in the one measuring loop (``point_loop.run_points``), each
    analysed as it ends, with per-host metrics (node-exporter, one Prometheus) over the whole run stored per
    point; then analyse the run. ``placement``: what ``lay_out_run`` gave before the run was made (else it is
    laid out here)."""
    layout, placed, record = placement or lay_out_run(plan.experiment, build, provider, progress.message)
    measuring = measuring_plan(plan, build, run.stored("experiment").get("paper") or {}, record,
                               network_links(plan.experiment, layout, point_latency(plan), placed), systems_dir)
    run_points(measuring, run, provider, progress, _Analysing(plan.experiment, run.path))
    analyze_run(run)


def measuring_plan(plan: Plan, build: Choice, paper: dict, topology_record: dict, links: list[dict],
                   systems_dir: Path | None = None, where=str) -> dict:
    """``plan`` as the measuring loop takes it (``point_loop``; a kit's ``plan.json`` holds it too): JSON
    only, every point with its driver spec, builds (``where``: a build's path as the loop is to find it),
    role variables and the watcher's patterns; the laid-out ``topology_record``, the ``links`` to shape,
    the ``paper``'s kernel parameters."""
    def entry(point) -> dict:
        up = build.builds.get(point.variant)
        companions = {s: where(d) for s, d in build.companion_dirs(point.variant).items()}
        return {"point": point.to_dict(), "spec": build.driver_spec(point.variant, point.system),
                "upstream_dir": where(str(up.path)) if up else None, "companion_dirs": companions,
                "role_variables": role_variables(point, list(companions), systems_dir),
                "fatal_patterns": validity.fatal_patterns(point.system, systems_dir or validity.SYSTEMS),
                "before_playbook": systems.prepares([point.system, *companions], systems_dir)}
    return {"experiment": plan.experiment, "topology": topology_record, "links": links,
            "host_settings": dict((paper.get("settings") or {}).get("sysctl") or {}),  # e.g. Fujitsu's TCP reuse
            "topology_not_deployed": not_deployed(plan.experiment, build.layout()),
            "points": [entry(p) for p in plan.points]}


class _Analysing(Measuring):
    """``invoke reproduce``'s way through the loop: each point analysed as it ends (``runner.analyze_point``)
    with its per-host metrics; a point is done when its summary says complete (a validity failure is
    measured again on resume)."""

    def __init__(self, experiment: dict, run_path: Path):
        super().__init__(f"`invoke reproduce --resume {run_path}`")
        self.experiment, self.monitor = experiment, None

    def done(self, run: Run, point: dict) -> bool:
        summary = run.path / "points" / point["id"] / "summary.json"  # run.point_dir would make the folder
        return summary.is_file() and read_json(summary).get("status") == "complete"

    def start(self, run: Run, provider, groups: dict) -> None:
        self.monitor = ResourceMonitor(run.path / "provider" / "monitor", provider.monitor_targets(groups),
                                       track=provider.track).start()

    def finish(self, run, point, measured, window_ns, progress) -> tuple[dict, str]:
        summary = analyze_point(run.point_dir(point["id"]))
        if measured is None:  # interrupted: analysed, then the run stops
            return summary, ""
        try:  # the point's per-host metrics in points/<point>/metrics/; a failure is reported, not fatal
            self.monitor.collect(*window_ns, run.point_dir(point["id"]) / "metrics")
        except HarnessError as e:
            progress.message(f"per-host metrics of {point['id']} not stored: {e}")
        metric = metric_of(self.experiment, point["variant"])
        value = summary["metrics"].get(metric)
        return summary, summary.get("reason") or (f"{metric} = {value}" if value is not None else "")

    def stop(self) -> None:
        if self.monitor:
            self.monitor.stop()


def _mutations_of(experiment: dict, kind: str, systems_dir: Path | None):
    """For a variant of ``experiment``: the parameters of the mutation kinds its system's driver supports on
    this build (validity.yaml)."""
    def kinds(variant: str, system: str) -> list[str]:
        rules = validity.load_rules(system, systems_dir or validity.SYSTEMS)
        decl = (rules["evidence"].get(driver_of(experiment, variant)) or {}).get(kind) or {}
        by_kind = {k: p for p, k in validity.MUTATION_PARAMETERS.items()}
        return [by_kind[m] for m in decl.get("mutations") or []]
    return kinds


def not_deployed(experiment: dict, hosts: dict[str, list[str]]) -> dict[str, int]:
    """Roles of the paper's topology that this build does not deploy (e.g. Kafka before it exists)."""
    # one host per instance of a role is named <role><i> (e.g. peer0..peer3 for one PBFT peer each)
    deployed = set(hosts) | {h.rstrip("0123456789") for h in hosts}
    return {role: n for role, n in (experiment.get("topology") or {}).items() if n and role not in deployed}


_not_deployed = not_deployed  # the name systems/fujitsu-api/tests/test_layout.py imports


def is_ours(experiment: dict) -> bool:
    """Whether a catalogue experiment is ours, not the paper's (today's Fabric, a revisit): it states
    ``questions`` (no paper's claims), as every revisit must (``catalogue``)."""
    return bool(experiment.get("questions"))


def reproduce(paper_id: str, experiment_id: str | None = None, scale: str = "smoke", provider: str = "auto",
              repeat: int | None = None, resume: str | None = None, overrides: dict | None = None,
              results: Path = RESULTS, reports: Path = REPORTS, stream=None,
              provider_options: dict | None = None, papers_dir: Path | None = None,
              build: str = "auto", source: str = "auto", variants: list[str] | None = None,
              pins: dict[str, dict] | None = None, controls: bool = True,
              strict_topology: bool = False, ours: bool = False) -> list[Run]:
    """Reproduce a paper's experiments (or one) and render its report; returns the runs made.

    With ``resume`` (a run directory) only that run's missing points are run, with the configuration (and
    build kind) stored in it. ``provider`` is ``auto`` (each experiment on local, or netns when its links need
    delays: ``auto_provider``) or one of ``PROVIDERS`` for all. ``provider_options`` go to the provider (e.g.
    ``bin_dir``, ``work_root`` of the local provider). ``build`` is ``auto`` (upstream where it can run, else
    the reference build, saying why), ``upstream`` or ``reference``; ``source``
    where an upstream build's code comes from (``harness.upstream.SOURCES``);
    ``variants`` runs only those variants of the experiment; ``pins`` ({system: pin})
    builds those systems at other commits of their repositories (``upstream.at_pin``, ``invoke regress``).
    ``controls`` puts a control point first in each experiment whose driver can corrupt transactions
    (``plan.add_controls``): the run completes only if its checks find exactly the planted invalid ones.
    ``strict_topology`` refuses an experiment whose topology the provider cannot give a host per instance
    (``lay_out_run``) instead of running it with instances sharing hosts.
    Without ``experiment_id`` only the paper's own experiments run; ``ours`` adds the catalogue's
    experiments of ours (``is_ours``: today's Fabric, revisits), which run anyway when named.
    """
    stream = stream or sys.stderr
    choose("scale", scale, SCALES)
    choose("provider", provider, ["auto", *PROVIDERS])
    paper = load_paper(paper_id, papers_dir)
    options = dict(provider_options or {})
    if provider == "aws":
        options.setdefault("paper", paper_id)  # Terraform's environment is the paper's topology
    providers = _Providers(options)
    if provider != "auto":
        providers.get(provider)  # a provider that cannot work here fails before anything runs
    resumed = _resumed_run(resume, paper_id) if resume else None
    experiments = _chosen_experiments(paper, resumed, experiment_id, ours, stream)
    systems_dir = Path(papers_dir).parent / "systems" if papers_dir else None
    # Every experiment's parameters are checked before any of them runs: bad input makes no run directory.
    kinds, plans = ({}, {}) if resume else plan_experiments(
        paper, [e for e in experiments if not skip_reason(e, systems_dir, provider)], scale, build, source,
        systems_dir, variants, overrides, repeat, controls)
    skipped, runs, planned = {}, [], []
    for experiment in experiments:
        began, waited, built = time.monotonic(), machine_lock.waited_s(), 0.0
        reason = skip_reason(experiment, systems_dir, provider)
        if reason:
            skipped[experiment["id"]] = reason
            print(f"skip {experiment['id']}: {reason}", file=stream)
            continue
        require_tool("ansible-playbook")
        if resume:
            plan, (kind, fallback) = _resumed_plan(resumed, paper_id), _resumed_build(resumed)
        else:
            plan, (kind, fallback) = plans[experiment["id"]], kinds[experiment["id"]]
        where, why = _provider_for(provider, resumed, plan)
        provider_ = None
        try:
            provider_ = _named_provider(providers, where, why)
            if why and where != "local":
                print(f"{experiment['id']}: provider {where} ({why})", file=stream)
            choice = build_choice(experiment, plan, kind, fallback, source, systems_dir, stream)
            # local: this machine is the run's from its port checks on (another local run waits, saying so)
            provider_.strict_topology = strict_topology
            # the paper's topology host by host, printed (and refused under --strict-topology) before anything runs
            placement = lay_out_run(experiment, choice, provider_, say=lambda line: print(line, file=stream))
            provider_.hold(f"{paper_id} {experiment['id']}", plan)
            built = _check_and_build(provider_, choice, plan, source, results, systems_dir, pins, stream,
                                     built=((resumed.metadata.get("build") or {}).get("systems") if resume else None))
        except PlanOnly as e:   # --plan-only: this experiment's hosts and cost are printed; plan the next one
            provider_.down()
            planned.append(e)
            continue
        except BaseException as e:
            if provider_ is not None:
                provider_.down()
            if not isinstance(e, HarnessError) or len(experiments) == 1 or isinstance(e, preflight.PreflightError):
                raise
            skipped[experiment["id"]] = str(e)
            print(f"skip {experiment['id']}: {e}", file=stream)
            continue
        try:
            if resume:
                run = resumed
                run.resume()
            else:
                run = _new_run(results, paper, plan, where, choice, systems_dir)
            run.metadata["command_timing"] = _command_timing(began, waited, built)
            run.save()
            runs.append(run)
            _execute(experiment["id"], plan, run, provider_, choice, systems_dir, paper_id, stream, placement)
        finally:
            provider_.down()  # idempotent: the run's hosts are already down; the local machine is free again
    if planned:  # nothing ran: no report, no record of skips
        raise PlanOnly(planned[-1].args[0], all(p.complete for p in planned), planned[-1].hint, planned[-1].log)
    if not resume:
        _record_skipped(results, paper_id, skipped)
    _render_report(paper_id, runs, results, reports, papers_dir, stream)
    return runs


def _chosen_experiments(paper, resumed: Run | None, experiment_id: str | None, ours: bool, stream) -> list[dict]:
    """The experiments a reproduction runs: a resumed run's, the one named, or the paper's own (with ``ours``,
    the catalogue's experiments of ours too; without, saying which were left out and how to run them)."""
    if resumed is not None:
        return [paper.experiment(resumed.metadata["experiment"])]
    if experiment_id:
        return [paper.experiment(experiment_id)]
    left_out = [] if ours else [e["id"] for e in paper.experiments if is_ours(e)]
    if left_out:
        print(f"not run: {len(left_out)} experiment(s) of ours, not the paper's ({', '.join(left_out)}); "
              f"--ours runs them too, --experiment ID one of them", file=stream)
    return [e for e in paper.experiments if ours or not is_ours(e)]


def _render_report(paper_id: str, runs: list[Run], results: Path, reports: Path, papers_dir: Path | None,
                   stream) -> None:
    """Render the paper's report once, each run made recording its share of the time (glance.py's estimates)."""
    began = time.monotonic()
    render_paper(paper_id, results=results, reports=reports, papers_dir=papers_dir)
    for run in runs:
        run.metadata.setdefault("command_timing", {})["report_s"] = round((time.monotonic() - began) / len(runs), 1)
        run.save()
    print(f"report: {reports / paper_id / 'report.md'}", file=stream)


class _Providers:
    """The providers of one reproduction, each made and checked once."""

    def __init__(self, options: dict):
        self.options = options
        self.made: dict = {}

    def get(self, name: str):
        if name not in self.made:
            made = get_provider(name, **self.options)
            made.check()
            self.made[name] = made
        return self.made[name]


def _named_provider(providers: _Providers, where: str, why: str | None):
    """The provider ``where``; when ``auto`` chose it (``why``), a failure says why it was needed."""
    try:
        return providers.get(where)
    except HarnessError as e:
        if why:
            raise HarnessError(f"needs the {where} provider ({why}), which cannot work here: {e.args[0]}",
                               hint=getattr(e, "hint", None)) from e
        raise


def _resumed_run(resume: str, paper_id: str) -> Run:
    run = Run.open(resume)
    if run.metadata["paper"] != paper_id:
        raise HarnessError(f"{resume} is a run of paper {run.metadata['paper']!r}, not {paper_id!r}")
    return run


def plan_experiments(paper, experiments: list[dict], scale: str, build: str, source: str,
                      systems_dir: Path | None, variants: list[str] | None, overrides: dict | None,
                      repeat: int | None, controls: bool) -> tuple[dict, dict]:
    """Each experiment's build kind (with the reason for a fallback) and plan, by experiment id.

    The build comes first: on the reference build an experiment may run another driver (plan.for_build).
    """
    kinds, plans = {}, {}
    for e in experiments:
        kinds[e["id"]] = build_kind(build, e, source, systems_dir, variants)
        # a variant the reference build has no driver for is left out there, saying why (builds.on_reference)
        on_build = on_reference(for_build(e, kinds[e["id"]][0]), kinds[e["id"]][0], systems_dir)
        plans[e["id"]] = make_plan(paper, on_build, scale, overrides=overrides, repeat=repeat, only_variants=variants)
        if controls:
            add_controls(plans[e["id"]], _mutations_of(plans[e["id"]].experiment, kinds[e["id"]][0], systems_dir))
    return kinds, plans


def _resumed_plan(run: Run, paper_id: str) -> Plan:
    """The plan stored in ``run``, as it was resolved when the run was made."""
    stored = run.stored("resolved")
    return Plan(paper=paper_id, experiment=run.stored("experiment")["experiment"], scale=stored["scale"],
                repetitions=stored["repetitions"], points=expand(stored), resolved=stored)


def _resumed_build(run: Run) -> tuple[str, str | None]:
    """The build kind ``run`` was made with, and why it fell back to it if it did."""
    build = run.metadata.get("build", {})
    return build.get("kind", "reference"), build.get("fallback_reason")


def _provider_for(provider: str, resumed: Run | None, plan: Plan) -> tuple[str, str | None]:
    """Where an experiment runs, and why when ``auto`` chose it (None when it was asked for or resumed)."""
    if resumed is not None and provider == "auto":
        return resumed.metadata.get("provider", "local"), None
    if provider == "auto":
        return auto_provider(plan.experiment, plan)
    return provider, None


def build_choice(experiment: dict, plan: Plan, kind: str, fallback: str | None, source: str,
                  systems_dir: Path | None, stream) -> Choice:
    """The build the experiment's points run on, saying so when it fell back to the reference build."""
    own = own_drivers(plan.experiment, {p.variant for p in plan.points})
    try:
        choice = choose_build(kind, sorted({p.system for p in plan.points if p.variant not in own}),
                              plan.experiment["driver"], source, systems_dir, own=own)
    except HarnessError as e:  # neither build can run it: say why the upstream build could not either
        if not fallback:
            raise
        raise HarnessError(f"{e.args[0]}, and the upstream build cannot be had: {fallback}",
                           hint=getattr(e, "hint", None)) from e
    choice.fallback_reason = choice.fallback_reason or fallback
    if kind == "reference" and plan.experiment.get("reference_build"):
        choice.note = plan.experiment["reference_build"]["why"]
    if choice.fallback_reason:
        print(f"{experiment['id']}: reference build (upstream not available: {choice.fallback_reason})",
              file=stream)
    for variant, why in (plan.resolved.get("not_runnable_variants") or {}).items():
        print(f"{experiment['id']}: variant {variant} not run: {why}", file=stream)
    return choice


def _command_timing(began: float, waited_before: float, built_s: float) -> dict:
    """What the command spent on a run outside it since ``began`` (``prepared_s``: the report's estimates count
    it, glance.py), with the waits for another run's hold on the machine (``machine_lock.waited_s`` was
    ``waited_before`` at ``began``) and the checks and builds (``built_s``) apart: neither recurs when the plan
    runs again with its builds in place, so neither belongs in an estimate of it."""
    waited = machine_lock.waited_s() - waited_before
    return {"prepared_s": round(max(time.monotonic() - began - waited - built_s, 0.0), 1),
            "waited_s": round(waited, 1), "built_s": round(built_s, 1)}


def _check_and_build(provider, choice: Choice, plan: Plan, source: str, results: Path, systems_dir: Path | None,
             pins: dict[str, dict] | None, stream, built: dict | None = None) -> float:
    """Check the ports, tools, build and disk (in seconds), then build what the points need (``built``: a
    resumed run's builds, whose commits a user's ref keeps); the seconds it took."""
    began = time.monotonic()
    preflight.check(provider, choice, plan, source, results, systems_dir)
    # a user's own commit of a system (--set fabric_ref=v2.5.12), resolved and its release checked before building
    pins = {**user_refs.pins(plan.points, choice.kind, source, systems_dir, log=lambda line: print(line, file=stream),
                             recorded=built, experiment=plan.experiment),
            **(pins or {})}
    prepare(choice, variant_systems(plan), source, log=lambda line: print(line, file=stream),
            systems_dir=systems_dir, pins=pins)
    require_binaries(choice.binaries(), provider.bin_dir)  # after prepare: variants may add drivers
    return time.monotonic() - began


def _new_run(results: Path, paper, plan: Plan, where: str, choice: Choice, systems_dir: Path | None) -> Run:
    run = Run.create(results, paper.doc["paper"], plan.experiment, plan.resolved, provider=where,
                     build=choice.metadata(variant_switches(plan)),
                     seed=plan.resolved["parameters"].get("seed", {}).get("value"))
    if systems_dir is not None:  # systems from another folder than systems/ (a test's fixtures)
        run.metadata["systems_dir"] = str(Path(systems_dir).resolve())
        run.save()
    return run


def _execute(experiment_id: str, plan: Plan, run: Run, provider, choice: Choice, systems_dir: Path | None,
             paper_id: str, stream, placement=None) -> None:
    """Run the plan in ``run`` with its progress line; a failed run is reported, an interrupted one raised."""
    progress = Progress(len(plan.points), title=experiment_id, stream=stream, log=run.path / "progress.log")
    progress.message(f"{experiment_id}: {len(plan.points)} points at scale {plan.scale} -> {run.path}")
    try:
        with run.lifecycle():
            _run_plan(plan, run, provider, progress, choice, systems_dir, placement)
    except Interrupted:
        progress.message(f"interrupted; resume with: invoke reproduce --paper {paper_id} --resume {run.path}")
        raise
    except HarnessError as e:
        progress.message(f"{experiment_id} failed: {e}")
    progress.message(f"{experiment_id}: run {run.metadata['status']}"
                     + (f" ({run.metadata['reason']})" if run.metadata.get("reason") else ""))
    limited = capacity.run_note(run.path, paper_id, experiment_id)  # a known limit of the cores: said, not failed
    if limited:
        progress.message(f"{experiment_id}: {limited}")


def variant_switches(plan: Plan) -> dict:
    """Each variant's resolved switches."""
    return {vid: {k: s["value"] for k, s in v["switches"].items()} for vid, v in plan.resolved["variants"].items()}


def variant_systems(plan: Plan) -> dict[str, tuple[str, dict]]:
    """Each variant's system and resolved switches: what picks its build."""
    switches = variant_switches(plan)
    return {vid: (v["system"], switches[vid]) for vid, v in plan.resolved["variants"].items()}


def _record_skipped(results: Path, paper_id: str, skipped: dict) -> None:
    """Record which experiments the last reproduction skipped and why."""
    path = Path(results) / paper_id
    path.mkdir(parents=True, exist_ok=True)
    write_json(path / "skipped.json", {"schema_version": SCHEMA_VERSION, "paper": paper_id, "skipped": skipped})
