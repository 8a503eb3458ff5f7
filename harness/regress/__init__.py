"""Regression tracking across commits: ``invoke regress``.

Two kinds of history are tracked:

* ``--system reference``: this repository's (or ``--repo``'s) commits. Each
  is checked out in its own ``git worktree`` under ``build/regress/worktrees/``
  (the working tree you edit is never touched) and built once per *build key*,
  the tree of its build inputs (``cmd``, ``internal``, ``go.mod``,
  ``go.sum``): commits that change only docs or the harness share a build and
  a sample.
* ``--system <system>`` with a recipe (``systems/<system>/upstream.yaml``): the
  commits of the published code's repository. It is cloned once (bare) under
  ``build/regress/repos/`` from the recipe's URL, so git's
  ``url.<mirror>.insteadOf`` points a machine without GitHub at a local mirror,
  and each commit is built with the recipe (``upstream.build`` with a ``pin``:
  its patch series, toolchain and targets; cached by commit, patches and
  toolchain in ``build/upstream/``). The experiment runs the variant of that
  system on the upstream build.
* ``--system <line>`` (``fabric``): the commits of the repository its systems
  (``fabric-1.2``, ``fabric-2.5``, ``fabric-3.1``) build, each built by the
  system whose release lines cover the release its tree states and measured
  with the experiment's variant of that system (``lines``). Where the system,
  variant, driver or ordering service changes between two measured commits,
  a boundary: no change test across it, and bisection never crosses it.

``--commits A..B`` is A and each first-parent commit after it up to B;
``--tags T1,T2,...`` are releases (or branches, commits) side by side. A commit
whose patch series does not apply, whose build fails, or whose run yields no
value is recorded as *not measurable* with the reason, shown on the page and
skipped by comparisons and bisection; it is never dropped.

The experiment runs with this checkout's harness, ``repeat`` points per
commit, one run at a time under the network lock (regress takes it itself), and
its runs are stored keyed by commit in
``results/regress/<system>/<key>/<paper>/<experiment>/<run-id>/`` (the key:
the build key for the reference build, the commit for an upstream system).
A later call reuses the newest stored run of the same build key that has
enough points of the metric (a failed run has none) and whose points ran on
the cores the harness may use now; ``fresh`` (``--fresh``) measures every
commit anew instead.

A change between two samples is called by a stated test, never by eye:

* a two-sided Mann–Whitney U test (exact: the permutation distribution of U
  over every split of the pooled values) at ``stats.ALPHA``, **and**
* a relative change of the medians of at least ``stats.MIN_CHANGE``, **and**
* the same verdict, in the same direction, from a re-measurement of both
  commits alternating point by point (``repeat`` fresh points each). Samples
  taken one after the other confound the commit with the machine's load at
  the time: on 2 shared cores another job's build can halve the throughput for
  minutes, and the first test then flags a commit against itself. Alternating
  spreads such drift over both sides (asv's interleaved rounds do the same).

``repeat`` must be large enough for the exact test to reach ``stats.ALPHA`` at all
(with 3 points a side its smallest two-sided p is 0.1): fewer are refused,
naming the minimum. Each comparison reports the effect as a ratio with a
distribution-free interval (Hodges–Lehmann on log ratios, its bounds order
statistics of the pairwise ratios picked by the exact U distribution), each
commit its median with an order-statistic interval; both state their coverage.

``--batches K`` measures one commit K x ``repeat`` times (one run, each
point a fresh deployment), cuts the points in run order into K batches and
tests every pair as it would two commits: the share of pairs flagged by the
first test and the share still called after the re-measurement are the
false-positive rates here. They are kept (``false_positives.json``) and stated
on every later page of that system and experiment.
``--bisect`` binary-searches ``A..B`` for the first commit that differs from
``A``, along the first-parent line first; where that commit is a merge, the
merged branch's own first-parent line is searched next. The page
``reports/regress/<system>/<experiment>/index.html`` shows the series with
intervals, the change points, the commits not measurable and why, each
commit's message and diff stat (from git, also stored in its runs'
``metadata.json``), and links to the runs.

This package: the command (``regress``, its ``Options``); ``git`` (commit
lists, tags, build keys, worktrees, clones); ``build`` (the tracked system,
its variant, each commit's build); ``run`` (each commit's sample, the change
test with its re-measurement, the false-positive batches, bisection); ``page``
(the HTML page, the printed summary, a series beside); ``lines`` (a line of systems: each commit's system by
its release, segments and boundaries). The statistics are in
``harness/stats.py``.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .. import REPO_ROOT, SCHEMA_VERSION, cpus, upstream
from ..catalogue import list_papers, load_paper
from ..errors import HarnessError
from ..gitrepo import commits_of, releases_of, store_keys
from ..rundir import read_json, write_json
from ..stats import ALPHA, LEVEL, MIN_CHANGE, min_points, smallest_p
from .build import REFERENCE, tracked_system, upstream_variant
from .lines import Router, line_systems, lines_of, ordering_of, segment
from .page import beside_series, main_summary, render_html  # main_summary: for tasks.py
from .run import Sampler, bisected, boundaries, false_positives, series

TEST = (f"two-sided Mann–Whitney U (exact permutation distribution) at alpha {ALPHA}, and a relative change "
        f"of the medians of at least {MIN_CHANGE:.0%}; effect: the ratio after/before (Hodges–Lehmann) with its "
        "distribution-free interval; a flagged change is called only if a re-measurement of both commits, "
        "alternating point by point, flags it in the same direction")


@dataclass(frozen=True)
class Options:
    """What ``invoke regress`` was asked (the task's options of the same names; docs/regress.md)."""

    #: reference, a system with a recipe (systems/<system>/upstream.yaml), or a line of such systems
    #: (``fabric``: each commit built by the ``fabric-*`` system whose release lines cover it; lines.py)
    system: str
    experiment: str             # [paper:]experiment
    commits: str | None = None  # A..B, or one commit (--batches)
    tags: str | None = None     # T1,T2,...: refs side by side, instead of commits
    repeat: int = 5
    scale: str = "smoke"
    bisect: bool = False
    batches: int = 1
    #: Measure every commit anew, never reusing a stored run (e.g. after a change of the machine, or when
    #: the stored runs were taken under a load the page should not rest on).
    fresh: bool = False
    variant: str | None = None  # across release lines: one variant id per system that has several, comma-separated
    #: Another metric of the experiment's points than its own (its page then lives in
    #: ``<experiment>--<metric>``), e.g. one the driver yields without an instrumentation patch.
    metric: str | None = None
    #: A series of its own beside the system's page (``<experiment>[--<metric>]--<page>``), e.g. another
    #: repository's branches (``repo``) measured with the same driver; it states the same false-positive rate.
    page: str | None = None
    #: Another system's page of the same experiment (its folder under the reports' ``regress/``), shown
    #: commit by commit beside this series (``page.beside_series``), never tested against it.
    beside: str | None = None
    repo: Path | None = None         # where the commits are read (default: this repository, or a clone)
    root: Path | None = None         # worktrees and clones (default: build/regress)
    results: Path | None = None      # the run store (default: results/regress)
    reports: Path | None = None      # the pages (default: reports/regress)
    systems_dir: Path | None = None
    builds: Path | None = None       # upstream builds' cache
    log: Callable[[str], None] | None = None


def regress(system: str, experiment: str, commits: str | None = None, **options) -> dict:
    """Build and measure ``commits`` or ``tags`` (see the module docstring); write regress.json and index.html.

    ``options``: the other fields of ``Options``.
    """
    opts = Options(system, experiment, commits, **options)
    log = opts.log or (lambda line: print(line, file=sys.stderr, flush=True))
    systems_dir = Path(opts.systems_dir or upstream.SYSTEMS)
    check(opts, systems_dir)
    from ..reproduce import REPORTS, RESULTS
    root, reports = Path(opts.root or REPO_ROOT / "build" / "regress"), Path(opts.reports or REPORTS / "regress")
    paper, exp = find_experiment(opts.experiment)
    if opts.metric:  # another metric the driver yields, e.g. one that needs no instrumentation patch
        exp = {**exp, "metric": opts.metric}
    builds = Path(opts.builds or upstream.BUILDS)
    recipes = line_systems(system, systems_dir) if system not in upstream.systems_with_recipe(systems_dir) else {}
    route = None
    if recipes:  # across release lines: each commit's system covers its release
        route = Router(system, recipes, paper, exp, opts.scale, opts.variant, root, systems_dir, builds, log)
        tracked = {"system": system, "repo": route.repo, "repository": route.repository, "variant": None,
                   "driver": exp["driver"], "lines": lines_of(recipes)}
    else:
        tracked = tracked_system(system, exp, opts.variant, opts.repo, root, systems_dir, builds, log)
        chosen = (None if system == REFERENCE else
                  upstream_variant(system, exp, tracked["variant"], systems_dir))
        tracked["segment"] = segment(system, chosen, exp,
                                     chosen and ordering_of(paper, exp, chosen, opts.scale, systems_dir))
    repo = tracked["repo"]
    keyed = store_keys(repo, reference=system == REFERENCE)
    chosen = releases_of(repo, opts.tags.split(","), keyed) if opts.tags else commits_of(repo, opts.commits, keyed)
    doc = header(opts, paper, exp, tracked)
    sampler = Sampler(tracked, paper, exp, opts.scale, opts.repeat, opts.fresh, root,
                      Path(opts.results or RESULTS / "regress"), log, route)
    # the false-positive rate belongs to the system, experiment and metric: every page of them states it
    system_page = reports / system / (exp["id"] if not opts.metric else f"{exp['id']}--{opts.metric}")
    if opts.batches > 1:
        doc.update(false_positives(sampler, chosen[0], opts.batches))
        keep_false_positives(system_page / "false_positives.json", doc, chosen[0], opts)
    elif opts.bisect:
        doc["bisect"], doc["commits"] = bisected(chosen, sampler, repo, keyed)
    else:
        doc["commits"] = series(sampler, chosen)
    if (system_page / "false_positives.json").is_file():
        doc["false_positives"] = read_json(system_page / "false_positives.json")
    doc["change_points"] = [r["sha"] for r in doc["commits"] if (r.get("vs_previous") or {}).get("changed")]
    doc["boundaries"] = boundaries(doc["commits"])
    if opts.beside:
        doc["beside"] = beside_series(reports / opts.beside, doc, systems_dir)
    doc["not_measurable"] = {r["sha"]: r["not_measurable"] for r in doc["commits"] if r.get("not_measurable")}
    doc["load_average_end"] = os.getloadavg()
    out = system_page.with_name(f"{system_page.name}--{opts.page}") if opts.page else system_page
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "regress.json", doc)
    (out / "index.html").write_text(render_html(doc, out), encoding="utf-8")
    log(f"regress: {out / 'index.html'}")
    return doc


def check(opts: Options, systems_dir: Path) -> None:
    """Refuse, naming why, what could not be built or could never call a change."""
    choices = [REFERENCE, *upstream.systems_with_recipe(systems_dir)]
    lines = sorted({s.rsplit("-", 1)[0] for s in choices if "-" in s} - set(choices))
    lines = [name for name in lines if line_systems(name, systems_dir)]
    if opts.system not in choices + lines:
        raise HarnessError(f"regress --system {opts.system!r}: not {REFERENCE}, no recipe "
                           f"(systems/{opts.system}/upstream.yaml) and no line of systems that name their "
                           f"releases; choose one of {', '.join(choices + lines)}")
    if opts.system in lines and opts.repo:
        raise HarnessError(f"regress --system {opts.system}: a line reads its systems' repository; --repo takes "
                           "one system")
    check_sample_size(opts.repeat)
    if bool(opts.commits) == bool(opts.tags):
        raise HarnessError("regress: give --commits A..B (or one commit) or --tags T1,T2,..., not both")
    if opts.tags and (opts.bisect or opts.batches > 1):
        raise HarnessError("regress --tags compares releases side by side; --bisect and --batches take --commits")
    if opts.bisect and ".." not in opts.commits:
        raise HarnessError("regress --bisect needs a range --commits A..B")


def check_sample_size(repeat: int, alpha: float = ALPHA) -> None:
    """Refuse a sample size at which the exact test cannot reach ``alpha``, naming the minimum."""
    if repeat < min_points(alpha):
        raise HarnessError(f"--repeat {repeat}: with {repeat} points a side the exact test's smallest two-sided "
                           f"p-value is {smallest_p(repeat, repeat):.3g}, not below alpha {alpha}, so no change "
                           f"could ever be called: use at least {min_points(alpha)} points per commit")


def find_experiment(name: str) -> tuple[str, dict]:
    """``[paper:]experiment`` -> (paper id, experiment); an id in several papers needs its paper."""
    paper_id, _, exp_id = name.rpartition(":")
    found = []
    for pid in [paper_id] if paper_id else list_papers():
        paper = load_paper(pid)
        found += [(pid, e) for e in paper.experiments if e["id"] == exp_id]
    if len(found) != 1:
        raise HarnessError(f"experiment {name!r}: " + ("not found" if not found else
                           "in several papers; name it as paper:experiment"))
    return found[0]


def header(opts: Options, paper: str, experiment: dict, tracked: dict) -> dict:
    """regress.json before any commit is measured: what is measured, how, and by which test."""
    return {"schema_version": SCHEMA_VERSION, "system": opts.system, "paper": paper, "experiment": experiment["id"],
            "metric": experiment["metric"], "scale": opts.scale, "repeat": opts.repeat, "test": TEST,
            "alpha": ALPHA, "min_change": MIN_CHANGE, "level": LEVEL, "min_points": min_points(),
            "repo": str(tracked["repo"]), "repository": tracked.get("repository"), "variant": tracked.get("variant"),
            "metric_option": opts.metric, "driver": experiment["driver"],
            **({"lines": tracked["lines"]} if tracked.get("lines") else {}),
            "commits_spec": opts.commits or f"--tags {opts.tags}", "fresh": opts.fresh,
            "load_average_start": os.getloadavg(), "cores": len(cpus.usable()), "commits": []}


def keep_false_positives(path: Path, doc: dict, commit: dict, opts: Options) -> None:
    """The false-positive rate measured by ``--batches``, which every later page of the system's experiment
    and metric states."""
    pairs = doc["noise_pairs"]
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, {
        "schema_version": SCHEMA_VERSION, "commit": commit["sha"], "batches": opts.batches, "repeat": opts.repeat,
        "scale": opts.scale, "pairs": len(pairs), "flagged": sum(p.get("flagged", False) for p in pairs),
        "called": sum(p["changed"] for p in pairs), "flagged_rate": doc["flagged_rate"],
        "false_positive_rate": doc["false_positive_rate"],
        "variant": doc["variant"] or (doc["commits"][0].get("segment") or {}).get("variant"),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
