"""invoke tasks: thin wrappers over the harness package (see README.md)."""

import sys
from pathlib import Path

from invoke import Exit, Task
from invoke import task as _invoke_task

from harness.errors import HarnessError, Interrupted
from harness.tools import ensure_go_bin_on_path

ensure_go_bin_on_path()

#: This file's tasks (a bare word after a task name that is one of these starts the next task).
TASKS = ("setup", "build", "test", "reproduce", "report", "export", "runs", "validate", "regress", "kit",
         "ingest", "verify", "system-command", "lab")

#: The only short flags, chosen by hand: one letter, one meaning, in every task that has the option.
#: (invoke's automatic ones meant different things per task: -r was --provider, --repeat, --run, --ref
#: or --run-dir, and --ami-id's came out as "--".)
SHORT_FLAGS = {"paper": "p", "experiment": "e"}


def _run_by_invoke(argv: list[str] | None = None) -> bool:
    """Whether this process is the invoke command (not, e.g., pytest importing this file)."""
    path = Path((sys.argv if argv is None else argv)[0] or "")
    return path.name in ("invoke", "inv") or (path.name == "__main__.py" and path.parent.name == "invoke")


def _refuse_remainder(argv: list[str] | None = None) -> None:
    """Refuse words after ``--``: invoke hands them to no task, so they were silently dropped
    (``invoke reproduce --paper fastfabric -- --ami-id x`` ran a whole reproduction without them)."""
    argv = sys.argv if argv is None else argv
    if _run_by_invoke(argv) and "--" in argv[1:]:
        rest = argv[argv.index("--", 1) + 1:]
        raise Exit("error: these tasks take no arguments after `--` (" + (" ".join(rest) or "nothing given")
                   + " would be ignored); give options before it, e.g. invoke reproduce --paper P --ami-id AMI",
                   code=1)


class _Task(Task):
    """invoke's task with the short flags of ``SHORT_FLAGS`` only, refusing arguments after ``--``."""

    def arg_opts(self, name, default, taken_names):
        opts = super().arg_opts(name, default, taken_names)
        if name in SHORT_FLAGS and SHORT_FLAGS[name] not in taken_names:
            opts["names"] = [*opts["names"], SHORT_FLAGS[name]]
        return opts

    def __call__(self, *args, **kwargs):
        _refuse_remainder()
        return super().__call__(*args, **kwargs)


def task(*args, **kwargs):
    """``invoke.task`` with this file's short flags (``SHORT_FLAGS``) instead of invoke's automatic ones."""
    return _invoke_task(*args, klass=_Task, auto_shortflags=False, **kwargs)


def _number(option: str, value, kind=int, minimum=1):
    """An option's number, or a clear error (no traceback): ``kind`` int takes whole numbers only."""
    if value is None:
        return None
    try:
        number = kind(value) if kind is float else int(str(value).strip())
    except ValueError:
        number = None
    if number is None or number != number or number in (float("inf"), float("-inf")) or number < minimum:
        what = "a whole number" if kind is int else "a number"
        raise Exit(f"error: --{option.replace('_', '-')} takes {what} of at least {minimum}, got {value!r}",
                   code=1)
    return number


def _given_positionally(task_name: str, argv: list[str] | None = None) -> bool:
    """Whether the command line gives ``task_name`` a bare value right after its name (``invoke validate FILE``).

    invoke makes an argument either a flag or positional, and a positional one
    is required and eats the next word, ``--help`` included (``invoke reproduce
    --help`` used to fail so). Arguments that can be given both ways
    (``--paper P`` or ``P``, ``--file F`` or ``F``) are made positional only
    where the command line has such a value.
    """
    argv = sys.argv[1:] if argv is None else argv
    names = {task_name, task_name.replace("_", "-")}
    for i, word in enumerate(argv):
        if word in names:
            return i + 1 < len(argv) and not argv[i + 1].startswith("-") and argv[i + 1] not in TASKS
    return False


def _positional(task_name: str, name: str) -> list[str]:
    return [name] if _given_positionally(task_name) else []


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


@task(help={
    "upstream": "build a system's published code instead (systems/<system>/upstream.yaml), e.g. fabric-1.2",
    "source": "upstream source: auto (a snapshot in ../shared/upstream if present, else a git clone if the "
              "repository answers), snapshot, git",
    "ref": "with --upstream: a tag, branch or commit of the system's repository instead of its recipe's pin, "
           "from git (fabric-2.5, fabric-3.1: a release of their line; harness/user_refs.py)",
})
def build(c, upstream=None, source="auto", ref=None):
    """Generate the Fabric protobuf code and build the Go commands into bin/ (or one upstream system)."""
    if upstream:
        from harness import upstream as up
        pin = None
        if ref:
            from harness import user_refs
            pin = _guard(user_refs.user_pin, upstream, ref, "--ref")
        built = _guard(up.build, upstream, source, pin=pin)
        print(f"{upstream}: {built.path}")
        return
    from harness import toolchain
    _guard(toolchain.build)


@task
def test(c):
    """go vet, go test and pytest; lists skip reasons, ends with one line `N passed, N failed, N skipped`."""
    from harness import toolchain
    failed = _guard(toolchain.test)
    if failed:
        raise Exit(code=1)


@task(iterable=["set", "variant"], positional=_positional("reproduce", "paper"), help={
    "paper": "paper id (a file papers/<paper>.yaml); not needed with --resume (the run names it)",
    "experiment": "one experiment of the catalogue, the paper's or ours (default: the paper's own experiments)",
    "ours": "also run the catalogue's experiments of ours, not the paper's (today's Fabric, revisits: those "
            "stating questions), which the default leaves out",
    "scale": "smoke | local | paper",
    "provider": "where to run: auto (default: local, or netns for an experiment whose links need delays), local, "
                "netns (hosts in network namespaces here), ssh (your servers), aws",
    "repeat": "repetitions per configuration (overrides the scale's)",
    "resume": "a run directory to continue with its missing points",
    "set": "override a parameter: name=value (repeatable)",
    "variant": "run only this variant of the experiment (repeatable; default: every runnable one)",
    "inventory": "ssh: your Ansible inventory, one group per topology role (infra/inventories/*.example.yml)",
    "remote_work_root": "ssh/aws: working directory on the servers (default /var/tmp/fabricrepro): bin/ shared, "
                        "each host's points under <dir>/<host>/",
    "preflight": "ssh/aws: check reachability, OS, cores, memory and clock before deploying (default on)",
    "clock_sync": "ssh/aws: require a synchronised clock in the preflight (default on)",
    "ami_id": "aws: the image (default: each region's newest Ubuntu 24.04 LTS, looked up); region=ami,... "
              "for a run across regions",
    "operator_cidr": "aws: the only address range the security group admits from outside (required)",
    "region": "aws: region (default: the environment's)",
    "key_file": "aws: SSH private key whose .pub is installed on the instances",
    "instance_type": "aws: one instance type for every role (default: per role, see infra/terraform)",
    "build": "upstream (the published code, built from source), reference (this repository's Go build), "
             "or auto (default: upstream where it can run, else reference, saying why)",
    "source": "where upstream code comes from: auto (a cached build, a ../shared/upstream snapshot, or git if the "
              "repository answers; else the reference build, saying why), snapshot, git",
    "control": "run a control point first where the driver can corrupt transactions: 1% of each kind, which the "
               "ledger and our verifier must find exactly (default on; --no-control skips it)",
    "yes": "aws: create the instances without asking (after printing their types, count, cost and the wall time)",
    "plan_only": "aws: print the instances, their hourly cost and the expected wall time, run terraform plan "
                 "where Terraform, the inputs and credentials are here (else name what is missing), and stop",
    "strict_topology": "refuse to run where the provider cannot give every instance of the paper's topology a "
                       "host of its own (e.g. an inventory group with fewer hosts), instead of recording the "
                       "placement used as a deviation",
})
def reproduce(c, paper=None, experiment=None, scale="smoke", provider="auto", repeat=None, resume=None, set=None,
              inventory=None, remote_work_root=None, preflight=True, clock_sync=True, ami_id=None,
              operator_cidr=None, region=None, key_file=None, instance_type=None, build="auto", source="auto",
              variant=None, control=True, strict_topology=False, yes=False,
              plan_only=False, ours=False):
    """Run a paper's experiments and render its report."""
    from harness.config import parse_assignments
    from harness.reproduce import reproduce as run
    if not paper and resume:
        from harness.rundir import Run
        paper = _guard(Run.open, resume).metadata["paper"]  # the run names its paper
    if not paper:
        raise Exit("error: give the paper (--paper " + "|".join(_papers()) + "), or --resume RUN_DIR", code=1)
    repeat = _number("repeat", repeat)
    if (yes or plan_only) and provider != "aws":
        raise Exit("error: --yes and --plan-only are options of --provider aws", code=1)
    options = {}
    if provider in ("ssh", "aws"):
        options = {"preflight": preflight, "require_clock_sync": clock_sync}
        if remote_work_root:
            options["work_root"] = remote_work_root
    if provider == "ssh":
        if not inventory:
            raise Exit("error: --provider ssh needs --inventory FILE (your servers; see infra/inventories/*.example.yml)",
                       code=1)
        options["inventory"] = inventory
    if provider == "aws":
        options.update({k: v for k, v in {"ami_id": ami_id, "operator_cidr": operator_cidr, "region": region,
                                          "key_file": key_file, "instance_type": instance_type}.items() if v})
        # --yes/--plan-only, and what its wall-time estimate plans with
        options.update({"yes": yes, "plan_only": plan_only, "scale": scale, "overrides": parse_assignments(set),
                        "repeat": repeat})
    from harness.providers.aws import PlanOnly
    try:
        runs = _guard(lambda: run(paper, experiment, scale=scale, provider=provider,
                                  repeat=repeat, resume=resume,
                                  overrides=parse_assignments(set), provider_options=options,
                                  build=build, source=source, variants=variant or None, controls=control,
                                  strict_topology=strict_topology, ours=ours))
    except PlanOnly as e:   # --plan-only stopped before anything was built or created
        print(e, file=sys.stderr)
        if not e.complete:
            raise Exit(code=1) from None
        return
    unfinished = [r for r in runs if r.metadata["status"] != "complete"]
    if unfinished:
        raise Exit("error: " + "; ".join(f"{r.metadata['experiment']} {r.metadata['status']}: {r.metadata.get('reason')}"
                                         for r in unfinished), code=1)


def _papers() -> list[str]:
    from harness.catalogue import list_papers
    return list_papers()


def _known_paper(paper: str) -> None:
    """Exit non-zero naming the known papers unless ``paper`` is one."""
    if paper not in _papers():
        raise Exit(f"error: unknown paper {paper!r}; valid papers: {', '.join(_papers())}", code=1)


@task(positional=_positional("report", "paper"), iterable=["run"],
      help={"paper": "paper id (default: every paper, with each one's export and reports/index.html)",
            "run": "pool only these run directories (repeat --run for several); default: every complete run",
            "since": "only runs started at or after this UTC date or time (2025-01-31 or 2025-01-31T12:00:00Z)"})
def report(c, paper=None, run=None, since=None):
    """Re-render a paper's report from its stored runs (no re-run): each experiment pools every complete
    run of one configuration, with 95% intervals and a verdict per claim (docs/catalogue.md). Without
    --paper, every paper's report and export and the site's reports/index.html."""
    from harness.reproduce import REPORTS, RESULTS
    from harness.report import render_all, render_paper
    if not paper:
        if run or since:
            raise Exit("error: --run and --since need the paper (--paper " + "|".join(_papers()) + ")", code=1)
        from harness.export import export_paper
        outs = _guard(render_all, RESULTS, REPORTS, export=export_paper)
        for out in outs:
            print(f"report: {out / 'report.html'}")
        print(f"index: {REPORTS / 'index.html'}")
        return
    out = _guard(render_paper, paper, results=RESULTS, reports=REPORTS, runs=run or None, since=since)
    print(f"report: {out / 'report.md'} and {out / 'report.html'}; index: {REPORTS / 'index.html'}")


@task(positional=_positional("export", "paper"), iterable=["run"],
      help={"paper": "paper id",
            "run": "export only these run directories (repeat --run for several); default: every complete run",
            "since": "only runs started at or after this UTC date or time (2025-01-31 or 2025-01-31T12:00:00Z)",
            "out": "folder for the tables (default: reports/<paper>/export)"})
def export(c, paper=None, run=None, since=None, out=None):
    """Write the measurements the report pools and the claims with their verdicts as parquet and CSV
    (docs/results-format.md, "Export"): enough to recompute every verdict with pandas."""
    from harness.export import export_paper
    from harness.reproduce import REPORTS, RESULTS
    if not paper:
        raise Exit("error: give the paper (--paper " + "|".join(_papers()) + ")", code=1)
    _known_paper(paper)
    folder = out or REPORTS / paper / "export"
    tables = _guard(export_paper, paper, results=RESULTS, out=folder, runs=run or None, since=since)
    print(f"export: {len(tables['measurements'])} measurements and {len(tables['claims'])} claims in {folder}/"
          "{measurements,claims}.{parquet,csv}")


@task(positional=_positional("runs", "paper"),
      help={"paper": "only this paper's runs; also `invoke runs PAPER`"})
def runs(c, paper=None):
    """List stored runs with their status."""
    from harness.reproduce import RESULTS
    from harness.rundir import list_runs
    if paper:
        _known_paper(paper)
    rows = list_runs(RESULTS, paper)
    if not rows:
        print("no stored runs")
    for r in rows:
        print(f"{r.get('status', '?'):<11} {r.get('points_done', '?')}/{r.get('points_total', '?')} points  "
              f"{r['path']}" + (f"  ({r['reason']})" if r.get("reason") else ""))


@task(iterable=["experiment", "set", "variant"], help={
    "paper": "paper id (papers/<paper>.yaml)",
    "experiment": "an experiment to carry (repeatable; default: every one of the paper's own that can go in a kit)",
    "out": "the kit to write (a .tar.xz; several experiments share it, each its own run-<experiment>.tar.gz there)",
    "scale": "smoke | local | paper",
    "repeat": "repetitions per configuration (overrides the scale's)",
    "set": "override a parameter: name=value, or name=a,b to sweep (repeatable)",
    "variant": "only this variant (repeatable; default: every runnable one)",
    "build": "upstream (the published code), reference (this repository's Go build) or auto (default: as "
             "invoke reproduce chooses); linked statically",
    "python": "the target's Python, MAJOR.MINOR (default: this machine's); the wheelhouse is for it",
    "control": "a control point first where the driver can corrupt transactions (default on)",
    "max_mib": "refuse a kit larger than this many MiB (default 60: it fits a 64 MiB carry with room for the "
               "runner)",
})
def kit(c, paper=None, experiment=None, out="kit.tar.xz", scale="smoke", repeat=None, set=None, variant=None,
        build="auto", python=None, control=True, max_mib=None):
    """Build a measurement kit of a paper's experiments for a host without the harness (README, "Measure on a
    host without internet"); on the target: tar xJf kit.tar.xz && ./kit/run."""
    from harness.config import parse_assignments
    from harness.kit import MAX_BYTES, build_kits
    repeat = _number("repeat", repeat)
    max_mib = _number("max_mib", MAX_BYTES / 2**20 if max_mib is None else max_mib, float, 1)
    if not paper:
        raise Exit("error: give --paper (and --experiment ID, repeatable, for only those)", code=1)
    _guard(build_kits, paper, experiment or None, out, scale=scale, build=build, overrides=parse_assignments(set),
           repeat=repeat, variants=variant or None, controls=control,
           python=python, max_bytes=int(max_mib * 2**20))


@task(positional=_positional("ingest", "archive"),
      help={"archive": "a kit's run.tar.gz (./kit/run writes it on the target)"})
def ingest(c, archive=None):
    """Store a kit's run in results/ and analyse it as a local run (then `invoke report` pools it)."""
    from harness.kit import ingest as store
    if not archive:
        raise Exit("error: give the archive (invoke ingest run.tar.gz)", code=1)
    _guard(store, archive)


@task(positional=_positional("verify", "run_dir"),
      help={"run_dir": "a stored run directory (results/<paper>/<experiment>/<run-id>), also `invoke verify RUN_DIR`",
            "point": "only this point of the run (its id, e.g. fabric-1.2__r0)"})
def verify(c, run_dir=None, point=None):
    """Re-check a stored run from its raw files: every validity check, our verifier included; exit 1 on any failure."""
    from harness.verify import render, verify_run
    if not run_dir:
        raise Exit("error: give the run directory (invoke verify RUN_DIR)", code=1)
    results = _guard(verify_run, run_dir, point)
    print(render(results))
    if not all(r["passed"] for r in results):
        raise Exit(code=1)


@task(help={"system": "the system whose command it is, e.g. bftsmart-orderer",
            "name": "the command (without it: every system's commands are listed)",
            "args": "the command's arguments, as one string: --args \"OUT --clients 16\""})
def system_command(c, system=None, name=None, args=""):
    """Run a system's own command (its plugin's ``commands`` hook), e.g. a microbenchmark of its library."""
    from harness import system_commands, systems
    if not (system and name):
        for (owner, command), spec in sorted(_guard(systems.commands).items()):
            print(f"{owner} {command}: {spec.help}")
        return
    code = _guard(system_commands.run, system, name, args)
    if code:
        raise Exit(code=code)


@task(positional=_positional("validate", "file"),
      help={"file": "a papers/*.yaml or systems/*/system.yaml file (default: all of them); "
                    "also `invoke validate FILE`"})
def validate(c, file=None):
    """Check catalogue and system files against their schemas."""
    from harness.validate import validate_all, validate_file
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


@task(help={
    "system": "reference (this repository's commits), a system with a recipe, e.g. fabric-1.2 (its repository's "
              "commits, each built with systems/<system>/upstream.yaml), or a line of them, e.g. fabric (each commit "
              "built by the fabric-* system whose release lines cover its release; no test across a boundary)",
    "experiment": "[paper:]experiment, e.g. fig6-peer-throughput",
    "commits": "A..B (A, then each first-parent commit up to B) or one commit (with --batches)",
    "tags": "T1,T2,...: releases, branches or commits compared side by side (instead of --commits)",
    "variant": "the experiment's variant of an upstream system to run (needed where it has several; for a line, "
               "comma-separated, one per system that has several)",
    "repeat": "points per commit (default 5; at least 4, the fewest with which the test can call a change)",
    "scale": "smoke | local | paper",
    "bisect": "binary-search A..B for the first commit that differs from A (first-parent line, then a merged branch)",
    "batches": "measure one commit this many times and report how often the test flags a change (false positives)",
    "repo": "where the commits are read (default: this repository, or a bare clone of the system's repository "
            "under build/regress/repos)",
    "metric": "another metric of the experiment's points (default: the experiment's), e.g. one that needs no patch",
    "page": "a page of its own beside the system's (reports/regress/<system>/<experiment>--<page>), e.g. for --repo",
    "beside": "another system's page of the experiment (its folder under reports/regress) shown commit by commit "
              "beside this series, untested (each system runs its own driver)",
    "fresh": "measure every commit anew (default: reuse the newest stored run of its build with enough points)",
})
def regress(c, system=None, experiment=None, commits=None, tags=None, variant=None, repeat=None, scale="smoke",
            bisect=False, batches=None, repo=None, metric=None, page=None, beside=None, fresh=False):
    """Track a metric across commits: build each once, run with repetitions, call changes by a stated test."""
    from harness.regress import main_summary, regress as run
    repeat = _number("repeat", 5 if repeat is None else repeat)
    batches = _number("batches", 1 if batches is None else batches)
    # optional here so that `invoke regress --help` works; required for a run
    missing = [f"--{name}" for name, value in (("system", system), ("experiment", experiment)) if not value]
    if missing:
        raise Exit(f"error: regress needs {' and '.join(missing)} (invoke regress --help)", code=1)
    doc = _guard(run, system, experiment, commits, repeat=repeat, scale=scale, bisect=bisect,
                 batches=batches, repo=repo, tags=tags, variant=variant, metric=metric, page=page,
                 beside=beside, fresh=fresh)
    print(main_summary(doc))


@task(positional=_positional("lab", "number"), help={
    "number": "the lab, 1 to 6 (labs/NN-*.md); also `invoke lab N`",
    "check": "say per expected outcome whether your stored runs show it: held, did not hold, or not yet run "
             "(with the command that makes the run); exit 1 when one did not hold",
    "plot": "draw the lab's plot from its stored runs into reports/labs/ (lab 01: block latency and VSCC "
            "against block size)",
    "write": "rewrite the lab page's expected outcomes from labs/expectations.yaml",
})
def lab(c, number=None, check=False, plot=False, write=False):
    """A teaching lab's expected outcomes (labs/expectations.yaml); --check reads your stored runs against them."""
    from harness import lab_pages, labs
    if number is None:
        raise Exit("error: give the lab's number, e.g. invoke lab 1 --check (labs/README.md lists them)", code=1)
    number = _number("number", number)
    _guard(lab_pages.lab_of, number)
    if write:
        changed = _guard(lab_pages.write_page, number)
        print(f"{'rewrote' if changed else 'unchanged:'} {lab_pages.page(number)}")
    if plot:
        print(f"plot: {_guard(labs.plot, number)}")
    if check:
        outcomes = _guard(labs.check, number)
        print(labs.report(number, outcomes))
        if any(o["status"] == labs.NOT_HELD for o in outcomes):
            raise Exit(code=1)
    if not (write or plot or check):
        print(_guard(labs.summary_text, number))
