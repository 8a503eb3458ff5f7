"""Regression tracking across commits: ``invoke regress``.

For the reference build (``--system reference``) the commits are this
repository's (or ``--repo``'s, e.g. a clone with a scratch branch). Each
commit is checked out in its own ``git worktree`` under
``build/regress/worktrees/`` (the working tree you edit is never touched) and
built once per *build key*, the tree of its build inputs (``cmd``,
``internal``, ``go.mod``, ``go.sum``): commits that change only docs or the
harness share a build and a sample. The experiment runs with this checkout's
harness against that commit's binaries, ``repeat`` points per commit, one run
at a time under the network lock, and its runs are stored keyed by commit in
``results/regress/<system>/<build key>/<paper>/<experiment>/<run-id>/``.

A change between two samples is called by a stated test, never by eye:

* a two-sided Mann–Whitney U test (exact: the permutation distribution of U
  over every split of the pooled values) at ``ALPHA``, **and**
* a relative change of the medians of at least ``MIN_CHANGE``, with the
  rank-biserial correlation reported as effect size, **and**
* the same verdict, in the same direction, from a re-measurement of both
  commits alternating point by point (``repeat`` fresh points each). Samples
  taken one after the other confound the commit with the machine's load at
  the time: on 2 shared cores another job's build can halve the throughput for
  minutes, and the first test then flags a commit against itself. Alternating
  spreads such drift over both sides (asv's interleaved rounds do the same).

``--batches K`` measures one commit K x ``repeat`` times (one run, each
point a fresh deployment), cuts the points in run order into K batches and
tests every pair as it would two commits: the share of pairs flagged by the
first test and the share still called after the re-measurement are the
false-positive rates here.
``--bisect`` binary-searches ``A..B`` for the first commit that differs from
``A``. The page ``reports/regress/<system>/<experiment>/index.html`` shows the
per-commit series, the change points and links to the runs.
"""

from __future__ import annotations

import base64
import html
import itertools
import math
import os
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from . import REPO_ROOT, upstream
from .catalogue import list_papers, load_paper
from .errors import HarnessError
from .rundir import read_json, write_json

ALPHA = 0.05
MIN_CHANGE = 0.10
TEST = (f"two-sided Mann–Whitney U (exact permutation distribution) at alpha {ALPHA}, and a relative change "
        f"of the medians of at least {MIN_CHANGE:.0%}; effect size: rank-biserial correlation; a flagged change "
        "is called only if a re-measurement of both commits, alternating point by point, flags it in the same "
        "direction")
BUILD_INPUTS = ("cmd", "internal", "go.mod", "go.sum")
#: The machine's one-network-at-a-time lock (flock). Set FABRICREPRO_NETWORK_LOCK to another file, or to
#: nothing when the caller already holds it (a test run under flock).
NETWORK_LOCK = os.environ.get("FABRICREPRO_NETWORK_LOCK", "/tmp/fabricrepro-network.lock")
SYSTEMS = ("reference",)
#: Beyond this many splits the exact distribution is replaced by the normal approximation.
EXACT_LIMIT = 200_000


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


def compare(before: list[float], after: list[float], alpha: float = ALPHA, min_change: float = MIN_CHANGE) -> dict:
    """Whether ``after`` differs from ``before``: the test, its p-value, effect size and relative change."""
    u, p = mann_whitney(before, after)
    m0, m1 = statistics.median(before), statistics.median(after)
    change = (m1 - m0) / m0 if m0 else math.inf
    return {"p": round(p, 6), "u": u, "rank_biserial": round(1 - 2 * u / (len(before) * len(after)), 6),
            "relative_change": round(change, 6), "median_before": m0, "median_after": m1,
            "changed": p < alpha and abs(change) >= min_change}


# ----------------------------------------------------------------------------- commits and builds

def git(repo: Path, *args: str) -> str:
    """Output of ``git -C repo args`` (stripped); HarnessError naming the command if it fails."""
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise HarnessError(f"git {' '.join(args)} failed in {repo}: {out.stderr.strip()}")
    return out.stdout.strip()


def commits_of(repo: Path, spec: str) -> list[dict]:
    """``A..B``: A then every first-parent commit after it up to B, oldest first; ``A``: that commit."""
    if ".." in spec:
        start, end = spec.split("..", 1)
        shas = [git(repo, "rev-parse", f"{start}^{{commit}}")] + \
            git(repo, "rev-list", "--reverse", "--first-parent", f"{start}..{end}").split()
    else:
        shas = [git(repo, "rev-parse", f"{spec}^{{commit}}")]
    if len(shas) < 2 and ".." in spec:
        raise HarnessError(f"{spec}: no commits after {spec.split('..')[0]}")
    return [{"sha": s, "short": s[:10], "subject": git(repo, "log", "-1", "--format=%s", s),
             "key": build_key(repo, s)} for s in shas]


def build_key(repo: Path, sha: str) -> str:
    """The tree hash of the commit's build inputs: equal keys build identical binaries."""
    listing = git(repo, "ls-tree", sha, "--", *BUILD_INPUTS)
    return subprocess.run(["git", "-C", str(repo), "hash-object", "--stdin"], input=listing, capture_output=True,
                          text=True, check=True).stdout.strip()[:16]


def build(repo: Path, commit: dict, root: Path, log=print) -> tuple[Path, float]:
    """The ``bin/`` of the commit's build (built once per build key in a worktree); seconds spent building."""
    tree = root / "worktrees" / commit["key"]
    done = tree / "bin" / ".built"
    if done.exists():
        return tree / "bin", 0.0
    started = time.monotonic()
    if not tree.exists():
        tree.parent.mkdir(parents=True, exist_ok=True)
        git(repo, "worktree", "add", "--detach", str(tree), commit["sha"])
    log(f"regress: building {commit['short']} ({commit['subject'][:60]}) in {tree}")
    for cmd in (["bash", "internal/protos/generate.sh"], ["go", "build", "-o", "bin/", "./cmd/..."]):
        out = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            raise HarnessError(f"build of {commit['short']} failed: {' '.join(cmd)}: {out.stderr.strip()[-2000:]}")
    done.write_text(commit["sha"] + "\n")
    return tree / "bin", time.monotonic() - started


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
    experiment = for_build(experiment, "reference")
    return [v["id"] for v in experiment.get("variants") or [] if v.get("runnable") is not False
            and reference_driver(v["system"], experiment["driver"]) is not None]


def measure(commit: dict, bin_dir: Path, paper: str, experiment: dict, scale: str, repeat: int,
            store: Path, fresh: bool = False, stream=None) -> dict:
    """``repeat`` points of the experiment's reference variants on the commit's binaries.

    A stored run of the commit's build key with enough points is reused unless ``fresh``.
    """
    from .reproduce import reproduce
    results = store / commit["key"]
    metric = experiment["metric"]
    if not fresh:
        for run in reversed(stored_runs(results, paper, experiment["id"])):
            values = samples(run, metric)
            if len(values) >= repeat:
                return {"values": values, "runs": [str(run)], "seconds": 0.0, "reused": True}
    waited = time.monotonic()
    with network_lock():
        started = time.monotonic()
        runs = reproduce(paper, experiment["id"], scale=scale, repeat=repeat, build="reference",
                         results=results, reports=store / "reports", stream=stream or sys.stderr,
                         provider_options={"bin_dir": bin_dir}, variants=reference_variants(experiment))
    run = runs[0]
    run.metadata["regress"] = {"commit": commit["sha"], "build_key": commit["key"], "subject": commit["subject"]}
    run.save()
    values = samples(run.path, metric)
    if not values:
        raise HarnessError(f"{commit['short']}: run {run.path} has no {metric} ({run.metadata.get('status')}: "
                           f"{run.metadata.get('reason')})")
    return {"values": values, "runs": [str(run.path)], "seconds": round(time.monotonic() - started, 1),
            "lock_wait_seconds": round(started - waited, 1), "reused": False}


# ----------------------------------------------------------------------------- the command

def regress(system: str, experiment_name: str, commits: str, repeat: int = 5, scale: str = "smoke",
            bisect: bool = False, batches: int = 1, repo: Path | None = None, root: Path | None = None,
            results: Path | None = None, reports: Path | None = None, log=None) -> dict:
    """Build and measure ``commits`` (see the module docstring); write regress.json and index.html."""
    log = log or (lambda line: print(line, file=sys.stderr, flush=True))
    if system not in SYSTEMS:
        raise HarnessError(f"regress --system {system!r}: only the reference build (this repository's commits) "
                           "is tracked yet; upstream systems' commits need a build per commit of their repository")
    if repeat < 4:
        # with 3 points a side the smallest two-sided p is 0.1: no change could ever be called
        raise HarnessError(f"--repeat {repeat}: the test needs at least 4 points per commit "
                           f"(with 3 a side no p-value falls below {ALPHA})")
    repo = Path(repo or REPO_ROOT).resolve()
    root = Path(root or REPO_ROOT / "build" / "regress")
    from .reproduce import REPORTS, RESULTS
    store = Path(results or RESULTS / "regress") / system
    paper, experiment = find_experiment(experiment_name)
    metric = experiment["metric"]
    series = commits_of(repo, commits)
    doc = {"system": system, "paper": paper, "experiment": experiment["id"], "metric": metric, "scale": scale,
           "repeat": repeat, "test": TEST, "repo": str(repo), "commits_spec": commits, "load_average_start":
           os.getloadavg(), "cores": os.cpu_count(), "commits": []}

    by_key = {}  # commits with one build key built identical binaries: one sample serves them all

    def measured(commit, fresh=False, repeat_=repeat):
        if commit["key"] in by_key and not fresh:
            return {**by_key[commit["key"]], **commit, "reused": True}
        bin_dir, build_s = build(repo, commit, root, log)
        m = measure(commit, bin_dir, paper, experiment, scale, repeat_, store, fresh=fresh)
        row = {**commit, **m, "build_seconds": round(build_s, 1), "median": statistics.median(m["values"])}
        by_key[commit["key"]] = row
        log(f"regress: {commit['short']} {metric} median {row['median']:.4g} over {len(m['values'])} points "
            f"(build {build_s:.0f} s, run {m['seconds']:.0f} s, waited {m.get('lock_wait_seconds', 0):.0f} s "
            f"for the network lock{', stored' if m['reused'] else ''})")
        return row

    def alternating(a: dict, b: dict) -> tuple[list[float], list[float], list[str]]:
        """``repeat`` fresh points of each of a and b, in the order ab ba ab ...: drift hits both alike."""
        values, runs = {0: [], 1: []}, []
        bin_dirs = [build(repo, commit, root, log)[0] for commit in (a, b)]
        with network_lock():
            for i in range(repeat):
                for side in (0, 1) if i % 2 == 0 else (1, 0):
                    m = measure((a, b)[side], bin_dirs[side], paper, experiment, scale, 1, store, fresh=True)
                    values[side] += m["values"]
                    runs += m["runs"]
        return values[0], values[1], runs

    def tested(a: dict, b: dict) -> dict:
        """compare(a, b); a flagged change stands only if the alternating re-measurement flags it the same way."""
        first = compare(a["values"], b["values"])
        if not first["changed"]:
            return first
        log(f"regress: {a['short']} -> {b['short']} flagged (p {first['p']:.3g}, {first['relative_change']:+.1%}); "
            f"re-measuring both alternately, {repeat} points each")
        va, vb, runs = alternating(a, b)
        again = compare(va, vb)
        same_way = again["changed"] and (again["relative_change"] > 0) == (first["relative_change"] > 0)
        log(f"regress: re-measured p {again['p']:.3g}, {again['relative_change']:+.1%}: "
            f"{'confirmed' if same_way else 'not confirmed'}")
        return {**first, "flagged": True, "changed": same_way,
                "confirmation": {**again, "values_before": va, "values_after": vb, "runs": runs}}

    if batches > 1:
        # One run of batches x repeat points (each point a fresh deployment), cut in order into batches:
        # one lock hold instead of one per batch on a machine others share.
        whole = measured(series[0], fresh=True, repeat_=batches * repeat)
        rows = [{**whole, "values": whole["values"][i * repeat:(i + 1) * repeat], "batch": i,
                 "median": statistics.median(whole["values"][i * repeat:(i + 1) * repeat])}
                for i in range(batches)]
        pairs = [{"a": i, "b": j, **tested(rows[i], rows[j])} for i, j in itertools.combinations(range(batches), 2)]
        flagged = sum(p.get("flagged", False) for p in pairs)
        doc.update(commits=rows, noise_pairs=pairs, flagged_rate=flagged / len(pairs),
                   false_positive_rate=sum(p["changed"] for p in pairs) / len(pairs))
        log(f"regress: {flagged} of {len(pairs)} pairs of batches of one commit flagged by the first test, "
            f"{sum(p['changed'] for p in pairs)} after the re-measurement")
    elif bisect:
        first, last = measured(series[0]), measured(series[-1])
        rows = {0: first, len(series) - 1: last}
        ends = last["vs_first"] = tested(first, last)
        doc["bisect"] = {"ends": ends}
        if not ends["changed"]:
            doc["bisect"]["first_changed"] = None
            log(f"regress: {series[-1]['short']} does not differ from {series[0]['short']}: nothing to bisect")
        else:
            lo, hi = 0, len(series) - 1
            while hi - lo > 1:
                mid = (lo + hi) // 2
                rows[mid] = measured(series[mid])
                rows[mid] = {**rows[mid], "vs_first": tested(first, rows[mid])}
                if rows[mid]["vs_first"]["changed"]:
                    hi = mid
                else:
                    lo = mid
            doc["bisect"]["first_changed"] = series[hi]["sha"]
            log(f"regress: first changed commit {series[hi]['short']}: {series[hi]['subject']}")
        doc["commits"] = [rows[i] for i in sorted(rows)]
    else:
        doc["commits"] = [measured(c) for c in series]
        for before, row in zip(doc["commits"], doc["commits"][1:]):
            row["vs_previous"] = tested(before, row)
    doc["change_points"] = [r["sha"] for r in doc["commits"][1:] if (r.get("vs_previous") or {}).get("changed")]
    doc["load_average_end"] = os.getloadavg()
    out = Path(reports or REPORTS / "regress") / system / experiment["id"]
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "regress.json", doc)
    (out / "index.html").write_text(render_html(doc, out), encoding="utf-8")
    log(f"regress: {out / 'index.html'}")
    return doc


# ----------------------------------------------------------------------------- the page

def _figure(doc: dict) -> bytes:
    # matplotlib only when a page is drawn: the rest of regress runs without it.
    from .figure_png import png_bytes
    import matplotlib.pyplot as plt

    rows = doc["commits"]
    fig, ax = plt.subplots(figsize=(max(5, 0.8 * len(rows) + 2), 3.4))
    for i, r in enumerate(rows):
        ax.scatter([i] * len(r["values"]), r["values"], s=12, color="tab:blue", alpha=0.6)
    ax.plot(range(len(rows)), [r["median"] for r in rows], color="tab:blue", label="median")
    changed = [i for i, r in enumerate(rows) if r["sha"] in doc["change_points"]
               or r["sha"] == (doc.get("bisect") or {}).get("first_changed")]
    ax.scatter(changed, [rows[i]["median"] for i in changed], s=120, facecolors="none", edgecolors="tab:red",
               label="change point", zorder=3)
    ax.set_xticks(range(len(rows)), [r["short"][:7] for r in rows], rotation=45, ha="right", fontsize=7)
    ax.set_ylabel(doc["metric"])
    ax.legend(fontsize=7)
    return png_bytes(fig)


def render_html(doc: dict, out: Path) -> str:
    """One self-contained page: the series, the change points, and a row per commit linking to its runs."""
    esc = html.escape
    rows = []
    for r in doc["commits"]:
        vs = r.get("vs_previous") or r.get("vs_first") or {}
        verdict = "yes" if vs.get("changed") else "flagged, not confirmed" if vs.get("flagged") else ""
        links = " ".join(f'<a href="{esc(os.path.relpath(p, out))}/summary.json">{esc(Path(p).name)}</a>'
                         for p in r["runs"])
        rows.append(f"<tr{' class=changed' if vs.get('changed') else ''}><td><code>{esc(r['short'])}</code></td>"
                    f"<td>{esc(r['subject'])}</td><td>{len(r['values'])}</td><td>{r['median']:.4g}</td>"
                    f"<td>{vs.get('p', '')}</td><td>{vs.get('relative_change', '')}</td>"
                    f"<td>{vs.get('rank_biserial', '')}</td><td>{verdict}</td>"
                    f"<td>{links}</td></tr>")
    extra = ""
    if "false_positive_rate" in doc:
        extra = (f"<p>Repeated runs of one commit: of {len(doc['noise_pairs'])} pairs of batches, "
                 f"{sum(p.get('flagged', False) for p in doc['noise_pairs'])} flagged by the first test "
                 f"(rate {doc['flagged_rate']:.2f}), {sum(p['changed'] for p in doc['noise_pairs'])} still called "
                 f"after the alternating re-measurement (false-positive rate {doc['false_positive_rate']:.2f}).</p>")
    if doc.get("bisect"):
        first = doc["bisect"].get("first_changed")
        extra += f"<p>Bisect: first changed commit <code>{esc(first[:10]) if first else 'none'}</code>.</p>"
    png = base64.b64encode(_figure(doc)).decode()
    return f"""<!doctype html><meta charset="utf-8"><title>regress {esc(doc['experiment'])}</title>
<style>body{{font-family:sans-serif;max-width:70em}} td,th{{padding:2px 8px;border-bottom:1px solid #ddd}}
tr.changed{{background:#fdd}}</style>
<h1>{esc(doc['system'])} build: {esc(doc['paper'])} / {esc(doc['experiment'])}</h1>
<p>{esc(doc['metric'])} per commit ({esc(doc['commits_spec'])}), {doc['repeat']} points per commit at scale
{esc(doc['scale'])} on {doc['cores']} cores (load average {doc['load_average_start'][0]:.2f} at start,
{doc['load_average_end'][0]:.2f} at end). Change test: {esc(doc['test'])}; each commit against the one before
(bisect: against the first).</p>
{extra}<figure><img alt="series" src="data:image/png;base64,{png}"></figure>
<table><tr><th>commit</th><th>subject</th><th>n</th><th>median</th><th>p</th><th>relative change</th>
<th>rank-biserial</th><th>change</th><th>runs</th></tr>
{''.join(rows)}</table>
"""


def main_summary(doc: dict) -> str:
    """The lines ``invoke regress`` prints at the end."""
    lines = [f"test: {doc['test']}"]
    for r in doc["commits"]:
        vs = r.get("vs_previous") or r.get("vs_first") or {}
        lines.append(f"{r['short']}  median {r['median']:.4g}  n={len(r['values'])}"
                     + (f"  p={vs['p']:.3g} change {vs['relative_change']:+.1%}{'  CHANGED' if vs['changed'] else ''}"
                        + ("  flagged, not confirmed" if vs.get("flagged") and not vs["changed"] else "")
                        if vs else ""))
    if "false_positive_rate" in doc:
        lines.append(f"flagged by the first test over {len(doc['noise_pairs'])} pairs: {doc['flagged_rate']:.2f}; "
                     f"false-positive rate over {len(doc['noise_pairs'])} pairs: {doc['false_positive_rate']:.2f}")
    if doc.get("bisect"):
        lines.append(f"first changed commit: {doc['bisect'].get('first_changed') or 'none'}")
    return "\n".join(lines)
