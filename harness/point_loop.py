"""The one loop that measures a plan's points: ``invoke reproduce`` (every provider) and ``./kit/run`` run it.

``run_points`` takes a measuring plan, a plain JSON-able mapping that
``reproduce.measuring_plan`` makes from a plan and its build (and the kit
carries as ``plan.json``): the laid-out ``topology`` record, the links to shape,
the paper's ``host_settings``, ``topology_not_deployed``, and ``points``, each
entry the point (``Point.to_dict()``), its driver ``spec``, its builds
(``upstream_dir``, ``companion_dirs``: absolute here, relative to the kit's
folder in a kit), its ``role_variables``, the watcher's ``fatal_patterns`` and ``before_playbook``
(whether a system of the point writes files before its playbook: its plugin's hook, called here).
The loop brings the hosts up, checks hosts known only now (ssh/aws), writes the
inventory, shapes the links, tunes the hosts, measures the signature
verification rate before and after the points, and per point keeps an earlier
attempt, sets its link delay, has its system write the files its playbook needs (``before_playbook``),
measures it (``measure.measure_point``), counts a
failure and checks that no host was lost; it always takes the hosts down.

What differs between the two callers is a ``Measuring`` (this base is the
kit's: measure only, analysed at home after ``invoke ingest``; reproduce's
subclass analyses each point and stores its per-host metrics):

* ``done``: which points a resumed run measures again;
* ``start``/``stop``: per-host metrics around the points;
* ``finish``: what follows a point's measurement, and its progress line;
* ``resume``: the command that re-runs failed points.

This module and what it imports need no analysis library (a kit carries it,
harness/kit.py ``harness_modules``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

import yaml

from . import REPO_ROOT, preflight
from .deploy import role_defaults
from .errors import HarnessError, Interrupted
from .measure import MEASUREMENT, inventory_hosts, measure_point, measure_primitives, point_variables
from .progress import Progress
from .rundir import Run, write_json
from .topology import Host, Layout


class Measuring:
    """Measure each point, analyse none (a kit's run: ``invoke ingest`` analyses it at home)."""

    def __init__(self, resume: str, not_monitored: str | None = None):
        self.resume = resume  # the command that re-runs the failed points
        self.not_monitored = not_monitored  # why the run has no per-host metrics

    def done(self, run: Run, point: dict) -> bool:
        """Whether ``point`` needs no measuring in ``run``: measured to completion (``measurement.json``)."""
        path = run.path / "points" / point["id"] / MEASUREMENT  # not run.point_dir: it would make the folder
        return path.is_file() and json.loads(path.read_text(encoding="utf-8")).get("status") == "complete"

    def start(self, run: Run, provider, groups: dict) -> None:
        """Before the points, the hosts up: per-host metrics start (here: none, and why)."""
        run.metadata["resources_not_monitored"] = self.not_monitored

    def finish(self, run: Run, point: dict, measured: dict | None, window_ns: tuple[int, int],
               progress: Progress) -> tuple[dict, str]:
        """After a point's measurement (None: interrupted, then raised): its record and its progress detail."""
        measured = measured or {}
        return measured, measured.get("reason") or "measured"

    def stop(self) -> None:
        """After the points (always): per-host metrics stop."""


def layout_of(record: dict) -> Layout:
    """The laid-out hosts of a ``topology`` record (``Layout.record()``, as ``metadata.json`` stores it)."""
    return Layout([Host(h["name"], h["role"], h["index"], tuple(h["components"])) for h in record["hosts"]],
                  dict(record.get("published") or {}), list(record.get("deviations") or []))


def point_latency(entries: list[dict]) -> float | None:
    """The first point's ``network_latency_ms`` when the experiment sets it (the links' delay at start)."""
    values = [e["point"]["parameters"]["network_latency_ms"] for e in entries
              if "network_latency_ms" in e["point"]["parameters"]]
    return float(values[0]) if values else None


def run_points(plan: dict, run: Run, provider, progress: Progress, how: Measuring) -> None:
    """Bring the hosts up, measure the points of ``plan`` that ``how`` says are not done, take the hosts down.

    A failed point is counted (the run then fails, saying how to re-run them) and followed by a check of the
    hosts: one that no longer answers ends the run at once, naming it.
    """
    experiment, entries = plan["experiment"], plan["points"]
    layout = layout_of(plan["topology"])
    run.metadata.update(topology=plan["topology"], layout=layout.by_name())
    run.save()
    try:
        groups = provider.up(layout, run.path)
        # ssh/aws: the ports and CPUs of hosts known only now (what check_hosts reads of a plan: the parameters)
        preflight.check_hosts(provider, layout, SimpleNamespace(
            points=[SimpleNamespace(parameters=e["point"]["parameters"]) for e in entries]))
        inventory = provider.inventory(run.path / "inventory.yml", groups)
        links = provider.apply_links(plan["links"])
        if point_latency(entries) is not None and links and all(link.get("applied") is False for link in links):
            raise HarnessError(f"{experiment['id']} sweeps network_latency_ms, but the {provider.name} provider "
                               "cannot delay links (" + links[0].get("reason", "") + ")")
        tuning = provider.tune(plan["host_settings"])
        run.metadata.update({"roles": groups, "cluster": {**provider.describe(), "links": links},
                             "host_tuning": tuning, "topology_not_deployed": plan["topology_not_deployed"]})
        run.save()
        how.start(run, provider, groups)
        run.save()
        todo = [e for e in entries if not how.done(run, e["point"])]
        progress.total, progress.done = len(entries), len(entries) - len(todo)
        # This machine's cost of the work each transaction needs, measured in the same run
        # before and after its points (the work check, harness/work.py).
        run.metadata.setdefault("primitives", {})["before_points"] = measure_primitives(REPO_ROOT / "bin")
        run.save()
        failed = sum(not _point(run, entry, provider, inventory, links, progress, how) for entry in todo)
        run.metadata["primitives"]["after_points"] = measure_primitives(REPO_ROOT / "bin")
        run.save()
        if failed:
            run.metadata["outcome"] = ("failed", f"{failed} of {len(todo)} points failed; {how.resume} re-runs them")
    finally:
        how.stop()
        provider.down()


def _point(run: Run, entry: dict, provider, inventory: Path, links: list, progress: Progress,
           how: Measuring) -> bool:
    """Measure one point of the plan; whether it completed."""
    point = entry["point"]
    progress.start(point["id"])
    run.keep_attempt(point["id"])  # an earlier attempt's files go to points/<point>/attempts/<n>/
    started_ns = time.time_ns()
    if "network_latency_ms" in point["parameters"] and links:
        # Each point's delay on the links between the hosts (Fujitsu Fig. 5), stored with the point.
        applied = provider.set_link_delay(float(point["parameters"]["network_latency_ms"]))
        write_json(run.point_dir(point["id"]) / "links.json", applied)
    where = {"upstream_dir": REPO_ROOT / entry["upstream_dir"] if entry["upstream_dir"] else None,
             # relative to the kit's folder in a kit (REPO_ROOT there), absolute here
             "companion_dirs": {s: str(REPO_ROOT / d) for s, d in entry["companion_dirs"].items()} or None}
    variables = {**point_variables(run, point, entry["spec"], provider.work_root, provider.bin_dir, **where),
                 **entry["role_variables"]}
    if entry.get("before_playbook"):  # the files its system writes before the playbook (v3.1's network)
        variables.update(before_playbook(point, entry, variables, inventory))
    try:
        measured = measure_point(run, point, entry["spec"], inventory, variables, entry["fatal_patterns"],
                                 progress)
    except Interrupted:
        how.finish(run, point, None, (started_ns, time.time_ns()), progress)
        raise
    result, detail = how.finish(run, point, measured, (started_ns, time.time_ns()), progress)
    progress.finish(point["id"], result["status"], detail, log=result.get("log"))
    if result["status"] == "complete":
        return True
    lost = provider.unreachable()
    if lost:
        raise HarnessError("host(s) lost during point " + point["id"] + ": "
                           + "; ".join(f"{h}: {why}" for h, why in sorted(lost.items())))
    return False


def before_playbook(point: dict, entry: dict, variables: dict, inventory: Path) -> dict:
    """The ``before_playbook`` hooks of a point's systems (its own, its companions'; plugin_api), where the
    measuring plan says one writes files before the playbook: given the driver, the playbook's variables over
    its roles' defaults and the inventory just written; the variables they add."""
    defaults = {k: v for role in entry["spec"].get("roles") or [] for k, v in role_defaults(role).items()}
    doc = (yaml.safe_load(Path(inventory).read_text(encoding="utf-8")) or {}).get("all") or {}
    found = {"groups": inventory_hosts(inventory), "vars": dict(doc.get("vars") or {}),
             "hosts": {h: dict(v or {}) for h, v in (doc.get("hosts") or {}).items()}}
    try:  # here only: the plugins need the analysis libraries, which a kit's target has not
        from . import systems
    except ImportError as e:
        raise HarnessError(f"point {point['id']}: system {point['system']} writes files before its playbook (its "
                           f"plugin's before_playbook), which needs {e.name}, not here (a kit carries no "
                           "system's Python)") from None
    return systems.before_playbook([point["system"], *entry["companion_dirs"]], entry["spec"],
                                   {**defaults, **variables}, found)
