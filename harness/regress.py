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
  over every split of the pooled values) at ``ALPHA``, **and**
* a relative change of the medians of at least ``MIN_CHANGE``, **and**
* the same verdict, in the same direction, from a re-measurement of both
  commits alternating point by point (``repeat`` fresh points each). Samples
  taken one after the other confound the commit with the machine's load at
  the time: on 2 shared cores another job's build can halve the throughput for
  minutes, and the first test then flags a commit against itself. Alternating
  spreads such drift over both sides (asv's interleaved rounds do the same).

``repeat`` must be large enough for the exact test to reach ``ALPHA`` at all
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
"""

from __future__ import annotations

import base64
import html
import itertools
import math
import os
import re
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from . import REPO_ROOT, SCHEMA_VERSION, cpus, upstream
from .catalogue import list_papers, load_paper
from .errors import HarnessError
from .rundir import Run, read_json, run_cores, write_json

ALPHA = 0.05
MIN_CHANGE = 0.10
#: Nominal coverage of the intervals on the page (each states the coverage its sample size reaches).
LEVEL = 0.95
TEST = (f"two-sided Mann–Whitney U (exact permutation distribution) at alpha {ALPHA}, and a relative change "
        f"of the medians of at least {MIN_CHANGE:.0%}; effect: the ratio after/before (Hodges–Lehmann) with its "
        "distribution-free interval; a flagged change is called only if a re-measurement of both commits, "
        "alternating point by point, flags it in the same direction")
BUILD_INPUTS = ("cmd", "internal", "go.mod", "go.sum")
#: The machine's one-network-at-a-time lock (flock). Set FABRICREPRO_NETWORK_LOCK to another file, or to
#: nothing when the caller already holds it (a test run under flock).
NETWORK_LOCK = os.environ.get("FABRICREPRO_NETWORK_LOCK", "/tmp/fabricrepro-network.lock")
REFERENCE = "reference"
#: Beyond this many splits the exact distribution is replaced by the normal approximation.
EXACT_LIMIT = 200_000


class NotMeasurable(HarnessError):
    """A commit that yields no sample: its patches do not apply, its build fails, or its run has no value."""


# ----------------------------------------------------------------------------- statistics

def _ranks(values: list[float]) -> list[float]:
    """Ranks 1..n, ties sharing their mean rank."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def mann_whitney(a: list[float], b: list[float]) -> tuple[float, float]:
    """U of ``a`` and the two-sided p-value of the Mann–Whitney U test.

    Exact (every split of the pooled ranks, ties included) up to EXACT_LIMIT
    splits, else the normal approximation with tie correction.
    """
    n1, n2 = len(a), len(b)
    if not n1 or not n2:
        raise ValueError("both samples need values")
    ranks = _ranks(list(a) + list(b))
    u = sum(ranks[:n1]) - n1 * (n1 + 1) / 2
    centre = n1 * n2 / 2
    if math.comb(n1 + n2, n1) <= EXACT_LIMIT:
        distance = abs(u - centre)
        total = extreme = 0
        for idx in itertools.combinations(range(n1 + n2), n1):
            total += 1
            extreme += abs(sum(ranks[i] for i in idx) - n1 * (n1 + 1) / 2 - centre) >= distance - 1e-9
        return u, extreme / total
    n = n1 + n2
    ties = sum(c ** 3 - c for c in (ranks.count(r) for r in set(ranks)))
    sigma = math.sqrt(n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1))))
    z = (abs(u - centre) - 0.5) / sigma if sigma else 0.0
    return u, min(1.0, math.erfc(z / math.sqrt(2)))


def smallest_p(n1: int, n2: int) -> float:
    """The smallest two-sided p-value the exact test can give with ``n1`` and ``n2`` values (no ties)."""
    return min(1.0, 2 / math.comb(n1 + n2, n1))


def min_points(alpha: float = ALPHA) -> int:
    """The fewest points per side with which the exact test can call a change at ``alpha``."""
    n = 1
    while smallest_p(n, n) >= alpha:
        n += 1
    return n


def u_counts(n1: int, n2: int) -> list[int]:
    """How many of the C(n1+n2, n1) splits (no ties) give U = 0, 1, ..., n1*n2."""
    # counts[i][j][u]: splits of i values of one side and j of the other with U = u (the classic recursion)
    table = {(i, 0): [1] for i in range(n1 + 1)} | {(0, j): [1] for j in range(n2 + 1)}
    for i in range(1, n1 + 1):
        for j in range(1, n2 + 1):
            # the largest value is on the second side (adds nothing) or on the first (adds j to U)
            without, shifted = table[(i, j - 1)], [0] * j + table[(i - 1, j)]
            size = max(len(without), len(shifted))
            table[(i, j)] = [(without[k] if k < len(without) else 0) + (shifted[k] if k < len(shifted) else 0)
                             for k in range(size)]
    return table[(n1, n2)]


def ratio_interval(before: list[float], after: list[float], level: float = LEVEL) -> dict:
    """The ratio after/before (Hodges–Lehmann: median of the pairwise ratios) and its interval.

    The bounds are the k-th smallest and largest pairwise ratios, k from the
    exact U distribution (the interval that inverts the Mann–Whitney test),
    so the interval holds for any distribution whose shape the commit only
    scales. ``coverage`` is what that k reaches (the largest not above
    1 - ``level`` excluded); with too few points there is none.
    """
    if min(before + after) <= 0:
        return {"ratio": None, "why": "values not all positive"}
    logs = sorted(math.log(b / a) for a in before for b in after)
    counts, total = u_counts(len(before), len(after)), math.comb(len(before) + len(after), len(before))
    k = tail = 0
    while k < len(counts) and 2 * (tail + counts[k]) / total <= 1 - level:
        tail += counts[k]
        k += 1
    out = {"ratio": round(math.exp(statistics.median(logs)), 6)}
    if k == 0:
        return {**out, "low": None, "high": None, "coverage": None,
                "why": f"no interval at {level:.0%} with {len(before)} and {len(after)} points"}
    return {**out, "low": round(math.exp(logs[k - 1]), 6), "high": round(math.exp(logs[-k]), 6),
            "coverage": round(1 - 2 * tail / total, 4)}


def median_interval(values: list[float], level: float = LEVEL) -> dict:
    """The median and the order-statistic interval around it (distribution-free), with its coverage.

    The widest interval, the minimum to the maximum, is used when no narrower
    one reaches ``level`` (with 5 values it covers 93.8%): the coverage says so.
    """
    xs, n = sorted(values), len(values)
    j, coverage = 1, 1 - 2 / 2 ** n
    for cand in range(2, n // 2 + 1):
        cov = 1 - 2 * sum(math.comb(n, i) for i in range(cand)) / 2 ** n
        if cov < level:
            break
        j, coverage = cand, cov
    return {"median": statistics.median(xs), "low": xs[j - 1], "high": xs[n - j], "coverage": round(coverage, 4)}


def compare(before: list[float], after: list[float], alpha: float = ALPHA, min_change: float = MIN_CHANGE) -> dict:
    """Whether ``after`` differs from ``before``: the test, its p-value, effect size and relative change."""
    u, p = mann_whitney(before, after)
    m0, m1 = statistics.median(before), statistics.median(after)
    change = (m1 - m0) / m0 if m0 else math.inf
    return {"p": round(p, 6), "u": u, "rank_biserial": round(1 - 2 * u / (len(before) * len(after)), 6),
            "relative_change": round(change, 6), "median_before": m0, "median_after": m1,
            "effect": ratio_interval(before, after), "changed": p < alpha and abs(change) >= min_change}


# ----------------------------------------------------------------------------- commits and builds

def git(repo: Path, *args: str) -> str:
    """Output of ``git -C repo args`` (stripped); HarnessError naming the command if it fails."""
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise HarnessError(f"git {' '.join(args)} failed in {repo}: {out.stderr.strip()}")
    return out.stdout.strip()


def describe(repo: Path, sha: str, key: str, ref: str | None = None) -> dict:
    """A commit as regress records it: its subject, message, parents and diff stat (against its first parent)."""
    parents = git(repo, "rev-list", "--parents", "-n", "1", sha).split()[1:]
    return {"sha": sha, "short": sha[:10], "ref": ref, "key": key, "parents": parents,
            "subject": git(repo, "log", "-1", "--format=%s", sha),
            "message": git(repo, "log", "-1", "--format=%B", sha),
            # a heading first: stripping the output would otherwise eat the first line's indentation
            "diffstat": git(repo, "show", "--stat=100", "--format=tformat:diff stat against the first parent:",
                            "--diff-merges=first-parent", sha)}


def resolve(repo: Path, ref: str) -> str:
    """The full commit ``ref`` names (tag, branch, commit), or a HarnessError naming the repository."""
    try:
        return git(repo, "rev-parse", "--verify", f"{ref}^{{commit}}")
    except HarnessError:
        raise HarnessError(f"{ref!r} names no commit in {repo}") from None


def line_of(repo: Path, spec: str) -> list[str]:
    """``A..B``: A then every first-parent commit after it up to B, oldest first."""
    start, end = spec.split("..", 1)
    shas = [resolve(repo, start)] + git(repo, "rev-list", "--reverse", "--first-parent",
                                         f"{resolve(repo, start)}..{resolve(repo, end)}").split()
    if len(shas) < 2:
        raise HarnessError(f"{spec}: no commits after {start}")
    return shas


def commits_of(repo: Path, spec: str, keyed=None) -> list[dict]:
    """``A..B`` (see ``line_of``) or one commit, described; ``keyed(sha)`` is each commit's store key
    (default: the reference build's ``build_key``)."""
    keyed = keyed or (lambda sha: build_key(repo, sha))
    shas = line_of(repo, spec) if ".." in spec else [resolve(repo, spec)]
    return [describe(repo, s, keyed(s)) for s in shas]


def releases_of(repo: Path, refs: list[str], keyed) -> list[dict]:
    """``--tags``: each named ref (tag, branch or commit), in the order given."""
    if len(refs) < 2:
        raise HarnessError("--tags needs at least two refs to compare")
    return [describe(repo, sha, keyed(sha), ref) for ref, sha in ((r, resolve(repo, r)) for r in refs)]


def build_key(repo: Path, sha: str) -> str:
    """The tree hash of the commit's build inputs: equal keys build identical binaries."""
    listing = git(repo, "ls-tree", sha, "--", *BUILD_INPUTS)
    return subprocess.run(["git", "-C", str(repo), "hash-object", "--stdin"], input=listing, capture_output=True,
                          text=True, check=True).stdout.strip()[:16]


def clone(recipe: dict, root: Path, log=print) -> Path:
    """A bare clone of the recipe's repository under ``root/repos`` (made once, fetched each time).

    Cloned from the recipe's ``clone_url`` or GitHub, so that git's own
    ``url.<mirror>.insteadOf`` setting can point it at a local mirror.
    """
    url = recipe.get("clone_url") or f"https://github.com/{recipe['repository']}.git"
    path = root / "repos" / (recipe["repository"].replace("/", "+") + ".git")
    if not path.is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)
        log(f"regress: cloning {url} into {path}")
        upstream.run_command(["git", "clone", "--quiet", "--bare", url, str(path)], f"clone {url}")
    else:
        upstream.run_command(["git", "-C", str(path), "fetch", "--quiet", "--tags", "--force", url,
                              "+refs/heads/*:refs/heads/*"], f"fetch {url}")
    return path


def build(tracked: dict, commit: dict, root: Path, log=print) -> tuple[Path, float]:
    """The ``bin/`` of the commit's build and the seconds spent building; NotMeasurable if it cannot be built.

    The reference build: once per build key in a worktree. An upstream
    system: its recipe at the commit (``upstream.build`` with a pin), which
    keeps its own cache.
    """
    started = time.monotonic()
    if tracked["system"] != REFERENCE:
        try:
            built = upstream.build(tracked["system"], "git", systems_dir=tracked["systems_dir"],
                                   builds=tracked["builds"], log=log, switches=tracked["switches"],
                                   pin=pin_of(tracked, commit))
        except HarnessError as e:
            raise NotMeasurable(build_failure(str(e))) from None
        commit["build_key"] = built.info["key"]
        commit["patches"] = built.info["patch_series"]  # applied, skipped (driver) or already in upstream
        return built.bin_dir, time.monotonic() - started
    repo = tracked["repo"]
    tree = root / "worktrees" / commit["key"]
    done = tree / "bin" / ".built"
    if done.exists():
        return tree / "bin", 0.0
    if not tree.exists():
        tree.parent.mkdir(parents=True, exist_ok=True)
        git(repo, "worktree", "add", "--detach", str(tree), commit["sha"])
    log(f"regress: building {commit['short']} ({commit['subject'][:60]}) in {tree}")
    for cmd in (["bash", "internal/protos/generate.sh"], ["go", "build", "-o", "bin/", "./cmd/..."]):
        out = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            tail = out.stderr.strip().splitlines()[-1:] or ["(no output)"]
            raise NotMeasurable(f"build failed: {' '.join(cmd)}: {tail[0]}")
    done.write_text(commit["sha"] + "\n")
    return tree / "bin", time.monotonic() - started


def build_failure(message: str) -> str:
    """A failed build step in one line: the step, and the tool's diagnosis (its last line naming an
    error, e.g. gcc's "fatal error: ltdl.h: No such file or directory" rather than its closing
    "compilation terminated."; else its last line at a source position, e.g. Go's "x.go:22:2: cannot
    find package ..." rather than the last directory it looked in), else its last line."""
    lines = [line.strip() for line in message.strip().splitlines()]
    if len(lines) == 1:
        return lines[0]
    diagnosis = next((line for line in reversed(lines[1:]) if "error" in line.lower()),
                     next((line for line in reversed(lines[1:]) if re.match(r"\S+:\d+(:\d+)?: ", line)), lines[-1]))
    return f"{lines[0]} {diagnosis}"


def pin_of(tracked: dict, commit: dict) -> dict:
    """The pin that builds an upstream system's recipe at ``commit`` from the local clone, with the
    patches the experiment's driver needs (at every commit, the recipe's own included, so that one
    series builds every point)."""
    return {"commit": commit["sha"], "ref": commit.get("ref"), "clone_url": str(tracked["repo"]),
            "driver": tracked["driver"]}


# ----------------------------------------------------------------------------- measurements

def find_experiment(name: str, papers_dir: Path | None = None) -> tuple[str, dict]:
    """``[paper:]experiment`` -> (paper id, experiment); an id in several papers needs its paper."""
    paper_id, _, exp_id = name.rpartition(":")
    found = []
    for pid in [paper_id] if paper_id else list_papers(papers_dir):
        paper = load_paper(pid, papers_dir)
        found += [(pid, e) for e in paper.experiments if e["id"] == exp_id]
    if len(found) != 1:
        raise HarnessError(f"experiment {name!r}: " + ("not found" if not found else
                           "in several papers; name it as paper:experiment"))
    return found[0]


_lock_held = False


@contextmanager
def network_lock():
    """One network at a time on this machine (fixed ports, CPU measurements): the project's flock.

    Re-entrant, so that a re-measurement holds it across all its alternating points (one wait in the queue).
    """
    global _lock_held
    if not NETWORK_LOCK or _lock_held:
        yield
        return
    with upstream.file_lock(Path(NETWORK_LOCK)):
        _lock_held = True
        try:
            yield
        finally:
            _lock_held = False


def samples(run_path: Path, metric: str) -> list[float]:
    """The metric of every complete, valid point of a stored run of one configuration, in run order."""
    out, configurations = [], set()
    # run order is repetition order (a name sort puts r10 before r2, and batches must follow time)
    for s in sorted((read_json(p) for p in (run_path / "points").glob("*/summary.json")),
                    key=lambda s: s["repetition"]):
        if s.get("status") == "complete" and s.get("valid", True) and s["metrics"].get(metric) is not None:
            out.append(s["metrics"][metric])
            configurations.add((s["variant"], tuple(sorted(s["sweep"].items()))))
    if len(configurations) > 1:
        raise HarnessError(f"{run_path}: {len(configurations)} configurations; regress compares one: fix each "
                           "swept parameter in the environment (FABRICREPRO_<NAME>=value replaces a sweep)")
    return out


def stored_runs(results: Path, paper: str, experiment: str) -> list[Path]:
    """The complete regress runs stored under ``results`` (one commit's store), oldest first."""
    runs = []
    for meta in sorted((results / paper / experiment).glob("*/metadata.json")):
        if not meta.parent.is_symlink() and read_json(meta).get("status") == "complete":
            runs.append(meta.parent)
    return runs


def reference_variants(experiment: dict) -> list[str]:
    """The runnable variants of the experiment whose system the reference build has a driver for."""
    from .builds import reference_driver
    from .plan import for_build
    experiment = for_build(experiment, REFERENCE)
    return [v["id"] for v in experiment.get("variants") or [] if v.get("runnable") is not False
            and reference_driver(v["system"], experiment["driver"]) is not None]


def upstream_variant(system: str, experiment: dict, variant: str | None, systems_dir: Path) -> dict:
    """The experiment's variant of ``system`` that regress runs on that system's upstream builds."""
    from .builds import upstream_driver
    ours = [v for v in experiment.get("variants") or [] if v["system"] == system and v.get("runnable") is not False]
    if variant:
        ours = [v for v in ours if v["id"] == variant]
    if len(ours) != 1:
        names = ", ".join(v["id"] for v in experiment.get("variants") or [] if v["system"] == system) or "none"
        raise HarnessError(f"experiment {experiment['id']}: " + (
            f"no runnable variant {variant!r} of system {system}" if variant else
            f"{len(ours)} runnable variants of system {system}") + f" (variants of {system}: {names}); "
            "name one with --variant")
    if upstream_driver(system, experiment["driver"], systems_dir) is None:
        raise HarnessError(f"system {system} has no upstream driver {experiment['driver']!r} "
                           f"(systems/{system}/upstream.yaml drivers)")
    return ours[0]


def measure(tracked: dict, commit: dict, bin_dir: Path, paper: str, experiment: dict, scale: str, repeat: int,
            store: Path, fresh: bool = False, stream=None) -> dict:
    """``repeat`` points of the experiment on the commit's build (see the module docstring).

    A stored run of the commit's key with enough points is reused unless
    ``fresh``. A run without a value of the metric is NotMeasurable.
    """
    from .reproduce import reproduce
    results = store / commit["key"]
    metric = experiment["metric"]
    if not fresh:
        for run in reversed(stored_runs(results, paper, experiment["id"])):
            stored = Run.open(run)
            if (stored.metadata.get("regress") or {}).get("build_key") != commit.get("build_key"):
                continue  # built with another patch series (or toolchain): not this build's sample
            if run_cores(stored) != len(cpus.usable()):
                continue  # its points ran on other cores than the harness may use now (e.g. confined to one)
            values = samples(run, metric)
            if len(values) >= repeat:
                return {"values": values, "runs": [str(run)], "seconds": 0.0, "reused": True}
    if tracked["system"] == REFERENCE:
        how = {"build": REFERENCE, "provider_options": {"bin_dir": bin_dir}, "variants": reference_variants(experiment)}
    else:
        how = {"build": "upstream", "source": "git", "variants": [tracked["variant"]],
               "pins": {tracked["system"]: pin_of(tracked, commit)}}
    waited = time.monotonic()
    with network_lock():
        started = time.monotonic()
        # No control point per commit (it would add a point to every measured commit): each point is still
        # checked fail-closed; `invoke reproduce` runs the controls of a build (docs/validity.md).
        runs = reproduce(paper, experiment["id"], scale=scale, repeat=repeat, results=results,
                         reports=store / "reports", stream=stream or sys.stderr, controls=False, **how)
    if not runs:
        raise NotMeasurable(f"no run of {experiment['id']} was made (skipped: see the log above)")
    run = runs[0]
    run.metadata["regress"] = {k: commit.get(k) for k in ("sha", "ref", "key", "build_key", "patches", "subject",
                                                          "message", "diffstat")}
    run.save()
    values = samples(run.path, metric)
    if not values:
        points = [read_json(p) for p in sorted((run.path / "points").glob("*/summary.json"))]
        found = sorted({m for point in points for m in point["metrics"]})
        failed = next((point for point in points if point.get("status") != "complete"), None)
        raise NotMeasurable(f"run {run.path.name} has no {metric} ({run.metadata.get('status')}: "
                            f"{run.metadata.get('reason')}; its points have {', '.join(found) or 'no metric'})"
                            + (f"; point {failed['point']}: {failed.get('reason')}" if failed else ""))
    return {"values": values, "runs": [str(run.path)], "seconds": round(time.monotonic() - started, 1),
            "lock_wait_seconds": round(started - waited, 1), "reused": False}


# ----------------------------------------------------------------------------- the command

def check_sample_size(repeat: int, alpha: float = ALPHA) -> None:
    """Refuse a sample size at which the exact test cannot reach ``alpha``, naming the minimum."""
    if repeat < min_points(alpha):
        raise HarnessError(f"--repeat {repeat}: with {repeat} points a side the exact test's smallest two-sided "
                           f"p-value is {smallest_p(repeat, repeat):.3g}, not below alpha {alpha}, so no change "
                           f"could ever be called: use at least {min_points(alpha)} points per commit")


def tracked_system(system: str, experiment: dict, variant: str | None, repo: Path | None, root: Path,
                   systems_dir: Path, builds: Path, log) -> dict:
    """What regress builds and runs for ``system``: where its commits are read, and for an upstream
    system the variant (and its switches) measured."""
    if system == REFERENCE:
        return {"system": system, "repo": Path(repo or REPO_ROOT).resolve()}
    recipe = upstream.load_recipe(system, systems_dir)
    chosen = upstream_variant(system, experiment, variant, systems_dir)
    # --repo: another repository's commits (e.g. a fork's branches) built with this system's recipe
    return {"system": system, "repo": Path(repo).resolve() if repo else clone(recipe, root, log),
            "repository": str(Path(repo).resolve()) if repo else recipe["repository"], "variant": chosen["id"],
            "switches": chosen.get("switches") or {},
            "driver": experiment["driver"],
            "systems_dir": systems_dir, "builds": builds}


def regress(system: str, experiment_name: str, commits: str | None = None, repeat: int = 5, scale: str = "smoke",
            bisect: bool = False, batches: int = 1, repo: Path | None = None, root: Path | None = None,
            results: Path | None = None, reports: Path | None = None, log=None, tags: str | None = None,
            variant: str | None = None, systems_dir: Path | None = None, builds: Path | None = None,
            metric: str | None = None, page: str | None = None, beside: str | None = None,
            fresh: bool = False) -> dict:
    """Build and measure ``commits`` or ``tags`` (see the module docstring); write regress.json and index.html.

    ``fresh``: measure every commit anew, never reusing a stored run (e.g. after a change of the
    machine, or when the stored runs were taken under a load the page should not rest on).

    ``metric``: another metric of the experiment's points than its own (its page then lives in
    ``<experiment>--<metric>``), e.g. one the driver yields without an instrumentation patch.
    ``page``: a series of its own beside that page (``<experiment>[--<metric>]--<page>``), e.g. another
    repository's branches (``repo``) measured with the same driver; it states the same false-positive rate.
    ``beside``: another system's page of the same experiment (its folder under the reports' ``regress/``),
    shown commit by commit beside this series (``beside_series``), never tested against it."""
    log = log or (lambda line: print(line, file=sys.stderr, flush=True))
    systems_dir = Path(systems_dir or upstream.SYSTEMS)
    choices = [REFERENCE, *upstream.systems_with_recipe(systems_dir)]
    if system not in choices:
        raise HarnessError(f"regress --system {system!r}: not {REFERENCE} and no recipe "
                           f"(systems/{system}/upstream.yaml); choose one of {', '.join(choices)}")
    check_sample_size(repeat)
    if bool(commits) == bool(tags):
        raise HarnessError("regress: give --commits A..B (or one commit) or --tags T1,T2,..., not both")
    if tags and (bisect or batches > 1):
        raise HarnessError("regress --tags compares releases side by side; --bisect and --batches take --commits")
    if bisect and ".." not in commits:
        raise HarnessError("regress --bisect needs a range --commits A..B")
    root = Path(root or REPO_ROOT / "build" / "regress")
    from .reproduce import REPORTS, RESULTS
    store = Path(results or RESULTS / "regress") / system
    paper, experiment = find_experiment(experiment_name)
    chosen_metric = metric
    if metric:  # another metric the driver yields, e.g. one that needs no instrumentation patch
        experiment = {**experiment, "metric": metric}
    metric = experiment["metric"]
    tracked = tracked_system(system, experiment, variant, repo, root, systems_dir,
                             Path(builds or upstream.BUILDS), log)
    repo = tracked["repo"]
    # the reference build shares one sample among commits of one build key; an upstream tree is its commit
    keyed = (lambda sha: build_key(repo, sha)) if system == REFERENCE else (lambda sha: sha[:16])
    series = releases_of(repo, tags.split(","), keyed) if tags else commits_of(repo, commits, keyed)
    doc = {"schema_version": SCHEMA_VERSION, "system": system, "paper": paper, "experiment": experiment["id"], "metric": metric, "scale": scale,
           "repeat": repeat, "test": TEST, "alpha": ALPHA, "min_change": MIN_CHANGE, "level": LEVEL,
           "min_points": min_points(), "repo": str(repo), "repository": tracked.get("repository"),
           "variant": tracked.get("variant"), "metric_option": chosen_metric, "driver": experiment["driver"],
           "commits_spec": commits or f"--tags {tags}", "fresh": fresh,
           "load_average_start": os.getloadavg(), "cores": len(cpus.usable()), "commits": []}

    by_key = {}  # commits with one key built identical binaries: one sample (or one reason) serves them all

    def measured(commit, again=False, repeat_=repeat):
        if commit["key"] in by_key and not again:
            return {**by_key[commit["key"]], **commit, "reused": True}
        try:
            bin_dir, build_s = build(tracked, commit, root, log)
            m = measure(tracked, commit, bin_dir, paper, experiment, scale, repeat_, store, fresh=again or fresh)
        except NotMeasurable as e:
            log(f"regress: {commit['short']} not measurable: {e}")
            row = {**commit, "not_measurable": str(e), "values": [], "runs": []}
            by_key[commit["key"]] = row
            return row
        row = {**commit, **m, "build_seconds": round(build_s, 1), **median_interval(m["values"])}
        by_key[commit["key"]] = row
        log(f"regress: {commit['short']} {metric} median {row['median']:.4g} over {len(m['values'])} points "
            f"(build {build_s:.0f} s, run {m['seconds']:.0f} s, waited {m.get('lock_wait_seconds', 0):.0f} s "
            f"for the network lock{', stored' if m['reused'] else ''})")
        return row

    def alternating(a: dict, b: dict) -> tuple[list[float], list[float], list[str]]:
        """``repeat`` fresh points of each of a and b, in the order ab ba ab ...: drift hits both alike."""
        values, runs = {0: [], 1: []}, []
        bin_dirs = [build(tracked, commit, root, log)[0] for commit in (a, b)]
        with network_lock():
            for i in range(repeat):
                for side in (0, 1) if i % 2 == 0 else (1, 0):
                    m = measure(tracked, (a, b)[side], bin_dirs[side], paper, experiment, scale, 1, store,
                                fresh=True)
                    values[side] += m["values"]
                    runs += m["runs"]
        return values[0], values[1], runs

    def tested(a: dict, b: dict) -> dict:
        """compare(a, b); a flagged change stands only if the alternating re-measurement flags it the same way."""
        first = compare(a["values"], b["values"])
        if not first["changed"]:
            return {**first, "against": a["sha"]}
        log(f"regress: {a['short']} -> {b['short']} flagged (p {first['p']:.3g}, {first['relative_change']:+.1%}); "
            f"re-measuring both alternately, {repeat} points each")
        try:
            va, vb, runs = alternating(a, b)
        except NotMeasurable as e:  # e.g. a run of the re-measurement failed: the flag stays unconfirmed
            log(f"regress: re-measurement failed: {e}")
            return {**first, "against": a["sha"], "flagged": True, "changed": False,
                    "confirmation": {"not_measurable": str(e)}}
        again = compare(va, vb)
        same_way = again["changed"] and (again["relative_change"] > 0) == (first["relative_change"] > 0)
        log(f"regress: re-measured p {again['p']:.3g}, {again['relative_change']:+.1%}: "
            f"{'confirmed' if same_way else 'not confirmed'}")
        return {**first, "against": a["sha"], "flagged": True, "changed": same_way,
                "confirmation": {**again, "values_before": va, "values_after": vb, "runs": runs}}

    # the false-positive rate belongs to the system, experiment and metric: every page of them states it
    system_page = Path(reports or REPORTS / "regress") / system / (
        experiment["id"] if not chosen_metric else f"{experiment['id']}--{chosen_metric}")
    out = system_page.with_name(f"{system_page.name}--{page}") if page else system_page
    if batches > 1:
        # One run of batches x repeat points (each point a fresh deployment), cut in order into batches:
        # one lock hold instead of one per batch on a machine others share.
        whole = measured(series[0], again=True, repeat_=batches * repeat)
        if whole.get("not_measurable"):
            raise HarnessError(f"--batches: {series[0]['short']} is not measurable: {whole['not_measurable']}")
        rows = []
        for i in range(batches):
            values = whole["values"][i * repeat:(i + 1) * repeat]
            rows.append({**whole, "values": values, "batch": i, **median_interval(values)})
        pairs = [{"a": i, "b": j, **tested(rows[i], rows[j])} for i, j in itertools.combinations(range(batches), 2)]
        flagged = sum(p.get("flagged", False) for p in pairs)
        doc.update(commits=rows, noise_pairs=pairs, flagged_rate=flagged / len(pairs),
                   false_positive_rate=sum(p["changed"] for p in pairs) / len(pairs))
        log(f"regress: {flagged} of {len(pairs)} pairs of batches of one commit flagged by the first test, "
            f"{sum(p['changed'] for p in pairs)} after the re-measurement")
        system_page.mkdir(parents=True, exist_ok=True)
        write_json(system_page / "false_positives.json", {
            "schema_version": SCHEMA_VERSION, "commit": series[0]["sha"], "batches": batches, "repeat": repeat, "scale": scale, "pairs": len(pairs),
            "flagged": flagged, "called": sum(p["changed"] for p in pairs), "flagged_rate": doc["flagged_rate"],
            "false_positive_rate": doc["false_positive_rate"], "variant": doc["variant"],
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    elif bisect:
        doc["bisect"], doc["commits"] = bisected(series, measured, tested, repo, keyed, log)
    else:
        doc["commits"] = [measured(c) for c in series]
        before = None
        for row in doc["commits"]:
            if row.get("not_measurable"):
                continue
            if before is not None:
                row["vs_previous"] = tested(before, row)
            before = row
    if (system_page / "false_positives.json").is_file():
        doc["false_positives"] = read_json(system_page / "false_positives.json")
    doc["change_points"] = [r["sha"] for r in doc["commits"] if (r.get("vs_previous") or {}).get("changed")]
    if beside:
        doc["beside"] = beside_series(Path(reports or REPORTS / "regress") / beside, doc, systems_dir)
    doc["not_measurable"] = {r["sha"]: r["not_measurable"] for r in doc["commits"] if r.get("not_measurable")}
    doc["load_average_end"] = os.getloadavg()
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "regress.json", doc)
    (out / "index.html").write_text(render_html(doc, out), encoding="utf-8")
    log(f"regress: {out / 'index.html'}")
    return doc


def bisected(series: list[dict], measured, tested, repo: Path, keyed, log) -> tuple[dict, list[dict]]:
    """Binary search of ``series`` (one first-parent line) for the first commit that differs from its first.

    A commit that is not measurable is skipped (the nearest untested one
    between the bounds is measured instead); if every commit between the
    bounds is, the change lies in that range and the result says so. Where
    the first changed commit is a merge, its second parent's line since the
    first parent (the merged branch) is searched the same way.
    """
    rows, order = [], [c["sha"] for c in series]  # order: history, a merged branch's commits before its merge

    def ordered() -> list[dict]:
        """One row per commit (what each measurement of it added kept), in history order."""
        unique = {}
        for row in rows:
            unique[row["sha"]] = {**unique.get(row["sha"], {}), **row}
        return sorted(unique.values(), key=lambda r: order.index(r["sha"]))

    first, last = measured(series[0]), measured(series[-1])
    rows += [first, last]
    for end in (first, last):
        if end.get("not_measurable"):
            return {"first_changed": None, "why": f"{end['short']} is not measurable: nothing to compare"}, ordered()
    last["vs_first"] = tested(first, last)
    result = {"ends": last["vs_first"], "lines": []}
    if not last["vs_first"]["changed"]:
        log(f"regress: {series[-1]['short']} does not differ from {series[0]['short']}: nothing to bisect")
        return {**result, "first_changed": None}, ordered()
    line = series
    while True:
        lo, hi = 0, len(line) - 1
        skipped = []
        while hi - lo > 1:
            mid = (lo + hi) // 2
            # the midpoint, or if it is not measurable the nearest untested commit between the bounds
            for at in sorted(range(lo + 1, hi), key=lambda i: (abs(i - mid), i)):
                if line[at]["sha"] in skipped:
                    continue
                row = measured(line[at])
                rows.append(row)
                if row.get("not_measurable"):
                    skipped.append(line[at]["sha"])
                    continue
                row["vs_first"] = tested(first, row)
                if row["vs_first"]["changed"]:
                    hi = at
                else:
                    lo = at
                break
            else:  # every commit between the bounds is not measurable
                break
        result["lines"].append({"from": line[0]["sha"], "to": line[-1]["sha"], "commits": len(line),
                                "skipped": skipped})
        if hi - lo > 1:
            result.update(first_changed=None, between=[line[lo]["sha"], line[hi]["sha"]],
                          why=f"every commit after {line[lo]['short']} and before {line[hi]['short']} is not "
                              "measurable: the change is one of them or the latter")
            log(f"regress: {result['why']}")
            return result, ordered()
        found = line[hi]
        if len(found["parents"]) < 2:
            break
        # A merge: the change came with the merged branch (its last commit differs) or with the merge itself.
        branch = [found["parents"][0]] + git(repo, "rev-list", "--reverse", "--first-parent",
                                              f"{found['parents'][0]}..{found['parents'][1]}").split()
        branch_rows = [describe(repo, sha, keyed(sha)) for sha in branch]
        tip = measured(branch_rows[-1])
        rows.append(tip)
        if tip.get("not_measurable"):
            break
        tip["vs_first"] = tested(first, tip)
        if not tip["vs_first"]["changed"]:
            break
        log(f"regress: {found['short']} is a merge; searching the merged branch ({len(branch) - 1} commits)")
        at = order.index(found["sha"])
        order[at:at] = [sha for sha in branch[1:] if sha not in order]
        # the first parent is the last commit found unchanged: the lower bound of the merged branch's search
        line = branch_rows[:-1] + [tip]
    result["first_changed"] = found["sha"]
    log(f"regress: first changed commit {found['short']}: {found['subject']}")
    return result, ordered()


def playbook_of(system: str, driver: str, systems_dir: Path | None = None) -> str | None:
    """The playbook that runs ``driver`` for ``system``'s upstream build (None for the reference build)."""
    from .builds import upstream_driver
    return (upstream_driver(system, driver, systems_dir) or {}).get("playbook") if system != REFERENCE else None


def beside_series(folder: Path, doc: dict, systems_dir: Path | None = None) -> dict:
    """Another system's series of the same experiment (``folder``'s regress.json), to be shown beside ``doc``.

    A system's upstream driver of an experiment is its own deployment and
    client (e.g. FastFabric's published broadcast client and deliver client
    against Fabric's network driven by our load generator), so its values are
    shown side by side, commit by commit, and not tested against this series:
    a ratio between two drivers' metrics is no like-for-like comparison.
    """
    if not (folder / "regress.json").is_file():
        raise HarnessError(f"--beside {folder}: no regress.json (make that page first with invoke regress)")
    other = read_json(folder / "regress.json")
    if (other["paper"], other["experiment"]) != (doc["paper"], doc["experiment"]):
        raise HarnessError(f"--beside {folder}: a page of {other['paper']}:{other['experiment']}, not "
                           f"{doc['paper']}:{doc['experiment']}")
    driver = other.get("driver") or doc["driver"]  # the experiment's driver: pages made before it was recorded
    keep = ("sha", "short", "ref", "subject", "values", "median", "low", "high", "coverage", "not_measurable",
            "runs", "patches", "vs_previous")
    return {"page": str(folder), "system": other["system"], "variant": other.get("variant"),
            "metric": other["metric"], "repository": other.get("repository"), "commits_spec": other["commits_spec"],
            "driver": driver, "playbook": playbook_of(other["system"], driver, systems_dir),
            "own_playbook": playbook_of(doc["system"], doc["driver"], systems_dir),
            "commits": [{k: r[k] for k in keep if k in r} for r in other["commits"]]}


# ----------------------------------------------------------------------------- the page

def _figure(doc: dict) -> bytes:
    # matplotlib only when a page is drawn: the rest of regress runs without it.
    from .figure_png import png_bytes
    import matplotlib.pyplot as plt

    rows = doc["commits"]
    fig, ax = plt.subplots(figsize=(max(5, 0.8 * len(rows) + 2), 3.4))
    ok = [i for i, r in enumerate(rows) if not r.get("not_measurable")]
    for i in ok:
        ax.scatter([i] * len(rows[i]["values"]), rows[i]["values"], s=12, color="tab:blue", alpha=0.6)
    ax.errorbar(ok, [rows[i]["median"] for i in ok],
                yerr=[[rows[i]["median"] - rows[i]["low"] for i in ok], [rows[i]["high"] - rows[i]["median"] for i in ok]],
                color="tab:blue", capsize=3, label="median and its interval")
    changed = [i for i in ok if rows[i]["sha"] in doc["change_points"]
               or rows[i]["sha"] == (doc.get("bisect") or {}).get("first_changed")]
    ax.scatter(changed, [rows[i]["median"] for i in changed], s=120, facecolors="none", edgecolors="tab:red",
               label="change point", zorder=3)
    lost = [i for i, r in enumerate(rows) if r.get("not_measurable")]
    if lost:
        ax.scatter(lost, [ax.get_ylim()[0]] * len(lost), marker="x", color="tab:gray", label="not measurable",
                   clip_on=False)
    ax.set_xticks(range(len(rows)), [r.get("ref") or r["short"][:7] for r in rows], rotation=45, ha="right",
                  fontsize=7)
    ax.set_ylabel(doc["metric"])
    ax.legend(fontsize=7)
    return png_bytes(fig)


def _effect(vs: dict) -> str:
    e = vs.get("effect") or {}
    if e.get("ratio") is None:
        return ""
    if e.get("low") is None:
        return f"×{e['ratio']:.3f} ({e.get('why', 'no interval')})"
    return f"×{e['ratio']:.3f} [{e['low']:.3f}, {e['high']:.3f}] ({e['coverage']:.1%})"


def _false_positive_text(doc: dict) -> str:
    fp = doc.get("false_positives")
    if "false_positive_rate" in doc:
        return (f"Repeated runs of one commit: of {len(doc['noise_pairs'])} pairs of batches, "
                f"{sum(p.get('flagged', False) for p in doc['noise_pairs'])} flagged by the first test "
                f"(rate {doc['flagged_rate']:.2f}), {sum(p['changed'] for p in doc['noise_pairs'])} still called "
                f"after the alternating re-measurement (false-positive rate {doc['false_positive_rate']:.2f}).")
    if fp:
        return (f"False-positive rate of this test for {doc['system']} / {doc['experiment']} on this machine: "
                f"{fp['false_positive_rate']:.2f} ({fp['called']} of {fp['pairs']} pairs of batches of one commit, "
                f"<code>{fp['commit'][:10]}</code>, called; {fp['flagged']} flagged by the first test), measured "
                f"with --batches {fp['batches']} x {fp['repeat']} points at scale {fp['scale']} on "
                f"{fp['measured_at']}.")
    return (f"False-positive rate of this test for {doc['system']} / {doc['experiment']}: not measured yet "
            f"(<code>invoke regress --system {doc['system']} --experiment {doc['paper']}:{doc['experiment']} "
            + (f"--variant {doc['variant']} " if doc.get("variant") else "")
            + (f"--metric {doc['metric']} " if doc.get("metric_option") else "")
            + "--commits &lt;commit&gt; --batches 4</code>).")


def _patches_text(row: dict, why: bool = False) -> str:
    """What became of each patch of the series at this commit: applied, skipped or already in upstream."""
    return "; ".join(f"{p['name'].split('-', 1)[0]} {p['status']}" + (f" ({p['why']})" if why and p.get("why") else "")
                     for p in row.get("patches") or [])


def _value_text(row: dict | None) -> str:
    """One commit's sample in a cell or a line: its median with the interval and n, or why there is none."""
    if row is None:
        return "not in this series"
    if row.get("not_measurable"):
        return f"not measurable: {row['not_measurable']}"
    return f"{row['median']:.4g} [{row['low']:.4g}, {row['high']:.4g}] ({row['coverage']:.1%}), n={len(row['values'])}"


def side_by_side(doc: dict) -> list[tuple[str, dict | None, dict | None]]:
    """(name, this series' row, the other's row) per commit: this series' order, then the other's own commits."""
    other = {r["sha"]: r for r in doc["beside"]["commits"]}
    ours = {r["sha"] for r in doc["commits"]}
    return ([(r.get("ref") or r["short"], r, other.get(r["sha"])) for r in doc["commits"]]
            + [(r.get("ref") or r["short"], None, r) for r in doc["beside"]["commits"] if r["sha"] not in ours])


def _beside_note(doc: dict) -> str:
    b = doc["beside"]
    return (f"{b['system']} ({b.get('variant') or 'reference build'}, {b['metric']}, driver {b['driver']}: "
            f"{b.get('playbook')}) beside {doc['system']} ({doc.get('variant') or 'reference build'}, "
            f"{doc['metric']}, driver {doc['driver']}: {b.get('own_playbook')}). Each system runs its own "
            "deployment and client for this experiment, so the two columns are not a like-for-like ratio "
            "and no test compares them; each column's own comparisons are on its page.")


def render_html(doc: dict, out: Path) -> str:
    """One self-contained page: the series with intervals, the change points, the commits not measurable
    and why, each commit's message and diff stat, and a row per commit linking to its runs."""
    esc = html.escape
    rows, details, seen = [], [], set()
    for r in doc["commits"]:
        anchor = f"c-{r['short']}"
        name = f"<a href=\"#{anchor}\"><code>{esc(r.get('ref') or r['short'])}</code></a>"
        if r.get("not_measurable"):
            rows.append(f"<tr class=lost><td>{name}</td><td>{esc(r['subject'])}</td>"
                        f"<td colspan=8>not measurable: {esc(r['not_measurable'])}</td></tr>")
        else:
            vs = r.get("vs_previous") or r.get("vs_first") or {}
            verdict = "yes" if vs.get("changed") else "flagged, not confirmed" if vs.get("flagged") else ""
            links = " ".join(f'<a href="{esc(os.path.relpath(p, out))}/summary.json">{esc(Path(p).name)}</a>'
                             for p in r["runs"])
            rows.append(f"<tr{' class=changed' if vs.get('changed') else ''}><td>{name}</td>"
                        f"<td>{esc(r['subject'])}</td><td>{len(r['values'])}</td><td>{r['median']:.4g} "
                        f"[{r['low']:.4g}, {r['high']:.4g}] ({r['coverage']:.1%})</td>"
                        f"<td>{vs.get('p', '')}</td><td>{format(vs['relative_change'], '+.1%') if vs else ''}</td>"
                        f"<td>{esc(_effect(vs))}</td><td>{verdict}</td><td>{esc(_patches_text(r))}</td>"
                        f"<td>{links}</td></tr>")
        if r["sha"] not in seen:
            seen.add(r["sha"])
            details.append(f"<details id=\"{anchor}\"><summary><code>{esc(r['sha'])}</code>"
                           f"{' (' + esc(r['ref']) + ')' if r.get('ref') else ''} {esc(r['subject'])}</summary>"
                           + (f"<p>Patches: {esc(_patches_text(r, why=True))}</p>" if r.get("patches") else "")
                           + f"<pre>{esc(r.get('message', ''))}\n\n{esc(r.get('diffstat', ''))}</pre></details>")
    extra = f"<p>{_false_positive_text(doc)}</p>"
    bisect = doc.get("bisect")
    if bisect:
        first = bisect.get("first_changed")
        extra += (f"<p>Bisect: first changed commit <code>{esc(first[:10]) if first else 'none'}</code>"
                  + (f" ({esc(bisect['why'])})" if bisect.get("why") else "") + ".</p>")
        for r in doc["commits"]:
            conf = (r.get("vs_first") or {}).get("confirmation")
            if conf and "values_before" in conf:
                extra += (f"<p>Re-measurement of <code>{esc(r['short'])}</code> against the first commit, "
                          f"alternating point by point: p {conf['p']}, change {conf['relative_change']:+.1%}, "
                          f"effect {esc(_effect(conf))}: {'confirmed' if r['vs_first']['changed'] else 'not confirmed'}"
                          ".</p>")
    if doc.get("beside"):
        b = doc["beside"]
        cells = "".join(f"<tr><td><code>{esc(name)}</code></td><td>{esc(_value_text(ours))}</td>"
                        f"<td>{esc(_value_text(theirs))}</td></tr>" for name, ours, theirs in side_by_side(doc))
        extra += (f"<h2>Beside it: {esc(b['system'])}</h2><p>{esc(_beside_note(doc))} Its page: "
                  f"<a href=\"{esc(os.path.relpath(b['page'], out))}/index.html\">{esc(Path(b['page']).name)}</a> "
                  f"({esc(b['commits_spec'])}{', ' + esc(b['repository']) if b.get('repository') else ''}).</p>"
                  f"<table><tr><th>commit</th><th>{esc(doc['system'])}: {esc(doc['metric'])}</th>"
                  f"<th>{esc(b['system'])}: {esc(b['metric'])}</th></tr>{cells}</table>")
    lost = doc.get("not_measurable") or {}
    if lost:
        extra += f"<p>{len(lost)} commit(s) not measurable (reasons in the table); comparisons and bisection skip them.</p>"
    png = base64.b64encode(_figure(doc)).decode()
    title = f"{doc['system']} build" + (f", variant {doc['variant']}" if doc.get("variant") else "")
    return f"""<!doctype html><meta charset="utf-8"><title>regress {esc(doc['experiment'])}</title>
<style>body{{font-family:sans-serif;max-width:70em}} td,th{{padding:2px 8px;border-bottom:1px solid #ddd}}
tr.changed{{background:#fdd}} tr.lost{{color:#777}}</style>
<h1>{esc(title)}: {esc(doc['paper'])} / {esc(doc['experiment'])}</h1>
<p>{esc(doc['metric'])} per commit ({esc(doc['commits_spec'])}{', ' + esc(doc['repository']) if doc.get('repository') else ''}),
{doc['repeat']} points per commit at scale {esc(doc['scale'])} on {doc['cores']} cores (load average
{doc['load_average_start'][0]:.2f} at start, {doc['load_average_end'][0]:.2f} at end). Change test: {esc(doc['test'])};
each commit against the one before it that was measured (bisect: against the first). At least
{doc['min_points']} points per commit are needed for the test to reach alpha {doc['alpha']}. Intervals: the
median's order statistics, and the ratio's Hodges–Lehmann interval, each with the coverage its sample size
reaches (nominal {doc['level']:.0%}).</p>
{extra}<figure><img alt="series" src="data:image/png;base64,{png}"></figure>
<table><tr><th>commit</th><th>subject</th><th>n</th><th>median [interval]</th><th>p</th><th>relative change</th>
<th>ratio [interval]</th><th>change</th><th>patches</th><th>runs</th></tr>
{''.join(rows)}</table>
<h2>Commits</h2>
{''.join(details)}
"""


def main_summary(doc: dict) -> str:
    """The lines ``invoke regress`` prints at the end."""
    lines = [f"test: {doc['test']}"]
    for r in doc["commits"]:
        name = r.get("ref") or r["short"]
        if r.get("not_measurable"):
            lines.append(f"{name}  not measurable: {r['not_measurable']}")
            continue
        vs = r.get("vs_previous") or r.get("vs_first") or {}
        lines.append(f"{name}  median {r['median']:.4g} [{r['low']:.4g}, {r['high']:.4g}]  n={len(r['values'])}"
                     + (f"  p={vs['p']:.3g} change {vs['relative_change']:+.1%} {_effect(vs)}"
                        f"{'  CHANGED' if vs['changed'] else ''}"
                        + ("  flagged, not confirmed" if vs.get("flagged") and not vs["changed"] else "")
                        if vs else "")
                     + (f"  patches: {_patches_text(r)}" if r.get("patches") else ""))
    if "false_positive_rate" in doc:
        lines.append(f"flagged by the first test over {len(doc['noise_pairs'])} pairs: {doc['flagged_rate']:.2f}; "
                     f"false-positive rate over {len(doc['noise_pairs'])} pairs: {doc['false_positive_rate']:.2f}")
    elif doc.get("false_positives"):
        fp = doc["false_positives"]
        lines.append(f"false-positive rate (--batches {fp['batches']} on {fp['measured_at']}): "
                     f"{fp['false_positive_rate']:.2f} over {fp['pairs']} pairs")
    if doc.get("beside"):
        lines.append(f"beside it: {_beside_note(doc)}")
        lines += [f"{name}  {doc['system']}: {_value_text(ours)}  |  {doc['beside']['system']}: {_value_text(theirs)}"
                  for name, ours, theirs in side_by_side(doc)]
    if doc.get("bisect"):
        b = doc["bisect"]
        lines.append(f"first changed commit: {b.get('first_changed') or 'none'}"
                     + (f" ({b['why']})" if b.get("why") else ""))
    return "\n".join(lines)
