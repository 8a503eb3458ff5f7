"""Measure one point: deploy, drive, tear down, read back its CPUs; no conversion, no analysis.

The measuring half of ``harness/runner.py`` (which then collects and analyses
the point): the driver's playbook with the point's watcher beside it, then
always ``teardown.yml``, which stops every process by its PID file and fetches
the logs and raw files into the point's directory; then the CPUs its
components could use, read back from those files (``cpus.read_back``) and held
against those it was to run on (``cpus_mismatch``, on the host that ran it).
What happened is ``points/<point>/measurement.json``; ``runner.analyze_point``
turns it and the raw files into the point's tables and ``summary.json``, at
once or later on another machine (``invoke ingest`` of a kit's run,
harness/kit.py).

This module and what it imports need no analysis library (pandas, pyarrow,
matplotlib, jsonschema): a measurement kit's target runs it with Ansible alone
(harness/kit_run.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import yaml

from . import SCHEMA_VERSION, cpus
from .deploy import run_playbook
from .errors import HarnessError, Interrupted
from .progress import PlaybookPhases, Progress
from .providers import THIS_MACHINE
from .rundir import Run, interrupts_deferred, read_json, write_json
from .timing import playbook_times, timings_path
from .watch import PointWatch, WatchFailure

#: Seconds the teardown playbook may take.
TEARDOWN_TIMEOUT_S = 300
#: What a measured point leaves beside its raw files (read by ``runner.analyze_point``).
MEASUREMENT = "measurement.json"


def inventory_hosts(inventory: Path) -> dict[str, list[str]]:
    """``{group: [host, ...]}`` of an inventory file the providers write (``all.children.<group>.hosts``)."""
    doc = yaml.safe_load(Path(inventory).read_text(encoding="utf-8")) or {}
    children = (doc.get("all") or {}).get("children") or {}
    return {group: sorted((body or {}).get("hosts") or {}) for group, body in children.items()}


def controller_load_1min() -> float:
    """The controller's 1-minute load average (/proc/loadavg): a point's neighbours on a shared machine
    (local and netns hosts share the controller's kernel, so it is theirs too)."""
    return round(os.getloadavg()[0], 2)


def measure_primitives(bin_dir: Path, duration: str = "1s") -> dict:
    """This machine's ECDSA-P256 verification rate (``bin/committerbench --ecdsa-verify-rate``)."""
    try:
        proc = subprocess.run([str(Path(bin_dir) / "committerbench"), "--ecdsa-verify-rate", "--ecdsa-duration",
                               duration], capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": str(e)[:300]}
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip() or f"exit {proc.returncode}")[:300]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def cpus_mismatch(read: dict | None, parameters: dict, provider: str | None) -> str | None:
    """Why the CPUs a point's components could use, as read back (``cpus.read_back``), are not those
    it was to run on: the ``cpus`` asked for, else, where the hosts are this machine, every CPU the harness
    may use. None when they are, or nothing was read back. A harness setting that confines the components
    changes what is measured without a word (Mitogen's strategy pinned them all to one CPU of two)."""
    asked = parameters.get("cpus")
    expected = int(asked) if asked else (len(cpus.usable()) if provider in THIS_MACHINE else None)
    if not read or expected is None or read["effective"] == expected:
        return None
    odd = [f"{name} {allowed}" for name, allowed in sorted(read["processes"].items()) if len(cpus.cpu_set(allowed)) != expected]
    why = f"cpus={asked} was asked for" if asked else f"the harness may use {expected} CPUs of this machine"
    return (f"cpus: the components could use {read['effective']} CPU(s) together, but {why} (read back: "
            + ", ".join(odd[:5]) + (f" and {len(odd) - 5} more" if len(odd) > 5 else "") + ")")


def point_variables(run: Run, point: dict, spec: dict, controller_work_root: Path, bin_dir: Path,
                    upstream_dir: Path | None = None, companion_dirs: dict | None = None) -> dict:
    """The variables every driver's playbook gets that say where this point runs (its directories,
    the build's); the point's role variables (``runner.role_variables``) come beside them."""
    point_dir = run.point_dir(point["id"])
    work = f"{run.metadata['paper']}/{run.metadata['experiment']}/{run.id}/{point['id']}"
    return {
        "fabricrepro_point": point["id"],
        "fabricrepro_point_path": work,
        "fabricrepro_point_dir": str(point_dir),
        "fabricrepro_controller_dir": str(Path(controller_work_root) / work),
        "fabricrepro_controller_bin_dir": str(bin_dir),
        "fabricrepro_switches": point["switches"],
        "fabricrepro_stop_order": list(reversed(spec["roles"])),
        **({"fabricrepro_upstream_dir": str(upstream_dir)} if upstream_dir else {}),
        **({"fabricrepro_companion_dirs": companion_dirs} if companion_dirs else {}),
    }


def measure_point(run: Run, point: dict, spec: dict, inventory: Path, variables: dict,
                  fatal_patterns: list, progress: Progress | None = None) -> dict:
    """Run one point to its end and write (and return) its ``measurement.json``.

    ``point`` is the plan's point (``Point.to_dict()``); ``spec`` the driver of its system in the run's
    build (``harness.builds``); ``variables`` every variable of its playbook (``point_variables`` and
    the point's role variables); ``fatal_patterns`` the log lines of its system that stop it
    (``validity.fatal_patterns``). The measurement's ``status`` is complete, failed or interrupted.
    Re-raises ``Interrupted`` after the teardown and the measurement's record, so that the run stops.
    """
    point_dir = run.point_dir(point["id"])
    write_json(point_dir / "point.json", point)
    logs = point_dir / "logs"
    timeout = float(point["parameters"]["point_timeout_s"]) + 60
    hosts = inventory_hosts(inventory)
    watch = PointWatch(inventory, variables, logs / "ansible-watch.log", fatal_patterns,
                       deadline_s=timeout + TEARDOWN_TIMEOUT_S + 60)

    def follow(phases: PlaybookPhases, with_watch: bool):
        def poll():
            if progress:
                for phase in phases.updates():
                    progress.phase(point["id"], phase)
            if with_watch:
                watch.check()
        return poll

    started = time.monotonic()
    load_at_start = controller_load_1min()
    status, reason, log, interrupted, watched = "complete", None, None, None, None
    ran_on = None
    try:
        watch.start()
        run_playbook(spec["playbook"], inventory, variables, logs / "ansible-run.log", timeout=timeout,
                     poll=follow(PlaybookPhases(logs / "ansible-run.log", hosts), True))
        watch.check()  # a component that failed in the playbook's last half second
    except WatchFailure as e:
        watched = e
    except HarnessError as e:
        # A component that died makes the playbook fail too: the watcher's word names it.
        watched = watch.settle()
        if not watched:
            status, reason, log = "failed", str(e.args[0]), e.log
    except Interrupted as e:
        status, reason, interrupted = "interrupted", str(e), e
    finally:
        # An interrupt from here on waits for the teardown: it stops what the point started (an interrupted
        # teardown would leave them running) and the measurement is recorded; then the run stops.
        say = (lambda line: progress.message(line)) if progress else print
        with interrupts_deferred(say) as deferred:
            watch.stop()
            if watched:
                status, reason = "failed", str(watched.args[0])
                log = str(logs / watched.host / watched.log_name) if watched.log_name else str(watch.log)
            try:
                run_playbook("teardown.yml", inventory, variables, logs / "ansible-teardown.log",
                             timeout=TEARDOWN_TIMEOUT_S,
                             poll=follow(PlaybookPhases(logs / "ansible-teardown.log", hosts, "teardown"), False))
            except HarnessError as e:
                if status == "complete":
                    status, reason, log = "failed", f"teardown: {e.args[0]}", e.log
            ran_on = cpus.read_back(point_dir)  # read once, on the machine that ran it; the summary stores it
            confined = cpus_mismatch(ran_on, point["parameters"], run.metadata.get("provider"))
            if confined and status == "complete":
                status, reason = "failed", confined
        if deferred and not interrupted:
            interrupted = Interrupted(deferred[0])
    measurement = {
        "schema_version": SCHEMA_VERSION, "point": point["id"], "status": status, "reason": reason, "log": log,
        "measure_s": round(time.monotonic() - started, 3),
        "playbooks": {name: playbook_times(timings_path(logs / f"ansible-{name}.log"))
                      for name in ("run", "teardown")},
        "load_average_1min": {"start": load_at_start, "end": controller_load_1min(), "where": "controller"},
        **({"watch": watched.record()} if watched else {}), **({"cpus": ran_on} if ran_on else {})}
    write_json(point_dir / MEASUREMENT, measurement)
    if interrupted:
        raise interrupted
    return measurement


def read_measurement(point_dir: Path) -> dict:
    """A measured point's ``measurement.json``."""
    path = Path(point_dir) / MEASUREMENT
    if not path.is_file():
        raise HarnessError(f"{point_dir}: no {MEASUREMENT} (the point was never measured to its teardown)")
    return read_json(path)


def measured_status(point_dir: Path, old: dict) -> tuple[str, str | None]:
    """The status and reason a point's re-analysis starts from: its measurement's (``measurement.json``), before
    any validity judgement, so that a re-analysis judges validity afresh and a verdict of an earlier analysis
    (or of an earlier harness) never sticks. A run stored before measurement.json: its summary's, with a
    failure of validity alone taken back to ``complete`` (validity is judged again)."""
    if (Path(point_dir) / MEASUREMENT).is_file():
        measured = read_measurement(point_dir)
        return measured["status"], measured.get("reason")
    if old.get("status") == "failed" and str(old.get("reason") or "").startswith("validity:"):
        return "complete", None
    return old["status"], old.get("reason")
