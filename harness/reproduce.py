"""The whole lifecycle of a reproduction: plan, provision, deploy, run, collect, analyze, report.

``reproduce`` runs each runnable experiment of a paper (or one experiment) in
its own run directory; experiments that cannot run yet are skipped with their
reason printed and recorded in ``results/<paper>/skipped.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from . import REPO_ROOT, SCHEMA_VERSION
from .analyze import analyze_run
from .catalogue import SCALES, load_paper
from .errors import HarnessError, Interrupted, choose
from .plan import Plan, expand, make_plan, pending
from .progress import Progress
from .providers import PROVIDERS, get_provider
from .report import render_paper
from .rundir import Run, git_state, write_json
from .runner import DRIVERS, run_point
from .tools import require_binaries, require_tool

RESULTS = REPO_ROOT / "results"
REPORTS = REPO_ROOT / "reports"


def skip_reason(experiment: dict) -> str | None:
    """Why an experiment cannot run (None if it can)."""
    if not experiment.get("runnable"):
        return experiment.get("not_runnable_reason") or "marked not runnable in the catalogue"
    if experiment.get("driver") not in DRIVERS:
        return f"driver {experiment.get('driver')!r} has no runner yet (runners: {', '.join(sorted(DRIVERS))})"
    return None


def _run_plan(plan: Plan, run: Run, provider, progress: Progress) -> None:
    """Run the pending points of ``plan`` in ``run``, then analyze it; marks the run's outcome."""
    experiment = plan.experiment
    driver = experiment["driver"]
    roles = DRIVERS[driver]["roles"]
    inventory = provider.inventory(run.path / "inventory.yml", roles)
    todo = pending(plan, run.path)
    progress.total, progress.done = len(plan.points), len(plan.points) - len(todo)
    failed = 0
    for point in todo:
        progress.start(point.id)
        summary = run_point(run, point, driver, inventory, provider.work_root, provider.bin_dir)
        metric = experiment.get("metric")
        value = summary["metrics"].get(metric)
        detail = summary.get("reason") or (f"{metric} = {value}" if value is not None else "")
        progress.finish(point.id, summary["status"], detail, log=summary.get("log"))
        failed += summary["status"] != "complete"
    if failed:
        run.metadata["outcome"] = ("failed", f"{failed} of {len(todo)} points failed; "
                                             f"`invoke reproduce --resume {run.path}` re-runs them")
    analyze_run(run)


def reproduce(paper_id: str, experiment_id: str | None = None, scale: str = "smoke", provider: str = "local",
              repeat: int | None = None, resume: str | None = None, overrides: dict | None = None,
              results: Path = RESULTS, reports: Path = REPORTS, stream=None,
              provider_options: dict | None = None, papers_dir: Path | None = None) -> list[Run]:
    """Reproduce a paper's experiments (or one) and render its report; returns the runs made.

    With ``resume`` (a run directory) only that run's missing points are run,
    with the configuration stored in it. ``provider_options`` go to the
    provider (e.g. ``bin_dir``, ``work_root`` of the local provider).
    """
    stream = stream or sys.stderr
    choose("scale", scale, SCALES)
    choose("provider", provider, PROVIDERS)
    paper = load_paper(paper_id, papers_dir)
    provider_ = get_provider(provider, **(provider_options or {}))
    if resume:
        run = Run.open(resume)
        if run.metadata["paper"] != paper_id:
            raise HarnessError(f"{resume} is a run of paper {run.metadata['paper']!r}, not {paper_id!r}")
        experiments = [paper.experiment(run.metadata["experiment"])]
    else:
        experiments = [paper.experiment(experiment_id)] if experiment_id else paper.experiments

    skipped, runs = {}, []
    for experiment in experiments:
        reason = skip_reason(experiment)
        if reason:
            skipped[experiment["id"]] = reason
            print(f"skip {experiment['id']}: {reason}", file=stream)
            continue
        require_tool("ansible-playbook")
        require_binaries(DRIVERS[experiment["driver"]]["binaries"], provider_.bin_dir)
        if resume:
            stored = run.stored("resolved")
            plan = Plan(paper=paper_id, experiment=run.stored("experiment")["experiment"], scale=stored["scale"],
                        repetitions=stored["repetitions"], points=expand(stored), resolved=stored)
            run.resume()
        else:
            plan = make_plan(paper, experiment, scale, overrides=overrides, repeat=repeat)
            run = Run.create(results, paper.doc["paper"], experiment, plan.resolved, provider=provider,
                             build=_build(plan), roles=provider_.hosts(DRIVERS[experiment["driver"]]["roles"]),
                             seed=plan.resolved["parameters"].get("seed", {}).get("value"))
        runs.append(run)
        progress = Progress(len(plan.points), title=experiment["id"], stream=stream)
        progress.message(f"{experiment['id']}: {len(plan.points)} points at scale {plan.scale} -> {run.path}")
        try:
            with run.lifecycle():
                _run_plan(plan, run, provider_, progress)
        except Interrupted:
            progress.message(f"interrupted; resume with: invoke reproduce --paper {paper_id} --resume {run.path}")
            raise
        except HarnessError as e:
            progress.message(f"{experiment['id']} failed: {e}")
        progress.message(f"{experiment['id']}: run {run.metadata['status']}"
                         + (f" ({run.metadata['reason']})" if run.metadata.get("reason") else ""))
    if not resume:
        _record_skipped(results, paper_id, skipped)
    render_paper(paper_id, results=results, reports=reports, papers_dir=papers_dir)
    print(f"report: {reports / paper_id / 'report.md'}", file=stream)
    return runs


def _build(plan: Plan) -> dict:
    """The build a run uses: this repository's reference implementation, with each variant's switches."""
    return {"kind": "reference", "source": git_state()["sha"],
            "switches": {vid: {k: s["value"] for k, s in v["switches"].items()}
                         for vid, v in plan.resolved["variants"].items()}}


def _record_skipped(results: Path, paper_id: str, skipped: dict) -> None:
    """Record which experiments the last reproduction skipped and why."""
    path = Path(results) / paper_id
    path.mkdir(parents=True, exist_ok=True)
    write_json(path / "skipped.json", {"schema_version": SCHEMA_VERSION, "paper": paper_id, "skipped": skipped})
