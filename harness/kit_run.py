"""A measurement kit's run on its target: ``./kit/run`` (harness/kit.py makes the kit).

Runs the kit's plan (``plan.json``) with the local provider through the loop
``invoke reproduce`` runs (harness/point_loop.py ``run_points``), measuring
only: the same preflight of ports, tools, disk and CPUs; the run directory with
its metadata (``host`` is this machine's, with its name); the CPU cost of one
signature verification measured before and after the points; each point,
controls included, measured by ``measure.measure_point`` (the driver's playbook
with the watcher beside it, teardown by PID, the CPUs read back); no per-host
metrics (Prometheus is not carried, and storing its series needs pandas:
``resources_not_monitored`` in ``metadata.json`` says so). It analyses nothing:
``invoke ingest`` does, at home. It then writes ``run.tar.gz`` (the run
directory and ``kit-run.json``, every file's sha256) beside ``./kit/run``, and
exits 0 only when the run completed. An interrupted run keeps its directory
under ``results/``, marked interrupted, with its logs, and is packed too.

Everything stays under the kit's folder: the run store (``results/``), the
components' work root (``build/work/``), Ansible's home and temporary files.
This module imports nothing that needs pandas, pyarrow, matplotlib or
jsonschema (harness/kit.py ``harness_modules`` checks it).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import socket
import sys
import tarfile
import tempfile
from pathlib import Path

from . import REPO_ROOT, SCHEMA_VERSION, preflight
from .errors import HarnessError, Interrupted
from .point_loop import Measuring, run_points
from .progress import Progress
from .providers.local import LocalProvider
from .resources import NODE_EXPORTER, PROMETHEUS
from .rundir import Run, write_json

KIT = REPO_ROOT  # the kit's folder: harness/ sits in it as in the repository
#: The longest path a Unix socket may have (sun_path, less its terminating NUL).
SOCKET_PATH_MAX = 107
#: Why a kit's run has no per-host metrics (``metadata.json`` ``resources_not_monitored``).
NOT_MONITORED = ("a kit's run: Prometheus and node-exporter are not carried (dynamically linked), and storing "
                 "their series needs pandas")


def load(name: str) -> dict:
    """``kit.json`` or ``plan.json`` of the kit."""
    return json.loads((KIT / name).read_text(encoding="utf-8"))


def check(plan: dict, provider: LocalProvider, results: Path) -> None:
    """``invoke reproduce``'s preflight for the local provider: ports free (and none needed twice within a
    driver), the tools the roles need, free disk, the CPUs the points ask for; but Prometheus and
    node-exporter, which a kit's run does not start. Raises ``PreflightError``."""
    found = []
    for layout in plan["driver_layouts"]:
        one = {}
        for component, roles in layout.items():
            for role in roles:
                one.setdefault(role, []).append(component)
        found += [p for p in preflight.layout_port_problems(preflight.host_ports_of("local", one)) if p not in found]
    found += preflight.local_port_problems(preflight.host_ports_of("local", plan["layout"])["localhost"])
    tools = preflight.tool_problems("local", plan["layout"], False)
    found += [t for t in tools if not t.startswith((PROMETHEUS + " ", NODE_EXPORTER + " "))]
    found += preflight.disk_problems(plan["scale"], [results, provider.work_root])
    sockets = Path(tempfile.gettempdir()) / "mitogen_unix_xxxxxxxx.sock"  # Mitogen's, in the kit's TMPDIR
    if len(str(sockets)) > SOCKET_PATH_MAX:
        found.append(f"the kit's folder {KIT} is too deep: Mitogen's sockets in it ({sockets}) would pass the "
                     f"{SOCKET_PATH_MAX} characters a Unix socket's path may have; unpack it nearer the root")
    found += provider.cpus_problems(plan["largest_cpus"])
    if found:
        raise preflight.PreflightError(found)


def measure(plan: dict, kit: dict, results: Path, resume: bool = False, progress_stream=None) -> Run:
    """Run the plan's points into a new run under ``results`` and return it (its status recorded); with
    ``resume``, the points the kit's last run has not measured to completion, in that run."""
    provider = LocalProvider(work_root=KIT / "build" / "work", bin_dir=KIT / "bin")
    check(plan, provider, results)
    if resume:
        run = last_run(results, plan)
        run.resume()
    else:
        run = Run.create(results, plan["paper"], plan["experiment"], plan["resolved"], provider="local",
                         build=plan["build"], seed=plan["seed"], git=kit["git"])
        run.metadata["host"]["hostname"] = socket.gethostname()
        run.metadata["kit"] = {k: kit[k] for k in ("kit_id", "made_utc", "made_on", "target", "requirements")}
        run.save()
    stream = progress_stream or sys.stderr
    progress = Progress(len(plan["points"]), title=plan["experiment"]["id"], stream=stream,
                        log=run.path / "progress.log")
    progress.message(f"{plan['experiment']['id']}: {len(plan['points'])} points at scale {plan['scale']} "
                     f"-> {run.path}")
    try:
        with run.lifecycle():
            # the one measuring loop (harness/point_loop.py), measuring only: ingest analyses at home
            run_points(plan, run, provider, progress, Measuring("./kit/run --resume", NOT_MONITORED))
    except Interrupted:
        progress.message(f"interrupted: the run stays in {run.path}; ./kit/run --resume continues it")
    except HarnessError as e:
        progress.message(f"{plan['experiment']['id']} failed: {e}")
    progress.message(f"{plan['experiment']['id']}: run {run.metadata['status']}"
                     + (f" ({run.metadata['reason']})" if run.metadata.get("reason") else ""))
    return run


def last_run(results: Path, plan: dict) -> Run:
    """The kit's run to resume (its ``latest``), refusing a complete one."""
    latest = results / plan["paper"]["id"] / plan["experiment"]["id"] / "latest"
    if not latest.exists():
        raise HarnessError("--resume: this kit has no run to resume (kit/results/ is empty)")
    run = Run.open(latest.resolve())
    if run.metadata["status"] == "complete":
        raise HarnessError(f"--resume: run {run.id} is complete")
    return run


def pack(run: Run, kit: dict, out: Path) -> Path:
    """``run.tar.gz``: ``kit-run.json`` (what it is, each file's sha256) and the run directory as ``run/``."""
    files = {}
    for path in sorted(run.path.rglob("*")):
        if path.is_file() and not path.is_symlink():
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            files[path.relative_to(run.path).as_posix()] = h.hexdigest()
    manifest = {"format": "fabricrepro-kit-run", "schema_version": SCHEMA_VERSION, "kit_id": kit["kit_id"],
                "paper": run.metadata["paper"], "experiment": run.metadata["experiment"], "run_id": run.id,
                "status": run.metadata["status"], "hostname": socket.gethostname(), "run_path": str(run.path),
                "files": files}
    write_json(run.path.parent / "kit-run.json", manifest)
    tmp = out.with_name(out.name + ".partial")
    with tarfile.open(tmp, "w:gz") as tar:
        tar.add(run.path.parent / "kit-run.json", arcname="kit-run.json")
        tar.add(run.path, arcname="run")
    (run.path.parent / "kit-run.json").unlink()
    tmp.replace(out)
    return out


def main(argv: list[str] | None = None) -> int:
    """``./kit/run``: measure the kit's plan here and write ``run.tar.gz``; 0 when the run completed."""
    parser = argparse.ArgumentParser(prog="./kit/run", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(KIT / "run.tar.gz"), help="the archive to write (default: kit/run.tar.gz)")
    parser.add_argument("--resume", action="store_true",
                        help="continue the kit's last run (interrupted or failed) with the points it has not measured")
    args = parser.parse_args(argv)
    kit = load("kit.json")
    results = KIT / "results"
    code = 0
    for manifest, plan, out in kits(kit, Path(args.out).resolve()):
        several = "kits" in kit
        if several and args.resume and resumed_complete(results, plan):
            continue  # a kit of several experiments: this one's run completed before
        try:
            run = measure(plan, manifest, results,
                          resume=args.resume and (has_run(results, plan) if several else True))
        except HarnessError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        out = pack(run, manifest, out)
        print(f"{out} ({run.metadata['status']}): bring it home and run `invoke ingest {out.name}`")
        code = code or (0 if run.metadata["status"] == "complete" else 1)
    shutil.rmtree(KIT / "tmp", ignore_errors=True)
    return code


def kits(kit: dict, out: Path) -> list[tuple[dict, dict, Path]]:
    """(manifest, plan, archive to write) of each experiment of the kit: one kit's ``plan.json`` and ``out``; a
    kit of several (harness/kit.py ``build_kit``) each ``plans/<experiment>.json`` and
    ``run-<experiment>.tar.gz`` beside ``out``."""
    if "kits" not in kit:
        return [(kit, load("plan.json"), out)]
    return [(kit["kits"][e], load(f"plans/{e}.json"), out.with_name(f"run-{e}.tar.gz")) for e in kit["experiments"]]


def has_run(results: Path, plan: dict) -> bool:
    """Whether the kit has a run of ``plan``'s experiment to resume."""
    return (results / plan["paper"]["id"] / plan["experiment"]["id"] / "latest").exists()


def resumed_complete(results: Path, plan: dict) -> bool:
    """Whether the kit's last run of ``plan``'s experiment completed (``--resume`` leaves it)."""
    if not has_run(results, plan):
        return False
    return Run.open((results / plan["paper"]["id"] / plan["experiment"]["id"] / "latest").resolve()) \
        .metadata["status"] == "complete"


if __name__ == "__main__":
    sys.exit(main())
