"""invoke tasks: thin wrappers over the harness package (see README.md)."""

import sys

from invoke import Exit, task

from harness.errors import HarnessError, Interrupted
from harness.tools import ensure_go_bin_on_path

ensure_go_bin_on_path()


def _guard(fn, *args, **kwargs):
    """Call ``fn``; turn harness errors into a clear message and a non-zero exit."""
    try:
        return fn(*args, **kwargs)
    except HarnessError as e:
        raise Exit(f"error: {e}", code=1) from None
    except Interrupted as e:
        raise Exit(f"{e}", code=130) from None


@task
def setup(c):
    """Install everything the project needs on a fresh machine (idempotent), then build."""
    from harness import toolchain
    _guard(toolchain.setup)


@task
def build(c):
    """Generate the Fabric protobuf code and build the Go commands into bin/."""
    from harness import toolchain
    _guard(toolchain.build)


@task
def test(c):
    """go vet, go test and pytest; ends with one line `N passed, N failed`."""
    from harness import toolchain
    failed = _guard(toolchain.test)
    if failed:
        raise Exit(code=1)


@task(iterable=["set"], help={
    "paper": "paper id (a file papers/<paper>.yaml)",
    "experiment": "one experiment of the paper (default: all)",
    "scale": "smoke | local | paper",
    "provider": "where to run: local or netns",
    "repeat": "repetitions per configuration (overrides the scale's)",
    "resume": "a run directory to continue with its missing points",
    "set": "override a parameter: name=value (repeatable)",
})
def reproduce(c, paper, experiment=None, scale="smoke", provider="local", repeat=None, resume=None, set=None):
    """Run a paper's experiments and render its report."""
    from harness.config import parse_assignments
    from harness.reproduce import reproduce as run
    _guard(lambda: run(paper, experiment, scale=scale, provider=provider,
                       repeat=int(repeat) if repeat else None, resume=resume, overrides=parse_assignments(set)))


@task(help={"paper": "paper id"})
def report(c, paper):
    """Re-render a paper's report from its stored runs (no re-run)."""
    from harness.reproduce import REPORTS, RESULTS
    from harness.report import render_paper
    out = _guard(render_paper, paper, results=RESULTS, reports=REPORTS)
    print(f"report: {out / 'report.md'} and {out / 'report.html'}")


@task(help={"paper": "only this paper's runs"})
def runs(c, paper=None):
    """List stored runs with their status."""
    from harness.reproduce import RESULTS
    from harness.rundir import list_runs
    rows = list_runs(RESULTS, paper)
    if not rows:
        print("no stored runs")
    for r in rows:
        print(f"{r.get('status', '?'):<11} {r.get('points_done', '?')}/{r.get('points_total', '?')} points  "
              f"{r['path']}" + (f"  ({r['reason']})" if r.get("reason") else ""))


@task(help={"file": "a papers/*.yaml or systems/*/system.yaml file (default: all of them)"})
def validate(c, file=None):
    """Check catalogue and system files against their schemas."""
    from harness.catalogue import validate_all, validate_file
    results = {file: _guard(validate_file, file)} if file else _guard(validate_all)
    bad = 0
    for name, errors in results.items():
        print(f"{'ok  ' if not errors else 'FAIL'} {name}")
        for e in errors:
            print(f"     {e}")
        bad += bool(errors)
    if bad:
        raise Exit(f"{bad} invalid file(s)", code=1)
    if not results:
        print("no catalogue or system files found", file=sys.stderr)
