"""Drive one point: deploy its components, run the workload, tear down by PID, collect.

Drivers (the catalogue's ``driver`` field; each system declares how its builds
run them, see ``harness/builds.py``), e.g. for the reference build:

* ``committer-bench``: FastFabric's peer experiment. The ``crypto`` role makes
  identities and the genesis block; ``committerbench`` pre-generates blocks and
  feeds them to the committer, writing the per-block CSV.
* ``end-to-end``: ``crypto``, then ``orderer`` and ``peer`` started and ready,
  ``blockwatch`` started on the peer (recording every block from 1 on),
  ``loadgen`` phase ``setup`` deploys the chaincode and creates the accounts
  (waiting until they commit), then phase ``transfer`` pre-endorses and sends
  every measured transaction; the playbook waits until the blocks after the
  setup blocks carry every acknowledged transfer and writes the first measured
  block to ``measured.json``, which analysis uses to keep only transfer blocks.

While the driver's playbook runs, the point's watcher (``harness/watch.py``)
watches every component the process role started: one that exits with a
failure or logs a fatal line stops the playbook within seconds, naming
component, host and line. The phase (play, role and hosts, task or what a
waiting task reports) goes to ``progress``.

Whatever happens (failure, a component's death, timeout, Ctrl-C),
``teardown.yml`` stops every process by its PID file and fetches logs and raw
files into the point's directory (what the measured window collected is kept,
as ``partial_metrics``), and the point gets a ``summary.json`` saying how it ended.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import yaml

from . import analyze, cpus, systems, validity
from .collect import convert_point
from .deploy import role_defaults, run_playbook
from .errors import HarnessError, Interrupted
from .plan import Point
from .progress import PlaybookPhases, Progress
from .providers import THIS_MACHINE
from .rundir import Run, write_json
from .timing import playbook_times, point_timing, timings_path
from .watch import PointWatch, WatchFailure

#: Seconds the teardown playbook may take.
TEARDOWN_TIMEOUT_S = 300

def host_ports(components: list[str]) -> list[int]:
    """The ports the servers among ``components`` listen on: each role's ``<role>_port`` default,
    and its ``<role>_ports`` (a list, for a role whose servers listen on several, e.g. BFT-SMaRt's
    client and replica ports)."""
    ports = set()
    for c in components:
        doc = role_defaults(c)
        port = doc.get(f"{c}_port")
        if port is not None:
            ports.add(int(port))
        ports.update(int(p) for p in doc.get(f"{c}_ports") or [])
    return sorted(ports)


#: Point parameters that make a driver corrupt a share of its transactions (mutation tests).
MUTATIONS = ("corrupt_creator_fraction", "corrupt_endorsement_fraction", "stale_read_fraction")


def _param(point: Point, name: str):
    try:
        return point.parameters[name]
    except KeyError:
        raise HarnessError(f"point {point.id}: parameter {name!r} is not set by the experiment, "
                           "its scale, the workload or the harness defaults") from None


def role_variables(point: Point, companions: list[str] = (), systems_dir: Path | None = None) -> dict:
    """The role variables (docs in each role's defaults/main.yml) that a point's parameters set.

    The shared roles' (crypto, committer benchmark, load generator, block
    watcher), where the point runs a transaction-count workload; then those of
    its system's roles and its companions' (each system's plugin,
    harness/systems.py).
    """
    out = workload_variables(point) if "transactions" in point.parameters else {}
    if "cpus" in point.parameters:  # every component the process role starts runs on that many CPUs
        out["process_cpus"] = int(point.parameters["cpus"])
    out.update(systems.role_variables([point.system, *companions], point.parameters, systems_dir))
    return out


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


def workload_variables(point: Point) -> dict:
    """The shared roles' variables of a transaction-count workload.

    Every driver gets them all: the crypto role's, the committer benchmark's,
    and the load generator's and block watcher's (which the end-to-end drivers
    use). Only the shared roles (playbooks/roles) read them: a system's roles
    get theirs from its plugin's ``role_variables``, from the same parameters
    (tests/harness/test_config_owners.py).
    """
    transactions = int(_param(point, "transactions"))
    block_size = int(_param(point, "block_size"))
    blocks = math.ceil(transactions / block_size)
    timeout = int(_param(point, "point_timeout_s"))
    payload = int(_param(point, "payload_bytes"))
    seed = int(_param(point, "seed"))
    # Setup creates two fresh accounts per transfer (conflict-free) after the
    # chaincode deploy; every data block holds at least one transaction, so the
    # watcher's last block is at most 1 + accounts + transactions. It is
    # stopped as soon as every transfer has arrived (playbooks/roles/blockwatch/tasks/wait.yml).
    accounts = 2 * transactions
    return {"crypto_batch_size": block_size, "crypto_batch_timeout_ms": int(_param(point, "batch_timeout_ms")),
            "committerbench_blocks": blocks, "committerbench_block_size": block_size,
            "committerbench_payload_bytes": payload, "committerbench_timeout_s": timeout,
            "loadgen_transactions": transactions, "loadgen_accounts": accounts, "loadgen_rate_tps": _param(point, "rate_tps"),
            "loadgen_payload_bytes": payload, "loadgen_seed": seed,
            "loadgen_streams": int(_param(point, "loadgen_streams")), "loadgen_timeout_s": timeout,
            "blockwatch_stop_after": 1 + accounts + transactions, "blockwatch_timeout_s": timeout,
            # Mutation tests (docs/validity.md): the pre-made-block drivers corrupt these shares of the transfers;
            # the load generator forges the endorsement of the first share of its transfers.
            **{f"committerbench_{name}": float(point.parameters[name]) for name in MUTATIONS
               if name in point.parameters},
            "loadgen_forge_endorsement": round(float(point.parameters.get("corrupt_endorsement_fraction", 0))
                                               * transactions)}


def inventory_hosts(inventory: Path) -> dict[str, list[str]]:
    """``{group: [host, ...]}`` of an inventory file the providers write (``all.children.<group>.hosts``)."""
    doc = yaml.safe_load(Path(inventory).read_text(encoding="utf-8")) or {}
    children = (doc.get("all") or {}).get("children") or {}
    return {group: sorted((body or {}).get("hosts") or {}) for group, body in children.items()}


def controller_load_1min() -> float:
    """The controller's 1-minute load average (/proc/loadavg): a point's neighbours on a shared machine
    (local and netns hosts share the controller's kernel, so it is theirs too)."""
    return round(os.getloadavg()[0], 2)


def run_point(run: Run, point: Point, driver: str, spec: dict, inventory: Path, controller_work_root: Path,
              bin_dir: Path, upstream_dir: Path | None = None, companion_dirs: dict | None = None,
              systems_dir: Path | None = None, progress: Progress | None = None) -> dict:
    """Run one point to its end and return its summary (status complete, failed or interrupted).

    ``spec`` is the driver of the point's system in the run's build
    (``harness.builds``); ``upstream_dir`` the upstream build it runs, if any;
    ``companion_dirs`` other systems' builds its roles also run (``{system: dir}``); ``systems_dir``
    the systems' folder (a test's fixture tree; default the repository's); ``progress`` shows the
    point's phase. Re-raises ``Interrupted`` after the teardown so that the whole run stops.
    """
    point_dir = run.point_dir(point.id)
    write_json(point_dir / "point.json", point.to_dict())
    work = f"{run.metadata['paper']}/{run.metadata['experiment']}/{run.id}/{point.id}"
    variables = {
        "fabricrepro_point": point.id,
        "fabricrepro_point_path": work,
        "fabricrepro_point_dir": str(point_dir),
        "fabricrepro_controller_dir": str(Path(controller_work_root) / work),
        "fabricrepro_controller_bin_dir": str(bin_dir),
        "fabricrepro_switches": point.switches,
        "fabricrepro_stop_order": list(reversed(spec["roles"])),
        **({"fabricrepro_upstream_dir": str(upstream_dir)} if upstream_dir else {}),
        **({"fabricrepro_companion_dirs": companion_dirs} if companion_dirs else {}),
        **role_variables(point, list(companion_dirs or {}), systems_dir),
    }
    logs = point_dir / "logs"
    timeout = float(point.parameters["point_timeout_s"]) + 60
    hosts = inventory_hosts(inventory)
    watch = PointWatch(inventory, variables, logs / "ansible-watch.log",
                       validity.fatal_patterns(point.system, systems_dir or validity.SYSTEMS),
                       deadline_s=timeout + TEARDOWN_TIMEOUT_S + 60)

    def follow(phases: PlaybookPhases, with_watch: bool):
        def poll():
            if progress:
                for phase in phases.updates():
                    progress.phase(point.id, phase)
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
        converting = time.monotonic()
        convert_point(point_dir)
        collect_s = time.monotonic() - converting
        ran_on = cpus.read_back(point_dir)  # read once; the summary stores it
        confined = cpus_mismatch(ran_on, point.parameters, run.metadata.get("provider"))
        if confined and status == "complete":
            status, reason = "failed", confined
    wall_s = time.monotonic() - started
    timing = point_timing(wall_s, {name: playbook_times(timings_path(logs / f"ansible-{name}.log"))
                                   for name in ("run", "teardown")}, collect_s)
    extra = {"duration_s": round(wall_s, 3), "log": log, "timing": timing,
             "load_average_1min": {"start": load_at_start, "end": controller_load_1min(), "where": "controller"},
             **({"watch": watched.record()} if watched else {}), **({"cpus": ran_on} if ran_on else {})}
    summary = analyze.point_summary(point_dir, point.to_dict(), status, reason, extra)
    if interrupted:
        raise interrupted
    return summary
